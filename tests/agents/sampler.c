/*
 * sampler: a JVMPI CPU sampler built the way HPROF's cpu=samples was, for tests/own_frames.rs.
 *
 * At JVM_INIT_DONE it starts a thread with CreateSystemThread that, every millisecond, takes
 * each thread it knows (from THREAD_START, until its THREAD_END) other than itself,
 * suspends it, and if GetThreadStatus says it is runnable takes its depth-4 GetCallTrace;
 * then resumes it. Methods are named from CLASS_LOAD; an unknown method ID is resolved with
 * GetMethodClass + RequestEvent(CLASS_LOAD), from the sampler thread, as HPROF did. The
 * thread list is a plain array under the agent's lock; its data per thread hangs off
 * SetThreadLocalStorage(env_id).
 *
 * Options (comma-separated, NULL allowed): log=PATH, bad=NAME (a method name, "Class.method",
 * that no sample may hold: every sample holding it is counted and the first few printed; may
 * be given several times), prefix=PREFIX (a class-name prefix that no sample may hold either;
 * up to 8), busy (METHOD_ENTRY, METHOD_EXIT and OBJECT_ALLOC enabled too, and ignored: the
 * program runs the shim's trackers all the time), hprof (HPROF's cpu=samples order instead:
 * only a thread whose GetThreadStatus is exactly JVMPI_THREAD_RUNNABLE is suspended, and only
 * one whose ThreadHasRun then says TRUE is traced), task=PREFIX (samples holding a frame with
 * that prefix are counted as `tasks`), idle=NAME (samples whose top frame is NAME are counted
 * as `idle`: a thread that is not running but waiting, taken for a running one), clocks (with
 * busy: each METHOD_ENTRY of a thread whose THREAD_START name is a ForkJoinPool worker's,
 * "ForkJoinPool-<n>-worker-<m>" (the carriers of virtual threads), or the virtual-thread
 * scheduler's timer's ("ForkJoinPool-<n>-delayScheduler", "VirtualThread-unparker"), reads
 * GetCurrentThreadCpuTime, as HPROF cpu=times did; the thread's first and last reading are
 * kept in its thread-local storage).
 *
 * At JVM_SHUT_DOWN, once the sampler thread has stopped:
 *   TOP <n> <class.method>          the ten most frequent top frames
 *   BAD <frames, top first>         the first samples holding a forbidden frame
 *   SAMPLES total=N bad=B unnamed=U defining=D tasks=T idle=I
 *   CLOCK <name> <ns>            (clocks: each such thread, its clock's move)
 *   CLOCKS threads=N maxns=M     (clocks: M, the most CPU time any such thread's clock moved
 *                                 between its first and its last method entry)
 * where D counts samples whose frames hold ClassLoader.defineClass1 (or any defineClass*), U
 * the frames no CLASS_LOAD named.
 */
#include <jni.h>
#include <jvmpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static JVMPI_Interface *jvmpi;
static JavaVM *vm;
static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stopping, stopped;
static char bad_names[8][128];
static int nbad;
static char bad_prefixes[8][128];
static int nprefix;
static char task_prefix[128], idle_name[128];
static int busy, hprof, clocks;
struct clock { long long first, last; char name[64]; };
#define MAXC 256
static struct clock clock_recs[MAXC];
static int nclocks;

#define MAXT 16384
static JNIEnv *threads[MAXT];
static JNIEnv *list[MAXT]; /* the sampler thread's copy */
static int nthreads;

#define SLOTS (1 << 18)
struct meth { jmethodID id; char *name; long top; };
static struct meth table[SLOTS];

static long total, bad, unnamed, defining, tasks, idle;
static int printed_bad;

static struct meth *slot(jmethodID id) {
    uintptr_t h = ((uintptr_t)id >> 3) * 2654435761u;
    for (unsigned i = 0; i < SLOTS; i++) {
        struct meth *m = &table[(h + i) & (SLOTS - 1)];
        if (m->id == id || m->id == NULL) return m;
    }
    return NULL;
}

static void line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void line(const char *fmt, ...) {
    va_list ap;
    if (!out) return;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    fflush(out);
    va_end(ap);
}

static void class_load(JVMPI_Event *e) {
    const char *cn = e->u.class_load.class_name;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < e->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        struct meth *s = slot(m->method_id);
        if (!s || s->id) continue;
        size_t n = strlen(cn) + strlen(m->method_name) + 2;
        s->name = malloc(n);
        snprintf(s->name, n, "%s.%s", cn, m->method_name);
        s->id = m->method_id;
    }
    pthread_mutex_unlock(&lock);
}

