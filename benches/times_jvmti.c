/* A plain JVMTI agent doing HPROF cpu=times's job the JVMTI way (scripts/bench-times.sh): the
 * MethodEntry and MethodExit events (HotSpot runs a thread that has them in interpreter-only
 * mode), GetCurrentThreadCpuTime at each, the costs kept per thread (benches/times_common.h).
 * At VMDeath prints what it counted. */
#include <jvmti.h>
#include <string.h>
#include "times_common.h"

static void JNICALL entry(jvmtiEnv *j, JNIEnv *e, jthread t, jmethodID m) {
    (void)e, (void)t;
    jlong now = 0;
    (*j)->GetCurrentThreadCpuTime(j, &now);
    on_entry(m, now);
}

static void JNICALL exit_(jvmtiEnv *j, JNIEnv *e, jthread t, jmethodID m, jboolean popped, jvalue v) {
    (void)e, (void)t, (void)m, (void)popped, (void)v;
    jlong now = 0;
    (*j)->GetCurrentThreadCpuTime(j, &now);
    on_exit_(now);
}

static void JNICALL death(jvmtiEnv *j, JNIEnv *e) { (void)j, (void)e; report(); }

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)options, (void)reserved;
    jvmtiEnv *j;
    if ((*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    jvmtiCapabilities c;
    memset(&c, 0, sizeof c);
    c.can_generate_method_entry_events = 1;
    c.can_generate_method_exit_events = 1;
    c.can_get_current_thread_cpu_time = 1;
    if ((*j)->AddCapabilities(j, &c) != JVMTI_ERROR_NONE) return JNI_ERR;
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.MethodEntry = entry;
    cb.MethodExit = exit_;
    cb.VMDeath = death;
    (*j)->SetEventCallbacks(j, &cb, sizeof cb);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_METHOD_EXIT, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
    return JNI_OK;
}
