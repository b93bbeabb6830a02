/* A legacy-style JVMPI agent for scripts/bench-jit.sh: enables nothing but JVM_SHUT_DOWN
 * (option "none"), COMPILED_METHOD_LOAD/UNLOAD and counts them and their line-table entries
 * (option "cml"), or the five Java monitor events and counts them (option "mon"). Prints its
 * counts at JVM_SHUT_DOWN. */
#include <jni.h>
#include <jvmpi.h>
#include <stdio.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static volatile long loads, unloads, entries, monitor_events;

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_COMPILED_METHOD_LOAD:
        __sync_add_and_fetch(&loads, 1);
        __sync_add_and_fetch(&entries, e->u.compiled_method_load.lineno_table_size);
        break;
    case JVMPI_EVENT_COMPILED_METHOD_UNLOAD: __sync_add_and_fetch(&unloads, 1); break;
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTER:
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTERED:
    case JVMPI_EVENT_MONITOR_CONTENDED_EXIT:
    case JVMPI_EVENT_MONITOR_WAIT:
    case JVMPI_EVENT_MONITOR_WAITED: __sync_add_and_fetch(&monitor_events, 1); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        printf("agent: compiled_loads=%ld unloads=%ld lineno_entries=%ld monitor_events=%ld\n", loads, unloads, entries,
               monitor_events);
        fflush(stdout);
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    int i;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    if (options && strstr(options, "cml")) {
        jvmpi->EnableEvent(JVMPI_EVENT_COMPILED_METHOD_LOAD, NULL);
        jvmpi->EnableEvent(JVMPI_EVENT_COMPILED_METHOD_UNLOAD, NULL);
    }
    if (options && strstr(options, "mon"))
        for (i = JVMPI_EVENT_MONITOR_CONTENDED_ENTER; i <= JVMPI_EVENT_MONITOR_WAITED; i++) jvmpi->EnableEvent(i, NULL);
    return JNI_OK;
}
