/* The floor of instrumenting the classes loaded before an agent's events are known: a plain
 * JVMTI agent that, at VMInit, retransforms every modifiable loaded class (in batches of 64, as
 * the shim does) with a class-file hook that changes nothing — the JVM's own part of what the
 * shim does when a legacy agent enables OBJECT_ALLOC or METHOD_ENTRY in JVM_OnLoad (which the
 * shim runs at VMInit). Prints the number of classes and the time with option "print". With
 * option "two", every other class is retransformed by a second thread attached to the JVM
 * meanwhile, as the shim does at start-up on a machine with two CPUs or more.
 *
 * The floor of the classes that really change (options, comma-separated, with "two" or not):
 *   dump=FILE    retransforms nothing: loaded after the shim (-agentpath order), its hook sees
 *                the class files as the shim's hook left them and records each in FILE, at
 *                loading and at retransformation alike;
 *   replay=FILE  the floor above, but the hook hands the JVM FILE's class file whenever it
 *                differs from the bytes the JVM offers (a class the shim changed), at VMInit's
 *                retransformation and at every later loading alike: the JVM's whole part of the
 *                shim's instrumentation (parsing the bigger class files, merging the constant
 *                pools, replacing the changed methods, loading changed classes without the
 *                shared archive). The trackers those class files call are FILE's JvmpiShimTracker
 *                (allocations) and JvmpiShimMethods (method events), whichever FILE holds,
 *                defined in the boot loader at VMInit, switched on, with natives that only count
 *                (printed at VM death with "print"). Before VMInit nothing is changed, as with
 *                the shim (it instruments nothing before JVM_OnLoad has run);
 *   append=FILE  the same classes changed as little as a class can change: one constant-pool
 *                entry (a Utf8) appended to the JVM's own bytes; no tracker. */
#include <jvmti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The recorded class files: FILE holds records (u32 name length, name, u32 length, bytes) in the
 * order the hook saw them, mapped whole at Agent_OnLoad and indexed by name (a later record of a
 * name wins: a class retransformed after it loaded), so that the hook reads no file itself. */
