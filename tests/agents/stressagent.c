/*
 * stressagent: the invariant-checking JVMPI agent of the reliability suite (tests/reliability.rs,
 * scripts/stress.sh). It enables every event the shim emulates and checks, for every event, the
 * promises JVMPI makes to an agent:
 *
 *   env        an event's env_id is a thread announced by THREAD_START and not ended since;
 *   ids        a class, method or object ID is defined (CLASS_LOAD, OBJECT_ALLOC) before an
 *              event or a call trace names it, and not after it was freed or unloaded;
 *   bracket    OBJECT_FREE and CLASS_UNLOAD only between GC_START and GC_FINISH; brackets do not
 *              nest and both ends come from one thread;
 *   shutdown   nothing after JVM_SHUT_DOWN.
 *
 * Meanwhile it does what demanding agents did: holds a raw monitor across every GC bracket
 * (entered in GC_START, left in GC_FINISH), takes call traces in allocation events, resolves
 * IDs it has not heard of with RequestEvent (thread objects, objects behind JNI global
 * references), keeps per-thread data in JVMPI thread-local storage, and samples every thread
 * with SuspendThread / ThreadHasRun / GetCallTrace / GetThreadStatus / ResumeThread (and the
 * list forms) from a CreateSystemThread thread. It never protects its sampler against threads
 * that end: a thread suspended around its THREAD_END must still be resumable.
 *
 * Options (comma-separated, after "agent=<lib>:"):
 *   log=PATH         the log (required)
 *   sampler=MS       sampler period in ms (default 2; 0: no sampler)
 *   traces=K         a call trace in every K-th OBJECT_ALLOC (default 8; 0: none)
 *   no-alloc         do not enable OBJECT_ALLOC / OBJECT_FREE / ARENA_NEW
 *   bracket=MS       sleep MS ms in GC_START, holding the GC raw monitor (keeps brackets open)
 *   slow-end=US      sleep US microseconds in THREAD_END
 *   exit=WHERE:N:CODE  ProfilerExit(CODE) from: gc_start (the N-th GC_START handler), alloc (the
 *                    N-th OBJECT_ALLOC handler), thread / pthread (a CreateSystemThread thread /
 *                    a pthread never attached to the JVM, while the N-th GC_START handler keeps
 *                    its bracket open), shutdown (the JVM_SHUT_DOWN handler)
 *   reenter          re-entrant calls from handlers: RunGC, RequestEvent, Enable/DisableEvent,
 *                    raw monitors, GetThreadObject, jobjectID2jobject inside GC brackets and
 *                    allocation events; NotifyEvent swapped for another function now and then
 *   abuse            a pthread, never attached, started in JVM_OnLoad (before JVM_INIT_DONE),
 *                    calls every interface function with good, NULL, garbage and stale
 *                    arguments until the process ends (also after JVM_SHUT_DOWN), and an atexit
 *                    handler calls them once more; the ID checks are relaxed to counts
 *   notify-null      with abuse: NotifyEvent is set to NULL for short moments during the
 *                    half second after JVM_INIT_DONE (not before nor later: a JVM_INIT_DONE or
 *                    JVM_SHUT_DOWN falling into such a moment would be lost, and the test asks
 *                    for both) (events are lost,
 *                    so undefined IDs and unpaired brackets are counted, not violations, and
 *                    the GC monitor is not held across brackets: a lost GC_FINISH would leave
 *                    it entered for ever)
 *   freeze-at-exit   the JVM_SHUT_DOWN handler has the sampler suspend every thread it knows
 *                    (the exiting one too, while it runs the handler) and resume them 300 ms
 *                    later, after JVM_SHUT_DOWN
 *   hot              the sampler never sleeps between rounds (suspensions as often as it can)
 *   ids=K            every K-th OBJECT_ALLOC handler checks the ID it was just given, as careful
 *                    tools did: every other time RequestEvent(OBJECT_ALLOC, id) first (the nested
 *                    requested event must name the same object, class, kind and size), then
 *                    jobjectID2jobject(id) (a live object: never NULL; of the class the event
 *                    named), jobject2jobjectID of that reference (the same ID) and of a copy
 *                    (NewLocalRef); the object is then kept by a global reference and handed to an
 *                    agent thread (CreateSystemThread), which checks both directions again from
 *                    outside any handler (the global reference, and the local reference
 *                    jobjectID2jobject gives it: IsSameObject) and, every other time,
 *                    RequestEvent(OBJECT_ALLOC) there too
 *   hold-switch      a CreateSystemThread thread, suspended by the sampler while it waits in
 *                    the agent's own code, then calls EnableEvent(MONITOR_CONTENDED_ENTER): it
 *                    stops inside that call, at its first entry into the VM, and the agent
 *                    never resumes it (the shim resumes it after JVM_SHUT_DOWN); the
 *                    JVM_SHUT_DOWN handler disables OBJECT_ALLOC, as agents did
 *
 * At JVM_SHUT_DOWN it writes its summary holding the raw monitor of its GC handlers, as an agent
 * that dumps its data consistently does.
 *
 * Log lines: VIOLATION <kind> <detail> (the first 20 of each kind), INIT_DONE, SAMPLER started,
 * EXIT calling where=<w>, SUMMARY <key>=<n> ... and VIOLATIONS <kind>=<n> ... at JVM_SHUT_DOWN,
 * then SHUT_DOWN; ABUSE ... and ATEXIT ... at process exit.
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
#include <unistd.h>

static JavaVM *the_vm;
static JVMPI_Interface *jvmpi;
static FILE *out;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every table below. Never held across a call into the JVM. */
static pthread_mutex_t tab = PTHREAD_MUTEX_INITIALIZER;

static int opt_sampler_ms = 2, opt_traces = 8, opt_alloc = 1, opt_bracket_ms, opt_slow_end_us;
static int opt_reenter, opt_abuse, opt_notify_null, opt_freeze, opt_hot, opt_hold, opt_ids;
static long freeze;
/* hold-switch: the holder thread's env and state (0 not started, 1 waiting, 2 suspended). */
static long holder_env, holder_state;
static char exit_where[16];
static long exit_n;
static int exit_code;

static long ld(long *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static long inc(long *p) { return __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST); }
static void st(long *p, long v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&log_lock);
    if (out) {
        va_start(ap, fmt);
        vfprintf(out, fmt, ap);
        va_end(ap);
        fputc('\n', out);
        fflush(out);
    }
    pthread_mutex_unlock(&log_lock);
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* ---- violations and counters ------------------------------------------------------------------ */
enum { V_ENV, V_THREAD_TWICE, V_CLASS_TWICE, V_CLASS, V_METHOD, V_ALLOC_LIVE, V_FREE, V_UNLOAD, V_OUTSIDE,
       V_BRACKET, V_AFTER, V_TLS, V_ROUNDTRIP, V_REQUESTED, V_N };
