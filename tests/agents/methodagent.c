/*
 * methodagent: a JVMPI agent of the kind coverage tools and call tracers were, for the tests of
 * METHOD_ENTRY / METHOD_ENTRY2 / METHOD_EXIT / INSTRUCTION_START (tests/methods.rs) and the
 * benchmark (scripts/bench-methods.sh).
 *
 * It enables its events in JVM_OnLoad and FAILS JVM_OnLoad when one is refused, as coverage
 * tools did. Methods are named from CLASS_LOAD (enabled too); a method the agent has not heard
 * of is resolved with GetMethodClass + RequestEvent(CLASS_LOAD), as hprof did.
 *
 * Options (comma-separated): log=PATH, enable=entry+entry2+exit+insn, only=PREFIX (log the
 * events of classes whose name starts with PREFIX; default: count everything, log nothing),
 * trace (in METHOD_ENTRY of a logged method, check GetCallTrace: the entered method on top, at
 * its first line; and log its caller with the caller's line), count (print per-method entry counts at JVM_SHUT_DOWN instead of logging
 * each event), bench (count METHOD_ENTRY (or ENTRY2) and METHOD_EXIT only, print the totals at shutdown),
 * off-again (disable the events again at the end of JVM_OnLoad), bench-lock (with bench: also
 * count INSTRUCTION_START, inside RawMonitorEnter/Exit of one raw monitor, as JCOV's handler
 * does; scripts/bench-instructions.sh), alloc (after its method events, also enable OBJECT_ALLOC
 * and count it, as a profiler taking both times and allocation sites does).
 * The program's natives `MethodsProg.mark(Object)` and `MethodsProg.toggle(boolean)` are
 * implemented here.
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
static char only[128];
static int opt_trace, opt_count, opt_bench, opt_off_again, opt_bench_lock;
static JVMPI_RawMonitor bench_monitor;
static int want_entry, want_entry2, want_exit, want_insn, want_alloc;
static volatile long entries, exits, entries2, insns, allocs;

#define SLOTS (1 << 20)
struct meth { jmethodID id; char *name; int start_line; long count; int logged; };
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
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
}

/* Called with the lock held. */
static void class_load(JVMPI_Event *e) {
    const char *cn = e->u.class_load.class_name;
    int logged = only[0] && strncmp(cn, only, strlen(only)) == 0;
    for (int i = 0; i < e->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        struct meth *s = slot(m->method_id);
        if (!s || s->id) continue;
        size_t n = strlen(cn) + strlen(m->method_name) + strlen(m->method_signature) + 3;
        s->name = malloc(n);
        snprintf(s->name, n, "%s.%s%s", cn, m->method_name, m->method_signature);
        s->start_line = m->start_lineno;
        s->logged = logged;
        s->id = m->method_id;
    }
}

static struct meth *method(jmethodID id) {
    struct meth *s = slot(id);
    if (s && s->id == NULL) {
        /* Not heard of: ask for the class (the lock is not held here). */
        pthread_mutex_unlock(&lock);
        jobjectID k = jvmpi->GetMethodClass(id);
        if (k) jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, k);
        pthread_mutex_lock(&lock);
        s = slot(id);
        if (s && s->id == NULL) {
            line("VIOLATION unknown method %p", (void *)id);
            return NULL;
        }
    }
    return s;
}

static void check_trace(JNIEnv *env, struct meth *m) {
    JVMPI_CallFrame frames[2];
    JVMPI_CallTrace t = { env, 0, frames };
    pthread_mutex_unlock(&lock);
    jvmpi->GetCallTrace(&t, 2);
    pthread_mutex_lock(&lock);
    if (t.num_frames < 1 || frames[0].method_id != m->id)
        line("VIOLATION trace in entry of %s: top is %p", m->name, t.num_frames ? (void *)frames[0].method_id : NULL);
    else if (frames[0].lineno != m->start_line && frames[0].lineno != -3 /* native */)
        line("VIOLATION trace in entry of %s: line %d, first line %d", m->name, (int)frames[0].lineno, m->start_line);
    else {
        line("TRACE ok %s", m->name);
        /* The caller as the trace shows it (a native method appears once, at line -3). */
        struct meth *c = t.num_frames > 1 ? method(frames[1].method_id) : NULL;
        line("CALLER %s %s %d", m->name, c && c->name ? c->name : "-", t.num_frames > 1 ? (int)frames[1].lineno : 0);
    }
}

