/* The floor of instrumenting the classes loaded before an agent's events are known: a plain
 * JVMTI agent that, at VMInit, retransforms every modifiable loaded class (in batches of 64, as
 * the shim does) with a class-file hook that changes nothing — the JVM's own part of what the
 * shim does when a legacy agent enables OBJECT_ALLOC or METHOD_ENTRY in JVM_OnLoad (which the
 * shim runs at VMInit). Prints the number of classes and the time with option "print". */
#include <jvmti.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int print;

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
    for (jint i = 0; i < m; i += 64) (*j)->RetransformClasses(j, m - i < 64 ? m - i : 64, all + i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (print) fprintf(stderr, "retransformed %d classes in %.1f ms\n", m, (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
    (*j)->Deallocate(j, (unsigned char *)all);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *j;
    jvmtiCapabilities c;
    jvmtiEventCallbacks cb;
    print = options && strstr(options, "print");
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
