/* A JVMPI agent for the start-up and shutdown benchmark (scripts/bench-startup.sh): option
 * "none" enables nothing, "alloc" OBJECT_ALLOC and OBJECT_FREE, "methods" METHOD_ENTRY and
 * METHOD_EXIT; the events are counted. With "print" the counts are printed at JVM_SHUT_DOWN
 * (enabled only then, so that the timed runs enable exactly the events named). */
#include <jni.h>
#include <jvmpi.h>
#include <stdio.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static volatile long allocs, frees, entries, exits;

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_OBJECT_ALLOC: __sync_add_and_fetch(&allocs, 1); break;
    case JVMPI_EVENT_OBJECT_FREE: __sync_add_and_fetch(&frees, 1); break;
    case JVMPI_EVENT_METHOD_ENTRY: __sync_add_and_fetch(&entries, 1); break;
    case JVMPI_EVENT_METHOD_EXIT: __sync_add_and_fetch(&exits, 1); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        printf("agent: allocs=%ld frees=%ld entries=%ld exits=%ld\n", allocs, frees, entries, exits);
        fflush(stdout);
        break;
    }
}

static int enable(jint ev) { return jvmpi->EnableEvent(ev, NULL) == JVMPI_SUCCESS; }

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    const char *o = options ? options : "";
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    if (strstr(o, "alloc") && !(enable(JVMPI_EVENT_OBJECT_ALLOC) && enable(JVMPI_EVENT_OBJECT_FREE))) return JNI_ERR;
    if (strstr(o, "methods") && !(enable(JVMPI_EVENT_METHOD_ENTRY) && enable(JVMPI_EVENT_METHOD_EXIT))) return JNI_ERR;
    if (strstr(o, "print") && !enable(JVMPI_EVENT_JVM_SHUT_DOWN)) return JNI_ERR;
    return JNI_OK;
}
