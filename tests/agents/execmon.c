/*
 * execmon: a JVMPI test agent for compiled-method events, Java monitor events and
 * DATA_RESET_REQUEST, written the way JDK 1.2-era tools were: it keeps its own tables of threads,
 * classes and methods from THREAD_START / CLASS_LOAD, resolves unknown object IDs with
 * RequestEvent(OBJECT_ALLOC), and logs one line per event of interest. A broken JVMPI promise
 * (an event naming a thread, method or object the agent cannot know) is logged as "VIOLATION".
 *
 * Options: log=PATH, enable=A+B+... (event numbers).
 * Lines:
 *   CML m=Class.method first=F last=L size=N entries=K lines=a,b,c  (COMPILED_METHOD_LOAD)
 *   CMLBAD ...                                                       (an entry outside the code)
 *   CMU m=Class.method                                               (COMPILED_METHOD_UNLOAD)
 *   MON <event> thread=NAME obj=CLASS t=TIMEOUT                      (Java monitor events)
 *   RESET thread=NAME / DUMP thread=NAME
 * Natives for the test programs: Compiled.enable(int), Compiled.disable(int).
 */
#include <jni.h>
#include <jvmpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#define N (1 << 16)
typedef struct { void *k[N]; char *v[N]; } map_t;
static map_t threads, classes, methods, objects, loaded;

static unsigned slot(void *k) { return (unsigned)(((unsigned long)k >> 3) * 2654435761u) & (N - 1); }
static void put(map_t *m, void *k, const char *v) {
    unsigned i;
    pthread_mutex_lock(&lock);
    for (i = slot(k); m->k[i] && m->k[i] != k; i = (i + 1) & (N - 1)) {}
    m->k[i] = k;
    free(m->v[i]);
    m->v[i] = strdup(v);
    pthread_mutex_unlock(&lock);
}
static const char *get(map_t *m, void *k) {
    unsigned i;
    const char *r = NULL;
    pthread_mutex_lock(&lock);
    for (i = slot(k); m->k[i]; i = (i + 1) & (N - 1))
        if (m->k[i] == k) { r = m->v[i]; break; }
    pthread_mutex_unlock(&lock);
    return r;
}

static void line(const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&lock);
    if (out) {
        va_start(ap, fmt);
        vfprintf(out, fmt, ap);
        va_end(ap);
        fputc('\n', out);
        fflush(out);
    }
    pthread_mutex_unlock(&lock);
}

static const char *thread_name(JNIEnv *env) {
    const char *n = get(&threads, env);
    if (!n) {
        line("VIOLATION event from unknown thread %p", (void *)env);
        return "?";
    }
    return n;
}

/* The class name of an object ID, resolved with RequestEvent(OBJECT_ALLOC) the first time. */
static const char *object_class(jobjectID obj) {
    const char *c;
    if (!obj) return "NULL";
    c = get(&objects, obj);
    if (!c) {
        jint rc = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, obj);
        c = get(&objects, obj);
        if (!c) {
            line("VIOLATION object %p not resolvable (RequestEvent rc=%d)", (void *)obj, (int)rc);
            return "?";
        }
    }
    return c;
}

static void on_compiled_load(JVMPI_Event *e) {
    char lines[4096];
    const char *m = get(&methods, e->u.compiled_method_load.method_id);
    int i, first = 0, last = 0, bad = 0, n = e->u.compiled_method_load.lineno_table_size;
    size_t used = 0;
    JVMPI_Lineno *t = e->u.compiled_method_load.lineno_table;
    if (!m) {
        line("VIOLATION COMPILED_METHOD_LOAD of unknown method %p", (void *)e->u.compiled_method_load.method_id);
        return;
    }
    sscanf(strchr(m, ' ') ? strchr(m, ' ') + 1 : "0 0", "%d %d", &first, &last);
    lines[0] = 0;
    for (i = 0; i < n; i++) {
        int seen = 0, j;
        if (t[i].offset < 0 || t[i].offset >= e->u.compiled_method_load.code_size || (i > 0 && t[i].offset < t[i - 1].offset))
            bad++;
        for (j = 0; j < i; j++)
            if (t[j].lineno == t[i].lineno) seen = 1;
        if (!seen && used + 16 < sizeof lines)
            used += snprintf(lines + used, sizeof lines - used, "%s%d", used ? "," : "", (int)t[i].lineno);
    }
    if (bad) line("CMLBAD m=%.*s bad=%d", (int)strcspn(m, " "), m, bad);
    put(&loaded, e->u.compiled_method_load.code_addr, m);
    line("CML m=%.*s first=%d last=%d size=%d entries=%d thread=%s lines=%s", (int)strcspn(m, " "), m, first, last,
         (int)e->u.compiled_method_load.code_size, n, get(&threads, e->env_id) ? get(&threads, e->env_id) : "?", lines);
}

