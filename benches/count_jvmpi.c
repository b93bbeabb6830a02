/* A legacy-style JVMPI agent for the benchmark: counts OBJECT_ALLOC and OBJECT_FREE (option
 * "count"), enables them and switches them off again before the program runs (option "off"),
 * or enables nothing but JVM_SHUT_DOWN (option "none"). Prints its counts and the
 * process's peak RSS at JVM_SHUT_DOWN. */
#include <jni.h>
#include <jvmpi.h>
#include <stdio.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static volatile long allocs, frees;

static long peak_rss_kb(void) {
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) sscanf(line + 6, "%ld", &kb);
    if (f) fclose(f);
    return kb;
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_OBJECT_ALLOC: __sync_add_and_fetch(&allocs, 1); break;
    case JVMPI_EVENT_OBJECT_FREE: __sync_add_and_fetch(&frees, 1); break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        /* "off": the instrumentation is installed, then switched off before the program runs. */
        jvmpi->DisableEvent(JVMPI_EVENT_OBJECT_ALLOC, NULL);
        jvmpi->DisableEvent(JVMPI_EVENT_OBJECT_FREE, NULL);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        printf("agent: allocs=%ld frees=%ld peak_rss_kb=%ld\n", allocs, frees, peak_rss_kb());
        fflush(stdout);
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    if (options && (strstr(options, "count") || strstr(options, "off"))) {
        jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_ALLOC, NULL);
        jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_FREE, NULL);
    }
    if (options && strstr(options, "off")) jvmpi->EnableEvent(JVMPI_EVENT_JVM_INIT_DONE, NULL);
    return JNI_OK;
}
