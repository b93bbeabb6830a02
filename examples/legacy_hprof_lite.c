/*
 * legacy_hprof_lite.c -- a small JVMPI profiler agent, written the way agents
 * were written for JDK 1.2-1.5, used to demonstrate jvmpi-shim.
 *
 * It loads through JVM_OnLoad, asks the VM for the JVMPI interface, records
 * class loads (to name methods), thread starts and ends, and garbage
 * collections, and samples the running threads every 20 ms from a system
 * thread with the classic JVMPI sampling loop:
 *
 *     suspend every thread; for each thread that has run since the last
 *     sample, take its call trace and charge one sample to its top frame;
 *     resume every thread.
 *
 * At VM shutdown (or on a data dump request) it prints a report: classes
 * loaded, threads, garbage collections and the ten most sampled methods.
 *
 * Options, comma separated:  file=<path>  write the report there, not stdout
 *                            depth=<n>    call trace depth (default 4)
 *
 *   java -Xrunlegacy_hprof_lite:file=out.txt,depth=4 Demo       (JDK 1.2-1.5)
 *   java -agentpath:libjvmpi_shim.so=agent=liblegacy_hprof_lite.so:depth=4 Demo
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmpi.h"

#define SAMPLER_NAME  "hprof_lite sampler"
#define INTERVAL_MS   20        /* sampling interval */
#define MAX_THREADS   256       /* threads sampled in one round */
#define MAX_DEPTH     64
#define TABLE_SIZE    4096      /* buckets of the method and sample tables */
#define TOP_N         10

/* A Java thread seen in THREAD_START. */
typedef struct ThreadInfo {
    JNIEnv *env;
    char *name;
    char *group;
    int alive;
    struct ThreadInfo *next;
} ThreadInfo;

/* A method seen in CLASS_LOAD. */
typedef struct MethodInfo {
    jmethodID id;
    char *class_name;           /* shared by all methods of the class */
    char *name;
    struct MethodInfo *next;
} MethodInfo;

/* Number of samples whose top frame was (method, line). */
typedef struct SampleCount {
    jmethodID method;
    jint lineno;
    long count;
    struct SampleCount *next;
} SampleCount;

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor data_lock;      /* guards every table below */
static JVMPI_RawMonitor sampler_lock;   /* sampler sleep and shutdown */

static FILE *out;
static char *out_file;
static int depth = 4;

static ThreadInfo *threads;             /* in start order */
static ThreadInfo **threads_tail = &threads;
static long threads_started;
static long threads_ended;
static long classes_loaded;
static long gc_count;
static jlong heap_used_space;

static MethodInfo *methods[TABLE_SIZE];
static SampleCount *samples[TABLE_SIZE];
static long total_samples;
static long sample_entries;             /* SampleCounts in the table */

static int sampler_stop;
static int sampler_running;

/* Filled while threads are suspended: no malloc, no stdio there. */
static JNIEnv *round_envs[MAX_THREADS];
static JVMPI_CallFrame round_frames[MAX_THREADS][MAX_DEPTH];
static jint round_num_frames[MAX_THREADS];

static char *copy_string(const char *s)
{
    char *p;

    if (s == NULL) {
        s = "";
    }
    p = (char *)malloc(strlen(s) + 1);
    if (p != NULL) {
        strcpy(p, s);
    }
    return p;
}

static unsigned hash_pointer(void *p, jint extra)
{
    unsigned long v = (unsigned long)p;

    v ^= (v >> 4) ^ (v >> 12) ^ (unsigned long)extra * 31u;
    return (unsigned)(v % TABLE_SIZE);
}

/* ---------------------------------------------------------------- events */

static void class_load(JVMPI_Event *event)
{
    char *class_name = copy_string(event->u.class_load.class_name);
    jint i;

    jvmpi->RawMonitorEnter(data_lock);
    classes_loaded++;
    for (i = 0; i < event->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &event->u.class_load.methods[i];
        MethodInfo *info = (MethodInfo *)malloc(sizeof(MethodInfo));
        unsigned h = hash_pointer(m->method_id, 0);

        if (info == NULL) {
            break;
        }
        info->id = m->method_id;
        info->class_name = class_name;
        info->name = copy_string(m->method_name);
        info->next = methods[h];
        methods[h] = info;
    }
    jvmpi->RawMonitorExit(data_lock);
}

static void thread_start(JVMPI_Event *event)
{
    ThreadInfo *t = (ThreadInfo *)malloc(sizeof(ThreadInfo));

    if (t == NULL) {
        return;
    }
    t->env = event->u.thread_start.thread_env_id;
    t->name = copy_string(event->u.thread_start.thread_name);
    t->group = copy_string(event->u.thread_start.group_name);
    t->alive = 1;
    t->next = NULL;
    jvmpi->RawMonitorEnter(data_lock);
    *threads_tail = t;
    threads_tail = &t->next;
    threads_started++;
    jvmpi->RawMonitorExit(data_lock);
}