/* The method's name, resolving it on the spot (no lock held). */
static const char *name_of(jmethodID id) {
    pthread_mutex_lock(&lock);
    struct meth *s = slot(id);
    int known = s && s->id == id;
    pthread_mutex_unlock(&lock);
    if (!known) {
        jobjectID cls = jvmpi->GetMethodClass(id);
        if (cls) jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, cls);
        pthread_mutex_lock(&lock);
        s = slot(id);
        known = s && s->id == id;
        pthread_mutex_unlock(&lock);
    }
    return known ? s->name : NULL;
}

static int forbidden(const char *name) {
    if (!name) return 0;
    for (int i = 0; i < nbad; i++)
        if (strcmp(name, bad_names[i]) == 0) return 1;
    for (int i = 0; i < nprefix; i++)
        if (strncmp(name, bad_prefixes[i], strlen(bad_prefixes[i])) == 0) return 1;
    return 0;
}

static void sample(JNIEnv *me, JNIEnv *t) {
    if (t == me) return;
    if (hprof && (jvmpi->GetThreadStatus(t) & ~JVMPI_THREAD_INTERRUPTED) != JVMPI_THREAD_RUNNABLE) return;
    jvmpi->SuspendThread(t);
    jint st = jvmpi->GetThreadStatus(t) & ~(JVMPI_THREAD_SUSPENDED | JVMPI_THREAD_INTERRUPTED);
    if (hprof) st = jvmpi->ThreadHasRun(t) ? JVMPI_THREAD_RUNNABLE : JVMPI_THREAD_CONDVAR_WAIT;
    if (st == JVMPI_THREAD_RUNNABLE) {
        JVMPI_CallFrame frames[4];
        JVMPI_CallTrace trace;
        trace.env_id = t;
        trace.frames = frames;
        trace.num_frames = 0;
        jvmpi->GetCallTrace(&trace, 4);
        if (trace.num_frames > 0) {
            const char *names[4];
            int is_bad = 0, is_def = 0, is_task = 0;
            for (int i = 0; i < trace.num_frames; i++) {
                names[i] = name_of(frames[i].method_id);
                if (!names[i]) unnamed++;
                is_bad |= forbidden(names[i]);
                if (names[i] && strstr(names[i], "ClassLoader.defineClass")) is_def = 1;
                if (names[i] && task_prefix[0] && strncmp(names[i], task_prefix, strlen(task_prefix)) == 0)
                    is_task = 1;
            }
            total++;
            defining += is_def;
            tasks += is_task;
            if (idle_name[0] && names[0] && strcmp(names[0], idle_name) == 0) idle++;
            pthread_mutex_lock(&lock);
            struct meth *s = slot(frames[0].method_id);
            if (s && s->id == frames[0].method_id) s->top++;
            pthread_mutex_unlock(&lock);
            if (is_bad) {
                bad++;
                if (printed_bad++ < 5) {
                    char buf[1024];
                    size_t at = 0;
                    for (int i = 0; i < trace.num_frames && at < sizeof buf - 200; i++)
                        at += snprintf(buf + at, sizeof buf - at, " %s:%d", names[i] ? names[i] : "?",
                                       (int)frames[i].lineno);
                    line("BAD%s", buf);
                }
            }
        }
    }
    jvmpi->ResumeThread(t);
}

static void sampler(void *arg) {
    (void)arg;
    JNIEnv *me = NULL;
    (*vm)->GetEnv(vm, (void **)&me, JNI_VERSION_1_2);
    struct timespec ms = {0, 1000000};
    while (!stopping) {
        pthread_mutex_lock(&lock);
        int n = nthreads;
        memcpy(list, threads, sizeof(JNIEnv *) * n);
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < n && !stopping; i++) {
            /* Still known? (it may have ended meanwhile) */
            pthread_mutex_lock(&lock);
            int alive = 0;
            for (int j = 0; j < nthreads; j++)
                if (threads[j] == list[i]) alive = 1;
            pthread_mutex_unlock(&lock);
            if (alive) sample(me, list[i]);
        }
        nanosleep(&ms, NULL);
    }
    stopped = 1;
}

