/* A JVMPI agent doing benches/times_jvmti.c's job through the shim (scripts/bench-times.sh):
 * METHOD_ENTRY and METHOD_EXIT, GetCurrentThreadCpuTime at each, the costs kept per thread
 * (benches/times_common.h). At JVM_SHUT_DOWN prints what it counted. */
#include <jni.h>
#include <jvmpi.h>
#include "times_common.h"

static JVMPI_Interface *jvmpi;

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_METHOD_ENTRY: on_entry(e->u.method.method_id, jvmpi->GetCurrentThreadCpuTime()); break;
    case JVMPI_EVENT_METHOD_EXIT: on_exit_(jvmpi->GetCurrentThreadCpuTime()); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: report(); break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)options, (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    if (jvmpi->EnableEvent(JVMPI_EVENT_METHOD_ENTRY, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    if (jvmpi->EnableEvent(JVMPI_EVENT_METHOD_EXIT, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    return JNI_OK;
}