static const char *const vnames[V_N] = {"env", "thread-start-twice", "class-load-twice", "class-undefined",
                                        "method-undefined", "alloc-live", "free-undefined", "unload-undefined",
                                        "free-outside-bracket", "bracket", "after-shutdown", "tls",
                                        "id-roundtrip", "requested-mismatch"};
static long vcount[V_N];
/* With notify-null, lost events make undefined IDs expected: counted apart. */
static long relaxed;

static void violation(int kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(int kind, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    if (opt_notify_null && kind != V_AFTER) {
        inc(&relaxed);
        return;
    }
    if (inc(&vcount[kind]) > 20) return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    logf_("VIOLATION %s %s", vnames[kind], buf);
}

enum { C_EVENTS, C_ALLOCS, C_FREES, C_CLASSES, C_UNLOADS, C_THREADS, C_ENDS, C_GC, C_REQUESTED, C_TRACES,
       C_SAMPLES, C_SUSPENDS, C_HASRUN, C_RESOLVED, C_SWAPS, C_REENTER, C_GREFS, C_RAW, C_DUMPS, C_IDCHECKS,
       C_IDCHECKS_THREAD, C_IDCHECKS_REFLECTIVE, C_N };
static const char *const cnames[C_N] = {"events", "allocs", "frees", "classes", "unloads", "threads", "ends",
                                        "gc", "requested", "traces", "samples", "suspends", "hasrun",
                                        "resolved", "swaps", "reenter", "grefs", "raw", "dumps", "idchecks",
                                        "idchecks_thread", "idchecks_reflective"};
static long counts[C_N];

/* ---- a hash map of pointer-sized keys (0 is "empty"), linear probing, backward-shift delete --- */
typedef struct {
    uintptr_t *k, *v;
    size_t cap, n;
} map_t;

static size_t mix(uintptr_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
}
static void map_grow(map_t *m);
static size_t map_slot(const map_t *m, uintptr_t key) {
    size_t i = mix(key) & (m->cap - 1);
    while (m->k[i] && m->k[i] != key) i = (i + 1) & (m->cap - 1);
    return i;
}
static int map_get(const map_t *m, uintptr_t key, uintptr_t *val) {
    size_t i;
    if (!m->cap || !key) return 0;
    i = map_slot(m, key);
    if (!m->k[i]) return 0;
    if (val) *val = m->v[i];
    return 1;
}
/* Returns 1 if the key was new. */
static int map_put(map_t *m, uintptr_t key, uintptr_t val) {
    size_t i;
    if (!key) return 0;
    if ((m->n + 1) * 10 >= m->cap * 7) map_grow(m);
    i = map_slot(m, key);
    m->v[i] = val;
    if (m->k[i]) return 0;
    m->k[i] = key;
    m->n++;
    return 1;
}
static void map_grow(map_t *m) {
    map_t g;
    size_t i;
    g.cap = m->cap ? m->cap * 2 : 1024;
    g.n = 0;
    g.k = calloc(g.cap, sizeof *g.k);
    g.v = calloc(g.cap, sizeof *g.v);
    for (i = 0; i < m->cap; i++)
        if (m->k[i]) map_put(&g, m->k[i], m->v[i]);
    free(m->k);
    free(m->v);
    *m = g;
}
/* Returns 1 and the value if the key was there. */
static int map_del(map_t *m, uintptr_t key, uintptr_t *val) {
    size_t i, j, h;
    if (!m->cap || !key) return 0;
    i = map_slot(m, key);
    if (!m->k[i]) return 0;
    if (val) *val = m->v[i];
    m->k[i] = 0;
    m->n--;
    for (j = (i + 1) & (m->cap - 1); m->k[j]; j = (j + 1) & (m->cap - 1)) {
        h = mix(m->k[j]) & (m->cap - 1);
        /* Move j back to i unless its home lies cyclically in (i, j]. */
        if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
            m->k[i] = m->k[j];
            m->v[i] = m->v[j];
            m->k[j] = 0;
            i = j;
        }
    }
    return 1;
}

/* Live objects, in shards (allocations come from every thread). */
#define SHARDS 64
static struct {
    pthread_mutex_t lock;
    map_t live;
} objs[SHARDS];
static size_t shard(uintptr_t id) { return (mix(id) >> 20) & (SHARDS - 1); }
static int obj_live(uintptr_t id) {
    size_t s = shard(id);
    int r;
    pthread_mutex_lock(&objs[s].lock);
    r = map_get(&objs[s].live, id, NULL);
    pthread_mutex_unlock(&objs[s].lock);
    return r;
}
/* Returns 0 if new, else how the ID was defined before (1: OBJECT_ALLOC, 2: requested). */
static int obj_add(uintptr_t id, int how) {
    size_t s = shard(id);
    uintptr_t was = 0;
    pthread_mutex_lock(&objs[s].lock);
    if (!map_get(&objs[s].live, id, &was)) map_put(&objs[s].live, id, (uintptr_t)how);
    pthread_mutex_unlock(&objs[s].lock);
    return (int)was;
}
static int obj_del(uintptr_t id) {
    size_t s = shard(id);
    int r;
    pthread_mutex_lock(&objs[s].lock);
    r = map_del(&objs[s].live, id, NULL);
    pthread_mutex_unlock(&objs[s].lock);
    return r;
}
static long obj_count(void) {
    long n = 0;
    int s;
    for (s = 0; s < SHARDS; s++) {
        pthread_mutex_lock(&objs[s].lock);
        n += (long)objs[s].live.n;
        pthread_mutex_unlock(&objs[s].lock);
    }
    return n;
}

/* Classes: class ID -> its methods; methods: method ID -> class ID; threads: env -> state. */
typedef struct {
    char *name;
    int n;
    jmethodID m[];
} methods_t;
static map_t classes, methods, threads;
enum { T_LIVE = 1, T_ENDED = 2 };

static int env_live(JNIEnv *env) {
    uintptr_t v = 0;
    pthread_mutex_lock(&tab);
    map_get(&threads, (uintptr_t)env, &v);
    pthread_mutex_unlock(&tab);
    return v == T_LIVE;
}
static int class_known(jobjectID id) {
    int r;
    pthread_mutex_lock(&tab);
    r = map_get(&classes, (uintptr_t)id, NULL);
    pthread_mutex_unlock(&tab);
    return r;
}
/* The class's name (a copy in buf), or "?". */
static const char *class_name(jobjectID id, char *buf, size_t n) {
    uintptr_t v = 0;
    pthread_mutex_lock(&tab);
    if (map_get(&classes, (uintptr_t)id, &v)) snprintf(buf, n, "%s", ((methods_t *)v)->name);
    else snprintf(buf, n, "?");
    pthread_mutex_unlock(&tab);
    return buf;
}
static int method_known(jmethodID m) {
    int r;
    pthread_mutex_lock(&tab);
    r = map_get(&methods, (uintptr_t)m, NULL);
    pthread_mutex_unlock(&tab);
    return r;
}

