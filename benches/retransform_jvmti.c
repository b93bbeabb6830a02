/* The floor of instrumenting the classes loaded before an agent's events are known: a plain
 * JVMTI agent that, at VMInit, retransforms every modifiable loaded class (in batches of 64, as
 * the shim does) with a class-file hook that changes nothing — the JVM's own part of what the
 * shim does when a legacy agent enables OBJECT_ALLOC or METHOD_ENTRY in JVM_OnLoad (which the
 * shim runs at VMInit). Prints the number of classes and the time with option "print". With
 * option "two", every other class is retransformed by a second thread attached to the JVM
 * meanwhile, as the shim does at start-up on a machine with two CPUs or more.
 *
 * The floor of the classes that really change (options, comma-separated, with "two" or not):
 *   dump=DIR     retransforms nothing: loaded after the shim (-agentpath order), its hook sees
 *                the class files as the shim's hook left them and writes each to DIR/<name>.class
 *                (a name's '/' as '.'), at loading and at retransformation alike;
 *   replay=DIR   the floor above, but the hook hands the JVM DIR's file of a class whenever it
 *                differs from the bytes the JVM offers (a class the shim changed), at VMInit's
 *                retransformation and at every later loading alike: the JVM's whole part of the
 *                shim's instrumentation (parsing the bigger class files, merging the constant
 *                pools, replacing the changed methods, loading changed classes without the
 *                shared archive). The tracker those class files call is DIR's JvmpiShimTracker,
 *                defined in the boot loader at VMInit, switched on, with natives that only count
 *                (printed at VM death with "print"). Before VMInit nothing is changed, as with
 *                the shim (it instruments nothing before JVM_OnLoad has run);
 *   append=DIR   the same classes changed as little as a class can change: one constant-pool
 *                entry (a Utf8) appended to the JVM's own bytes; no tracker. */
#include <jvmti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int print, two, dump, replay, append;
static char dir[4096];
static JavaVM *jvm;
static volatile long events;
static volatile int live; /* VMInit has begun: classes are changed from then on, as the shim does */

struct half { jvmtiEnv *j; jint n; jclass *ks; };

static void retransform(jvmtiEnv *j, jint m, jclass *ks) {
    for (jint i = 0; i < m; i += 64) (*j)->RetransformClasses(j, m - i < 64 ? m - i : 64, ks + i);
}

static void *helper(void *arg) {
    struct half *h = arg;
    JNIEnv *env;
    if ((*jvm)->AttachCurrentThreadAsDaemon(jvm, (void **)&env, NULL) != JNI_OK) return NULL;
    retransform(h->j, h->n, h->ks);
    (*jvm)->DetachCurrentThread(jvm);
    return NULL;
}

/* DIR/<name>.class, read whole into memory (malloc'ed; *len its size), or NULL. */
static unsigned char *read_class(const char *name, long *len) {
    char path[8192];
    int n = snprintf(path, sizeof path, "%s/", dir);
    for (const char *c = name; *c && n < (int)sizeof path - 8; c++) path[n++] = *c == '/' ? '.' : *c;
    snprintf(path + n, sizeof path - n, ".class");
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len > 0 ? *len : 1);
    if (b && fread(b, 1, *len, f) != (size_t)*len) { free(b); b = NULL; }
    fclose(f);
    return b;
}

static void write_class(const char *name, jint len, const unsigned char *data) {
    char path[8192];
    int n = snprintf(path, sizeof path, "%s/", dir);
    for (const char *c = name; *c && n < (int)sizeof path - 8; c++) path[n++] = *c == '/' ? '.' : *c;
    snprintf(path + n, sizeof path - n, ".class");
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, len, f);
    fclose(f);
}

/* The offset just past the constant pool of a class file (0 if it cannot be read). */
static long pool_end(const unsigned char *d, long len) {
    long p = 10;
    if (len < 10) return 0;
    int count = d[8] << 8 | d[9];
    for (int i = 1; i < count; i++) {
        if (p >= len) return 0;
        switch (d[p]) {
        case 1: if (p + 3 > len) return 0; p += 3 + (d[p + 1] << 8 | d[p + 2]); break;
        case 3: case 4: case 9: case 10: case 11: case 12: case 17: case 18: p += 5; break;
        case 5: case 6: p += 9; i++; break;
        case 7: case 8: case 16: case 19: case 20: p += 3; break;
        case 15: p += 4; break;
        default: return 0;
        }
    }
    return p <= len ? p : 0;
}

static void JNICALL hook(jvmtiEnv *j, JNIEnv *env, jclass redefined, jobject loader, const char *name, jobject pd,
                         jint len, const unsigned char *data, jint *new_len, unsigned char **new_data) {
    if (!name || !(dump || replay || append)) return;
    if (dump) { write_class(name, len, data); return; }
    if (!live) return;
    long n;
    unsigned char *b = read_class(name, &n);
    if (!b) return;
    if (n == len && memcmp(b, data, len) == 0) { free(b); return; }  /* the shim left it unchanged */
    unsigned char *out = NULL;
    long out_len = 0;
    if (replay) {
        out_len = n;
        if ((*j)->Allocate(j, out_len, &out) == JVMTI_ERROR_NONE) memcpy(out, b, n);
    } else {
        static const char extra[] = "jvmpi-floor";
        long e = pool_end(data, len), k = sizeof extra - 1;
        int count = data[8] << 8 | data[9];
        out_len = len + 3 + k;
        if (e && count < 0xffff && (*j)->Allocate(j, out_len, &out) == JVMTI_ERROR_NONE) {
            memcpy(out, data, e);
            out[8] = (count + 1) >> 8;
            out[9] = (count + 1) & 0xff;
            out[e] = 1;
            out[e + 1] = k >> 8;
            out[e + 2] = k & 0xff;
            memcpy(out + e + 3, extra, k);
            memcpy(out + e + 3 + k, data + e, len - e);
        } else {
            out = NULL;
        }
    }
    free(b);
    if (out) { *new_data = out; *new_len = (jint)out_len; }
}

