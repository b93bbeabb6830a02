/*
 * namekeeper: a test agent that keeps what events point to and names every method it meets,
 * the way real JVMPI tools of the JDK 1.2-1.5 era did, for tests/names.rs.
 *
 *  - It keeps the pointers of every CLASS_LOAD, delivered or requested: class_name,
 *    source_name, the methods array and each method's name and signature, the statics and
 *    instances arrays and each field's name and signature (plus private copies to compare
 *    with). At JVM_SHUT_DOWN it reads every kept pointer and reports each one whose text (or,
 *    for a class not unloaded, whose array) changed.
 *  - It names every method ID it meets: the frames of GetCallTrace (depth 4) at every
 *    OBJECT_ALLOC, COMPILED_METHOD_LOAD's method, METHOD_ENTRY's method. An unknown ID is
 *    resolved on the spot with GetMethodClass and RequestEvent(CLASS_LOAD); an ID that is not in
 *    its class's CLASS_LOAD is reported, with what JNI reflection says the method is.
 *  - It enables a fixed list of events in order and gives up at the first refusal.
 *
 * Options: <log file path>[,requested]. With "requested" the agent does not enable CLASS_LOAD
 * and CLASS_UNLOAD: it learns every class by RequestEvent(CLASS_LOAD), as an agent that
 * resolves IDs lazily does. Without it, it also requests the CLASS_LOAD of each class once
 * more at its first OBJECT_ALLOC, and checks that a class's CLASS_LOADs share their pointers
 * (one copy per class, not per event).
 *
 * Log lines:
 *   ENABLE_FAILED <event> rc=<n>
 *   UNLISTED where=<alloc|compiled|entry> mid=<p> class=<name|?> known_before=<0|1> what=<reflected>
 *   NOCLASS where=... mid=<p>            (GetMethodClass answered NULL)
 *   REQUEST_FAILED CLASS_LOAD id=<p> rc=<n>   (also from the CLASS_UNLOAD handler, which requests
 *                                        the CLASS_LOAD of the class being unloaded)
 *   BAD <what> class=<copy of the class name> ...   (a kept pointer no longer reads the same)
 *   COPY class=<name>                    (a second CLASS_LOAD of a class with other pointers)
 *   SHUTDOWN records=<n> requested=<n> unloaded=<n> strings=<n> arrays=<n> bad=<n>
 *            unlisted=<n> noclass=<n> resolved=<n> frames=<n> compiled=<n> entries=<n> allocs=<n>
 */
#include <jni.h>
#include <jvmpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 4

static JavaVM *the_vm;
static JVMPI_Interface *jvmpi;
static FILE *out;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* The tables; never held across a call into the JVM. */
static pthread_mutex_t tab = PTHREAD_MUTEX_INITIALIZER;

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

/* ---- kept CLASS_LOADs ---------------------------------------------------------------------- */
typedef struct {
    const char *np, *sp; /* the event's pointers */
    char *nc, *sc;       /* copies */
} kept_pair;

typedef struct rec {
    jobjectID id;
    int requested, unloaded;
    const char *name;
    char *name_c;
    const char *src;
    char *src_c;
    jint nm, ns, ni;
    JVMPI_Method *marr, *marr_c;
    JVMPI_Field *sarr, *sarr_c, *iarr, *iarr_c;
    kept_pair *m, *s, *i;
    struct rec *next;
} rec;

static rec *records;
static long nrecords, nrequested, ncopies;
static int requested_mode;

/* ---- tables (open addressing, under `tab`) -------------------------------------------------- */
#define CAP (1ul << 20)
static void **mk, **mv; /* jmethodID -> rec* of the class that lists it */
static void **ck, **cv; /* class ID -> latest rec* */

static unsigned long hash(const void *k) { return (unsigned long)((((uintptr_t)k >> 3) * 0x9E3779B97F4A7C15ull) >> 17) & (CAP - 1); }
static void **slot(void **keys, void **vals, const void *k, int put) {
    unsigned long i, n;
    for (i = hash(k), n = 0; n < CAP; i = (i + 1) & (CAP - 1), n++) {
        if (keys[i] == k) return &vals[i];
        if (!keys[i]) {
            if (!put) return NULL;
            keys[i] = (void *)k;
            return &vals[i];
        }
    }
    return NULL;
}

static char *dup(const char *s) { return s ? strdup(s) : NULL; }

static kept_pair *keep_fields(JVMPI_Field *f, jint n) {
    kept_pair *k = calloc(n > 0 ? n : 1, sizeof *k);
    jint j;
    for (j = 0; j < n; j++) {
        k[j].np = f[j].field_name;
        k[j].sp = f[j].field_signature;
        k[j].nc = dup(f[j].field_name);
        k[j].sc = dup(f[j].field_signature);
    }
    return k;
}

