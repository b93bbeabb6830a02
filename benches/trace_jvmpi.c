/* A legacy-style JVMPI agent for the call-trace benchmark (benches/TraceBench.java): implements
 * TraceBench.probe() (the shim binds the agent library's Java_… functions, as HotSpot did).
 * Options:
 *   "trace"      GetCallTrace(depth 4) of the current thread — frames carry their line numbers;
 *   "empty"      nothing (the floor);
 *   "alternate"  in one process, blocks of BLOCK calls taking turns: nothing, JVMTI
 *                GetStackTrace(depth 4) (a JVMTI environment of the agent's own, as any agent can
 *                get beside JVMPI), the same with lines from tables cached per jmethodID, and
 *                GetCallTrace(depth 4). Each block's thread CPU time is read at its ends; a cycle
 *                is one block of each. At JVM_SHUT_DOWN it prints, over the cycles after the first
 *                quarter (the warm-up), the medians (and quartiles) per call of each less the empty
 *                block of its cycle, and of GetCallTrace's ratio to the others within each cycle:
 *                what the load of the machine does to the process it does to the four alike.
 * Returns a checksum: frames * 100000 + the sum of the lines (the same in every mode that reads lines). */
#include <jni.h>
#include <jvmpi.h>
#include <jvmti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEPTH 4
static JVMPI_Interface *jvmpi;
static jvmtiEnv *jvmti;
#include "line_cache.h"
static int mode = 1; /* 0 empty, 1 trace, 2 alternate */

static jint call_trace(JNIEnv *env) {
    JVMPI_CallFrame f[DEPTH];
    JVMPI_CallTrace t;
    jint sum = 0;
    t.env_id = env;
    t.frames = f;
    t.num_frames = 0;
    jvmpi->GetCallTrace(&t, DEPTH);
    for (jint i = 0; i < t.num_frames; i++) sum += f[i].lineno;
    return t.num_frames * 100000 + sum;
}

/* ---- "alternate": the JVMTI side, as benches/trace_jvmti.c's "trace" and "cached" ---- */


static jint stack_trace(int lines) {
    jvmtiFrameInfo f[DEPTH];
    jint n = 0, sum = 0;
    if ((*jvmti)->GetStackTrace(jvmti, NULL, 0, DEPTH, f, &n) != JVMTI_ERROR_NONE) return -1;
    if (lines)
        for (jint i = 0; i < n; i++) sum += cached_line_of(f[i].method, f[i].location);
    return n * 100000 + sum;
}

/* Blocks and cycles. Kinds: 0 nothing, 1 GetStackTrace, 2 + cached lines, 3 GetCallTrace. */
#define KINDS 4
#define BLOCK 2000
#define MAX_CYCLES 100000
static const char *kind_name[KINDS] = {"empty", "GetStackTrace", "GetStackTrace + cached lines", "GetCallTrace"};
static long long (*cycles)[KINDS]; /* CPU ns of each kind's block, per cycle */
static int ncycles, kind, calls;
static long long block_start;
static jint checksum[KINDS];

static long long thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static jint alternate(JNIEnv *env) {
    if (calls == 0) block_start = thread_cpu_ns();
    jint r = kind == 0 ? 0 : kind == 3 ? call_trace(env) : stack_trace(kind == 2);
    checksum[kind] = r;
    if (++calls == BLOCK) {
        long long now = thread_cpu_ns();
        if (ncycles < MAX_CYCLES) cycles[ncycles][kind] = now - block_start;
        calls = 0;
        if (++kind == KINDS) kind = 0, ncycles++;
    }
    return r;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The quartiles of v[0..n) (sorted in place): q[0] lower, q[1] median, q[2] upper. */
static void quartiles(double *v, int n, double q[3]) {
    qsort(v, n, sizeof *v, cmp_double);
    for (int i = 0; i < 3; i++) q[i] = n ? v[(n - 1) * (i + 1) / 4] : 0;
}

static void report(void) {
    int from = ncycles / 4, n = (ncycles < MAX_CYCLES ? ncycles : MAX_CYCLES) - from;
    if (n <= 0) {
        printf("alternate: too few calls (%d cycles of %d blocks of %d)\n", ncycles, KINDS, BLOCK);
        return;
    }
    double *v = malloc(n * sizeof *v), q[3];
    printf("alternate: %d cycles of %d blocks of %d calls (the first %d left out); per call, less the empty block:\n",
           n, KINDS, BLOCK, from);
    for (int k = 0; k < KINDS; k++) {
        for (int i = 0; i < n; i++)
            v[i] = (double)(k ? cycles[from + i][k] - cycles[from + i][0] : cycles[from + i][0]) / BLOCK;
        quartiles(v, n, q);
        printf("alternate: kind=%d %-30s median %7.0f ns  [quartiles %.0f-%.0f]  checksum %d\n", k,
               k ? kind_name[k] : "empty (the whole call)", q[1], q[0], q[2], checksum[k]);
    }
    for (int k = 1; k < 3; k++) {
        for (int i = 0; i < n; i++)
            v[i] = (double)(cycles[from + i][3] - cycles[from + i][0]) / (double)(cycles[from + i][k] - cycles[from + i][0]);
        quartiles(v, n, q);
        printf("alternate: ratio=%d GetCallTrace / %-28s median %.2f  [quartiles %.2f-%.2f]\n", k, kind_name[k], q[1], q[0], q[2]);
    }
    fflush(stdout);
    free(v);
}

JNIEXPORT jint JNICALL Java_TraceBench_probe(JNIEnv *env, jclass c) {
    (void)c;
    return mode == 0 ? 0 : mode == 1 ? call_trace(env) : alternate(env);
}

static void notify(JVMPI_Event *e) {
    if (e->event_type == JVMPI_EVENT_JVM_SHUT_DOWN && mode == 2) report();
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    mode = !options ? 1 : !strcmp(options, "empty") ? 0 : !strcmp(options, "alternate") ? 2 : 1;
    if (mode == 2) {
        jvmtiCapabilities caps;
        if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
        memset(&caps, 0, sizeof caps);
        caps.can_get_line_numbers = 1;
        if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
        if (!(cycles = calloc(MAX_CYCLES, sizeof *cycles))) return JNI_ERR;
        if (jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    }
    return JNI_OK;
}