/* The tracker's natives (static): each call counts as one event. */
static void JNICALL on_class(JNIEnv *env, jclass k, jobject o, jclass c, jint h) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_hash(JNIEnv *env, jclass k, jobject o, jint h) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_object(JNIEnv *env, jclass k, jobject o) { __sync_add_and_fetch(&events, 1); }

static void define_tracker(jvmtiEnv *j, JNIEnv *env) {
    long n;
    unsigned char *b = read_class("JvmpiShimTracker", &n);
    if (!b) { fprintf(stderr, "floor: no %s/JvmpiShimTracker.class\n", dir); return; }
    jclass k = (*env)->DefineClass(env, "JvmpiShimTracker", NULL, (const jbyte *)b, (jsize)n);
    free(b);
    if (!k) { (*env)->ExceptionDescribe(env); return; }
    JNINativeMethod natives[] = {
        {"onInit", "(Ljava/lang/Object;Ljava/lang/Class;I)V", (void *)on_class},
        {"onNew", "(Ljava/lang/Object;Ljava/lang/Class;I)V", (void *)on_class},
        {"onNewObject", "(Ljava/lang/Object;I)V", (void *)on_hash},
        {"onMade", "(Ljava/lang/Object;)V", (void *)on_object},
        {"onReflectNew", "(Ljava/lang/Object;)V", (void *)on_object},
    };
    if ((*env)->RegisterNatives(env, k, natives, 5) != 0) { (*env)->ExceptionDescribe(env); return; }
    /* java.base's classes call it: java.base reads the boot loader's unnamed module. */
    jclass object = (*env)->FindClass(env, "java/lang/Object");
    if (object) (*j)->AddModuleReads(j, (*env)->GetModule(env, object), (*env)->GetModule(env, k));
    jfieldID on = (*env)->GetStaticFieldID(env, k, "on", "Z");
    if (on) (*env)->SetStaticBooleanField(env, k, on, JNI_TRUE);
    (*env)->ExceptionClear(env);
}

static void JNICALL vm_init(jvmtiEnv *j, JNIEnv *env, jthread t) {
    struct timespec a, b;
    jint n = 0, m = 0;
    jclass *all;
    if (dump) return;
    live = 1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (replay) define_tracker(j, env);
    if ((*j)->GetLoadedClasses(j, &n, &all) != JVMTI_ERROR_NONE) return;
    for (jint i = 0; i < n; i++) {
        jboolean ok = JNI_FALSE;
        (*j)->IsModifiableClass(j, all[i], &ok);
        if (ok) all[m++] = all[i];
    }
    if (two) {
        struct half h = {j, 0, malloc(sizeof(jclass) * (m / 2 + 1))};
        pthread_t t;
        jint mine = 0;
        for (jint i = 0; i < m; i++) {
            if (i % 2) h.ks[h.n++] = (*env)->NewGlobalRef(env, all[i]);
            else all[mine++] = all[i];
        }
        int started = pthread_create(&t, NULL, helper, &h) == 0;
        retransform(j, mine, all);
        if (started) pthread_join(t, NULL);
        else retransform(j, h.n, h.ks);
        for (jint i = 0; i < h.n; i++) (*env)->DeleteGlobalRef(env, h.ks[i]);
        free(h.ks);
    } else {
        retransform(j, m, all);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (print) fprintf(stderr, "retransformed %d classes in %.1f ms\n", m, (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
    (*j)->Deallocate(j, (unsigned char *)all);
}

static void JNICALL vm_death(jvmtiEnv *j, JNIEnv *env) {
    if (print) fprintf(stderr, "floor: %ld tracker events\n", events);
}

/* The value of option KEY (KEY=value, up to the next ',') into dir; whether it was there. */
static int option(const char *options, const char *key) {
    const char *p = options ? strstr(options, key) : NULL;
    if (!p) return 0;
    p += strlen(key);
    size_t n = strcspn(p, ",");
    if (n >= sizeof dir) n = sizeof dir - 1;
    memcpy(dir, p, n);
    dir[n] = 0;
    return 1;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *j;
    jvmtiCapabilities c;
    jvmtiEventCallbacks cb;
    print = options && strstr(options, "print");
    two = options && strstr(options, "two");
    dump = option(options, "dump=");
    replay = !dump && option(options, "replay=");
    append = !dump && !replay && option(options, "append=");
    jvm = vm;
    if ((*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
    memset(&c, 0, sizeof c);
    c.can_retransform_classes = 1;
    c.can_retransform_any_class = 1;
    if ((*j)->AddCapabilities(j, &c) != JVMTI_ERROR_NONE) return JNI_ERR;
    memset(&cb, 0, sizeof cb);
    cb.VMInit = vm_init;
    cb.VMDeath = vm_death;
    cb.ClassFileLoadHook = hook;
    (*j)->SetEventCallbacks(j, &cb, sizeof cb);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
    return JNI_OK;
}
