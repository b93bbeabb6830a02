/*
 * realagent: a test agent that behaves the way real JDK 1.2-1.5 JVMPI tools did (hprof-style
 * heap sites, a CPU sampler, a class-file instrumenting front end, per-thread data), for
 * tests/fidelity.rs. Where the recorder agent checks JVMPI's written promises, this one relies
 * on what HotSpot 1.5 actually did, the way such tools came to rely on it:
 *
 *  - JVM_OnLoad accepts options == NULL (what HotSpot passed without ':'); its configuration
 *    therefore comes from environment variables, the options are only logged.
 *  - It enables a fixed list of events in order and gives up at the first refusal, returning
 *    JNI_ERR (the JVM then does not start), like a coverage tool that cannot work without them.
 *  - It resolves every ID it meets on the spot with RequestEvent, recursively, like hprof:
 *    an OBJECT_ALLOC's class (CLASS_LOAD) and that class's object (OBJECT_ALLOC) before the
 *    object itself is entered; a CLASS_LOAD's class object; a THREAD_START's thread object;
 *    the class of an unknown method in a call trace. Its recursion is bounded at depth 64:
 *    deeper means the JVM described a cycle (a real agent would overflow its stack).
 *  - Per-thread data in JVMPI thread-local storage, set at THREAD_START and freed at
 *    THREAD_END; every other event must come from an announced thread that has it.
 *  - Heap sites: a call trace for every allocation, reported for chosen classes and for
 *    allocations made in chosen classes' methods.
 *  - A sampler thread (CreateSystemThread at JVM_INIT_DONE) that takes other threads' traces.
 *  - JNI natives of the program's helper class live in this library (no System.loadLibrary).
 *  - At JVM_SHUT_DOWN: thread status / ThreadHasRun / call trace of every known thread, then
 *    DisableEvent of every event of its list.
 *
 * Environment:
 *   REALAGENT_LOG=PATH       the log file, one line per record (default ./realagent.log)
 *   REALAGENT_EVENTS=A,B,..  events to enable, in order (default: HotSpot 1.5's list below)
 *   REALAGENT_SITES=P1,P2,.. class-name prefixes (dotted names) whose allocation sites are
 *                            logged; no sites (and no traces) without it
 *   REALAGENT_SAMPLER=0      no sampler thread
 *
 * Log lines (prefix, then fields):
 *   OPTIONS NULL | OPTIONS '<options>'      GETENV rc=<n>
 *   ENABLE_FAILED <event> rc=<n>            ENABLED n=<count>
 *   THREAD_START name= group= env= tenv= req=   THREAD_END name= env=
 *   CLASS_LOAD <name>                       (non-requested only)
 *   CLASS_OF_CLASS class_id=<p> is_array=<n>   (requested OBJECT_ALLOC of java.lang.Class's object)
 *   HOOK java/lang/Object
 *   SITE <class|[elem|[kind> <Class.method> line=<n> depth=<n> frames=<C.m:line;...>
 *   INIT_DONE env=<p>                       DATA_DUMP
 *   at JVM_SHUT_DOWN (its JVMPI calls between "realagent: shutdown calls begin" and "... end" lines
 *     on stderr): SHUTDOWN_THREAD ..., DISABLE_FAILED <event> rc=<n>, DISABLED n=<count>,
 *     MISSING_CLASS_LOAD <name>, HOOKS n= missing=, UNHOOKED <name>, CLASSES n= boot= boot_unhooked=,
 *     SAMPLER ticks= traces=, EVENTS <name>=<count> ..., VIOLATIONS <kind>=<count> ..., SHUT_DOWN
 *   VIOLATION <kind> ...: recursion, unannounced-env, missing-tls, missing-tls-at-shutdown,
 *     thread-start-env, thread-start-twice (a second THREAD_START for a JNIEnv whose THREAD_END
 *     never came), shim-frame, shim-frame-sampled (the first 20 of each kind are logged,
 *     all are counted in VIOLATIONS)
 */
#include <jni.h>
#include <jvmpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH 64       /* RequestEvent nesting */
#define SITE_DEPTH 4       /* frames of an allocation site */
#define SAMPLE_DEPTH 8     /* frames of a sampled or shutdown trace */
#define MAX_THREADS 1024
#define MAX_LIST 64
#define MAX_PREFIXES 16
#define NAME_MAX_LEN 512
#define TMAGIC 0x52454154u
#define SHIM_CLASS "JvmpiShimTracker"

static JavaVM *the_vm;
static JVMPI_Interface *jvmpi;
static FILE *out;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every table below; never held across a call into the JVM. */
static pthread_mutex_t tab = PTHREAD_MUTEX_INITIALIZER;
/* Read by the sampler around each trace of another thread; written by THREAD_END, so that a
 * thread's trace is never asked for after the agent has forgotten the thread. */
static pthread_rwlock_t samp = PTHREAD_RWLOCK_INITIALIZER;

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