static void *copy_of(const void *p, size_t n) {
    void *c = malloc(n ? n : 1);
    if (p && n) memcpy(c, p, n);
    return c;
}

static void on_class_load(JVMPI_Event *e, int requested) {
    rec *r = calloc(1, sizeof *r);
    jint j;
    r->id = e->u.class_load.class_id;
    r->requested = requested;
    r->name = e->u.class_load.class_name;
    r->name_c = dup(r->name);
    r->src = e->u.class_load.source_name;
    r->src_c = dup(r->src);
    r->nm = e->u.class_load.num_methods;
    r->ns = e->u.class_load.num_static_fields;
    r->ni = e->u.class_load.num_instance_fields;
    r->marr = e->u.class_load.methods;
    r->marr_c = copy_of(r->marr, r->nm * sizeof(JVMPI_Method));
    r->sarr = e->u.class_load.statics;
    r->sarr_c = copy_of(r->sarr, r->ns * sizeof(JVMPI_Field));
    r->iarr = e->u.class_load.instances;
    r->iarr_c = copy_of(r->iarr, r->ni * sizeof(JVMPI_Field));
    r->m = calloc(r->nm > 0 ? r->nm : 1, sizeof *r->m);
    for (j = 0; j < r->nm; j++) {
        r->m[j].np = r->marr[j].method_name;
        r->m[j].sp = r->marr[j].method_signature;
        r->m[j].nc = dup(r->marr[j].method_name);
        r->m[j].sc = dup(r->marr[j].method_signature);
    }
    r->s = keep_fields(r->sarr, r->ns);
    r->i = keep_fields(r->iarr, r->ni);
    pthread_mutex_lock(&tab);
    r->next = records;
    records = r;
    nrecords++;
    if (requested) nrequested++;
    {
        void **c = slot(ck, cv, r->id, 1);
        rec *before = c ? *c : NULL;
        /* (a request from the CLASS_UNLOAD handler has its own array: its method IDs are NULL) */
        int own_array = r->nm > 0 && !r->marr[0].method_id;
        if (before && (before->name != r->name || (before->marr != r->marr && !own_array)) && ++ncopies <= 20)
            logf_("COPY class=%s", r->name_c ? r->name_c : "?");
        if (c) *c = r;
    }
    for (j = 0; j < r->nm; j++) {
        void **s = r->marr[j].method_id ? slot(mk, mv, r->marr[j].method_id, 1) : NULL;
        if (s) *s = r;
    }
    pthread_mutex_unlock(&tab);
}

static long nunload_requests;

static void on_class_unload(jobjectID id) {
    rec *r;
    /* HotSpot 1.5 answered a request for the class being unloaded from its CLASS_UNLOAD
     * handler (with NULL method IDs). */
    jint rc = jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, id);
    if (rc != JVMPI_SUCCESS)
        logf_("REQUEST_FAILED CLASS_LOAD (in CLASS_UNLOAD) id=%p rc=%d", (void *)id, (int)rc);
    else
        inc(&nunload_requests);
    pthread_mutex_lock(&tab);
    for (r = records; r; r = r->next)
        if (r->id == id) r->unloaded = 1;
    {
        void **c = slot(ck, cv, id, 0);
        if (c) *c = NULL;
    }
    pthread_mutex_unlock(&tab);
}

/* ---- naming methods --------------------------------------------------------------------------- */
static long nunlisted, nnoclass, nresolved, nframes, ncompiled, nentries, nallocs;
static __thread int diagnosing;

static rec *method_rec(jmethodID m) {
    void **s;
    rec *r;
    pthread_mutex_lock(&tab);
    s = slot(mk, mv, m, 0);
    r = s ? *s : NULL;
    pthread_mutex_unlock(&tab);
    return r;
}

static rec *class_rec(jobjectID cid) {
    void **s;
    rec *r;
    pthread_mutex_lock(&tab);
    s = slot(ck, cv, cid, 0);
    r = s ? *s : NULL;
    pthread_mutex_unlock(&tab);
    return r;
}

