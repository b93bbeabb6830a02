/*
 * allocstack: a leak finder written the way JVMPI-era tools were, for tests/alloc_order.rs.
 * It keeps its own call stack per thread from METHOD_ENTRY/EXIT (thread-local storage keyed by
 * env_id) and charges every OBJECT_ALLOC to the method on top of that stack, as HotSpot's event
 * order allowed (OBJECT_ALLOC at the `new`, before any constructor's METHOD_ENTRY). It watches
 * the classes named Ao* (and java.util.concurrent.atomic.AtomicInteger) and logs:
 *
 *   ALLOC class=<C|[C> charge=<Class.method> trace=<Class.method>:<line> j2j=<null|obj>
 *   CTOR_LATE class=<C> caller=<Class.method>   a constructor entered with no announced allocation
 *   REQ rc=<n> same=<0|1>                       RequestEvent(OBJECT_ALLOC) from inside the handler
 *   SAMPLED top=<Class.method>:<line>           another thread's GetCallTrace while a handler runs
 *   SUMMARY class=<C> allocs= ctor_ok= late= left= frees=
 *   STACK mismatches=<n>
 *
 * Its JNI natives (AllocOrder.jniNew, jniThrow, jniArgs, resolve) live in this library.
 * Option: the log file path.
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
static JavaVM *jvm;
static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static JVMPI_RawMonitor sample_mon;
static volatile int sample_state; /* 0 idle, 1 wanted (target set), 2 done */
static JNIEnv *sample_target;

#define MAXC 64
static char *cnames[MAXC];
static int ncls;
static long allocs[MAXC], ctor_ok[MAXC], late[MAXC], leftover[MAXC], frees[MAXC];

/* ---- tables: class IDs, method IDs, watched object IDs ---- */
#define TSIZE (1 << 16)
struct ent { void *key; char *name; int watched; };
static struct ent classes[TSIZE], methods[TSIZE];
static struct { void *key; int c; } objs[1 << 18];

static unsigned hash(void *p, unsigned size) { return (unsigned)(((uintptr_t)p >> 3) * 2654435761u) & (size - 1); }

static struct ent *find(struct ent *t, void *key, int add) {
    unsigned h = hash(key, TSIZE);
    for (unsigned i = 0; i < TSIZE; i++, h = (h + 1) & (TSIZE - 1)) {
        if (t[h].key == key) return &t[h];
        if (!t[h].key) {
            if (!add) return NULL;
            t[h].key = key;
            return &t[h];
        }
    }
    return NULL;
}

static int watched_index(const char *name) {
    const char *base = name[0] == '[' ? name + 1 : name;
    if (strncmp(base, "Ao", 2) != 0 && strcmp(base, "java.util.concurrent.atomic.AtomicInteger") != 0) return -1;
    for (int i = 0; i < ncls; i++) if (!strcmp(cnames[i], name)) return i;
    if (ncls == MAXC) return -1;
    cnames[ncls] = strdup(name);
    return ncls++;
}

static void class_load(JVMPI_Event *e) {
    pthread_mutex_lock(&lock);
    struct ent *c = find(classes, e->u.class_load.class_id, 1);
    if (c && !c->name) c->name = strdup(e->u.class_load.class_name);
    for (int i = 0; i < e->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        struct ent *me = find(methods, m->method_id, 1);
        if (me && !me->name) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s.%s", e->u.class_load.class_name, m->method_name);
            me->name = strdup(buf);
        }
    }
    pthread_mutex_unlock(&lock);
}

/* The method's "Class.method", resolving its class with RequestEvent(CLASS_LOAD) if unknown. */
static const char *method_name(jmethodID m) {
    pthread_mutex_lock(&lock);
    struct ent *me = find(methods, m, 0);
    pthread_mutex_unlock(&lock);
    if (me && me->name) return me->name;
    jobjectID k = jvmpi->GetMethodClass(m);
    if (k) jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, k);
    pthread_mutex_lock(&lock);
    me = find(methods, m, 0);
    pthread_mutex_unlock(&lock);
    return me && me->name ? me->name : "?";
}

