/* The floor of instrumenting the classes loaded before an agent's events are known: a plain
 * JVMTI agent that, at VMInit, retransforms every modifiable loaded class (in batches of 64, as
 * the shim does) with a class-file hook that changes nothing — the JVM's own part of what the
 * shim does when a legacy agent enables OBJECT_ALLOC or METHOD_ENTRY in JVM_OnLoad (which the
 * shim runs at VMInit). Prints the number of classes and the time with option "print". With
 * option "two", every other class is retransformed by a second thread attached to the JVM
 * meanwhile, as the shim does at start-up on a machine with two CPUs or more. */
#include <jvmti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int print, two;
static JavaVM *jvm;

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

static void JNICALL hook(jvmtiEnv *j, JNIEnv *env, jclass redefined, jobject loader, const char *name, jobject pd,
                         jint len, const unsigned char *data, jint *new_len, unsigned char **new_data) {}

static void JNICALL vm_init(jvmtiEnv *j, JNIEnv *env, jthread t) {
    struct timespec a, b;
    jint n = 0, m = 0;
    jclass *all;
    clock_gettime(CLOCK_MONOTONIC, &a);
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

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *j;
    jvmtiCapabilities c;
    jvmtiEventCallbacks cb;
    print = options && strstr(options, "print");
    two = options && strstr(options, "two");
    jvm = vm;
    if ((*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    memset(&c, 0, sizeof c);
    c.can_retransform_classes = 1;
    c.can_retransform_any_class = 1;
    if ((*j)->AddCapabilities(j, &c) != JVMTI_ERROR_NONE) return JNI_ERR;
    memset(&cb, 0, sizeof cb);
    cb.VMInit = vm_init;
    cb.ClassFileLoadHook = hook;
    (*j)->SetEventCallbacks(j, &cb, sizeof cb);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
    return JNI_OK;
}