/* What JNI reflection says method `m` of class `cid` is (static and instance tried). */
static void reflect(JNIEnv *env, jobjectID cid, jmethodID m, char *buf, size_t n) {
    jobject k;
    jboolean st;
    snprintf(buf, n, "?");
    if (!env) return;
    diagnosing = 1;
    jvmpi->DisableGC();
    k = jvmpi->jobjectID2jobject(cid);
    jvmpi->EnableGC();
    if (k) {
        for (st = 0; st <= 1; st++) {
            jobject o = (*env)->ToReflectedMethod(env, (jclass)k, m, st);
            if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
            if (o) {
                jclass oc = (*env)->GetObjectClass(env, o);
                jmethodID ts = (*env)->GetMethodID(env, oc, "toString", "()Ljava/lang/String;");
                jstring s = ts ? (*env)->CallObjectMethod(env, o, ts) : NULL;
                if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
                if (s) {
                    const char *c = (*env)->GetStringUTFChars(env, s, NULL);
                    if (c) {
                        snprintf(buf, n, "%s", c);
                        (*env)->ReleaseStringUTFChars(env, s, c);
                    }
                }
                break;
            }
        }
    }
    diagnosing = 0;
}

/* Names method `m`: known, or resolved with GetMethodClass + RequestEvent(CLASS_LOAD). */
static void name_method(JNIEnv *env, jmethodID m, const char *where) {
    jobjectID cid;
    rec *r;
    int known_before;
    jint rc;
    if (!m || method_rec(m)) return;
    jvmpi->DisableGC();
    cid = jvmpi->GetMethodClass(m);
    jvmpi->EnableGC();
    if (!cid) {
        if (inc(&nnoclass) <= 20) logf_("NOCLASS where=%s mid=%p", where, (void *)m);
        return;
    }
    known_before = class_rec(cid) != NULL;
    if (!known_before) {
        rc = jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, cid);
        if (rc != JVMPI_SUCCESS) logf_("REQUEST_FAILED CLASS_LOAD id=%p rc=%d", (void *)cid, (int)rc);
        inc(&nresolved);
    }
    if (method_rec(m)) return;
    r = class_rec(cid);
    if (inc(&nunlisted) <= 20) {
        char what[512];
        reflect(env, cid, m, what, sizeof what);
        logf_("UNLISTED where=%s mid=%p class=%s known_before=%d what=%s", where, (void *)m,
              r && r->name_c ? r->name_c : "?", known_before, what);
    }
    /* Remember it, so that it is reported once. */
    pthread_mutex_lock(&tab);
    {
        void **s = slot(mk, mv, m, 1);
        if (s && !*s) *s = r ? r : (void *)records;
    }
    pthread_mutex_unlock(&tab);
}

/* class IDs re-read once (under `tab`) */
static void **rk, **rv;

static void on_alloc(JVMPI_Event *e) {
    JVMPI_CallFrame f[DEPTH];
    JVMPI_CallTrace t;
    jint j;
    jobjectID cid = e->u.obj_alloc.class_id;
    inc(&nallocs);
    if (cid) {
        int ask = !class_rec(cid);
        if (!ask && !requested_mode) {
            pthread_mutex_lock(&tab);
            {
                void **s = slot(rk, rv, cid, 1);
                ask = s && !*s;
                if (s) *s = (void *)1;
            }
            pthread_mutex_unlock(&tab);
        }
        if (ask) {
            jint rc = jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, cid);
            if (rc != JVMPI_SUCCESS) logf_("REQUEST_FAILED CLASS_LOAD id=%p rc=%d", (void *)cid, (int)rc);
        }
    }
    t.env_id = e->env_id;
    t.frames = f;
    t.num_frames = 0;
    jvmpi->GetCallTrace(&t, DEPTH);
    for (j = 0; j < t.num_frames; j++) {
        inc(&nframes);
        name_method(e->env_id, f[j].method_id, "alloc");
    }
}

/* ---- shutdown check ------------------------------------------------------------------------- */
static long nbad, nstrings, narrays, nunloaded;

static int same(const char *p, const char *c) { return (!p && !c) || (p && c && strcmp(p, c) == 0); }

static void bad(rec *r, const char *what, int j, const char *p, const char *c) {
    if (++nbad <= 30) logf_("BAD %s class=%s index=%d kept=%p now=\"%.40s\" was=\"%.40s\"", what, r->name_c ? r->name_c : "?", j, (const void *)p, p ? p : "(null)", c ? c : "(null)");
}

static void check_pair(rec *r, const char *what, kept_pair *k, jint n) {
    jint j;
    for (j = 0; j < n; j++) {
        nstrings += 2;
        if (!same(k[j].np, k[j].nc)) bad(r, what, j, k[j].np, k[j].nc);
        if (!same(k[j].sp, k[j].sc)) bad(r, what, j, k[j].sp, k[j].sc);
    }
}