/* ---- state ------------------------------------------------------------------------------------ */
static JVMPI_RawMonitor gc_lock, side_lock;
static long in_gc, gc_env, shut_down, init_done, gc_seen, allocs_seen;
static long exit_triggered, exit_calling;
static pthread_mutex_t exit_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t exit_cv = PTHREAD_COND_INITIALIZER;
/* An ID of a freed object and a destroyed monitor, for the abuse thread. */
static long stale_id, stale_monitor, some_live_env, some_method;

static void notify(JVMPI_Event *e);
static void notify_other(JVMPI_Event *e) {
    inc(&counts[C_SWAPS]);
    notify(e);
}

static void check_env(const char *what, JNIEnv *env) {
    if (env && !env_live(env)) violation(V_ENV, "%s: env %p not announced or already ended", what, (void *)env);
}

/* Resolves the class of an unknown method (GetMethodClass + RequestEvent(CLASS_LOAD)). */
static int resolve_method(jmethodID m) {
    jobjectID k = jvmpi->GetMethodClass(m);
    if (k && !class_known(k)) {
        inc(&counts[C_REQUESTED]);
        jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, k);
    }
    if (method_known(m)) {
        inc(&counts[C_RESOLVED]);
        return 1;
    }
    return 0;
}

/* Checks the frames of a trace; unknown methods are resolved when `resolve` (not while another
 * thread is suspended: resolving may need what that thread holds). Returns unknown methods. */
static int check_trace(JVMPI_CallTrace *t, int resolve, jmethodID *unknown, int max) {
    int i, n = 0;
    for (i = 0; i < t->num_frames; i++) {
        jmethodID m = t->frames[i].method_id;
        if (method_known(m)) continue;
        if (resolve) {
            if (!resolve_method(m)) violation(V_METHOD, "trace frame %d names method %p, undefined", i, (void *)m);
        } else if (n < max) {
            unknown[n++] = m;
        }
    }
    return n;
}

/* ---- ProfilerExit races ------------------------------------------------------------------------ */
static void do_exit(const char *where) {
    logf_("EXIT calling where=%s code=%d", where, exit_code);
    st(&exit_calling, 1);
    jvmpi->ProfilerExit(exit_code);
    logf_("EXIT returned where=%s", where);
}

/* The thread / pthread exiter: waits for the trigger, then calls ProfilerExit. */
static void exiter_wait_and_exit(const char *where) {
    pthread_mutex_lock(&exit_mx);
    while (!ld(&exit_triggered)) pthread_cond_wait(&exit_cv, &exit_mx);
    pthread_mutex_unlock(&exit_mx);
    do_exit(where);
}
static void exiter_system_thread(void *arg) { exiter_wait_and_exit("thread"); }
static void *exiter_pthread(void *arg) {
    exiter_wait_and_exit("pthread");
    return NULL;
}

/* In a GC_START handler: trigger the exiter and keep the bracket open while it calls. */
static void trigger_exiter(void) {
    int waited;
    pthread_mutex_lock(&exit_mx);
    st(&exit_triggered, 1);
    pthread_cond_broadcast(&exit_cv);
    pthread_mutex_unlock(&exit_mx);
    for (waited = 0; !ld(&exit_calling) && waited < 2000; waited++) sleep_us(1000);
    sleep_us(100 * 1000);
}

/* ---- the sampler ------------------------------------------------------------------------------- */
#define MAX_SAMPLE 512
static int live_envs(JNIEnv **list, int max, JNIEnv *except) {
    size_t i;
    int n = 0;
    JNIEnv *held = (JNIEnv *)ld(&holder_env);
    pthread_mutex_lock(&tab);
    for (i = 0; i < threads.cap && n < max; i++)
        if (threads.k[i] && threads.v[i] == T_LIVE && (JNIEnv *)threads.k[i] != except && (JNIEnv *)threads.k[i] != held)
            list[n++] = (JNIEnv *)threads.k[i];
    pthread_mutex_unlock(&tab);
    return n;
}

static void sampler(void *arg) {
    static JNIEnv *list[MAX_SAMPLE];
    static jint res[MAX_SAMPLE];
    JVMPI_CallFrame frames[8];
    JVMPI_CallTrace t;
    jmethodID unknown[16];
    JNIEnv *self = NULL;
    long round = 0;
    int i, n, u;
    (*the_vm)->GetEnv(the_vm, (void **)&self, JNI_VERSION_1_2);
    logf_("SAMPLER started env=%p", (void *)self);
    while (!ld(&shut_down) || ld(&freeze) == 1) {
        round++;
        if (opt_hold && ld(&holder_state) == 1) {
            /* The holder waits in the agent's code (native): suspended at once, it stops at its
             * next entry into the VM, inside the EnableEvent it calls next. Never resumed here. */
            jvmpi->SuspendThread((JNIEnv *)ld(&holder_env));
            st(&holder_state, 2);
            logf_("HOLD suspended env=%p", (void *)ld(&holder_env));
        }
        if (ld(&freeze) == 1) {
            /* Every thread the agent knows, the one running JVM_SHUT_DOWN included. */
            pthread_mutex_lock(&tab);
            for (n = 0, i = 0; (size_t)i < threads.cap && n < MAX_SAMPLE; i++)
                if (threads.k[i] && (JNIEnv *)threads.k[i] != self) list[n++] = (JNIEnv *)threads.k[i];
            pthread_mutex_unlock(&tab);
            jvmpi->SuspendThreadList(n, list, res);
            st(&freeze, 2);
            sleep_us(300 * 1000);
            jvmpi->ResumeThreadList(n, list, res);
            logf_("FREEZE resumed after JVM_SHUT_DOWN threads=%d", n);
            break;
        }
        n = live_envs(list, MAX_SAMPLE, self);
        if (round % 8 == 0) {
            /* The list forms, on every thread at once. */
            jvmpi->SuspendThreadList(n, list, res);
            for (i = 0; i < n; i++)
                if (res[i] == JVMPI_SUCCESS) inc(&counts[C_SUSPENDS]);
            jvmpi->ResumeThreadList(n, list, res);
        } else {
            for (i = 0; i < n; i++) {
                jvmpi->SuspendThread(list[i]);
                inc(&counts[C_SUSPENDS]);
                if (jvmpi->ThreadHasRun(list[i])) inc(&counts[C_HASRUN]);
                t.env_id = list[i];
                t.frames = frames;
                t.num_frames = 0;
                jvmpi->GetCallTrace(&t, 8);
                u = check_trace(&t, 0, unknown, 16);
                jvmpi->GetThreadStatus(list[i]);
                jvmpi->ResumeThread(list[i]);
                inc(&counts[C_SAMPLES]);
                while (u > 0) {
                    u--;
                    if (!method_known(unknown[u]) && !resolve_method(unknown[u]))
                        violation(V_METHOD, "sampled frame names method %p, undefined", (void *)unknown[u]);
                }
            }
        }
        if (opt_sampler_ms && !opt_hot) sleep_us(opt_sampler_ms * 1000L);
    }
    logf_("SAMPLER stopped rounds=%ld", round);
}

