/*
 * shadowstack: a JVMPI agent that keeps its own call stack per thread from METHOD_ENTRY(2) and
 * METHOD_EXIT, as cpu=times profilers (hprof) and call tracers did, for tests/loop_heads.rs.
 *
 * Like those tools it enables a fixed list of events in JVM_OnLoad and gives up (JNI_ERR) at
 * the first refusal; keeps its per-thread data in JVMPI thread-local storage keyed by env_id,
 * set at THREAD_START; names methods from CLASS_LOAD and resolves a method it has not heard of
 * with GetMethodClass + RequestEvent(CLASS_LOAD) on the spot.
 *
 * At METHOD_EXIT the exiting method must be on top of the thread's stack: otherwise it counts a
 * mismatch (hprof printed "method on stack top != method exiting" there), logs the first few,
 * and pops down to the method if it is deeper in the stack; an exit met by an empty stack is
 * also counted as an underflow.
 *
 * Options (comma-separated, NULL allowed): log=PATH, entry2 (METHOD_ENTRY2 instead of
 * METHOD_ENTRY), entryonly (no METHOD_EXIT: count entries only, as coverage tools did),
 * count=PREFIX (print "COUNT <class>.<method> <n>" at JVM_SHUT_DOWN for the methods of classes
 * whose name starts with PREFIX), trace (GetCallTrace of the current thread, depth 4, at every
 * 64th METHOD_ENTRY and at every OBJECT_ALLOC, as tracers that record where they are did),
 * alloc (enable OBJECT_ALLOC too), sample (a sampler thread made with CreateSystemThread that,
 * every millisecond, suspends each live thread it knows, takes its depth-4 trace and resumes
 * it, as HPROF cpu=samples did; and asks GetThreadObject of each), jni (at each THREAD_START a thread
 * sends about itself, JNI calls made with its env_id: GetVersion, NewStringUTF,
 * GetStringUTFLength, FindClass, GetStaticMethodID and the variadic CallStaticIntMethod).
 *
 * At JVM_SHUT_DOWN: "TOTAL entries=E exits=X mismatches=M open=O unannounced=U threads=T
 * underflows=F starts=S ends=N vstarts=VS vends=VN traces=C badtraces=B samples=P vnamed=VM jniok=J
 * jnibad=JB noobject=NO lateclass=L tasksamples=TS tasksites=TA here=H",
 * where O is the number of frames still on the stacks of all threads (ended ones included), U
 * the events of threads that had no THREAD_START, F the exits met with an empty stack (counted
 * in M too), VS/VN the THREAD_START/END of threads in the group "VirtualThreads", B the traces
 * (own or sampled) whose frames name a method the agent could not resolve, VM the virtual
 * threads announced with a name starting "named-vt-", NO the sampled threads GetThreadObject
 * did not know, L the methods a trace named before their class's CLASS_LOAD and whose class
 * never had a CLASS_LOAD of its own afterwards (the agent resolved them with RequestEvent;
 * HPROF could not: "unable to resolve a method id"; the first few are logged as LATECLASS), TS
 * the sampled traces with a frame of a method of class VtTasks (tests/java/VtTasks.java), TA
 * the allocation sites (trace at OBJECT_ALLOC) of virtual threads with such a frame.
 * H is the depth of the thread that delivers JVM_SHUT_DOWN (-1: unknown); with "open" in the
 * options, one "OPEN <thread depth>: <frames, top first>" line per thread whose stack is not
 * empty.
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
static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char count_prefix[128];
static int opt_entry2, opt_entryonly, opt_open, opt_trace, opt_alloc, opt_sample, opt_jni;

struct tstate {
    JNIEnv *env;
    jmethodID *stack;
    int depth, cap;
    long entries, exits, mismatches, underflows;
    int ended, virtual;
    struct tstate *next;
};
static struct tstate *threads; /* every thread ever seen (under lock) */
static long unannounced, shut_down, starts, ends, vstarts, vends, traces, badtraces, samples, vnamed, jniok, jnibad,
    noobject;

#define SLOTS (1 << 20)
/* late: 1 when a trace named the method before its class's CLASS_LOAD (resolved then with
 * RequestEvent), 2 once a CLASS_LOAD of its class came on its own after that. */
struct meth { jmethodID id; char *name; int counted; long count; int late; };
static struct meth table[SLOTS];

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
    pthread_mutex_lock(&lock);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    fflush(out);
    pthread_mutex_unlock(&lock);
    va_end(ap);
}