static const char *class_name(jobjectID k) {
    pthread_mutex_lock(&lock);
    struct ent *c = find(classes, k, 0);
    pthread_mutex_unlock(&lock);
    if (c && c->name) return c->name;
    jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, k);
    pthread_mutex_lock(&lock);
    c = find(classes, k, 0);
    pthread_mutex_unlock(&lock);
    return c && c->name ? c->name : "?";
}

/* ---- per thread ---- */
struct thr {
    jmethodID stack[4096];
    int depth;
    long out[MAXC];
    jobjectID last[MAXC];
    int in_alloc;
    jobjectID req_id;
    int req_seen, req_same;
};
static long mismatches;

static struct thr *me(JNIEnv *env) {
    struct thr *t = jvmpi->GetThreadLocalStorage(env);
    if (!t) {
        t = calloc(1, sizeof *t);
        jvmpi->SetThreadLocalStorage(env, t);
    }
    return t;
}

static int is_init_of(const char *m, const char *cls) {
    size_t n = strlen(cls);
    return !strncmp(m, cls, n) && !strcmp(m + n, ".<init>");
}

static void method_entry(JNIEnv *env, jmethodID m) {
    struct thr *t = me(env);
    const char *name = NULL;
    /* A watched class's constructor: its allocation must have been announced already. */
    pthread_mutex_lock(&lock);
    struct ent *e = find(methods, m, 0);
    pthread_mutex_unlock(&lock);
    name = e && e->name ? e->name : NULL;
    if (name && !strncmp(name, "Ao", 2) && strstr(name, ".<init>")) {
        char cls[256];
        size_t n = strstr(name, ".<init>") - name;
        if (n < sizeof cls) {
            memcpy(cls, name, n);
            cls[n] = 0;
            int c = watched_index(cls);
            const char *caller = t->depth > 0 ? method_name(t->stack[t->depth - 1]) : "-";
            int chaining = strstr(caller, ".<init>") != NULL;
            if (c >= 0 && !is_init_of(caller, cls)) {
                pthread_mutex_lock(&lock);
                if (t->out[c] > 0) {
                    t->out[c]--;
                    leftover[c]--;
                    ctor_ok[c]++;
                } else if (!chaining) {
                    late[c]++;
                    fprintf(out, "CTOR_LATE class=%s caller=%s\n", cls, caller);
                }
                pthread_mutex_unlock(&lock);
            }
        }
    }
    if (t->depth < 4096) t->stack[t->depth] = m;
    t->depth++;
}

static void method_exit(JNIEnv *env, jmethodID m) {
    struct thr *t = me(env);
    if (t->depth == 0) return;
    t->depth--;
    if (t->depth < 4096 && t->stack[t->depth] != m) {
        pthread_mutex_lock(&lock);
        mismatches++;
        pthread_mutex_unlock(&lock);
    }
}