/* hold-switch: waits, in the agent's code, until the sampler has suspended it, then enables an
 * event (the shim switches a JVMTI event on, under its event switch). */
static void holder(void *arg) {
    JNIEnv *self = NULL;
    int waited;
    (*the_vm)->GetEnv(the_vm, (void **)&self, JNI_VERSION_1_2);
    st(&holder_env, (long)self);
    st(&holder_state, 1);
    for (waited = 0; ld(&holder_state) != 2 && waited < 20000; waited++) sleep_us(100);
    logf_("HOLD calling EnableEvent state=%ld", ld(&holder_state));
    jvmpi->EnableEvent(JVMPI_EVENT_MONITOR_CONTENDED_ENTER, NULL);
    logf_("HOLD returned");
}

/* ---- abuse: calls from a pthread the JVM does not know, at any time ---------------------------- */
static long abuse_rounds, abuse_after;

static void abuse_round(void) {
    JNIEnv *bad = (JNIEnv *)(uintptr_t)0x7f0000001230, *live = (JNIEnv *)ld(&some_live_env);
    JVMPI_RawMonitor m, stale = (JVMPI_RawMonitor)ld(&stale_monitor);
    JVMPI_CallFrame frames[4];
    JVMPI_CallTrace t;
    JNIEnv *envs[2];
    jint res[2];
    jobjectID gone = (jobjectID)ld(&stale_id);
    long r = inc(&abuse_rounds);

    m = jvmpi->RawMonitorCreate("abuse");
    jvmpi->RawMonitorEnter(m);
    jvmpi->RawMonitorEnter(m);
    jvmpi->RawMonitorWait(m, 1);
    jvmpi->RawMonitorNotifyAll(m);
    jvmpi->RawMonitorExit(m);
    jvmpi->RawMonitorExit(m);
    jvmpi->RawMonitorWait(m, 1); /* not owned */
    jvmpi->RawMonitorDestroy(m);
    st(&stale_monitor, (long)m);
    /* Destroyed, NULL and garbage monitors. */
    jvmpi->RawMonitorEnter(m);
    jvmpi->RawMonitorExit(m);
    jvmpi->RawMonitorWait(m, -1);
    jvmpi->RawMonitorNotifyAll(m);
    jvmpi->RawMonitorDestroy(m);
    jvmpi->RawMonitorEnter(NULL);
    jvmpi->RawMonitorWait(NULL, 0);
    jvmpi->RawMonitorDestroy((JVMPI_RawMonitor)(uintptr_t)0x4242);
    if (stale) jvmpi->RawMonitorExit(stale);
    /* Events. */
    jvmpi->EnableEvent(JVMPI_EVENT_DATA_RESET_REQUEST, NULL);
    jvmpi->DisableEvent(JVMPI_EVENT_DATA_RESET_REQUEST, NULL);
    jvmpi->EnableEvent(999, NULL);
    jvmpi->DisableEvent(-3, NULL);
    jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, (void *)(uintptr_t)0xdead0);
    jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, gone);
    jvmpi->RequestEvent(JVMPI_EVENT_THREAD_START, NULL);
    jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, NULL);
    /* Threads: garbage, NULL and live JNIEnvs, from a thread the JVM does not know. */
    jvmpi->SuspendThread(bad);
    jvmpi->ResumeThread(bad);
    jvmpi->SuspendThread(NULL);
    jvmpi->ResumeThread(NULL);
    jvmpi->GetThreadStatus(bad);
    jvmpi->ThreadHasRun(bad);
    jvmpi->SetThreadLocalStorage(bad, (void *)1);
    jvmpi->GetThreadLocalStorage(NULL);
    jvmpi->GetThreadObject(bad);
    jvmpi->GetCurrentThreadCpuTime();
    t.env_id = bad;
    t.frames = frames;
    jvmpi->GetCallTrace(&t, 4);
    jvmpi->GetCallTrace(NULL, 4);
    envs[0] = bad;
    envs[1] = NULL;
    jvmpi->SuspendThreadList(2, envs, res);
    jvmpi->ResumeThreadList(2, envs, res);
    jvmpi->SuspendThreadList(2, NULL, NULL);
    if (live && r % 4 == 0) {
        jvmpi->GetThreadStatus(live);
        jvmpi->ThreadHasRun(live);
        jvmpi->GetThreadLocalStorage(live);
        jvmpi->GetThreadObject(live);
        t.env_id = live;
        jvmpi->GetCallTrace(&t, 4);
        jvmpi->SuspendThread(live);
        jvmpi->ResumeThread(live);
    }
    /* IDs. */
    jvmpi->jobjectID2jobject(gone);
    jvmpi->jobjectID2jobject((jobjectID)(uintptr_t)0xdead0);
    jvmpi->jobjectID2jobject(NULL);
    jvmpi->jobject2jobjectID(NULL);
    jvmpi->GetMethodClass((jmethodID)(uintptr_t)0xbad0);
    jvmpi->GetMethodClass(NULL);
    if (ld(&some_method)) jvmpi->GetMethodClass((jmethodID)ld(&some_method));
    /* GC. */
    jvmpi->DisableGC();
    jvmpi->EnableGC();
    if (r % 64 == 0) jvmpi->RunGC();
    if (r % 128 == 0) jvmpi->CreateSystemThread("abuse-null", 5, NULL);
    if (ld(&shut_down)) inc(&abuse_after);
}

/* Waits from a thread the JVM does not know: a timed one, and an untimed one (a negative
 * timeout: until notified, as HotSpot 1.5) that a second such thread notifies. */