static void thread_end(JVMPI_Event *event)
{
    ThreadInfo *t;

    jvmpi->RawMonitorEnter(data_lock);
    for (t = threads; t != NULL; t = t->next) {
        if (t->alive && t->env == event->env_id) {
            t->alive = 0;
            threads_ended++;
            break;
        }
    }
    jvmpi->RawMonitorExit(data_lock);
}

/* ---------------------------------------------------------------- sampling */

static void count_sample(jmethodID method, jint lineno)
{
    unsigned h = hash_pointer(method, lineno);
    SampleCount *s;

    for (s = samples[h]; s != NULL; s = s->next) {
        if (s->method == method && s->lineno == lineno) {
            break;
        }
    }
    if (s == NULL) {
        s = (SampleCount *)malloc(sizeof(SampleCount));
        if (s == NULL) {
            return;
        }
        s->method = method;
        s->lineno = lineno;
        s->count = 0;
        s->next = samples[h];
        samples[h] = s;
        sample_entries++;
    }
    s->count++;
    total_samples++;
}

/* One round of the sampling loop.  Called with data_lock held. */
static void sample_threads(void)
{
    JVMPI_CallTrace trace;
    ThreadInfo *t;
    int n = 0;
    int i;

    for (t = threads; t != NULL && n < MAX_THREADS; t = t->next) {
        if (t->alive && strcmp(t->group, "system") != 0
            && strcmp(t->name, SAMPLER_NAME) != 0) {
            round_envs[n++] = t->env;
        }
    }
    if (n == 0) {
        return;
    }

    jvmpi->DisableGC();
    for (i = 0; i < n; i++) {
        jvmpi->SuspendThread(round_envs[i]);
    }
    for (i = 0; i < n; i++) {
        round_num_frames[i] = 0;
        if (jvmpi->ThreadHasRun(round_envs[i])) {
            trace.env_id = round_envs[i];
            trace.num_frames = 0;
            trace.frames = round_frames[i];
            jvmpi->GetCallTrace(&trace, depth);
            round_num_frames[i] = trace.num_frames;
        }
    }
    for (i = 0; i < n; i++) {
        jvmpi->ResumeThread(round_envs[i]);
    }
    jvmpi->EnableGC();

    /* Threads run again: now it is safe to allocate. */
    for (i = 0; i < n; i++) {
        if (round_num_frames[i] > 0) {
            count_sample(round_frames[i][0].method_id, round_frames[i][0].lineno);
        }
    }
}

static void sampler(void *arg)
{
    (void)arg;
    jvmpi->RawMonitorEnter(sampler_lock);
    sampler_running = 1;
    while (!sampler_stop) {
        jvmpi->RawMonitorWait(sampler_lock, (jlong)INTERVAL_MS);
        if (sampler_stop) {
            break;
        }
        jvmpi->RawMonitorExit(sampler_lock);

        jvmpi->RawMonitorEnter(data_lock);
        sample_threads();
        jvmpi->RawMonitorExit(data_lock);

        jvmpi->RawMonitorEnter(sampler_lock);
    }
    sampler_running = 0;
    jvmpi->RawMonitorNotifyAll(sampler_lock);
    jvmpi->RawMonitorExit(sampler_lock);
}

static void stop_sampler(void)
{
    int waits = 0;

    jvmpi->RawMonitorEnter(sampler_lock);
    sampler_stop = 1;
    jvmpi->RawMonitorNotifyAll(sampler_lock);
    while (sampler_running && waits++ < 20) {
        jvmpi->RawMonitorWait(sampler_lock, (jlong)50);
    }
    jvmpi->RawMonitorExit(sampler_lock);
}

/* ---------------------------------------------------------------- report */

static MethodInfo *find_method(jmethodID id)
{
    MethodInfo *m;

    for (m = methods[hash_pointer(id, 0)]; m != NULL; m = m->next) {
        if (m->id == id) {
            return m;
        }
    }
    return NULL;
}

static int by_count_desc(const void *a, const void *b)
{
    long ca = (*(SampleCount *const *)a)->count;
    long cb = (*(SampleCount *const *)b)->count;

    return ca < cb ? 1 : ca > cb ? -1 : 0;
}

static void print_frame(SampleCount *s)
{
    MethodInfo *m = find_method(s->method);

    if (m != NULL) {
        fprintf(out, "%s.%s", m->class_name, m->name);
    } else {
        fprintf(out, "<unknown method %p>", (void *)s->method);
    }
    switch (s->lineno) {
    case -1: fprintf(out, "(Unknown line)\n"); break;
    case -2: fprintf(out, "(Compiled method)\n"); break;
    case -3: fprintf(out, "(Native method)\n"); break;
    default: fprintf(out, "(%ld)\n", (long)s->lineno); break;
    }
}

