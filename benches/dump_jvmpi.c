/* A JVMPI agent for the heap-dump benchmark. The program calls Java_HeapDumpBench_shimDump
 * (a native of this library), which requests a level-2 HEAP_DUMP; the time from RequestEvent
 * until the event reaches NotifyEvent is measured here. Peak memory: VmHWM is reset
 * (/proc/self/clear_refs, "5") just before the request and read in the handler, so the growth
 * of resident memory over VmRSS before the request is what the dump cost (the Java heap is
 * pre-touched, so it is native memory: the shim's buffers and the JVM's tag map).
 * cpu_ms is the CPU time of the whole process over the same span (the walk runs in the VM
 * thread, the rest in the calling thread; the others wait at the safepoint): on a machine shared
 * with other work it says more than the wall time.
 * With DUMP_OUT=<prefix> in the environment, each dump's bytes are written to <prefix>.<n>.
 * Prints: shim: rc=<rc> ms=<ms> cpu_ms=<ms> bytes=<dump size> rss_before_kb=<kb> peak_kb=<kb> growth_kb=<kb> */
#include <jni.h>
#include <jvmpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static JVMPI_Interface *jvmpi;
static struct timespec t0, c0;
static double ms, cpu_ms;
static long bytes, rss_before, peak;

static long status_kb(const char *key) {
    char line[256];
    long kb = -1;
    size_t n = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) sscanf(line + n, "%ld", &kb);
    if (f) fclose(f);
    return kb;
}

static void notify(JVMPI_Event *e) {
    if ((e->event_type & ~JVMPI_REQUESTED_EVENT) != JVMPI_EVENT_HEAP_DUMP) return;
    struct timespec t1, c1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    cpu_ms = (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6;
    peak = status_kb("VmHWM:");
    bytes = (long)(e->u.heap_dump.end - e->u.heap_dump.begin);
    /* DUMP_OUT=<prefix>: each dump's bytes to <prefix>.<n> (to compare two builds' dumps). */
    static int n;
    const char *p = getenv("DUMP_OUT");
    if (p) {
        char name[4096];
        snprintf(name, sizeof name, "%s.%d", p, n++);
        FILE *f = fopen(name, "wb");
        if (f) {
            fwrite(e->u.heap_dump.begin, 1, (size_t)bytes, f);
            fclose(f);
        }
    }
}

JNIEXPORT void JNICALL Java_HeapDumpBench_shimDump(JNIEnv *env, jclass c) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
    rss_before = status_kb("VmRSS:");
    JVMPI_HeapDumpArg arg;
    arg.heap_dump_level = JVMPI_DUMP_LEVEL_2;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    jint rc = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &arg);
    printf("shim: rc=%d ms=%.1f cpu_ms=%.1f bytes=%ld rss_before_kb=%ld peak_kb=%ld growth_kb=%ld\n", (int)rc, ms, cpu_ms, bytes,
           rss_before, peak, peak - rss_before);
    fflush(stdout);
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    return JNI_OK;
}