static JVMPI_RawMonitor waits_m;
static void *notifier(void *arg) {
    sleep_us(20 * 1000);
    jvmpi->RawMonitorEnter(waits_m);
    jvmpi->RawMonitorNotifyAll(waits_m);
    jvmpi->RawMonitorExit(waits_m);
    return NULL;
}
static long ms_since(struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}
static void waits(void) {
    struct timespec t0;
    pthread_t p;
    long timed, untimed;
    waits_m = jvmpi->RawMonitorCreate("waits");
    jvmpi->RawMonitorEnter(waits_m);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    jvmpi->RawMonitorWait(waits_m, 30);
    timed = ms_since(&t0);
    pthread_create(&p, NULL, notifier, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    jvmpi->RawMonitorWait(waits_m, -1);
    untimed = ms_since(&t0);
    jvmpi->RawMonitorExit(waits_m);
    pthread_join(p, NULL);
    jvmpi->RawMonitorDestroy(waits_m);
    logf_("ABUSE waits timed=%ldms negative_notified_after=%ldms", timed, untimed);
}

static void abuse_system_thread(void *arg) {
    JNIEnv *env = NULL;
    (*the_vm)->GetEnv(the_vm, (void **)&env, JNI_VERSION_1_2);
    logf_("ABUSE system thread made from a pthread runs env=%p announced=%d", (void *)env, env_live(env));
}

static void *abuse_thread(void *arg) {
    int made = 0;
    struct timespec started; /* JVM_INIT_DONE seen: the swaps of notify-null start then */
    waits();
    for (;;) {
        if (!made && ld(&init_done)) {
            made = 1;
            clock_gettime(CLOCK_MONOTONIC, &started);
            logf_("ABUSE CreateSystemThread from a pthread rc=%d",
                  (int)jvmpi->CreateSystemThread("abuse-created", JVMPI_NORMAL_PRIORITY, abuse_system_thread));
        }
        abuse_round();
        /* Only between JVM_INIT_DONE and half a second after it: the shim skips an agent whose
         * NotifyEvent is NULL, so a JVM_INIT_DONE or JVM_SHUT_DOWN sent in such a moment would
         * be lost, and the test asserts on both. */
        if (opt_notify_null && made && abuse_rounds % 50 == 25 && !ld(&shut_down) && ms_since(&started) < 500) {
            jvmpi->NotifyEvent = NULL;
            sleep_us(300);
            jvmpi->NotifyEvent = notify_other;
            sleep_us(300);
            jvmpi->NotifyEvent = notify;
        }
        sleep_us(ld(&shut_down) ? 200 : 1000);
    }
    return NULL;
}

static void at_exit(void) {
    long before = ld(&abuse_rounds);
    abuse_round();
    logf_("ATEXIT ok rounds=%ld after_shutdown=%ld", before, ld(&abuse_after));
}

/* ---- events ------------------------------------------------------------------------------------ */
static void summary(void) {
    char buf[2048];
    size_t n = 0;
    int i;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "SUMMARY");
    for (i = 0; i < C_N; i++) n += (size_t)snprintf(buf + n, sizeof buf - n, " %s=%ld", cnames[i], ld(&counts[i]));
    n += (size_t)snprintf(buf + n, sizeof buf - n, " live=%ld relaxed=%ld", obj_count(), ld(&relaxed));
    logf_("%s", buf);
    n = (size_t)snprintf(buf, sizeof buf, "VIOLATIONS");
    for (i = 0; i < V_N; i++) n += (size_t)snprintf(buf + n, sizeof buf - n, " %s=%ld", vnames[i], ld(&vcount[i]));
    logf_("%s", buf);
}

static void reenter_in_bracket(JNIEnv *env, long gc) {
    jobjectID tid;
    inc(&counts[C_REENTER]);
    jvmpi->RawMonitorEnter(side_lock);
    jvmpi->RawMonitorEnter(gc_lock);
    jvmpi->RawMonitorExit(gc_lock);
    jvmpi->RawMonitorExit(side_lock);
    jvmpi->EnableEvent(JVMPI_EVENT_DATA_RESET_REQUEST, NULL);
    jvmpi->DisableEvent(JVMPI_EVENT_DATA_RESET_REQUEST, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_START, NULL);
    tid = jvmpi->GetThreadObject(env);
    if (tid) {
        inc(&counts[C_REQUESTED]);
        jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, tid);
    }
    if (gc % 5 == 0) jvmpi->RunGC();
}


/* ---- ID round trips (ids=K) --------------------------------------------------------------------- */
/* What a requested OBJECT_ALLOC must say, per thread: set before RequestEvent, checked by the nested
 * requested event, which marks it seen. */
static __thread struct {
    jobjectID id, class_id;
    jint is_array, size, seen;
} want;

/* Handed from the handlers to the checking thread: the object (a global reference) and its ID. */
#define IDQ 256
static struct {
    jobject ref;
    jobjectID id, class_id;
    jint is_array, size;
} idq[IDQ];
static long idq_head, idq_tail; /* under tab */

/* RequestEvent(OBJECT_ALLOC, id) in this thread, checked against what the agent was told. */
static void request_and_check(jobjectID id, jobjectID k, jint is_array, jint size, const char *where) {
    want.id = id;
    want.class_id = k;
    want.is_array = is_array;
    want.size = size;
    want.seen = 0;
    inc(&counts[C_REQUESTED]);
    if (jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id) != JVMPI_SUCCESS)
        violation(V_REQUESTED, "%s: RequestEvent(OBJECT_ALLOC, %p) failed for a live object", where, (void *)id);
    else if (!want.seen)
        violation(V_REQUESTED, "%s: RequestEvent(OBJECT_ALLOC, %p) succeeded but sent nothing", where, (void *)id);
    want.id = NULL;
}

/* The requested OBJECT_ALLOC that request_and_check asked for. */
static void check_requested(JVMPI_Event *e) {
    if (!want.id || e->u.obj_alloc.obj_id != want.id) return;
    want.seen = 1;
    if (e->u.obj_alloc.class_id != want.class_id || e->u.obj_alloc.is_array != want.is_array ||
        e->u.obj_alloc.size != want.size)
        violation(V_REQUESTED, "%p: requested class %p is_array %d size %d, announced class %p is_array %d size %d",
                  (void *)want.id, (void *)e->u.obj_alloc.class_id, (int)e->u.obj_alloc.is_array,
                  (int)e->u.obj_alloc.size, (void *)want.class_id, (int)want.is_array, (int)want.size);
}

/* Both directions for a live object: jobjectID2jobject(id) is an object (the same as `same` when
 * given, of the class `k` names when `k` is a plain class), and jobject2jobjectID of it and of a
 * copy is `id`. Returns the local reference (the caller deletes it) or NULL. */
static jobject roundtrip(JNIEnv *env, jobjectID id, jobjectID k, jint is_array, jobject same, const char *where) {
    jobject o = jvmpi->jobjectID2jobject(id), copy;
    jobjectID back;
    if (!o) {
        violation(V_ROUNDTRIP, "%s: jobjectID2jobject(%p) is NULL for a live object", where, (void *)id);
        return NULL;
    }
    if ((back = jvmpi->jobject2jobjectID(o)) != id)
        violation(V_ROUNDTRIP, "%s: jobject2jobjectID(jobjectID2jobject(%p)) = %p", where, (void *)id, (void *)back);
    copy = (*env)->NewLocalRef(env, o);
    if ((back = jvmpi->jobject2jobjectID(copy)) != id)
        violation(V_ROUNDTRIP, "%s: jobject2jobjectID of a copy of %p's reference = %p", where, (void *)id, (void *)back);
    (*env)->DeleteLocalRef(env, copy);
    if (same && !(*env)->IsSameObject(env, o, same))
        violation(V_ROUNDTRIP, "%s: jobjectID2jobject(%p) is another object than the one kept", where, (void *)id);
    if (k && is_array == JVMPI_NORMAL_OBJECT) {
        jobject kref = jvmpi->jobjectID2jobject(k);
        jclass oc = (*env)->GetObjectClass(env, o);
        if (!kref) violation(V_ROUNDTRIP, "%s: jobjectID2jobject(class %p of %p) is NULL", where, (void *)k, (void *)id);
        else if (!(*env)->IsSameObject(env, kref, oc))
            violation(V_ROUNDTRIP, "%s: %p is not of the class %p its OBJECT_ALLOC named", where, (void *)id, (void *)k);
        if (kref) (*env)->DeleteLocalRef(env, kref);
        (*env)->DeleteLocalRef(env, oc);
    }
    return o;
}