static long inc(long *p) { return __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST); }
static int get(int *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static void set(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

/* ---- violations ------------------------------------------------------------------------------ */
enum { V_RECURSION, V_UNANNOUNCED, V_MISSING_TLS, V_TLS_SHUTDOWN, V_THREAD_START_ENV, V_THREAD_START_TWICE,
       V_SHIM_FRAME, V_SHIM_FRAME_SAMPLED, V_N };
static const char *const vnames[V_N] = {"recursion", "unannounced-env", "missing-tls", "missing-tls-at-shutdown",
                                        "thread-start-env", "thread-start-twice", "shim-frame", "shim-frame-sampled"};
static long vcount[V_N];

static void violation(int kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(int kind, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    if (inc(&vcount[kind]) > 20) return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    logf_("VIOLATION %s %s", vnames[kind], buf);
}

/* ---- event names ------------------------------------------------------------------------------ */
static const struct { const char *name; jint ev; } EVENTS[] = {
    {"METHOD_ENTRY", JVMPI_EVENT_METHOD_ENTRY},
    {"METHOD_ENTRY2", JVMPI_EVENT_METHOD_ENTRY2},
    {"METHOD_EXIT", JVMPI_EVENT_METHOD_EXIT},
    {"OBJECT_ALLOC", JVMPI_EVENT_OBJECT_ALLOC},
    {"OBJECT_FREE", JVMPI_EVENT_OBJECT_FREE},
    {"OBJECT_MOVE", JVMPI_EVENT_OBJECT_MOVE},
    {"COMPILED_METHOD_LOAD", JVMPI_EVENT_COMPILED_METHOD_LOAD},
    {"COMPILED_METHOD_UNLOAD", JVMPI_EVENT_COMPILED_METHOD_UNLOAD},
    {"INSTRUCTION_START", JVMPI_EVENT_INSTRUCTION_START},
    {"THREAD_START", JVMPI_EVENT_THREAD_START},
    {"THREAD_END", JVMPI_EVENT_THREAD_END},
    {"CLASS_LOAD_HOOK", JVMPI_EVENT_CLASS_LOAD_HOOK},
    {"HEAP_DUMP", JVMPI_EVENT_HEAP_DUMP},
    {"JNI_GLOBALREF_ALLOC", JVMPI_EVENT_JNI_GLOBALREF_ALLOC},
    {"JNI_GLOBALREF_FREE", JVMPI_EVENT_JNI_GLOBALREF_FREE},
    {"JNI_WEAK_GLOBALREF_ALLOC", JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC},
    {"JNI_WEAK_GLOBALREF_FREE", JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE},
    {"CLASS_LOAD", JVMPI_EVENT_CLASS_LOAD},
    {"CLASS_UNLOAD", JVMPI_EVENT_CLASS_UNLOAD},
    {"DATA_DUMP_REQUEST", JVMPI_EVENT_DATA_DUMP_REQUEST},
    {"DATA_RESET_REQUEST", JVMPI_EVENT_DATA_RESET_REQUEST},
    {"JVM_INIT_DONE", JVMPI_EVENT_JVM_INIT_DONE},
    {"JVM_SHUT_DOWN", JVMPI_EVENT_JVM_SHUT_DOWN},
    {"ARENA_NEW", JVMPI_EVENT_ARENA_NEW},
    {"ARENA_DELETE", JVMPI_EVENT_ARENA_DELETE},
    {"OBJECT_DUMP", JVMPI_EVENT_OBJECT_DUMP},
    {"RAW_MONITOR_CONTENDED_ENTER", JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER},
    {"RAW_MONITOR_CONTENDED_ENTERED", JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED},
    {"RAW_MONITOR_CONTENDED_EXIT", JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT},
    {"MONITOR_CONTENDED_ENTER", JVMPI_EVENT_MONITOR_CONTENDED_ENTER},
    {"MONITOR_CONTENDED_ENTERED", JVMPI_EVENT_MONITOR_CONTENDED_ENTERED},
    {"MONITOR_CONTENDED_EXIT", JVMPI_EVENT_MONITOR_CONTENDED_EXIT},
    {"MONITOR_WAIT", JVMPI_EVENT_MONITOR_WAIT},
    {"MONITOR_WAITED", JVMPI_EVENT_MONITOR_WAITED},
    {"MONITOR_DUMP", JVMPI_EVENT_MONITOR_DUMP},
    {"GC_START", JVMPI_EVENT_GC_START},
    {"GC_FINISH", JVMPI_EVENT_GC_FINISH},
};
#define NEVENTS ((int)(sizeof EVENTS / sizeof EVENTS[0]))

/* The events HotSpot 1.5 supported, in the order such a tool enables them. */
static const char DEFAULT_EVENTS[] =
    "CLASS_LOAD,CLASS_UNLOAD,CLASS_LOAD_HOOK,OBJECT_ALLOC,OBJECT_FREE,INSTRUCTION_START,THREAD_START,THREAD_END,"
    "JNI_GLOBALREF_ALLOC,JNI_GLOBALREF_FREE,JNI_WEAK_GLOBALREF_ALLOC,JNI_WEAK_GLOBALREF_FREE,METHOD_ENTRY,"
    "METHOD_ENTRY2,METHOD_EXIT,COMPILED_METHOD_LOAD,COMPILED_METHOD_UNLOAD,JVM_INIT_DONE,JVM_SHUT_DOWN,"
    "DATA_DUMP_REQUEST,DATA_RESET_REQUEST,OBJECT_MOVE,ARENA_NEW,ARENA_DELETE,RAW_MONITOR_CONTENDED_ENTER,"
    "RAW_MONITOR_CONTENDED_ENTERED,RAW_MONITOR_CONTENDED_EXIT,MONITOR_CONTENDED_ENTER,MONITOR_CONTENDED_ENTERED,"
    "MONITOR_CONTENDED_EXIT,MONITOR_WAIT,MONITOR_WAITED,GC_START,GC_FINISH";

static const char *event_name(jint ev) {
    int i;
    for (i = 0; i < NEVENTS; i++)
        if (EVENTS[i].ev == ev) return EVENTS[i].name;
    return "?";
}

static jint list[MAX_LIST];
static int nlist;
static int on_thread_events; /* THREAD_START is in the list: thread checks apply */
static long counts[64];

/* ---- tables (open addressing, fixed capacity, under `tab`) ------------------------------------ */
typedef struct {
    const char *what;
    unsigned long cap, used;
    void **k;
    void **v;
    int full;
} pmap_t;

static void pm_init(pmap_t *m, const char *what, unsigned long cap) {
    m->what = what;
    m->cap = cap;
    m->k = calloc(cap, sizeof *m->k);
    m->v = calloc(cap, sizeof *m->v);
    if (!m->k || !m->v) m->cap = 0;
}
static unsigned long pm_hash(const pmap_t *m, const void *k) {
    return (unsigned long)((((uintptr_t)k >> 3) * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);
}
/* The value slot of `k`, or NULL. */
static void **pm_get(pmap_t *m, const void *k) {
    unsigned long i, n;
    if (!m->cap || !k) return NULL;
    for (i = pm_hash(m, k), n = 0; m->k[i] && n < m->cap; i = (i + 1) & (m->cap - 1), n++)
        if (m->k[i] == k) return &m->v[i];
    return NULL;
}
/* The value slot of `k`, entered if absent (NULL when the table is full). */
static void **pm_put(pmap_t *m, void *k) {
    unsigned long i;
    void **s = pm_get(m, k);
    if (s || !m->cap || !k) return s;
    if (m->used * 4 >= m->cap * 3) {
        m->full = 1;
        return NULL;
    }
    for (i = pm_hash(m, k); m->k[i]; i = (i + 1) & (m->cap - 1)) {}
    m->k[i] = k;
    m->used++;
    return &m->v[i];
}

typedef struct {
    const char *what;
    unsigned long cap, used;
    char **k;
    int full;
} sset_t;

static void ss_init(sset_t *s, const char *what, unsigned long cap) {
    s->what = what;
    s->cap = cap;
    s->k = calloc(cap, sizeof *s->k);
    if (!s->k) s->cap = 0;
}
static unsigned long ss_hash(const sset_t *s, const char *k) {
    unsigned long h = 1469598103934665603ull;
    while (*k) h = (h ^ (unsigned char)*k++) * 1099511628211ull;
    return h & (s->cap - 1);
}
static int ss_has(const sset_t *s, const char *k) {
    unsigned long i, n;
    if (!s->cap) return 0;
    for (i = ss_hash(s, k), n = 0; s->k[i] && n < s->cap; i = (i + 1) & (s->cap - 1), n++)
        if (strcmp(s->k[i], k) == 0) return 1;
    return 0;
}
static void ss_add(sset_t *s, const char *k) {
    unsigned long i;
    if (!s->cap || ss_has(s, k)) return;
    if (s->used * 4 >= s->cap * 3) {
        s->full = 1;
        return;
    }
    for (i = ss_hash(s, k); s->k[i]; i = (i + 1) & (s->cap - 1)) {}
    s->k[i] = strdup(k);
    if (s->k[i]) s->used++;
}

/* class ID -> class name (dots), strdup'ed */
static pmap_t classes;
/* jmethodID -> "Class.method", strdup'ed */
static pmap_t methods;
/* object ID -> 1 live (entered), 2 freed */
static pmap_t objects;
/* class-file names (slashes) seen by CLASS_LOAD_HOOK, and by CLASS_LOAD */
static sset_t hooked, loaded;
/* CLASS_LOAD names (dots) of boot-looking classes, to compare with hooked */
static sset_t boot_loaded;

static jobjectID class_class_id; /* ID of java.lang.Class (from its CLASS_LOAD) */
static int class_of_class_logged;
static long nclass_loads, nboot, nhooks, nhooks_unparsed;

/* ---- threads ----------------------------------------------------------------------------------- */
struct tinfo {
    unsigned magic;
    JNIEnv *env;
    jobjectID thread_id;
    char name[96];
};
static struct tinfo *threads[MAX_THREADS];
static int nthreads;

static int tindex(JNIEnv *env) { /* under tab */
    int i;
    for (i = 0; i < nthreads; i++)
        if (threads[i]->env == env) return i;
    return -1;
}
static struct tinfo *tfind(JNIEnv *env) {
    struct tinfo *p;
    int i;
    pthread_mutex_lock(&tab);
    i = tindex(env);
    p = i >= 0 ? threads[i] : NULL;
    pthread_mutex_unlock(&tab);
    return p;
}

/* The event's thread must be announced (THREAD_START seen, no THREAD_END since) and its
 * thread-local storage must hold the agent's record. */
static struct tinfo *check_env(const char *ev, JNIEnv *env) {
    struct tinfo *mine;
    void *p;
    if (!on_thread_events) return NULL;
    mine = tfind(env);
    if (!mine) {
        violation(V_UNANNOUNCED, "%s env=%p", ev, (void *)env);
        return NULL;
    }
    p = jvmpi->GetThreadLocalStorage(env);
    if (p != mine) violation(V_MISSING_TLS, "%s env=%p tls=%p want=%p", ev, (void *)env, p, (void *)mine);
    return mine;
}

/* ---- resolving IDs ------------------------------------------------------------------------------ */
static __thread int depth;

/* Enters one level of RequestEvent nesting; refuses (and reports) beyond MAX_DEPTH. */
static int descend(const char *what, void *id) {
    if (depth >= MAX_DEPTH) {
        violation(V_RECURSION, "depth=%d asking %s for %p", depth, what, id);
        return 0;
    }
    depth++;
    return 1;
}

static int class_known(jobjectID cid) {
    int r;
    pthread_mutex_lock(&tab);
    r = pm_get(&classes, cid) != NULL;
    pthread_mutex_unlock(&tab);
    return r;
}

static void request_class(jobjectID cid) {
    jint rc;
    if (!descend("CLASS_LOAD", cid)) return;
    rc = jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, cid);
    depth--;
    if (rc != JVMPI_SUCCESS) {
        void **s;
        logf_("REQUEST_FAILED CLASS_LOAD id=%p rc=%d", (void *)cid, (int)rc);
        pthread_mutex_lock(&tab);
        s = pm_put(&classes, cid); /* do not ask again */
        if (s && !*s) *s = strdup("?");
        pthread_mutex_unlock(&tab);
    }
}

static void resolve_class(jobjectID cid) {
    if (cid && !class_known(cid)) request_class(cid);
}

static void resolve_object(jobjectID id) {
    void **s;
    jint rc;
    int known;
    if (!id) return;
    pthread_mutex_lock(&tab);
    s = pm_get(&objects, id);
    known = s && *s == (void *)1;
    pthread_mutex_unlock(&tab);
    if (known || !descend("OBJECT_ALLOC", id)) return;
    rc = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id);
    depth--;
    if (rc != JVMPI_SUCCESS) {
        logf_("REQUEST_FAILED OBJECT_ALLOC id=%p rc=%d", (void *)id, (int)rc);
        pthread_mutex_lock(&tab);
        s = pm_put(&objects, id); /* do not ask again */
        if (s) *s = (void *)1;
        pthread_mutex_unlock(&tab);
    }
}

/* "Class.method" of a frame's method into buf; unknown methods are resolved through
 * GetMethodClass + RequestEvent(CLASS_LOAD), then remembered as "Class.?" if still unknown. */
static void method_name(jmethodID m, char *buf, size_t n) {
    void **s;
    jobjectID cid = NULL;
    int i;
    for (i = 0; i < 2; i++) {
        pthread_mutex_lock(&tab);
        s = pm_get(&methods, m);
        if (s && *s) snprintf(buf, n, "%s", (char *)*s);
        pthread_mutex_unlock(&tab);
        if (s && *s) return;
        if (i == 1) break;
        cid = jvmpi->GetMethodClass(m);
        if (cid) request_class(cid);
    }
    pthread_mutex_lock(&tab);
    {
        void **c = cid ? pm_get(&classes, cid) : NULL;
        snprintf(buf, n, "%s.?", c && *c ? (char *)*c : "?");
    }
    s = pm_put(&methods, m);
    if (s && !*s) *s = strdup(buf);
    pthread_mutex_unlock(&tab);
}

/* The class part of "Class.method". */
static void class_part(const char *qualified, char *buf, size_t n) {
    const char *dot = strrchr(qualified, '.');
    size_t len = dot ? (size_t)(dot - qualified) : strlen(qualified);
    if (len >= n) len = n - 1;
    memcpy(buf, qualified, len);
    buf[len] = 0;
}

static int is_shim(const char *qualified) { return strstr(qualified, SHIM_CLASS) != NULL; }

/* ---- CLASS_LOAD --------------------------------------------------------------------------------- */
static int hidden_name(const char *n) { return strstr(n, ".0x") || strstr(n, "/0x") || strstr(n, "$$Lambda"); }
static int boot_name(const char *n) {
    return (!strncmp(n, "java.", 5) || !strncmp(n, "jdk.", 4) || !strncmp(n, "sun.", 4) || !strncmp(n, "com.sun.", 8)) &&
           !hidden_name(n);
}

static void on_class_load(JVMPI_Event *e, int req) {
    const char *name = e->u.class_load.class_name ? e->u.class_load.class_name : "?";
    jobjectID cid = e->u.class_load.class_id;
    char slashes[NAME_MAX_LEN];
    void **s;
    int i;
    snprintf(slashes, sizeof slashes, "%s", name);
    for (i = 0; slashes[i]; i++)
        if (slashes[i] == '.') slashes[i] = '/';
    pthread_mutex_lock(&tab);
    s = pm_put(&classes, cid);
    if (s && (!*s || strcmp((char *)*s, "?") == 0)) {
        free(*s);
        *s = strdup(name);
    }
    for (i = 0; i < e->u.class_load.num_methods && e->u.class_load.methods; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        char buf[NAME_MAX_LEN];
        s = pm_put(&methods, m->method_id);
        if (s && !*s) {
            snprintf(buf, sizeof buf, "%s.%s", name, m->method_name ? m->method_name : "?");
            *s = strdup(buf);
        }
    }
    ss_add(&loaded, slashes);
    if (!req) {
        nclass_loads++;
        if (boot_name(name) && !ss_has(&boot_loaded, name)) {
            nboot++;
            ss_add(&boot_loaded, name);
        }
    }
    if (strcmp(name, "java.lang.Class") == 0) class_class_id = cid;
    pthread_mutex_unlock(&tab);
    if (!req) logf_("CLASS_LOAD %s", name);
    resolve_object(cid); /* the class object */
}

/* ---- OBJECT_ALLOC and heap sites ---------------------------------------------------------------- */
static char prefixes[MAX_PREFIXES][128];
static int nprefixes;

static int matches(const char *name) {
    int i;
    for (i = 0; i < nprefixes; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

static char kind_letter(jint is_array) {
    switch (is_array) {
    case JVMPI_BOOLEAN: return 'Z';
    case JVMPI_CHAR: return 'C';
    case JVMPI_FLOAT: return 'F';
    case JVMPI_DOUBLE: return 'D';
    case JVMPI_BYTE: return 'B';
    case JVMPI_SHORT: return 'S';
    case JVMPI_INT: return 'I';
    case JVMPI_LONG: return 'J';
    default: return '?';
    }
}

static void site(JVMPI_Event *e) {
    JVMPI_CallFrame f[SITE_DEPTH];
    JVMPI_CallTrace t;
    char cls[NAME_MAX_LEN + 2], top[NAME_MAX_LEN], frames[SITE_DEPTH * 160 + 16], name[NAME_MAX_LEN], tcls[NAME_MAX_LEN];
    int i, shim = 0, first = -1, want;
    size_t len = 0;
    jint kind = e->u.obj_alloc.is_array;
    const char *elem = NULL;

    pthread_mutex_lock(&tab);
    if (e->u.obj_alloc.class_id) {
        void **s = pm_get(&classes, e->u.obj_alloc.class_id);
        elem = s && *s ? (char *)*s : "?";
        snprintf(name, sizeof name, "%s", elem);
        elem = name;
    }
    pthread_mutex_unlock(&tab);
    if (kind == JVMPI_NORMAL_OBJECT)
        snprintf(cls, sizeof cls, "%s", elem ? elem : "?");
    else if (kind == JVMPI_CLASS)
        snprintf(cls, sizeof cls, "[%s", elem ? elem : "?");
    else
        snprintf(cls, sizeof cls, "[%c", kind_letter(kind));
    want = (kind == JVMPI_NORMAL_OBJECT || kind == JVMPI_CLASS) && elem && matches(elem);

    t.env_id = e->env_id;
    t.num_frames = 0;
    t.frames = f;
    jvmpi->GetCallTrace(&t, SITE_DEPTH);
    if (t.num_frames < 0 || t.num_frames > SITE_DEPTH) t.num_frames = 0;
    frames[0] = 0;
    top[0] = 0;
    for (i = 0; i < t.num_frames; i++) {
        char q[NAME_MAX_LEN];
        method_name(f[i].method_id, q, sizeof q);
        if (i == 0) snprintf(top, sizeof top, "%s", q);
        if (is_shim(q)) shim = 1;
        else if (first < 0) first = i;
        if (first == i) {
            class_part(q, tcls, sizeof tcls);
            if (matches(tcls)) want = 1; /* made in the method of a chosen class */
        }
        len += (size_t)snprintf(frames + len, sizeof frames - len, "%s%s:%d", i ? ";" : "", q, (int)f[i].lineno);
        if (len >= sizeof frames) len = sizeof frames - 1;
    }
    if (shim) violation(V_SHIM_FRAME, "%s frames=%s", cls, frames);
    if (want)
        logf_("SITE %s %s line=%d depth=%d frames=%s", cls, t.num_frames ? top : "(none)",
              t.num_frames ? (int)f[0].lineno : 0, (int)t.num_frames, frames);
}

static void on_object_alloc(JVMPI_Event *e, int req) {
    jobjectID cid = e->u.obj_alloc.class_id, id = e->u.obj_alloc.obj_id;
    void **s;
    if (req && id && id == class_class_id) {
        pthread_mutex_lock(&tab);
        int first = !class_of_class_logged;
        class_of_class_logged = 1;
        pthread_mutex_unlock(&tab);
        if (first) logf_("CLASS_OF_CLASS class_id=%p is_array=%d", (void *)cid, (int)e->u.obj_alloc.is_array);
    }
    if (cid) {
        resolve_class(cid);
        resolve_object(cid); /* the class's own object, before this one is entered */
    }
    pthread_mutex_lock(&tab);
    s = pm_put(&objects, id);
    if (s) *s = (void *)1;
    pthread_mutex_unlock(&tab);
    if (!req && nprefixes) site(e);
}

static void forget_object(jobjectID id) {
    void **s;
    pthread_mutex_lock(&tab);
    s = pm_get(&objects, id);
    if (s) *s = (void *)2;
    pthread_mutex_unlock(&tab);
}

/* ---- CLASS_LOAD_HOOK ---------------------------------------------------------------------------- */
static unsigned u2(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

/* The class name (this_class) of a class file, with slashes; 0 if it cannot be parsed. */
static int class_file_name(const unsigned char *d, long len, char *buf, size_t n) {
    unsigned cpc, i, this_class, ni, l;
    unsigned long pos = 10, *off;
    int ok = 0;
    if (!d || len < 10 || d[0] != 0xCA || d[1] != 0xFE || d[2] != 0xBA || d[3] != 0xBE) return 0;
    cpc = u2(d + 8);
    off = calloc(cpc + 1, sizeof *off);
    if (!off) return 0;
    for (i = 1; i < cpc; i++) {
        if (pos >= (unsigned long)len) goto done;
        off[i] = pos;
        switch (d[pos]) {
        case 1:
            if (pos + 3 > (unsigned long)len) goto done;
            pos += 3 + u2(d + pos + 1);
            break;
        case 3: case 4: pos += 5; break;
        case 5: case 6: pos += 9; i++; break;
        case 7: case 8: case 16: case 19: case 20: pos += 3; break;
        case 9: case 10: case 11: case 12: case 17: case 18: pos += 5; break;
        case 15: pos += 4; break;
        default: goto done;
        }
    }
    if (pos + 4 > (unsigned long)len) goto done;
    this_class = u2(d + pos + 2);
    if (this_class == 0 || this_class >= cpc || !off[this_class] || d[off[this_class]] != 7) goto done;
    ni = u2(d + off[this_class] + 1);
    if (ni == 0 || ni >= cpc || !off[ni] || d[off[ni]] != 1) goto done;
    l = u2(d + off[ni] + 1);
    if (off[ni] + 3 + l > (unsigned long)len) goto done;
    if (l >= n) l = (unsigned)n - 1;
    memcpy(buf, d + off[ni] + 3, l);
    buf[l] = 0;
    ok = 1;
done:
    free(off);
    return ok;
}

static void on_hook(JVMPI_Event *e) {
    char name[NAME_MAX_LEN];
    inc(&nhooks);
    if (!class_file_name(e->u.class_load_hook.class_data, e->u.class_load_hook.class_data_len, name, sizeof name)) {
        if (inc(&nhooks_unparsed) <= 5) logf_("HOOK_UNPARSED len=%d", (int)e->u.class_load_hook.class_data_len);
        return;
    }
    if (strcmp(name, "java/lang/Object") == 0) logf_("HOOK java/lang/Object");
    pthread_mutex_lock(&tab);
    ss_add(&hooked, name);
    pthread_mutex_unlock(&tab);
    /* Unchanged: new_class_data stays as the JVM set it. */
}

/* ---- the sampler -------------------------------------------------------------------------------- */
static int sampler_stop, sampler_state; /* state: 0 none, 1 sampling, 2 stopped */
static long sampler_ticks, sampler_traces;

static int snapshot(JNIEnv **envs, int max) {
    int i, n;
    pthread_mutex_lock(&tab);
    for (i = n = 0; i < nthreads && n < max; i++) envs[n++] = threads[i]->env;
    pthread_mutex_unlock(&tab);
    return n;
}

static void sampler(void *arg) {
    static JNIEnv *envs[MAX_THREADS];
    JNIEnv *me = NULL;
    (void)arg;
    (*the_vm)->GetEnv(the_vm, (void **)&me, JNI_VERSION_1_2);
    set(&sampler_state, 1);
    while (!get(&sampler_stop)) {
        int n, i, j;
        usleep(10000);
        inc(&sampler_ticks);
        n = snapshot(envs, MAX_THREADS);
        for (i = 0; i < n && !get(&sampler_stop); i++) {
            JVMPI_CallFrame f[SAMPLE_DEPTH];
            JVMPI_CallTrace t;
            if (envs[i] == me) continue;
            t.env_id = envs[i];
            t.num_frames = 0;
            t.frames = f;
            pthread_rwlock_rdlock(&samp);
            if (tfind(envs[i])) jvmpi->GetCallTrace(&t, SAMPLE_DEPTH);
            pthread_rwlock_unlock(&samp);
            if (t.num_frames <= 0 || t.num_frames > SAMPLE_DEPTH) continue;
            inc(&sampler_traces);
            for (j = 0; j < t.num_frames; j++) {
                char q[NAME_MAX_LEN];
                method_name(f[j].method_id, q, sizeof q);
                if (is_shim(q)) {
                    violation(V_SHIM_FRAME_SAMPLED, "env=%p frame=%d %s:%d", (void *)envs[i], j, q, (int)f[j].lineno);
                    break;
                }
            }
        }
    }
    set(&sampler_state, 2);
    /* Stopped, not gone: like the service threads of real agents, it stays alive (and known to
     * the JVM) until the process exits, so the calls at JVM_SHUT_DOWN may still name it. */
    for (;;) usleep(100000);
}

/* ---- JVM_SHUT_DOWN ------------------------------------------------------------------------------- */
static void on_shut_down(JVMPI_Event *e) {
    static JNIEnv *envs[MAX_THREADS];
    void *p;
    int n, i, waited, missing = 0, unhooked = 0;
    unsigned long k;

    /* The shutdown calls of the agent, between two lines on stderr (where the JVM's and the
     * shim's messages go), so that what they cause can be told apart. */
    fprintf(stderr, "realagent: shutdown calls begin\n");
    if (on_thread_events) {
        p = jvmpi->GetThreadLocalStorage(e->env_id);
        pthread_mutex_lock(&tab);
        i = tindex(e->env_id);
        if (i < 0 || p != threads[i]) i = -1;
        pthread_mutex_unlock(&tab);
        /* A real profiler calls exit(-1) here. */
        if (i < 0) violation(V_TLS_SHUTDOWN, "env=%p tls=%p", (void *)e->env_id, p);
    }

    set(&sampler_stop, 1);
    for (waited = 0; get(&sampler_state) == 1 && waited < 2000; waited++) usleep(1000);

    n = snapshot(envs, MAX_THREADS);
    for (i = 0; i < n; i++) {
        JVMPI_CallFrame f[SAMPLE_DEPTH];
        JVMPI_CallTrace t;
        jint status = jvmpi->GetThreadStatus(envs[i]);
        jboolean ran = jvmpi->ThreadHasRun(envs[i]);
        struct tinfo *ti = tfind(envs[i]);
        t.env_id = envs[i];
        t.num_frames = 0;
        t.frames = f;
        jvmpi->GetCallTrace(&t, SAMPLE_DEPTH);
        logf_("SHUTDOWN_THREAD name=%s env=%p status=%d hasrun=%d frames=%d", ti ? ti->name : "?", (void *)envs[i],
              (int)status, (int)ran, (int)t.num_frames);
    }
    for (i = 0; i < nlist; i++) {
        jint rc = jvmpi->DisableEvent(list[i], NULL);
        if (rc != JVMPI_SUCCESS) logf_("DISABLE_FAILED %s rc=%d", event_name(list[i]), (int)rc);
    }
    logf_("DISABLED n=%d", nlist);
    fprintf(stderr, "realagent: shutdown calls end\n");

    pthread_mutex_lock(&tab);
    for (k = 0; k < hooked.cap; k++)
        if (hooked.k[k] && !ss_has(&loaded, hooked.k[k]))
            if (++missing <= 200) logf_("MISSING_CLASS_LOAD %s", hooked.k[k]);
    for (k = 0; k < boot_loaded.cap; k++)
        if (boot_loaded.k[k]) {
            char slashes[NAME_MAX_LEN];
            int j;
            snprintf(slashes, sizeof slashes, "%s", boot_loaded.k[k]);
            for (j = 0; slashes[j]; j++)
                if (slashes[j] == '.') slashes[j] = '/';
            if (!ss_has(&hooked, slashes) && ++unhooked <= 20) logf_("UNHOOKED %s", slashes);
        }
    logf_("HOOKS n=%ld missing=%d unparsed=%ld", nhooks, missing, nhooks_unparsed);
    logf_("CLASSES n=%ld boot=%ld boot_unhooked=%d", nclass_loads, nboot, unhooked);
    if (classes.full || methods.full || objects.full || hooked.full || loaded.full || boot_loaded.full)
        logf_("TABLE_FULL classes=%d methods=%d objects=%d hooked=%d loaded=%d boot=%d", classes.full, methods.full,
              objects.full, hooked.full, loaded.full, boot_loaded.full);
    pthread_mutex_unlock(&tab);
    logf_("SAMPLER ticks=%ld traces=%ld", sampler_ticks, sampler_traces);
    {
        char buf[4096];
        size_t len = 0;
        for (i = 0; i < 64; i++)
            if (counts[i] && len < sizeof buf - 64)
                len += (size_t)snprintf(buf + len, sizeof buf - len, " %s=%ld", event_name(i), counts[i]);
        buf[len] = 0;
        logf_("EVENTS%s", buf);
        len = 0;
        for (i = 0; i < V_N; i++) len += (size_t)snprintf(buf + len, sizeof buf - len, " %s=%ld", vnames[i], vcount[i]);
        logf_("VIOLATIONS%s", buf);
    }
    logf_("SHUT_DOWN");
}

/* ---- NotifyEvent -------------------------------------------------------------------------------- */
static int init_done;

static int frequent(jint type) {
    return type == JVMPI_EVENT_METHOD_ENTRY || type == JVMPI_EVENT_METHOD_ENTRY2 || type == JVMPI_EVENT_METHOD_EXIT ||
           type == JVMPI_EVENT_INSTRUCTION_START;
}

static void on_thread_start(JVMPI_Event *e, int req) {
    JNIEnv *tenv = e->u.thread_start.thread_env_id;
    const char *name = e->u.thread_start.thread_name ? e->u.thread_start.thread_name : "?";
    struct tinfo *p;
    if (!req && e->env_id != tenv)
        violation(V_THREAD_START_ENV, "name=%s env=%p thread_env=%p", name, (void *)e->env_id, (void *)tenv);
    if (!req) {
        struct tinfo *old = NULL;
        int i;
        pthread_mutex_lock(&tab);
        i = tindex(tenv);
        if (i >= 0) {
            old = threads[i];
            threads[i] = threads[--nthreads];
        }
        pthread_mutex_unlock(&tab);
        if (old) {
            /* Its THREAD_END never came. The record is left behind (not freed): other threads
             * may still compare against it. */
            violation(V_THREAD_START_TWICE, "name=%s env=%p still announced as %s", name, (void *)tenv, old->name);
            old->magic = 0;
        }
        p = calloc(1, sizeof *p);
        if (p) {
            int added = 0;
            p->magic = TMAGIC;
            p->env = tenv;
            p->thread_id = e->u.thread_start.thread_id;
            snprintf(p->name, sizeof p->name, "%s", name);
            jvmpi->SetThreadLocalStorage(tenv, p);
            pthread_mutex_lock(&tab);
            if (nthreads < MAX_THREADS && tindex(tenv) < 0) {
                threads[nthreads++] = p;
                added = 1;
            }
            pthread_mutex_unlock(&tab);
            if (!added) {
                logf_("TABLE_FULL threads");
                free(p);
            }
        }
    }
    logf_("THREAD_START name=%s group=%s env=%p tenv=%p req=%d", name,
          e->u.thread_start.group_name ? e->u.thread_start.group_name : "?", (void *)e->env_id, (void *)tenv, req);
    resolve_object(e->u.thread_start.thread_id);
}

static void on_thread_end(JVMPI_Event *e) {
    struct tinfo *p = NULL;
    int i;
    pthread_rwlock_wrlock(&samp);
    pthread_mutex_lock(&tab);
    i = tindex(e->env_id);
    if (i >= 0) {
        p = threads[i];
        threads[i] = threads[--nthreads];
    }
    pthread_mutex_unlock(&tab);
    if (p) {
        jvmpi->SetThreadLocalStorage(e->env_id, NULL);
        logf_("THREAD_END name=%s env=%p", p->name, (void *)e->env_id);
        p->magic = 0;
        free(p);
    }
    pthread_rwlock_unlock(&samp);
}

static void notify(JVMPI_Event *e) {
    static __thread unsigned frequent_seen;
    int req = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    jint type = e->event_type & ~JVMPI_REQUESTED_EVENT;
    if (type >= 0 && type < 64) inc(&counts[type]);
    if (!req && type != JVMPI_EVENT_THREAD_START) {
        /* Class-file hooks may run while the JVM is still creating its first threads. */
        if (type == JVMPI_EVENT_CLASS_LOAD_HOOK && !get(&init_done)) {
        } else if (frequent(type)) {
            if ((frequent_seen++ & 4095) == 0) check_env(event_name(type), e->env_id);
        } else {
            check_env(event_name(type), e->env_id);
        }
    }
    switch (type) {
    case JVMPI_EVENT_THREAD_START: on_thread_start(e, req); break;
    case JVMPI_EVENT_THREAD_END: on_thread_end(e); break;
    case JVMPI_EVENT_CLASS_LOAD: on_class_load(e, req); break;
    case JVMPI_EVENT_CLASS_UNLOAD: break; /* IDs are never reused while the agent runs */
    case JVMPI_EVENT_CLASS_LOAD_HOOK: on_hook(e); break;
    case JVMPI_EVENT_OBJECT_ALLOC: on_object_alloc(e, req); break;
    case JVMPI_EVENT_OBJECT_FREE: forget_object(e->u.obj_free.obj_id); break;
    case JVMPI_EVENT_OBJECT_MOVE: {
        void **s;
        forget_object(e->u.obj_move.obj_id);
        pthread_mutex_lock(&tab);
        s = pm_put(&objects, e->u.obj_move.new_obj_id);
        if (s) *s = (void *)1;
        pthread_mutex_unlock(&tab);
        break;
    }
    case JVMPI_EVENT_JNI_GLOBALREF_ALLOC:
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC: resolve_object(e->u.jni_globalref_alloc.obj_id); break;
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTER:
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTERED:
    case JVMPI_EVENT_MONITOR_CONTENDED_EXIT: resolve_object(e->u.monitor.object); break;
    case JVMPI_EVENT_MONITOR_WAIT:
    case JVMPI_EVENT_MONITOR_WAITED: resolve_object(e->u.monitor_wait.object); break;
    case JVMPI_EVENT_JVM_INIT_DONE: {
        const char *s = getenv("REALAGENT_SAMPLER");
        logf_("INIT_DONE env=%p", (void *)e->env_id);
        set(&init_done, 1);
        if (!(s && strcmp(s, "0") == 0)) {
            jint rc = jvmpi->CreateSystemThread("RealAgent sampler", JVMPI_NORMAL_PRIORITY, sampler);
            if (rc != JNI_OK) logf_("SAMPLER_FAILED rc=%d", (int)rc);
        }
        break;
    }
    case JVMPI_EVENT_DATA_DUMP_REQUEST: logf_("DATA_DUMP"); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: on_shut_down(e); break;
    default: break; /* counted only: METHOD_*, INSTRUCTION_START, COMPILED_METHOD_*, GC_*, ARENA_*, RAW_* */
    }
}

/* ---- the natives of RealProg -------------------------------------------------------------------- */
JNIEXPORT jlong JNICALL Java_RealProg_agentCpuTime(JNIEnv *env, jclass c) {
    (void)env;
    (void)c;
    return jvmpi ? jvmpi->GetCurrentThreadCpuTime() : -1;
}

/* ---- JVM_OnLoad --------------------------------------------------------------------------------- */
static void parse_prefixes(const char *s) {
    while (s && *s && nprefixes < MAX_PREFIXES) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len > 0 && len < sizeof prefixes[0]) {
            memcpy(prefixes[nprefixes], s, len);
            prefixes[nprefixes++][len] = 0;
        }
        s = end ? end + 1 : NULL;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    const char *path = getenv("REALAGENT_LOG"), *ev = getenv("REALAGENT_EVENTS");
    jint rc;
    int i;
    (void)reserved;
    the_vm = vm;
    out = fopen(path && *path ? path : "realagent.log", "w");
    if (options)
        logf_("OPTIONS '%s'", options);
    else
        logf_("OPTIONS NULL");

    pm_init(&classes, "classes", 1ul << 16);
    pm_init(&methods, "methods", 1ul << 19);
    pm_init(&objects, "objects", 1ul << 21);
    ss_init(&hooked, "hooked", 1ul << 16);
    ss_init(&loaded, "loaded", 1ul << 16);
    ss_init(&boot_loaded, "boot", 1ul << 15);
    parse_prefixes(getenv("REALAGENT_SITES"));

    rc = (*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1_1);
    logf_("GETENV rc=%d", (int)rc);
    if (rc != JNI_OK || !jvmpi) return JNI_ERR;
    jvmpi->NotifyEvent = notify;

    /* The list first, in order; then enable each, giving up at the first refusal. */
    {
        const char *s = ev && *ev ? ev : DEFAULT_EVENTS;
        while (*s && nlist < MAX_LIST) {
            const char *end = strchr(s, ',');
            size_t len = end ? (size_t)(end - s) : strlen(s);
            int found = -1;
            for (i = 0; i < NEVENTS; i++)
                if (strlen(EVENTS[i].name) == len && strncmp(EVENTS[i].name, s, len) == 0) found = i;
            if (found < 0) {
                logf_("ENABLE_FAILED %.*s rc=unknown-name", (int)len, s);
                return JNI_ERR;
            }
            list[nlist++] = EVENTS[found].ev;
            if (EVENTS[found].ev == JVMPI_EVENT_THREAD_START) on_thread_events = 1;
            s = end ? end + 1 : s + len;
        }
    }
    for (i = 0; i < nlist; i++) {
        rc = jvmpi->EnableEvent(list[i], NULL);
        if (rc != JVMPI_SUCCESS) {
            logf_("ENABLE_FAILED %s rc=%d", event_name(list[i]), (int)rc);
            return JNI_ERR;
        }
    }
    logf_("ENABLED n=%d", nlist);
    return JNI_OK;
}