static void print_report(void)
{
    SampleCount **all;
    SampleCount *s;
    ThreadInfo *t;
    long n = 0;
    long i;

    jvmpi->RawMonitorEnter(data_lock);
    fprintf(out, "HPROF-LITE REPORT\n");
    fprintf(out, "classes loaded: %ld\n", classes_loaded);
    fprintf(out, "threads started: %ld, ended: %ld\n", threads_started, threads_ended);
    for (t = threads; t != NULL; t = t->next) {
        fprintf(out, "    \"%s\" (group %s)%s\n", t->name, t->group,
                t->alive ? "" : " ended");
    }
    fprintf(out, "garbage collections: %ld (%ld bytes used after the last)\n",
            gc_count, (long)heap_used_space);
    fprintf(out, "samples: %ld (every %d ms, depth %d)\n", total_samples, INTERVAL_MS, depth);

    all = (SampleCount **)malloc((sample_entries + 1) * sizeof(SampleCount *));
    if (all != NULL) {
        for (i = 0; i < TABLE_SIZE; i++) {
            for (s = samples[i]; s != NULL; s = s->next) {
                all[n++] = s;
            }
        }
        qsort(all, (size_t)n, sizeof(SampleCount *), by_count_desc);
        fprintf(out, "rank   self  count  method\n");
        for (i = 0; i < n && i < TOP_N; i++) {
            fprintf(out, "%4ld %5.1f%% %6ld  ", i + 1,
                    100.0 * all[i]->count / total_samples, all[i]->count);
            print_frame(all[i]);
        }
        free(all);
    }
    fprintf(out, "END\n");
    fflush(out);
    jvmpi->RawMonitorExit(data_lock);
}

/* ---------------------------------------------------------------- dispatch */

static void notify_event(JVMPI_Event *event)
{
    switch (event->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:
        class_load(event);
        break;
    case JVMPI_EVENT_THREAD_START:
        thread_start(event);
        break;
    case JVMPI_EVENT_THREAD_END:
        thread_end(event);
        break;
    case JVMPI_EVENT_GC_START:      /* no locks, no malloc until GC_FINISH */
        break;
    case JVMPI_EVENT_GC_FINISH:
        gc_count++;
        heap_used_space = event->u.gc_info.used_object_space;
        break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        if (jvmpi->CreateSystemThread(SAMPLER_NAME, JVMPI_NORMAL_PRIORITY,
                                      sampler) != JNI_OK) {
            fprintf(stderr, "hprof_lite: cannot create the sampling thread\n");
        }
        break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST:
        print_report();
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        stop_sampler();
        print_report();
        if (out != stdout) {
            fclose(out);
            out = stdout;
        }
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------- start-up */

/* Parses "file=out.txt,depth=4"; returns 0 on success. */
static int parse_options(char *options)
{
    char *copy;
    char *opt;
    char *next;

    if (options == NULL || *options == '\0') {
        return 0;
    }
    copy = copy_string(options);
    for (opt = copy; opt != NULL && *opt != '\0'; opt = next) {
        next = strchr(opt, ',');
        if (next != NULL) {
            *next++ = '\0';
        }
        if (strncmp(opt, "file=", 5) == 0 && opt[5] != '\0') {
            out_file = copy_string(opt + 5);
        } else if (strncmp(opt, "depth=", 6) == 0
                   && atoi(opt + 6) >= 1 && atoi(opt + 6) <= MAX_DEPTH) {
            depth = atoi(opt + 6);
        } else {
            fprintf(stderr, "hprof_lite: bad option \"%s\"\n", opt);
            free(copy);
            return -1;
        }
    }
    free(copy);
    return 0;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved)
{
    (void)reserved;

    if (parse_options(options) != 0) {
        fprintf(stderr, "hprof_lite options: file=<path>,depth=<1-%d>\n", MAX_DEPTH);
        return JNI_ERR;
    }
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) {
        fprintf(stderr, "hprof_lite: JVMPI is not available in this VM\n");
        return JNI_ERR;
    }
    out = stdout;
    if (out_file != NULL) {
        out = fopen(out_file, "w");
        if (out == NULL) {
            fprintf(stderr, "hprof_lite: cannot open %s\n", out_file);
            return JNI_ERR;
        }
    }

    jvmpi->NotifyEvent = notify_event;
    /* Names starting with '_' keep our own monitors out of contention events. */
    data_lock = jvmpi->RawMonitorCreate("_hprof_lite_data");
    sampler_lock = jvmpi->RawMonitorCreate("_hprof_lite_sampler");

    jvmpi->EnableEvent(JVMPI_EVENT_JVM_INIT_DONE, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_START, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_END, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_CLASS_LOAD, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_GC_START, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_GC_FINISH, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_DATA_DUMP_REQUEST, NULL);
    return JNI_OK;
}
