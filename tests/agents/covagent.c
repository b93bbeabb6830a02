/*
 * covagent: a coverage agent written the way JCOV's `type=B` is (tests/coverage.rs).
 *
 * As JCOV does, it enables CLASS_LOAD_HOOK, CLASS_LOAD, INSTRUCTION_START, THREAD_START,
 * THREAD_END and JVM_SHUT_DOWN in JVM_OnLoad and refuses to start if one is refused. In
 * CLASS_LOAD_HOOK it copies the class file back (new_class_data from malloc_f), reads the class's
 * name from its constant pool and, for the classes it profiles (name starting with `only=`),
 * keeps the name in a table of the hooking thread's (found with GetThreadLocalStorage of the
 * event's env_id, created by THREAD_START or on the spot). CLASS_LOAD takes the class out of
 * the table of the thread it arrives in and starts profiling it (its method IDs); a class whose
 * CLASS_LOAD arrives in another thread than its hook is not found there (JCOV then skips it and
 * later frees it twice: see the report). INSTRUCTION_START counts per method and offset, with
 * the outcomes of conditional branches, inside a JVMPI raw monitor (as JCOV's handler does).
 *
 * Lines (log=PATH): VIOLATION ... (a CLASS_LOAD without its hook in the same thread; a thread
 * ending with a hooked class never loaded), CLASS <name> at JVM_SHUT_DOWN for every profiled
 * class, and COUNT <class>.<method><sig> <offset> <count> <true> <false> for every offset
 * executed. Options: log=PATH, only=PREFIX (default: the program's classes, "CovProg").
 */
#include <jni.h>
#include <jvmpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static FILE *out;
static char only[128] = "CovProg";
static JVMPI_RawMonitor lock;

#define MAXH 64
struct thr { int n; char *hooked[MAXH]; };

#define MAXM 256
#define MAXOFF 1024
struct meth { jmethodID id; char *name; long count[MAXOFF], t[MAXOFF], f[MAXOFF]; };
static struct meth *meths[MAXM];
static int nmeths;
static char *classes[MAXM];
static int nclasses;

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

static struct thr *thread_of(JNIEnv *env) {
    struct thr *t = jvmpi->GetThreadLocalStorage(env);
    if (!t) {
        t = calloc(1, sizeof *t);
        jvmpi->SetThreadLocalStorage(env, t);
    }
    return t;
}