static void notify(JVMPI_Event *e) {
    int type = e->event_type & ~JVMPI_REQUESTED_EVENT;
    if (opt_bench) {
        if (type == JVMPI_EVENT_METHOD_ENTRY || type == JVMPI_EVENT_METHOD_ENTRY2) { __atomic_add_fetch(&entries, 1, __ATOMIC_RELAXED); return; }
        if (type == JVMPI_EVENT_METHOD_EXIT) { __atomic_add_fetch(&exits, 1, __ATOMIC_RELAXED); return; }
        if (type == JVMPI_EVENT_INSTRUCTION_START) {
            if (opt_bench_lock) {
                jvmpi->RawMonitorEnter(bench_monitor);
                insns++;
                jvmpi->RawMonitorExit(bench_monitor);
            } else {
                __atomic_add_fetch(&insns, 1, __ATOMIC_RELAXED);
            }
            return;
        }
    }
    pthread_mutex_lock(&lock);
    struct meth *m;
    switch (type) {
    case JVMPI_EVENT_CLASS_LOAD:
        class_load(e);
        break;
    case JVMPI_EVENT_OBJECT_ALLOC:
        allocs++;
        break;
    case JVMPI_EVENT_METHOD_ENTRY:
        entries++;
        if ((m = method(e->u.method.method_id)) && m->logged) {
            m->count++;
            if (!opt_count) line("ENTRY %p %s", (void *)e->env_id, m->name);
            if (opt_trace) check_trace(e->env_id, m);
        }
        break;
    case JVMPI_EVENT_METHOD_ENTRY2:
        entries2++;
        if ((m = method(e->u.method_entry2.method_id)) && m->logged && !opt_count)
            line("ENTRY2 %p %s obj=%p", (void *)e->env_id, m->name, (void *)e->u.method_entry2.obj_id);
        break;
    case JVMPI_EVENT_METHOD_EXIT:
        exits++;
        if ((m = method(e->u.method.method_id)) && m->logged && !opt_count)
            line("EXIT %p %s", (void *)e->env_id, m->name);
        break;
    case JVMPI_EVENT_INSTRUCTION_START:
        insns++;
        if ((m = method(e->u.instruction.method_id)) && m->logged && !opt_count) {
            jint *u = (jint *)&e->u.instruction.u;
            line("INSN %s %d is_true=%d %d %d %d", m->name, (int)e->u.instruction.offset,
                 (int)e->u.instruction.u.if_info.is_true, (int)u[0], (int)u[1], (int)u[2]);
        }
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        if (opt_count)
            for (unsigned i = 0; i < SLOTS; i++)
                if (table[i].id && table[i].logged) line("COUNT %s %ld", table[i].name, table[i].count);
        line("TOTAL entries=%ld entries2=%ld exits=%ld insns=%ld allocs=%ld", entries, entries2, exits, insns, allocs);
        if (opt_bench) fprintf(stderr, "agent: METHOD_ENTRY %ld METHOD_EXIT %ld INSTRUCTION_START %ld\n", entries, exits, insns);
        break;
    }
    pthread_mutex_unlock(&lock);
}

JNIEXPORT void JNICALL Java_MethodsProg_mark(JNIEnv *env, jclass k, jobject o) {
    pthread_mutex_lock(&lock);
    line("MARK obj=%p", (void *)jvmpi->jobject2jobjectID(o));
    pthread_mutex_unlock(&lock);
}

static jint set_events(int on) {
    jint (*f)(jint, void *) = on ? jvmpi->EnableEvent : jvmpi->DisableEvent;
    jint r = JVMPI_SUCCESS;
    if (want_entry && f(JVMPI_EVENT_METHOD_ENTRY, NULL) != JVMPI_SUCCESS) r = JVMPI_FAIL;
    if (want_entry2 && f(JVMPI_EVENT_METHOD_ENTRY2, NULL) != JVMPI_SUCCESS) r = JVMPI_FAIL;
    if (want_exit && f(JVMPI_EVENT_METHOD_EXIT, NULL) != JVMPI_SUCCESS) r = JVMPI_FAIL;
    if (want_insn && f(JVMPI_EVENT_INSTRUCTION_START, NULL) != JVMPI_SUCCESS) r = JVMPI_FAIL;
    if (want_alloc && f(JVMPI_EVENT_OBJECT_ALLOC, NULL) != JVMPI_SUCCESS) r = JVMPI_FAIL;
    return r;
}

JNIEXPORT void JNICALL Java_MethodsProg_toggle(JNIEnv *env, jclass k, jboolean on) {
    set_events(on);
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    char opts[1024] = "";
    if (options) snprintf(opts, sizeof opts, "%s", options);
    for (char *save, *tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strncmp(tok, "log=", 4)) out = fopen(tok + 4, "w");
        else if (!strncmp(tok, "only=", 5)) snprintf(only, sizeof only, "%s", tok + 5);
        else if (!strcmp(tok, "trace")) opt_trace = 1;
        else if (!strcmp(tok, "count")) opt_count = 1;
        else if (!strcmp(tok, "bench")) opt_bench = 1;
        else if (!strcmp(tok, "bench-lock")) opt_bench = opt_bench_lock = 1;
        else if (!strcmp(tok, "off-again")) opt_off_again = 1;
        else if (!strcmp(tok, "alloc")) want_alloc = 1;
        else if (!strncmp(tok, "enable=", 7)) {
            char *p = tok + 7;
            want_entry = want_entry2 = 0;
            for (char *s2, *e = strtok_r(p, "+", &s2); e; e = strtok_r(NULL, "+", &s2)) {
                if (!strcmp(e, "entry")) want_entry = 1;
                else if (!strcmp(e, "entry2")) want_entry2 = 1;
                else if (!strcmp(e, "exit")) want_exit = 1;
                else if (!strcmp(e, "insn")) want_insn = 1;
            }
        }
    }
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    if (opt_bench_lock) bench_monitor = jvmpi->RawMonitorCreate("bench_lock");
    if (!opt_bench && jvmpi->EnableEvent(JVMPI_EVENT_CLASS_LOAD, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    if (jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    /* A coverage tool cannot work without its events: refuse to start. */
    if (set_events(1) != JVMPI_SUCCESS) {
        fprintf(stderr, "methodagent: an event was refused\n");
        return JNI_ERR;
    }
    /* Enabled, then switched off again before the program runs (what stays behind costs). */
    if (opt_off_again) set_events(0);
    return JNI_OK;
}
