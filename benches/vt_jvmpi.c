/* A legacy-style JVMPI agent for scripts/bench-vthreads.sh that follows threads as HPROF did: a
 * record per thread made at THREAD_START and kept in the thread's JVMPI thread-local storage
 * (keyed by its env_id), freed at THREAD_END. Prints its counts at JVM_SHUT_DOWN. */
#include <jni.h>
#include <jvmpi.h>
#include <stdio.h>
#include <stdlib.h>

static JVMPI_Interface *jvmpi;
static volatile long starts, ends;

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_THREAD_START:
        jvmpi->SetThreadLocalStorage(e->u.thread_start.thread_env_id, calloc(1, 64));
        __sync_add_and_fetch(&starts, 1);
        break;
    case JVMPI_EVENT_THREAD_END:
        free(jvmpi->GetThreadLocalStorage(e->env_id));
        jvmpi->SetThreadLocalStorage(e->env_id, NULL);
        __sync_add_and_fetch(&ends, 1);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        fprintf(stderr, "VTJVMPI starts=%ld ends=%ld\n", starts, ends);
        break;
    default:
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)options; (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    if (jvmpi->EnableEvent(JVMPI_EVENT_THREAD_START, NULL) != JVMPI_SUCCESS ||
        jvmpi->EnableEvent(JVMPI_EVENT_THREAD_END, NULL) != JVMPI_SUCCESS ||
        jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL) != JVMPI_SUCCESS)
        return JNI_ERR;
    return JNI_OK;
}
