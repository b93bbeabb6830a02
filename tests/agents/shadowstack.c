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
 * whose name starts with PREFIX).
 *
 * At JVM_SHUT_DOWN: "TOTAL entries=E exits=X mismatches=M open=O unannounced=U threads=T
 * underflows=F here=H", where O is the number of frames still on the stacks of all threads
 * (ended ones included), U the events of threads that had no THREAD_START, F the exits met by
 * an empty stack and H the depth of the thread that delivers JVM_SHUT_DOWN (-1: unknown); with
 * "open" in the options, one "OPEN <thread depth>: <frames, top first>" line per thread whose
 * stack is not empty.
 */
#include <jni.h>
#include <jvmpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char count_prefix[128];
static int opt_entry2, opt_entryonly, opt_open;

struct tstate {
    JNIEnv *env;
    jmethodID *stack;
    int depth, cap;
    long entries, exits, mismatches, underflows;
    int ended;
    struct tstate *next;
};
static struct tstate *threads; /* every thread ever seen (under lock) */
static long unannounced, shut_down;

#define SLOTS (1 << 20)
struct meth { jmethodID id; char *name; int counted; long count; };
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
    pthread_mutex_lock(&lock);
    for (int i = 0; i < e->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        struct meth *s = slot(m->method_id);
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

static void entered(JNIEnv *env, jmethodID m) {
    struct tstate *t = thread(env);
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
    if (count_prefix[0]) {
        for (unsigned i = 0; i < SLOTS; i++) {
            if (table[i].id && table[i].counted) line("COUNT %s %ld", table[i].name, table[i].count);
        }
    }
    line("TOTAL entries=%ld exits=%ld mismatches=%ld open=%ld unannounced=%ld threads=%ld underflows=%ld here=%d", e,
         x, mm, open, unannounced, n, uf, here ? here->depth : -1);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:
        class_load(e);
        break;
    case JVMPI_EVENT_THREAD_START:
        if (!jvmpi->GetThreadLocalStorage(e->u.thread_start.thread_env_id)) new_thread(e->u.thread_start.thread_env_id);
        break;
    case JVMPI_EVENT_THREAD_END: {
        struct tstate *t = jvmpi->GetThreadLocalStorage(e->env_id);
        if (t) t->ended = 1;
        break;
    }
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
        if (!shut_down++) shutdown_report(e->env_id);
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
        } else if (strncmp(o, "count=", 6) == 0) {
            snprintf(count_prefix, sizeof count_prefix, "%s", o + 6);
        }
    }
    if (!out) out = stderr;
    jvmpi->NotifyEvent = notify;
    if (!enable(JVMPI_EVENT_CLASS_LOAD) || !enable(JVMPI_EVENT_THREAD_START) || !enable(JVMPI_EVENT_THREAD_END) ||
        !enable(opt_entry2 ? JVMPI_EVENT_METHOD_ENTRY2 : JVMPI_EVENT_METHOD_ENTRY) ||
        (!opt_entryonly && !enable(JVMPI_EVENT_METHOD_EXIT)) || !enable(JVMPI_EVENT_JVM_SHUT_DOWN))
        return JNI_ERR;
    return JNI_OK;
}