static void class_load(JVMPI_Event *e) {
    const char *cn = e->u.class_load.class_name;
    int counted = count_prefix[0] && strncmp(cn, count_prefix, strlen(count_prefix)) == 0;
    int requested = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < e->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        struct meth *s = slot(m->method_id);
        if (s && s->id && s->late == 1 && !requested) s->late = 2;
        if (!s || s->id) continue;
        size_t n = strlen(cn) + strlen(m->method_name) + strlen(m->method_signature) + 3;
        char *name = malloc(n);
        snprintf(name, n, "%s.%s%s", cn, m->method_name, m->method_signature);
        s->name = name;
        s->counted = counted;
        __atomic_store_n(&s->id, m->method_id, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
}

/* The method's entry, resolving an unknown method on the spot (no lock held). */
static struct meth *method(jmethodID id) {
    struct meth *s = slot(id);
    if (s && __atomic_load_n(&s->id, __ATOMIC_ACQUIRE) == NULL) {
        jobjectID cls = jvmpi->GetMethodClass(id);
        if (cls) jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, cls);
        s = slot(id);
    }
    return s && s->id == id ? s : NULL;
}

static const char *name_of(jmethodID id) {
    struct meth *m = method(id);
    return m ? m->name : "?";
}

/* JNI calls made with a thread's env_id, in that thread (option `jni`). */
static void jni_calls(JNIEnv *env) {
    int ok = (*env)->GetVersion(env) >= JNI_VERSION_1_2;
    jstring s = (*env)->NewStringUTF(env, "jvmpi");
    ok = ok && s && (*env)->GetStringUTFLength(env, s) == 5;
    if (s) (*env)->DeleteLocalRef(env, s);
    jclass math = (*env)->FindClass(env, "java/lang/Math");
    jmethodID abs = math ? (*env)->GetStaticMethodID(env, math, "abs", "(I)I") : NULL;
    ok = ok && abs && (*env)->CallStaticIntMethod(env, math, abs, (jint)-42) == 42;
    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
        ok = 0;
    }
    if (math) (*env)->DeleteLocalRef(env, math);
    __sync_fetch_and_add(ok ? &jniok : &jnibad, 1);
}

static struct tstate *new_thread(JNIEnv *env) {
    struct tstate *t = calloc(1, sizeof *t);
    t->env = env;
    t->cap = 64;
    t->stack = malloc(sizeof(jmethodID) * t->cap);
    pthread_mutex_lock(&lock);
    t->next = threads;
    threads = t;
    pthread_mutex_unlock(&lock);
    jvmpi->SetThreadLocalStorage(env, t);
    return t;
}

static struct tstate *thread(JNIEnv *env) {
    struct tstate *t = jvmpi->GetThreadLocalStorage(env);
    if (!t) {
        __sync_fetch_and_add(&unannounced, 1);
        t = new_thread(env);
    }
    return t;
}

/* A depth-4 trace of `env`'s thread: counted, and counted bad if a frame names a method the
 * agent cannot resolve. */
static long lateclass; /* methods a trace named before any CLASS_LOAD of their class came on its own */

static long tasksamples; /* sampled traces with a frame of a VtTasks method */
static long tasksites;   /* allocation sites (depth-4 traces at OBJECT_ALLOC) of virtual threads with a VtTasks frame */

/* `tasks`: the counter of traces with a frame of a VtTasks method, or NULL. */
static void check_trace(JVMPI_CallTrace *ct, long *tasks) {
    __sync_fetch_and_add(&traces, 1);
    if (tasks) {
        for (int i = 0; i < ct->num_frames; i++) {
            struct meth *m = method(ct->frames[i].method_id);
            if (m && strncmp(m->name, "VtTasks.", 8) == 0) {
                __sync_fetch_and_add(tasks, 1);
                break;
            }
        }
    }
    for (int i = 0; i < ct->num_frames; i++) {
        struct meth *s = slot(ct->frames[i].method_id);
        if (s && __atomic_load_n(&s->id, __ATOMIC_ACQUIRE) == NULL) {
            struct meth *m = method(ct->frames[i].method_id);
            if (m) {
                pthread_mutex_lock(&lock);
                if (!m->late) m->late = 1;
                pthread_mutex_unlock(&lock);
            }
        }
    }
    for (int i = 0; i < ct->num_frames; i++) {
        if (!method(ct->frames[i].method_id)) {
            __sync_fetch_and_add(&badtraces, 1);
            break;
        }
    }
}