static void object_alloc(JVMPI_Event *e) {
    if (e->event_type & JVMPI_REQUESTED_EVENT) {
        struct thr *t = me(e->env_id);
        t->req_seen = 1;
        t->req_same = e->u.obj_alloc.obj_id == t->req_id && e->u.obj_alloc.class_id != NULL && e->u.obj_alloc.size > 0;
        return;
    }
    if (!e->u.obj_alloc.class_id) return;
    const char *cn = class_name(e->u.obj_alloc.class_id);
    if (strncmp(cn, "Ao", 2) != 0 && strcmp(cn, "java.util.concurrent.atomic.AtomicInteger") != 0) return;
    char label[300];
    snprintf(label, sizeof label, "%s%s", e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT ? "" : "[", cn);
    struct thr *t = me(e->env_id);
    pthread_mutex_lock(&lock);
    int c = watched_index(label);
    pthread_mutex_unlock(&lock);
    if (c < 0) return;
    const char *charge = t->depth > 0 ? method_name(t->stack[t->depth - 1]) : "-";
    JVMPI_CallFrame f[4];
    JVMPI_CallTrace tr = {e->env_id, 0, f};
    jvmpi->GetCallTrace(&tr, 4);
    const char *top = tr.num_frames > 0 ? method_name(f[0].method_id) : "-";
    int line = tr.num_frames > 0 ? f[0].lineno : 0;
    jobject j2j = jvmpi->jobjectID2jobject(e->u.obj_alloc.obj_id);
    if (!strcmp(label, "AoNode") && allocs[c] == 0) {
        t->req_id = e->u.obj_alloc.obj_id;
        t->req_seen = 0;
        jint rc = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, e->u.obj_alloc.obj_id);
        fprintf(out, "REQ rc=%d seen=%d same=%d\n", rc, t->req_seen, t->req_same);
    }
    if (!strcmp(label, "AoNode") && allocs[c] == 9) {
        /* Another thread takes this thread's trace while the handler runs. */
        jvmpi->RawMonitorEnter(sample_mon);
        sample_target = e->env_id;
        sample_state = 1;
        jvmpi->RawMonitorNotifyAll(sample_mon);
        while (sample_state != 2) jvmpi->RawMonitorWait(sample_mon, 1000);
        sample_state = 0;
        jvmpi->RawMonitorExit(sample_mon);
    }
    pthread_mutex_lock(&lock);
    allocs[c]++;
    leftover[c]++;
    t->out[c]++;
    t->last[c] = e->u.obj_alloc.obj_id;
    unsigned h = hash(e->u.obj_alloc.obj_id, 1 << 18);
    for (unsigned i = 0; i < (1 << 18); i++, h = (h + 1) & ((1 << 18) - 1)) {
        if (!objs[h].key) { objs[h].key = e->u.obj_alloc.obj_id; objs[h].c = c; break; }
    }
    fprintf(out, "ALLOC class=%s charge=%s trace=%s:%d j2j=%s\n", label, charge, top, line, j2j ? "obj" : "null");
    pthread_mutex_unlock(&lock);
}

static void object_free(JVMPI_Event *e) {
    pthread_mutex_lock(&lock);
    unsigned h = hash(e->u.obj_free.obj_id, 1 << 18);
    for (unsigned i = 0; i < (1 << 18); i++, h = (h + 1) & ((1 << 18) - 1)) {
        if (!objs[h].key) break;
        if (objs[h].key == e->u.obj_free.obj_id) { frees[objs[h].c]++; break; }
    }
    pthread_mutex_unlock(&lock);
}