/* Whether this thread's top frame (the allocating method, in an OBJECT_ALLOC handler) is the JDK's
 * native reflective constructor call of JDK 11-17, which the shim announces before the VM makes the
 * object (compat-matrix: jobjectID2jobject is NULL in that handler). */
static int allocated_by_native_reflection(JNIEnv *env) {
    JVMPI_CallFrame f[1];
    JVMPI_CallTrace t;
    jobjectID k;
    char cn[256];
    t.env_id = env;
    t.frames = f;
    t.num_frames = 0;
    jvmpi->GetCallTrace(&t, 1);
    if (t.num_frames < 1) return 0;
    k = jvmpi->GetMethodClass(f[0].method_id);
    return k && strcmp(class_name(k, cn, sizeof cn), "jdk.internal.reflect.NativeConstructorAccessorImpl") == 0;
}

/* In an OBJECT_ALLOC handler (every ids-th): the checks, then the object to the checking thread. */
static void check_ids_in_handler(JNIEnv *env, JVMPI_Event *e, long n) {
    jobjectID id = e->u.obj_alloc.obj_id, k = e->u.obj_alloc.class_id;
    jint is_array = e->u.obj_alloc.is_array, size = e->u.obj_alloc.size;
    jobject o, g;
    if (!env) return;
    inc(&counts[C_IDCHECKS]);
    if ((n / opt_ids) % 2) request_and_check(id, k, is_array, size, "handler");
    if (allocated_by_native_reflection(env)) {
        inc(&counts[C_IDCHECKS_REFLECTIVE]);
        return;
    }
    o = roundtrip(env, id, k, is_array, NULL, "handler");
    if (!o) return;
    g = (*env)->NewGlobalRef(env, o); /* not under tab: JNI_GLOBALREF_ALLOC comes back here */
    (*env)->DeleteLocalRef(env, o);
    pthread_mutex_lock(&tab);
    if (g && idq_head - idq_tail < IDQ) {
        long i = idq_head++ % IDQ;
        idq[i].ref = g;
        idq[i].id = id;
        idq[i].class_id = k;
        idq[i].is_array = is_array;
        idq[i].size = size;
        g = NULL;
    }
    pthread_mutex_unlock(&tab);
    if (g) (*env)->DeleteGlobalRef(env, g);
}

/* The checking thread: the same checks outside any handler, on objects kept alive. */
static void id_checker(void *arg) {
    JNIEnv *env = NULL;
    long done = 0;
    (*the_vm)->GetEnv(the_vm, (void **)&env, JNI_VERSION_1_2);
    while (!ld(&shut_down)) {
        int got = 0;
        jobject ref = NULL, o;
        jobjectID id = NULL, k = NULL;
        jint is_array = 0, size = 0;
        pthread_mutex_lock(&tab);
        if (idq_tail < idq_head) {
            long i = idq_tail++ % IDQ;
            ref = idq[i].ref;
            id = idq[i].id;
            k = idq[i].class_id;
            is_array = idq[i].is_array;
            size = idq[i].size;
            got = 1;
        }
        pthread_mutex_unlock(&tab);
        if (!got) {
            sleep_us(500);
            continue;
        }
        inc(&counts[C_IDCHECKS_THREAD]);
        if (jvmpi->jobject2jobjectID(ref) != id)
            violation(V_ROUNDTRIP, "thread: jobject2jobjectID(global reference of %p) = %p", (void *)id,
                      (void *)jvmpi->jobject2jobjectID(ref));
        if (++done % 2) request_and_check(id, k, is_array, size, "thread");
        o = roundtrip(env, id, k, is_array, ref, "thread");
        if (o) (*env)->DeleteLocalRef(env, o);
        (*env)->DeleteGlobalRef(env, ref);
    }
    logf_("IDCHECK thread stopped checks=%ld", done);
}

