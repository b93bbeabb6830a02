/*
 * badinput: an agent that hands the JVMPI functions garbage pointers (4 of 11 bad-input agents
 * tried crashed the JVM this way): RequestEvent with a garbage dump argument and garbage IDs,
 * GetCallTrace with a garbage trace or frames buffer, names that point nowhere, thread lists
 * that point nowhere, jobject2jobjectID of a garbage handle. Each call must come back with the
 * JVMPI failure value; then a real request must still work.
 *   <out>: R <call> <result>   (one line per call)
 *          DONE <phase>
 * Options: out=<file>,phase=onload|init|handler|shutdown  (where the calls are made; handler:
 * inside the first CLASS_LOAD after JVM_INIT_DONE)
 */
#include <jni.h>
#include <jvmpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static char out_path[1024] = "badinput.txt";
static char phase[32] = "init";
static int init_done, done;
static FILE *out;
static int heap_dumps;

#define BAD ((void *)(uintptr_t)0xdeadbeef)

static void r(const char *call, long v) { fprintf(out, "R %s %ld\n", call, v); fflush(out); }

static void dummy(void *arg) { (void)arg; }

static void garbage(JNIEnv *env) {
    done = 1; /* once: the heap dump below announces classes, whose CLASS_LOAD comes back here */
    out = fopen(out_path, "w");
    if (!out) return;
    r("RequestEvent(HEAP_DUMP,bad)", jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, BAD));
    r("RequestEvent(OBJECT_DUMP,bad)", jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, BAD));
    r("RequestEvent(OBJECT_ALLOC,bad)", jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, BAD));
    r("RequestEvent(CLASS_LOAD,bad)", jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, BAD));
    r("RequestEvent(THREAD_START,bad)", jvmpi->RequestEvent(JVMPI_EVENT_THREAD_START, BAD));
    JVMPI_HeapDumpArg level9 = { 9 };
    r("RequestEvent(HEAP_DUMP,level9)", jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &level9));
    jvmpi->GetCallTrace((JVMPI_CallTrace *)BAD, 10);
    r("GetCallTrace(bad)", 0);
    JVMPI_CallTrace t = { env, 77, (JVMPI_CallFrame *)BAD };
    jvmpi->GetCallTrace(&t, 10);
    r("GetCallTrace(frames=bad).num_frames", t.num_frames);
    t.frames = (JVMPI_CallFrame *)"read-only string: not a frames buffer";
    t.num_frames = 77;
    jvmpi->GetCallTrace(&t, 1000000);
    r("GetCallTrace(frames=readonly).num_frames", t.num_frames);
    JVMPI_CallFrame frames[64];
    t.frames = frames;
    t.num_frames = 77;
    jvmpi->GetCallTrace(&t, 64);
    r("GetCallTrace(good).written", t.num_frames >= 0 && t.num_frames <= 64);
    r("RawMonitorCreate(bad)==NULL", jvmpi->RawMonitorCreate((char *)BAD) == NULL);
    r("CreateSystemThread(bad)", jvmpi->CreateSystemThread((char *)BAD, JVMPI_NORMAL_PRIORITY, dummy));
    r("jobject2jobjectID(bad)==NULL", jvmpi->jobject2jobjectID((jobject)BAD) == NULL);
    jint res[2] = { 5, 5 };
    jvmpi->SuspendThreadList(2, (JNIEnv **)BAD, res);
    r("SuspendThreadList(list=bad)", res[0]);
    JNIEnv *list[1] = { env };
    jvmpi->ResumeThreadList(1, list, (jint *)BAD);
    r("ResumeThreadList(results=bad)", 0);
    jvmpi->SuspendThreadList(0x7fffffff, (JNIEnv **)BAD, (jint *)BAD);
    r("SuspendThreadList(count=huge)", 0);
    /* The shim still works. */
    JVMPI_HeapDumpArg level0 = { JVMPI_DUMP_LEVEL_0 };
    r("RequestEvent(HEAP_DUMP,level0)", jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &level0));
    r("heap_dumps", heap_dumps);
    fprintf(out, "DONE %s\n", phase);
    fclose(out);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_HEAP_DUMP: heap_dumps++; break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        init_done = 1;
        if (!strcmp(phase, "init")) garbage(e->env_id);
        break;
    case JVMPI_EVENT_CLASS_LOAD:
        if (init_done && !done && !strcmp(phase, "handler")) garbage(e->env_id);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        if (!strcmp(phase, "shutdown")) garbage(e->env_id);
        break;
    }
}

static void opt(const char *options, const char *key, char *dst, size_t n) {
    const char *o = options ? strstr(options, key) : NULL;
    if (!o) return;
    snprintf(dst, n, "%s", o + strlen(key));
    char *comma = strchr(dst, ',');
    if (comma) *comma = 0;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    JNIEnv *env = NULL;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_2);
    opt(options, "out=", out_path, sizeof out_path);
    opt(options, "phase=", phase, sizeof phase);
    jvmpi->NotifyEvent = notify;
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_INIT_DONE, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_CLASS_LOAD, NULL);
    if (!strcmp(phase, "onload")) {
        garbage(env);
        /* A dump asked for before the JVM has started for the agent: refused, with the reason. */
        FILE *f = fopen(out_path, "a");
        if (f) {
            fprintf(f, "R RequestEvent(HEAP_DUMP,NULL)@onload %d\n", (int)jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, NULL));
            fclose(f);
        }
    }
    return JNI_OK;
}