static void report(void) {
    stopping = 1;
    for (int i = 0; i < 5000 && !stopped; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    for (int k = 0; k < 10; k++) {
        struct meth *best = NULL;
        for (unsigned i = 0; i < SLOTS; i++)
            if (table[i].id && table[i].top > 0 && (!best || table[i].top > best->top)) best = &table[i];
        if (!best) break;
        line("TOP %ld %s", best->top, best->name);
        best->top = -best->top;
    }
    if (clocks) {
        long long maxns = 0;
        pthread_mutex_lock(&lock);
        for (int i = 0; i < nclocks; i++) {
            line("CLOCK %s %lld", clock_recs[i].name, clock_recs[i].last - clock_recs[i].first);
            if (clock_recs[i].first >= 0 && clock_recs[i].last - clock_recs[i].first > maxns)
                maxns = clock_recs[i].last - clock_recs[i].first;
        }
        pthread_mutex_unlock(&lock);
        line("CLOCKS threads=%d maxns=%lld", nclocks, maxns);
    }
    line("SAMPLES total=%ld bad=%ld unnamed=%ld defining=%ld tasks=%ld idle=%ld", total, bad, unnamed, defining, tasks,
         idle);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:
        class_load(e);
        break;
    case JVMPI_EVENT_THREAD_START:
        pthread_mutex_lock(&lock);
        if (nthreads < MAXT) threads[nthreads++] = e->u.thread_start.thread_env_id;
        if (clocks && e->u.thread_start.thread_name && nclocks < MAXC &&
            ((strncmp(e->u.thread_start.thread_name, "ForkJoinPool-", 13) == 0 &&
              (strstr(e->u.thread_start.thread_name, "-worker-") ||
               strstr(e->u.thread_start.thread_name, "-delayScheduler"))) ||
             strcmp(e->u.thread_start.thread_name, "VirtualThread-unparker") == 0)) {
            struct clock *c = &clock_recs[nclocks++];
            c->first = c->last = -1;
            snprintf(c->name, sizeof c->name, "%s", e->u.thread_start.thread_name);
            jvmpi->SetThreadLocalStorage(e->u.thread_start.thread_env_id, c);
        }
        pthread_mutex_unlock(&lock);
        break;
    case JVMPI_EVENT_METHOD_ENTRY:
        if (clocks) {
            struct clock *c = jvmpi->GetThreadLocalStorage(e->env_id);
            if (c) {
                long long now = jvmpi->GetCurrentThreadCpuTime();
                if (c->first < 0) c->first = now;
                c->last = now;
            }
        }
        break;
    case JVMPI_EVENT_THREAD_END:
        pthread_mutex_lock(&lock);
        for (int i = 0; i < nthreads; i++) {
            if (threads[i] == e->env_id) {
                threads[i] = threads[--nthreads];
                break;
            }
        }
        pthread_mutex_unlock(&lock);
        break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        if (jvmpi->CreateSystemThread("sampler", JVMPI_NORMAL_PRIORITY, sampler) != JNI_OK)
            fprintf(stderr, "sampler: CreateSystemThread failed\n");
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        report();
        break;
    default:
        break;
    }
}

static int enable(jint ev) {
    if (jvmpi->EnableEvent(ev, NULL) != JVMPI_SUCCESS) {
        fprintf(stderr, "sampler: event %d refused, giving up\n", (int)ev);
        return 0;
    }
    return 1;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    vm = jvm;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", options ? options : "");
    for (char *save = NULL, *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        if (strncmp(o, "log=", 4) == 0) {
            out = fopen(o + 4, "w");
        } else if (strncmp(o, "bad=", 4) == 0 && nbad < 8) {
            snprintf(bad_names[nbad++], sizeof bad_names[0], "%s", o + 4);
        } else if (strcmp(o, "busy") == 0) {
            busy = 1;
        } else if (strncmp(o, "prefix=", 7) == 0 && nprefix < 8) {
            snprintf(bad_prefixes[nprefix++], sizeof bad_prefixes[0], "%s", o + 7);
        } else if (strcmp(o, "clocks") == 0) {
            clocks = 1;
        } else if (strcmp(o, "hprof") == 0) {
            hprof = 1;
        } else if (strncmp(o, "task=", 5) == 0) {
            snprintf(task_prefix, sizeof task_prefix, "%s", o + 5);
        } else if (strncmp(o, "idle=", 5) == 0) {
            snprintf(idle_name, sizeof idle_name, "%s", o + 5);
        }
    }
    if (!out) out = stderr;
    jvmpi->NotifyEvent = notify;
    if (!enable(JVMPI_EVENT_CLASS_LOAD) || !enable(JVMPI_EVENT_THREAD_START) || !enable(JVMPI_EVENT_THREAD_END) ||
        !enable(JVMPI_EVENT_JVM_INIT_DONE) || !enable(JVMPI_EVENT_JVM_SHUT_DOWN))
        return JNI_ERR;
    if (busy && (!enable(JVMPI_EVENT_METHOD_ENTRY) || !enable(JVMPI_EVENT_METHOD_EXIT) ||
                 !enable(JVMPI_EVENT_OBJECT_ALLOC)))
        return JNI_ERR;
    return JNI_OK;
}
