/* The JVMTI floor of a virtual thread's start and end for scripts/bench-vthreads.sh: a plain
 * JVMTI agent that takes can_support_virtual_threads and counts VirtualThreadStart and
 * VirtualThreadEnd, keeping a small record per virtual thread in its JVMTI thread-local
 * storage (malloc at the start, free at the end), as the shim does for each. Prints its counts
 * at VMDeath. */
#include <jvmti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built against JDK 17's jvmti.h, which predates virtual threads: JDK 21's additions spelled out
 * (capability bit 44, events 87 and 88, their callbacks right after SampledObjectAlloc). */
#define VIRTUAL_THREAD_START ((jvmtiEvent)87)
#define VIRTUAL_THREAD_END ((jvmtiEvent)88)
typedef void(JNICALL *vt_callback)(jvmtiEnv *, JNIEnv *, jthread);
struct callbacks21 {
    jvmtiEventCallbacks base;
    vt_callback VirtualThreadStart, VirtualThreadEnd;
};

static volatile long starts, ends;

static void JNICALL vt_start(jvmtiEnv *j, JNIEnv *env, jthread t) {
    (void)env;
    void *rec = calloc(1, 64);
    (*j)->SetThreadLocalStorage(j, t, rec);
    __sync_add_and_fetch(&starts, 1);
}

static void JNICALL vt_end(jvmtiEnv *j, JNIEnv *env, jthread t) {
    (void)env;
    void *rec = NULL;
    (*j)->GetThreadLocalStorage(j, t, &rec);
    free(rec);
    __sync_add_and_fetch(&ends, 1);
}

static void JNICALL vm_death(jvmtiEnv *j, JNIEnv *env) {
    (void)j; (void)env;
    fprintf(stderr, "VTJVMTI starts=%ld ends=%ld\n", starts, ends);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)options; (void)reserved;
    jvmtiEnv *j;
    if ((*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    jvmtiCapabilities c;
    memset(&c, 0, sizeof c);
    ((unsigned int *)&c)[1] |= 1u << 12; /* can_support_virtual_threads, bit 44 */
    if ((*j)->AddCapabilities(j, &c) != JVMTI_ERROR_NONE) return JNI_ERR;
    struct callbacks21 cb;
    memset(&cb, 0, sizeof cb);
    cb.VirtualThreadStart = vt_start;
    cb.VirtualThreadEnd = vt_end;
    cb.base.VMDeath = vm_death;
    (*j)->SetEventCallbacks(j, &cb.base, sizeof cb);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, VIRTUAL_THREAD_START, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, VIRTUAL_THREAD_END, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
    return JNI_OK;
}