static void take_trace(JNIEnv *env, long *tasks) {
    JVMPI_CallFrame frames[4];
    JVMPI_CallTrace ct = {env, 0, frames};
    jvmpi->GetCallTrace(&ct, 4);
    check_trace(&ct, tasks);
}

static void entered(JNIEnv *env, jmethodID m) {
    struct tstate *t = thread(env);
    if (opt_trace && (t->entries & 63) == 0) take_trace(env, NULL);
    if (t->depth == t->cap) {
        t->cap *= 2;
        t->stack = realloc(t->stack, sizeof(jmethodID) * t->cap);
    }
    t->stack[t->depth++] = m;
    t->entries++;
    if (count_prefix[0]) {
        struct meth *s = method(m);
        if (s && s->counted) __sync_fetch_and_add(&s->count, 1);
    }
}

static void exited(JNIEnv *env, jmethodID m) {
    struct tstate *t = thread(env);
    t->exits++;
    if (t->depth == 0) t->underflows++;
    if (t->depth > 0 && t->stack[t->depth - 1] == m) {
        t->depth--;
        return;
    }
    t->mismatches++;
    if (t->depth == 0) t->underflows++;
    if (t->mismatches <= 5) {
        line("MISMATCH exiting %s, on top %s, depth %d", name_of(m),
             t->depth > 0 ? name_of(t->stack[t->depth - 1]) : "(empty)", t->depth);
    }
    for (int d = t->depth - 1; d >= 0; d--) {
        if (t->stack[d] == m) {
            t->depth = d;
            break;
        }
    }
}

static void shutdown_report(JNIEnv *env) {
    long e = 0, x = 0, mm = 0, uf = 0, open = 0, n = 0;
    struct tstate *here = jvmpi->GetThreadLocalStorage(env);
    pthread_mutex_lock(&lock);
    for (struct tstate *t = threads; t; t = t->next) {
        e += t->entries;
        x += t->exits;
        mm += t->mismatches;
        uf += t->underflows;
        open += t->depth;
        n++;
    }
    pthread_mutex_unlock(&lock);
    if (opt_open) {
        for (struct tstate *t = threads; t; t = t->next) {
            if (t->depth == 0) continue;
            char buf[4096];
            size_t at = 0;
            for (int d = t->depth - 1; d >= 0 && at < sizeof buf - 256; d--)
                at += snprintf(buf + at, sizeof buf - at, " %s", name_of(t->stack[d]));
            line("OPEN %d:%s", t->depth, buf);
        }
    }
    for (unsigned i = 0; i < SLOTS; i++) {
        if (table[i].id && table[i].late == 1 && ++lateclass <= 5) line("LATECLASS %s", table[i].name);
    }
    if (count_prefix[0]) {
        for (unsigned i = 0; i < SLOTS; i++) {
            if (table[i].id && table[i].counted) line("COUNT %s %ld", table[i].name, table[i].count);
        }
    }
    line("TOTAL entries=%ld exits=%ld mismatches=%ld open=%ld unannounced=%ld threads=%ld underflows=%ld starts=%ld "
         "ends=%ld vstarts=%ld vends=%ld traces=%ld badtraces=%ld samples=%ld vnamed=%ld jniok=%ld jnibad=%ld "
         "noobject=%ld lateclass=%ld tasksamples=%ld tasksites=%ld here=%d",
         e, x, mm, open, unannounced, n, uf, starts, ends, vstarts, vends, traces, badtraces, samples, vnamed, jniok,
         jnibad, noobject, lateclass, tasksamples, tasksites, here ? here->depth : -1);
}

/* The sampler thread (option `sample`): every millisecond, each live thread it knows is
 * suspended, traced and resumed. */