static void notify(JVMPI_Event *e) {
    int requested = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    jint type = e->event_type & ~JVMPI_REQUESTED_EVENT;
    JNIEnv *env = e->env_id;
    inc(&counts[C_EVENTS]);
    if (ld(&shut_down)) violation(V_AFTER, "event %d after JVM_SHUT_DOWN", (int)type);
    switch (type) {
    case JVMPI_EVENT_JVM_INIT_DONE:
        check_env("JVM_INIT_DONE", env);
        st(&init_done, 1);
        logf_("INIT_DONE env=%p", (void *)env);
        if (opt_sampler_ms >= 0 && jvmpi->CreateSystemThread("stress-sampler", JVMPI_NORMAL_PRIORITY, sampler) != JNI_OK)
            logf_("SAMPLER not started");
        if (strcmp(exit_where, "thread") == 0)
            jvmpi->CreateSystemThread("stress-exiter", JVMPI_NORMAL_PRIORITY, exiter_system_thread);
        if (opt_hold) jvmpi->CreateSystemThread("stress-holder", JVMPI_NORMAL_PRIORITY, holder);
        if (opt_ids && jvmpi->CreateSystemThread("stress-idcheck", JVMPI_NORMAL_PRIORITY, id_checker) != JNI_OK)
            logf_("IDCHECK thread not started");
        if (strcmp(exit_where, "pthread") == 0) {
            pthread_t p;
            pthread_create(&p, NULL, exiter_pthread, NULL);
            pthread_detach(p);
        }
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        check_env("JVM_SHUT_DOWN", env);
        if (strcmp(exit_where, "shutdown") == 0) do_exit("shutdown");
        if (opt_freeze) {
            int waited;
            st(&freeze, 1);
            for (waited = 0; ld(&freeze) == 1 && waited < 1000; waited++) sleep_us(1000);
            sleep_us(20 * 1000);
        }
        if (opt_hold) {
            /* As agents did: events off at the end (the holder is still stopped inside its
             * EnableEvent, under the switch this needs). */
            jint r = jvmpi->DisableEvent(JVMPI_EVENT_OBJECT_ALLOC, NULL);
            logf_("HOLD disabled at shutdown r=%d", (int)r);
        }
        /* Like a real agent writing its data out: under the lock its GC handlers hold. */
        if (!opt_notify_null) jvmpi->RawMonitorEnter(gc_lock);
        summary();
        logf_("SHUT_DOWN");
        st(&shut_down, 1);
        if (!opt_notify_null) jvmpi->RawMonitorExit(gc_lock);
        break;
    case JVMPI_EVENT_THREAD_START: {
        JNIEnv *tenv = e->u.thread_start.thread_env_id;
        if (!requested) {
            uintptr_t was = 0;
            pthread_mutex_lock(&tab);
            map_get(&threads, (uintptr_t)tenv, &was);
            map_put(&threads, (uintptr_t)tenv, T_LIVE);
            pthread_mutex_unlock(&tab);
            if (was == T_LIVE) violation(V_THREAD_TWICE, "env %p (%s)", (void *)tenv, e->u.thread_start.thread_name);
            inc(&counts[C_THREADS]);
            jvmpi->SetThreadLocalStorage(tenv, (void *)tenv);
            st(&some_live_env, (long)tenv);
            /* hprof-style: the thread object's own description. */
            if (e->u.thread_start.thread_id && !obj_live((uintptr_t)e->u.thread_start.thread_id)) {
                inc(&counts[C_REQUESTED]);
                jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, e->u.thread_start.thread_id);
            }
        }
        check_env("THREAD_START", env);
        break;
    }
    case JVMPI_EVENT_THREAD_END:
        check_env("THREAD_END", env);
        if (env && jvmpi->GetThreadLocalStorage(env) != (void *)env) violation(V_TLS, "THREAD_END env %p", (void *)env);
        if (opt_slow_end_us) sleep_us(opt_slow_end_us);
        /* Forgotten, not kept as ended: a JNIEnv not in the table is not a live thread either
         * (check_env), and a table of every thread that ever ran grows with the run (a stress
         * run starts a thousand threads a second). */
        pthread_mutex_lock(&tab);
        map_del(&threads, (uintptr_t)env, NULL);
        pthread_mutex_unlock(&tab);
        inc(&counts[C_ENDS]);
        break;
    case JVMPI_EVENT_CLASS_LOAD: {
        int i, nm = e->u.class_load.num_methods, fresh;
        methods_t *ms = malloc(sizeof *ms + (size_t)nm * sizeof(jmethodID));
        check_env("CLASS_LOAD", env);
        ms->n = nm;
        ms->name = strdup(e->u.class_load.class_name);
        for (i = 0; i < nm; i++) ms->m[i] = e->u.class_load.methods[i].method_id;
        pthread_mutex_lock(&tab);
        fresh = !map_get(&classes, (uintptr_t)e->u.class_load.class_id, NULL);
        if (fresh) {
            map_put(&classes, (uintptr_t)e->u.class_load.class_id, (uintptr_t)ms);
            for (i = 0; i < nm; i++) map_put(&methods, (uintptr_t)ms->m[i], (uintptr_t)e->u.class_load.class_id);
        }
        pthread_mutex_unlock(&tab);
        if (!fresh) {
            free(ms->name);
            free(ms);
            if (!requested) violation(V_CLASS_TWICE, "%s %p", e->u.class_load.class_name, (void *)e->u.class_load.class_id);
        } else {
            inc(&counts[C_CLASSES]);
            if (nm) st(&some_method, (long)e->u.class_load.methods[0].method_id);
        }
        break;
    }
    case JVMPI_EVENT_CLASS_UNLOAD: {
        uintptr_t v = 0;
        int i;
        if (!ld(&in_gc)) violation(V_OUTSIDE, "CLASS_UNLOAD of %p", (void *)e->u.class_unload.class_id);
        pthread_mutex_lock(&tab);
        if (map_del(&classes, (uintptr_t)e->u.class_unload.class_id, &v)) {
            methods_t *ms = (methods_t *)v;
            for (i = 0; i < ms->n; i++) map_del(&methods, (uintptr_t)ms->m[i], NULL);
            free(ms->name);
            free(ms);
        }
        pthread_mutex_unlock(&tab);
        if (!v) violation(V_UNLOAD, "class %p", (void *)e->u.class_unload.class_id);
        inc(&counts[C_UNLOADS]);
        break;
    }
    case JVMPI_EVENT_OBJECT_ALLOC: {
        jobjectID k = e->u.obj_alloc.class_id, id = e->u.obj_alloc.obj_id;
        long n = inc(&allocs_seen);
        int was;
        check_env("OBJECT_ALLOC", env);
        if (k && !class_known(k)) {
            violation(V_CLASS, "OBJECT_ALLOC of %p names class %p", (void *)id, (void *)k);
            inc(&counts[C_REQUESTED]);
            jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, k);
        }
        if (requested) check_requested(e);
        was = obj_add((uintptr_t)id, requested ? 2 : 1);
        if (was && !requested) {
            char cn[256];
            violation(V_ALLOC_LIVE, "%p class %s is_array %d size %d env %p, defined before by %s", (void *)id,
                      class_name(k, cn, sizeof cn),
                      (int)e->u.obj_alloc.is_array, (int)e->u.obj_alloc.size, (void *)env,
                      was == 2 ? "a requested OBJECT_ALLOC" : "OBJECT_ALLOC");
        }
        inc(&counts[C_ALLOCS]);
        if (opt_traces && !requested && n % opt_traces == 0) {
            JVMPI_CallFrame frames[8];
            JVMPI_CallTrace t;
            t.env_id = env;
            t.frames = frames;
            t.num_frames = 0;
            jvmpi->GetCallTrace(&t, 8);
            check_trace(&t, 1, NULL, 0);
            inc(&counts[C_TRACES]);
        }
        if (opt_reenter && !requested && n % 4096 == 0) {
            jobject o;
            inc(&counts[C_REENTER]);
            jvmpi->RawMonitorEnter(side_lock);
            jvmpi->RawMonitorExit(side_lock);
            inc(&counts[C_REQUESTED]);
            jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id);
            o = jvmpi->jobjectID2jobject(id);
            if (!o && !allocated_by_native_reflection(env))
                violation(V_ROUNDTRIP, "reenter: jobjectID2jobject(%p) is NULL in its OBJECT_ALLOC", (void *)id);
            if (o && env) {
                if (jvmpi->jobject2jobjectID(o) != id) violation(V_ALLOC_LIVE, "jobject2jobjectID round trip of %p", (void *)id);
                (*env)->DeleteLocalRef(env, o);
            }
            jvmpi->GetThreadObject(env);
        }
        if (opt_ids && !requested && n % opt_ids == 0) check_ids_in_handler(env, e, n);
        if (strcmp(exit_where, "alloc") == 0 && n == exit_n) do_exit("alloc");
        break;
    }
    case JVMPI_EVENT_OBJECT_FREE: {
        uintptr_t id = (uintptr_t)e->u.obj_free.obj_id;
        if (!ld(&in_gc)) violation(V_OUTSIDE, "OBJECT_FREE of %p", (void *)id);
        if (!obj_del(id)) violation(V_FREE, "%p", (void *)id);
        else if ((ld(&counts[C_FREES]) & 1023) == 0) st(&stale_id, (long)id);
        inc(&counts[C_FREES]);
        break;
    }
    case JVMPI_EVENT_GC_START: {
        long gc;
        check_env("GC_START", env);
        if (!opt_notify_null) jvmpi->RawMonitorEnter(gc_lock);
        if (ld(&in_gc)) violation(V_BRACKET, "GC_START inside a bracket");
        st(&in_gc, 1);
        st(&gc_env, (long)env);
        gc = inc(&gc_seen);
        inc(&counts[C_GC]);
        if (opt_reenter) reenter_in_bracket(env, gc);
        if (opt_reenter && gc % 3 == 0) {
            jvmpi->NotifyEvent = (gc % 2) ? notify_other : notify;
        }
        if (opt_bracket_ms) sleep_us(opt_bracket_ms * 1000L);
        if (gc == exit_n) {
            if (strcmp(exit_where, "gc_start") == 0) do_exit("gc_start");
            if (strcmp(exit_where, "thread") == 0 || strcmp(exit_where, "pthread") == 0) trigger_exiter();
        }
        break;
    }
    case JVMPI_EVENT_GC_FINISH:
        if (!ld(&in_gc)) violation(V_BRACKET, "GC_FINISH without GC_START");
        if (ld(&gc_env) != (long)env) violation(V_BRACKET, "GC_FINISH from env %p, GC_START from %p", (void *)env, (void *)ld(&gc_env));
        st(&in_gc, 0);
        if (!opt_notify_null) jvmpi->RawMonitorExit(gc_lock);
        break;
    case JVMPI_EVENT_JNI_GLOBALREF_ALLOC:
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC: {
        jobjectID id = e->u.jni_globalref_alloc.obj_id;
        check_env("JNI_GLOBALREF_ALLOC", env);
        inc(&counts[C_GREFS]);
        if (id && !obj_live((uintptr_t)id)) {
            inc(&counts[C_REQUESTED]);
            jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id);
        }
        break;
    }
    case JVMPI_EVENT_JNI_GLOBALREF_FREE:
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE:
        check_env("JNI_GLOBALREF_FREE", env);
        inc(&counts[C_GREFS]);
        break;
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER:
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED:
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT:
        check_env("RAW_MONITOR", env);
        inc(&counts[C_RAW]);
        break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST:
    case JVMPI_EVENT_DATA_RESET_REQUEST:
        check_env("DATA_DUMP", env);
        inc(&counts[C_DUMPS]);
        break;
    default:
        break;
    }
}