static unsigned u2(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

/* The class's internal name from its class file (malloc'd), or NULL. */
static char *class_name(const unsigned char *d, int len) {
    if (len < 10 || u2(d) != 0xCAFE) return NULL;
    int n = (int)u2(d + 8), pos = 10;
    const unsigned char **utf = calloc(n, sizeof *utf);
    unsigned *cls = calloc(n, sizeof *cls);
    char *res = NULL;
    for (int i = 1; i < n && pos < len; i++) {
        int tag = d[pos];
        switch (tag) {
        case 1: utf[i] = d + pos; pos += 3 + u2(d + pos + 1); break;
        case 7: cls[i] = u2(d + pos + 1); pos += 3; break;
        case 8: case 16: case 19: case 20: pos += 3; break;
        case 15: pos += 4; break;
        case 3: case 4: case 9: case 10: case 11: case 12: case 17: case 18: pos += 5; break;
        case 5: case 6: pos += 9; i++; break;
        default: goto done;
        }
    }
    if (pos + 4 <= len) {
        unsigned this_class = u2(d + pos + 2);
        if (this_class < (unsigned)n && cls[this_class] < (unsigned)n && utf[cls[this_class]]) {
            const unsigned char *u = utf[cls[this_class]];
            int l = (int)u2(u + 1);
            res = malloc(l + 1);
            memcpy(res, u + 3, l);
            res[l] = 0;
        }
    }
done:
    free(utf);
    free(cls);
    return res;
}

static void hook(JVMPI_Event *e) {
    int len = e->u.class_load_hook.class_data_len;
    e->u.class_load_hook.new_class_data = e->u.class_load_hook.malloc_f(len);
    memcpy(e->u.class_load_hook.new_class_data, e->u.class_load_hook.class_data, len);
    e->u.class_load_hook.new_class_data_len = len;
    char *name = class_name(e->u.class_load_hook.class_data, len);
    if (!name || strncmp(name, only, strlen(only)) != 0) { free(name); return; }
    for (char *p = name; *p; p++) if (*p == '/') *p = '.';
    struct thr *t = thread_of(e->env_id);
    if (t->n < MAXH) t->hooked[t->n++] = name;
}

static void class_load(JVMPI_Event *e) {
    const char *cn = e->u.class_load.class_name;
    if (strncmp(cn, only, strlen(only)) != 0) return;
    struct thr *t = thread_of(e->env_id);
    int found = -1;
    for (int i = 0; i < t->n; i++) if (!strcmp(t->hooked[i], cn)) found = i;
    if (found < 0) {
        line("VIOLATION CLASS_LOAD of %s in a thread that did not hook it", cn);
        return;
    }
    free(t->hooked[found]);
    t->hooked[found] = t->hooked[--t->n];
    jvmpi->RawMonitorEnter(lock);
    if (nclasses < MAXM) classes[nclasses++] = strdup(cn);
    for (int i = 0; i < e->u.class_load.num_methods && nmeths < MAXM; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        struct meth *s = calloc(1, sizeof *s);
        size_t n = strlen(cn) + strlen(m->method_name) + strlen(m->method_signature) + 2;
        s->name = malloc(n);
        snprintf(s->name, n, "%s.%s%s", cn, m->method_name, m->method_signature);
        s->id = m->method_id;
        meths[nmeths++] = s;
    }
    jvmpi->RawMonitorExit(lock);
}

static void insn(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    for (int i = 0; i < nmeths; i++) {
        struct meth *m = meths[i];
        int off = e->u.instruction.offset;
        if (m->id != e->u.instruction.method_id || off < 0 || off >= MAXOFF) continue;
        m->count[off]++;
        if (e->u.instruction.u.if_info.is_true) m->t[off]++; else m->f[off]++;
        break;
    }
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD_HOOK: hook(e); break;
    case JVMPI_EVENT_CLASS_LOAD: class_load(e); break;
    case JVMPI_EVENT_INSTRUCTION_START: insn(e); break;
    case JVMPI_EVENT_THREAD_START:
        if (!jvmpi->GetThreadLocalStorage(e->u.thread_start.thread_env_id))
            jvmpi->SetThreadLocalStorage(e->u.thread_start.thread_env_id, calloc(1, sizeof(struct thr)));
        break;
    case JVMPI_EVENT_THREAD_END: {
        struct thr *t = jvmpi->GetThreadLocalStorage(e->env_id);
        for (int i = 0; t && i < t->n; i++)
            line("VIOLATION a thread ended with the hooked class %s never loaded in it", t->hooked[i]);
        break;
    }
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        jvmpi->RawMonitorEnter(lock);
        for (int i = 0; i < nclasses; i++) line("CLASS %s", classes[i]);
        for (int i = 0; i < nmeths; i++)
            for (int off = 0; off < MAXOFF; off++)
                if (meths[i]->count[off])
                    line("COUNT %s %d %ld %ld %ld", meths[i]->name, off, meths[i]->count[off], meths[i]->t[off], meths[i]->f[off]);
        jvmpi->RawMonitorExit(lock);
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    char opts[1024] = "";
    if (options) snprintf(opts, sizeof opts, "%s", options);
    for (char *save, *tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strncmp(tok, "log=", 4)) out = fopen(tok + 4, "w");
        else if (!strncmp(tok, "only=", 5)) snprintf(only, sizeof only, "%s", tok + 5);
    }
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("covagent_lock");
    jint evs[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_CLASS_LOAD_HOOK, JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END,
                   JVMPI_EVENT_JVM_SHUT_DOWN, JVMPI_EVENT_INSTRUCTION_START };
    for (unsigned i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (jvmpi->EnableEvent(evs[i], NULL) != JVMPI_SUCCESS) {
            fprintf(stderr, "covagent: cannot enable event %d\n", (int)evs[i]);
            return JNI_ERR;
        }
    return JNI_OK;
}