static void sampler(void *arg) {
    (void)arg;
    JNIEnv *envs[4096];
    while (!__atomic_load_n(&shut_down, __ATOMIC_ACQUIRE)) {
        int n = 0;
        pthread_mutex_lock(&lock);
        for (struct tstate *t = threads; t && n < 4096; t = t->next) {
            if (!t->ended) envs[n++] = t->env;
        }
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < n; i++) {
            /* The methods are resolved after the thread is resumed: it may hold a lock that
             * resolving (RequestEvent) needs. */
            JVMPI_CallFrame frames[4];
            JVMPI_CallTrace ct = {envs[i], 0, frames};
            jvmpi->SuspendThread(envs[i]);
            jvmpi->GetCallTrace(&ct, 4);
            jvmpi->ResumeThread(envs[i]);
            if (!jvmpi->GetThreadObject(envs[i])) __sync_fetch_and_add(&noobject, 1);
            __sync_fetch_and_add(&samples, 1);
            check_trace(&ct, &tasksamples);
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:
        class_load(e);
        break;
    case JVMPI_EVENT_THREAD_START: {
        struct tstate *t = jvmpi->GetThreadLocalStorage(e->u.thread_start.thread_env_id);
        if (!t) t = new_thread(e->u.thread_start.thread_env_id);
        if (!(e->event_type & JVMPI_REQUESTED_EVENT)) {
            __sync_fetch_and_add(&starts, 1);
            if (e->u.thread_start.group_name && strcmp(e->u.thread_start.group_name, "VirtualThreads") == 0) {
                t->virtual = 1;
                __sync_fetch_and_add(&vstarts, 1);
                if (e->u.thread_start.thread_name && strncmp(e->u.thread_start.thread_name, "named-vt-", 9) == 0)
                    __sync_fetch_and_add(&vnamed, 1);
            }
            if (opt_jni && e->env_id == e->u.thread_start.thread_env_id) jni_calls(e->env_id);
        }
        break;
    }
    case JVMPI_EVENT_THREAD_END: {
        struct tstate *t = jvmpi->GetThreadLocalStorage(e->env_id);
        __sync_fetch_and_add(&ends, 1);
        if (t) {
            t->ended = 1;
            if (t->virtual) __sync_fetch_and_add(&vends, 1);
        }
        break;
    }
    case JVMPI_EVENT_OBJECT_ALLOC:
        if (opt_trace) {
            struct tstate *t = jvmpi->GetThreadLocalStorage(e->env_id);
            take_trace(e->env_id, t && t->virtual ? &tasksites : NULL);
        }
        break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        if (opt_sample && jvmpi->CreateSystemThread("shadowstack sampler", JVMPI_NORMAL_PRIORITY, sampler) != JNI_OK)
            line("sampler thread refused");
        break;
    case JVMPI_EVENT_METHOD_ENTRY:
        entered(e->env_id, e->u.method.method_id);
        break;
    case JVMPI_EVENT_METHOD_ENTRY2:
        entered(e->env_id, e->u.method_entry2.method_id);
        break;
    case JVMPI_EVENT_METHOD_EXIT:
        exited(e->env_id, e->u.method.method_id);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        if (!__atomic_fetch_add(&shut_down, 1, __ATOMIC_ACQ_REL)) shutdown_report(e->env_id);
        break;
    default:
        break;
    }
}

static int enable(jint ev) {
    if (jvmpi->EnableEvent(ev, NULL) != JVMPI_SUCCESS) {
        fprintf(stderr, "shadowstack: event %d refused, giving up\n", (int)ev);
        return 0;
    }
    return 1;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", options ? options : "");
    for (char *save = NULL, *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        if (strncmp(o, "log=", 4) == 0) {
            out = fopen(o + 4, "w");
        } else if (strcmp(o, "entry2") == 0) {
            opt_entry2 = 1;
        } else if (strcmp(o, "open") == 0) {
            opt_open = 1;
        } else if (strcmp(o, "entryonly") == 0) {
            opt_entryonly = 1;
        } else if (strcmp(o, "trace") == 0) {
            opt_trace = 1;
        } else if (strcmp(o, "alloc") == 0) {
            opt_alloc = 1;
        } else if (strcmp(o, "sample") == 0) {
            opt_sample = 1;
        } else if (strcmp(o, "jni") == 0) {
            opt_jni = 1;
        } else if (strncmp(o, "count=", 6) == 0) {
            snprintf(count_prefix, sizeof count_prefix, "%s", o + 6);
        }
    }
    if (!out) out = stderr;
    jvmpi->NotifyEvent = notify;
    if (!enable(JVMPI_EVENT_CLASS_LOAD) || !enable(JVMPI_EVENT_THREAD_START) || !enable(JVMPI_EVENT_THREAD_END) ||
        !enable(opt_entry2 ? JVMPI_EVENT_METHOD_ENTRY2 : JVMPI_EVENT_METHOD_ENTRY) ||
        (!opt_entryonly && !enable(JVMPI_EVENT_METHOD_EXIT)) || !enable(JVMPI_EVENT_JVM_SHUT_DOWN) ||
        (opt_alloc && !enable(JVMPI_EVENT_OBJECT_ALLOC)) || (opt_sample && !enable(JVMPI_EVENT_JVM_INIT_DONE)))
        return JNI_ERR;
    return JNI_OK;
}