/* ---- JVM_OnLoad -------------------------------------------------------------------------------- */
static const char *opt(const char *options, const char *key, char *buf, size_t n) {
    const char *p = options;
    size_t kl = strlen(key);
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= kl && strncmp(p, key, kl) == 0 && (len == kl || p[kl] == '=')) {
            size_t vl = len > kl ? len - kl - 1 : 0;
            if (vl >= n) vl = n - 1;
            memcpy(buf, len > kl ? p + kl + 1 : "", vl);
            buf[vl] = 0;
            return buf;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    static const jint always[] = {
        JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN, JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END,
        JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_CLASS_UNLOAD, JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH,
        JVMPI_EVENT_JNI_GLOBALREF_ALLOC, JVMPI_EVENT_JNI_GLOBALREF_FREE, JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC,
        JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE, JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER,
        JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED, JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT,
        JVMPI_EVENT_DATA_DUMP_REQUEST, JVMPI_EVENT_DATA_RESET_REQUEST, JVMPI_EVENT_OBJECT_MOVE,
        JVMPI_EVENT_ARENA_DELETE};
    static const jint heap[] = {JVMPI_EVENT_OBJECT_ALLOC, JVMPI_EVENT_OBJECT_FREE, JVMPI_EVENT_ARENA_NEW};
    char buf[1024];
    size_t i;
    int s;
    the_vm = vm;
    if (!opt(options, "log", buf, sizeof buf)) return JNI_ERR;
    out = fopen(buf, "w");
    if (opt(options, "sampler", buf, sizeof buf)) opt_sampler_ms = atoi(buf) > 0 ? atoi(buf) : -1;
    if (opt(options, "traces", buf, sizeof buf)) opt_traces = atoi(buf);
    if (opt(options, "bracket", buf, sizeof buf)) opt_bracket_ms = atoi(buf);
    if (opt(options, "slow-end", buf, sizeof buf)) opt_slow_end_us = atoi(buf);
    opt_alloc = !opt(options, "no-alloc", buf, sizeof buf);
    opt_reenter = opt(options, "reenter", buf, sizeof buf) != NULL;
    opt_abuse = opt(options, "abuse", buf, sizeof buf) != NULL;
    opt_notify_null = opt(options, "notify-null", buf, sizeof buf) != NULL;
    opt_freeze = opt(options, "freeze-at-exit", buf, sizeof buf) != NULL;
    opt_hot = opt(options, "hot", buf, sizeof buf) != NULL;
    opt_hold = opt(options, "hold-switch", buf, sizeof buf) != NULL;
    if (opt(options, "ids", buf, sizeof buf)) opt_ids = atoi(buf);
    if (opt(options, "exit", buf, sizeof buf)) {
        char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) return JNI_ERR;
        *c1 = *c2 = 0;
        snprintf(exit_where, sizeof exit_where, "%s", buf);
        exit_n = atol(c1 + 1);
        exit_code = atoi(c2 + 1);
    }
    for (s = 0; s < SHARDS; s++) pthread_mutex_init(&objs[s].lock, NULL);
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    gc_lock = jvmpi->RawMonitorCreate("stress-gc");
    side_lock = jvmpi->RawMonitorCreate("stress-side");
    for (i = 0; i < sizeof always / sizeof always[0]; i++)
        if (jvmpi->EnableEvent(always[i], NULL) != JVMPI_SUCCESS) logf_("ENABLE failed %d", (int)always[i]);
    for (i = 0; opt_alloc && i < sizeof heap / sizeof heap[0]; i++)
        if (jvmpi->EnableEvent(heap[i], NULL) != JVMPI_SUCCESS) logf_("ENABLE failed %d", (int)heap[i]);
    logf_("ONLOAD sampler=%d traces=%d alloc=%d bracket=%d exit=%s:%ld:%d reenter=%d abuse=%d ids=%d", opt_sampler_ms,
          opt_traces, opt_alloc, opt_bracket_ms, exit_where, exit_n, exit_code, opt_reenter, opt_abuse, opt_ids);
    if (opt_abuse) {
        pthread_t p;
        atexit(at_exit);
        pthread_create(&p, NULL, abuse_thread, NULL);
        pthread_detach(p);
    }
    return JNI_OK;
}