#define SLOTS 8192
static struct entry { const char *name; unsigned name_len; const unsigned char *data; unsigned len; } table[SLOTS];
static FILE *out_file;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned hash(const char *s, size_t n) {
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static struct entry *slot(const char *name, size_t n) {
    for (unsigned i = hash(name, n) % SLOTS, k = 0; k < SLOTS; i = (i + 1) % SLOTS, k++)
        if (!table[i].name || (table[i].name_len == n && memcmp(table[i].name, name, n) == 0)) return &table[i];
    return NULL;
}

static unsigned u32(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 | (unsigned)p[3] << 24; }

static int load_records(void) {
    int fd = open(dir, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) { fprintf(stderr, "floor: cannot read %s\n", dir); return 0; }
    const unsigned char *m = mmap(NULL, st.st_size ? st.st_size : 1, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return 0;
    for (off_t p = 0; p + 8 <= st.st_size;) {
        unsigned n = u32(m + p), len;
        if (p + 8 + n > st.st_size) break;
        len = u32(m + p + 4 + n);
        if (p + 8 + n + len > st.st_size) break;
        struct entry *e = slot((const char *)m + p + 4, n);
        if (e) *e = (struct entry){(const char *)m + p + 4, n, m + p + 8 + n, len};
        p += 8 + n + len;
    }
    return 1;
}

static void write_record(const char *name, jint len, const unsigned char *data) {
    unsigned char h[4];
    unsigned n = strlen(name);
    pthread_mutex_lock(&out_lock);
    for (int i = 0; i < 4; i++) h[i] = n >> (8 * i);
    fwrite(h, 1, 4, out_file);
    fwrite(name, 1, n, out_file);
    for (int i = 0; i < 4; i++) h[i] = (unsigned)len >> (8 * i);
    fwrite(h, 1, 4, out_file);
    fwrite(data, 1, len, out_file);
    pthread_mutex_unlock(&out_lock);
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
    if (dump) { write_record(name, len, data); return; }
    if (!live) return;
    struct entry *r = slot(name, strlen(name));
    if (!r || !r->name) return;
    const unsigned char *b = r->data;
    long n = r->len;
    if (n == len && memcmp(b, data, len) == 0) return;  /* the shim left it unchanged */
    if (redefined) {  /* a class loaded while another is retransformed (JDK 25: Module$ReflectionData) */
        char *sig = NULL;
        int other = 0;
        if ((*j)->GetClassSignature(j, redefined, &sig, NULL) == JVMTI_ERROR_NONE && sig) {
            size_t m = strlen(sig);
            other = !(m == strlen(name) + 2 && memcmp(sig + 1, name, m - 2) == 0);
            (*j)->Deallocate(j, (unsigned char *)sig);
        }
        if (other) return;
    }
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
    if (out) { *new_data = out; *new_len = (jint)out_len; }
}

/* The tracker's natives (static): each call counts as one event. */
static void JNICALL on_class(JNIEnv *env, jclass k, jobject o, jclass c, jint h) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_hash(JNIEnv *env, jclass k, jobject o, jint h) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_object(JNIEnv *env, jclass k, jobject o) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_shaped(JNIEnv *env, jclass k, jobject o, jclass c, jlong t, jlong i, jint s, jint n) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_obj_shaped(JNIEnv *env, jclass k, jobject o, jlong t, jlong i, jint s) { __sync_add_and_fetch(&events, 1); }

/* The method tracker's natives (static), for the class files of METHOD_ENTRY/EXIT. */
static void JNICALL on_i(JNIEnv *env, jclass k, jint a) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_oi(JNIEnv *env, jclass k, jobject o, jint a) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_ii(JNIEnv *env, jclass k, jint a, jint b) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_iii(JNIEnv *env, jclass k, jint a, jint b, jint c) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_iiii(JNIEnv *env, jclass k, jint a, jint b, jint c, jint d) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_iiiii(JNIEnv *env, jclass k, jint a, jint b, jint c, jint d, jint e) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_oiii(JNIEnv *env, jclass k, jobject o, jint a, jint b, jint c) { __sync_add_and_fetch(&events, 1); }
static void JNICALL on_ooiii(JNIEnv *env, jclass k, jobject o, jobject p, jint a, jint b, jint c) { __sync_add_and_fetch(&events, 1); }

/* FILE's method tracker (JvmpiShimMethods), when the shim's class files call it (METHOD_ENTRY/
 * EXIT), defined in the boot loader with natives that only count. */
static void define_method_tracker(jvmtiEnv *j, JNIEnv *env) {
    struct entry *r = slot("JvmpiShimMethods", 16);
    if (!r || !r->name) return;
    jclass k = (*env)->DefineClass(env, "JvmpiShimMethods", NULL, (const jbyte *)r->data, (jsize)r->len);
    if (!k) { (*env)->ExceptionDescribe(env); return; }
    JNINativeMethod natives[] = {
        {"enter", "(I)V", (void *)on_i},
        {"enterThis", "(Ljava/lang/Object;I)V", (void *)on_oi},
        {"exit", "(I)V", (void *)on_i},
        {"insn", "(II)V", (void *)on_ii},
        {"ifInt", "(IIII)V", (void *)on_iiii},
        {"ifCmp", "(IIIII)V", (void *)on_iiiii},
        {"ifRef", "(Ljava/lang/Object;III)V", (void *)on_oiii},
        {"ifAcmp", "(Ljava/lang/Object;Ljava/lang/Object;III)V", (void *)on_ooiii},
        {"tableSwitch", "(IIIII)V", (void *)on_iiiii},
        {"lookupSwitch", "(III)V", (void *)on_iii},
    };
    if ((*env)->RegisterNatives(env, k, natives, 10) != 0) { (*env)->ExceptionDescribe(env); return; }
    jclass object = (*env)->FindClass(env, "java/lang/Object");
    if (object) (*j)->AddModuleReads(j, (*env)->GetModule(env, object), (*env)->GetModule(env, k));
    (*env)->ExceptionClear(env);
}

static void define_tracker(jvmtiEnv *j, JNIEnv *env) {
    struct entry *r = slot("JvmpiShimTracker", 16);
    define_method_tracker(j, env);
    if (!r || !r->name) {
        if (!slot("JvmpiShimMethods", 16) || !slot("JvmpiShimMethods", 16)->name)
            fprintf(stderr, "floor: no JvmpiShimTracker or JvmpiShimMethods in %s\n", dir);
        return;
    }
    /* The tracker's table of shapes: its shape class as the shim defined it, the table empty (every
     * hook takes the counting native without a shape). */
    struct entry *sh = slot("JvmpiShimTracker$Shape", 22);
    jclass shape = NULL;
    if (sh && sh->name) {
        shape = (*env)->DefineClass(env, "JvmpiShimTracker$Shape", NULL, (const jbyte *)sh->data, (jsize)sh->len);
        if (!shape) { (*env)->ExceptionDescribe(env); return; }
    }
    jclass k = (*env)->DefineClass(env, "JvmpiShimTracker", NULL, (const jbyte *)r->data, (jsize)r->len);
    if (!k) { (*env)->ExceptionDescribe(env); return; }
    if (shape) {
        jobjectArray table = (*env)->NewObjectArray(env, 1 << 14, shape, NULL); /* bci::SHAPES */
        jfieldID f = (*env)->GetStaticFieldID(env, k, "shapes", "[LJvmpiShimTracker$Shape;");
        if (!table || !f) { (*env)->ExceptionDescribe(env); return; }
        (*env)->SetStaticObjectField(env, k, f, table);
    }
    JNINativeMethod natives[] = {
        {"onInit", "(Ljava/lang/Object;Ljava/lang/Class;I)V", (void *)on_class},
        {"onNew", "(Ljava/lang/Object;Ljava/lang/Class;I)V", (void *)on_class},
        {"onNewObject", "(Ljava/lang/Object;I)V", (void *)on_hash},
        {"onMade", "(Ljava/lang/Object;)V", (void *)on_object},
        {"onReflectNew", "(Ljava/lang/Object;)V", (void *)on_object},
        {"onInitShaped", "(Ljava/lang/Object;Ljava/lang/Class;JJII)V", (void *)on_shaped},
        {"onNewShaped", "(Ljava/lang/Object;Ljava/lang/Class;JJII)V", (void *)on_shaped},
        {"onNewObjectShaped", "(Ljava/lang/Object;JJI)V", (void *)on_obj_shaped},
    };
    if ((*env)->RegisterNatives(env, k, natives, 8) != 0) { (*env)->ExceptionDescribe(env); return; }
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
    clock_gettime(CLOCK_MONOTONIC, &a);
    /* Not live yet: the classes AddModuleReads loads (JDK 25: Module$ReflectionData, WeakPairMap)
     * are loaded unchanged (changed, the JVM's Modules.transformedByAgent loads them again) and
     * replayed at the retransformation below. */
    if (replay) define_tracker(j, env);
    live = 1;
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
    if (dump && out_file) fflush(out_file);
    if (print) fprintf(stderr, "floor: %ld tracker events\n", events);
}

/* The value of option KEY (KEY=value, up to the next ',') into dir (a file's path); whether it
 * was there. */
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
    if (dump && !(out_file = fopen(dir, "wb"))) return JNI_ERR;
    if ((replay || append) && !load_records()) return JNI_ERR;
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