static void sampler(void *arg) {
    (void)arg;
    jvmpi->RawMonitorEnter(sample_mon);
    for (;;) {
        while (sample_state != 1) jvmpi->RawMonitorWait(sample_mon, 0);
        JVMPI_CallFrame f[4];
        JVMPI_CallTrace tr = {sample_target, 0, f};
        jvmpi->GetCallTrace(&tr, 4);
        fprintf(out, "SAMPLED top=%s:%d\n", tr.num_frames > 0 ? method_name(f[0].method_id) : "-", tr.num_frames > 0 ? f[0].lineno : 0);
        sample_state = 2;
        jvmpi->RawMonitorNotifyAll(sample_mon);
    }
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD: class_load(e); break;
    case JVMPI_EVENT_METHOD_ENTRY: method_entry(e->env_id, e->u.method.method_id); break;
    case JVMPI_EVENT_METHOD_EXIT: method_exit(e->env_id, e->u.method.method_id); break;
    case JVMPI_EVENT_OBJECT_ALLOC: object_alloc(e); break;
    case JVMPI_EVENT_OBJECT_FREE: object_free(e); break;
    case JVMPI_EVENT_THREAD_START: me(e->u.thread_start.thread_env_id); break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        jvmpi->CreateSystemThread("allocstack sampler", JVMPI_NORMAL_PRIORITY, sampler);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        pthread_mutex_lock(&lock);
        for (int i = 0; i < ncls; i++)
            fprintf(out, "SUMMARY class=%s allocs=%ld ctor_ok=%ld late=%ld left=%ld frees=%ld\n", cnames[i], allocs[i],
                    ctor_ok[i], late[i], leftover[i], frees[i]);
        fprintf(out, "STACK mismatches=%ld\n", mismatches);
        fflush(out);
        pthread_mutex_unlock(&lock);
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    jvm = vm;
    out = fopen(options && *options ? options : "allocstack.log", "w");
    if (!out) return JNI_ERR;
    setvbuf(out, NULL, _IOLBF, 0);
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    sample_mon = jvmpi->RawMonitorCreate("allocstack sample");
    int evs[] = {JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_THREAD_START, JVMPI_EVENT_METHOD_ENTRY, JVMPI_EVENT_METHOD_EXIT,
                 JVMPI_EVENT_OBJECT_ALLOC, JVMPI_EVENT_OBJECT_FREE, JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH,
                 JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN};
    for (unsigned i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (jvmpi->EnableEvent(evs[i], NULL) != JVMPI_SUCCESS) return JNI_ERR;
    return JNI_OK;
}

/* ---- the program's natives ---- */
static jobject new_v(JNIEnv *env, jclass k, jmethodID m, ...) {
    va_list ap;
    va_start(ap, m);
    jobject o = (*env)->NewObjectV(env, k, m, ap);
    va_end(ap);
    return o;
}

JNIEXPORT void JNICALL Java_AllocOrder_jniNew(JNIEnv *env, jclass self, jclass plain, jclass a, jclass v, jclass alloc, jint n) {
    (void)self;
    jmethodID mp = (*env)->GetMethodID(env, plain, "<init>", "()V");
    jmethodID ma = (*env)->GetMethodID(env, a, "<init>", "()V");
    jmethodID mv = (*env)->GetMethodID(env, v, "<init>", "()V");
    jmethodID ml = (*env)->GetMethodID(env, alloc, "<init>", "()V");
    for (int i = 0; i < n; i++) {
        (*env)->DeleteLocalRef(env, (*env)->NewObject(env, plain, mp));
        (*env)->DeleteLocalRef(env, (*env)->NewObjectA(env, a, ma, NULL));
        (*env)->DeleteLocalRef(env, new_v(env, v, mv));
        jobject o = (*env)->AllocObject(env, alloc);
        (*env)->CallNonvirtualVoidMethod(env, o, alloc, ml);
        (*env)->DeleteLocalRef(env, o);
    }
}

JNIEXPORT jint JNICALL Java_AllocOrder_jniThrow(JNIEnv *env, jclass self, jclass k, jint n) {
    (void)self;
    jmethodID m = (*env)->GetMethodID(env, k, "<init>", "()V");
    int threw = 0;
    for (int i = 0; i < n; i++) {
        jobject o = (*env)->NewObject(env, k, m);
        if ((*env)->ExceptionCheck(env)) {
            (*env)->ExceptionClear(env);
            threw++;
        }
        if (o) (*env)->DeleteLocalRef(env, o);
    }
    return threw;
}

JNIEXPORT jobject JNICALL Java_AllocOrder_jniArgs(JNIEnv *env, jclass self, jclass k) {
    (void)self;
    jmethodID m = (*env)->GetMethodID(env, k, "<init>", "(IDJLjava/lang/String;DIIIDFJ)V");
    jstring s = (*env)->NewStringUTF(env, "s");
    return (*env)->NewObject(env, k, m, (jint)1, 2.5, (jlong)3, s, 4.5, (jint)5, (jint)6, (jint)7, 8.5, (double)9.5f, (jlong)10);
}

JNIEXPORT jint JNICALL Java_AllocOrder_resolve(JNIEnv *env, jclass self, jobject o) {
    (void)self;
    struct thr *t = me(env);
    pthread_mutex_lock(&lock);
    int c = watched_index("AoNode");
    pthread_mutex_unlock(&lock);
    jobjectID id = jvmpi->jobject2jobjectID(o);
    jobject back = jvmpi->jobjectID2jobject(id);
    return id != NULL && id == t->last[c] && back != NULL && (*env)->IsSameObject(env, back, o);
}