static void check_all(void) {
    rec *r;
    for (r = records; r; r = r->next) {
        nstrings += 2;
        if (r->unloaded) nunloaded++;
        if (!same(r->name, r->name_c)) bad(r, "class_name", -1, r->name, r->name_c);
        if (!same(r->src, r->src_c)) bad(r, "source_name", -1, r->src, r->src_c);
        check_pair(r, "method", r->m, r->nm);
        check_pair(r, "static", r->s, r->ns);
        check_pair(r, "instance", r->i, r->ni);
        if (!r->unloaded) {
            narrays += 3;
            if (r->nm && memcmp(r->marr, r->marr_c, r->nm * sizeof(JVMPI_Method))) bad(r, "methods-array", -1, NULL, NULL);
            if (r->ns && memcmp(r->sarr, r->sarr_c, r->ns * sizeof(JVMPI_Field))) bad(r, "statics-array", -1, NULL, NULL);
            if (r->ni && memcmp(r->iarr, r->iarr_c, r->ni * sizeof(JVMPI_Field))) bad(r, "instances-array", -1, NULL, NULL);
        }
    }
    logf_("SHUTDOWN records=%ld requested=%ld unloaded=%ld strings=%ld arrays=%ld bad=%ld unlisted=%ld noclass=%ld "
          "resolved=%ld frames=%ld compiled=%ld entries=%ld allocs=%ld copies=%ld unload_requests=%ld",
          nrecords, nrequested, nunloaded, nstrings, narrays, nbad, nunlisted, nnoclass, nresolved, nframes, ncompiled,
          nentries, nallocs, ncopies, nunload_requests);
}

/* ---- events ----------------------------------------------------------------------------------- */
static void notify(JVMPI_Event *e) {
    int requested = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:
        on_class_load(e, requested);
        break;
    case JVMPI_EVENT_CLASS_UNLOAD:
        on_class_unload(e->u.class_unload.class_id);
        break;
    case JVMPI_EVENT_OBJECT_ALLOC:
        if (!requested && !diagnosing) on_alloc(e);
        break;
    case JVMPI_EVENT_COMPILED_METHOD_LOAD:
        if (diagnosing) break;
        inc(&ncompiled);
        name_method(e->env_id, e->u.compiled_method_load.method_id, "compiled");
        break;
    case JVMPI_EVENT_METHOD_ENTRY:
        if (diagnosing) break;
        inc(&nentries);
        name_method(e->env_id, e->u.method.method_id, "entry");
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        check_all();
        break;
    default:
        break;
    }
}

static const struct {
    const char *name;
    jint ev;
} LIST[] = {
    {"THREAD_START", JVMPI_EVENT_THREAD_START},
    {"THREAD_END", JVMPI_EVENT_THREAD_END},
    {"CLASS_LOAD", JVMPI_EVENT_CLASS_LOAD},
    {"CLASS_UNLOAD", JVMPI_EVENT_CLASS_UNLOAD},
    {"OBJECT_ALLOC", JVMPI_EVENT_OBJECT_ALLOC},
    {"COMPILED_METHOD_LOAD", JVMPI_EVENT_COMPILED_METHOD_LOAD},
    {"METHOD_ENTRY", JVMPI_EVENT_METHOD_ENTRY},
    {"JVM_INIT_DONE", JVMPI_EVENT_JVM_INIT_DONE},
    {"JVM_SHUT_DOWN", JVMPI_EVENT_JVM_SHUT_DOWN},
};

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    unsigned i;
    char path[4096];
    char *comma;
    (void)reserved;
    the_vm = vm;
    snprintf(path, sizeof path, "%s", options && *options ? options : "namekeeper.log");
    comma = strchr(path, ',');
    if (comma) {
        *comma = 0;
        requested_mode = strcmp(comma + 1, "requested") == 0;
    }
    out = fopen(path, "w");
    rk = calloc(CAP, sizeof *rk);
    rv = calloc(CAP, sizeof *rv);
    if (!rk || !rv) return JNI_ERR;
    mk = calloc(CAP, sizeof *mk);
    mv = calloc(CAP, sizeof *mv);
    ck = calloc(CAP, sizeof *ck);
    cv = calloc(CAP, sizeof *cv);
    if (!out || !mk || !mv || !ck || !cv) return JNI_ERR;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    for (i = 0; i < sizeof LIST / sizeof LIST[0]; i++) {
        jint rc;
        if (requested_mode && (LIST[i].ev == JVMPI_EVENT_CLASS_LOAD || LIST[i].ev == JVMPI_EVENT_CLASS_UNLOAD)) continue;
        rc = jvmpi->EnableEvent(LIST[i].ev, NULL);
        if (rc != JVMPI_SUCCESS) {
            logf_("ENABLE_FAILED %s rc=%d", LIST[i].name, (int)rc);
            return JNI_ERR;
        }
    }
    return JNI_OK;
}