static void notify(JVMPI_Event *e) {
    int req = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    char buf[512];
    int i;
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_THREAD_START:
        put(&threads, e->u.thread_start.thread_env_id, e->u.thread_start.thread_name ? e->u.thread_start.thread_name : "");
        break;
    case JVMPI_EVENT_CLASS_LOAD:
        put(&classes, e->u.class_load.class_id, e->u.class_load.class_name);
        for (i = 0; i < e->u.class_load.num_methods; i++) {
            JVMPI_Method *m = &e->u.class_load.methods[i];
            snprintf(buf, sizeof buf, "%s.%s %d %d", e->u.class_load.class_name, m->method_name, (int)m->start_lineno,
                     (int)m->end_lineno);
            put(&methods, m->method_id, buf);
        }
        break;
    case JVMPI_EVENT_OBJECT_ALLOC: {
        const char *c = get(&classes, e->u.obj_alloc.class_id);
        if (!c && e->u.obj_alloc.class_id) line("VIOLATION OBJECT_ALLOC of unknown class");
        if (req) put(&objects, e->u.obj_alloc.obj_id, c ? c : "?");
        break;
    }
    case JVMPI_EVENT_COMPILED_METHOD_LOAD: on_compiled_load(e); break;
    case JVMPI_EVENT_COMPILED_METHOD_UNLOAD: {
        const char *m = get(&methods, e->u.compiled_method_unload.method_id);
        if (!m) line("VIOLATION COMPILED_METHOD_UNLOAD of unknown method");
        else line("CMU m=%.*s", (int)strcspn(m, " "), m);
        break;
    }
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTER:
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTERED:
    case JVMPI_EVENT_MONITOR_CONTENDED_EXIT: {
        int t = e->event_type;
        line("MON %s thread=%s obj=%s", t == JVMPI_EVENT_MONITOR_CONTENDED_ENTER ? "ENTER" : t == JVMPI_EVENT_MONITOR_CONTENDED_ENTERED ? "ENTERED" : "EXIT",
             thread_name(e->env_id), object_class(e->u.monitor.object));
        break;
    }
    case JVMPI_EVENT_MONITOR_WAIT:
    case JVMPI_EVENT_MONITOR_WAITED:
        line("MON %s thread=%s obj=%s t=%lld", e->event_type == JVMPI_EVENT_MONITOR_WAIT ? "WAIT" : "WAITED",
             thread_name(e->env_id), object_class(e->u.monitor_wait.object), (long long)e->u.monitor_wait.timeout);
        break;
    case JVMPI_EVENT_DATA_RESET_REQUEST: line("RESET thread=%s", thread_name(e->env_id)); break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST: line("DUMP thread=%s", thread_name(e->env_id)); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: line("SHUTDOWN"); break;
    default: break;
    }
}

JNIEXPORT jint JNICALL Java_Compiled_enable(JNIEnv *env, jclass k, jint ev) { return jvmpi->EnableEvent(ev, NULL); }
JNIEXPORT jint JNICALL Java_Compiled_disable(JNIEnv *env, jclass k, jint ev) { return jvmpi->DisableEvent(ev, NULL); }

static const char *opt(const char *options, const char *key, char *buf, size_t n) {
    const char *p = options;
    size_t kl = strlen(key);
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = len - kl - 1;
            if (vl >= n) vl = n - 1;
            memcpy(buf, p + kl + 1, vl);
            buf[vl] = 0;
            return buf;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    char buf[1024];
    if (opt(options, "log", buf, sizeof buf)) out = fopen(buf, "w");
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    if (opt(options, "enable", buf, sizeof buf)) {
        char *p = strtok(buf, "+");
        for (; p; p = strtok(NULL, "+")) {
            jint rc = jvmpi->EnableEvent(atoi(p), NULL);
            if (rc != JVMPI_SUCCESS) {
                line("ENABLE_FAILED %s rc=%d", p, (int)rc);
                return JNI_ERR;
            }
        }
    }
    return JNI_OK;
}
