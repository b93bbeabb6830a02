/*
 * threadwatch: a JVMPI test agent that keeps per-thread data the way HPROF did: a record per
 * thread, made at THREAD_START and kept in the thread's thread-local storage (keyed by the
 * env_id), dropped at THREAD_END. Every env_id it is handed (the env_id of every event, the
 * traces of MONITOR_DUMP and HEAP_DUMP, the owners and waiters of MONITOR_DUMP's monitors) is
 * looked up; one it has no live record for is logged loudly as "UNKNOWN" (HPROF dereferenced
 * NULL there). Handlers request MONITOR_DUMP (and HEAP_DUMP at JVM_SHUT_DOWN) as HPROF did.
 *
 * Options: log=PATH, dumps=N (MONITOR_DUMP at every Nth MONITOR_CONTENDED_ENTERED, at every
 * GC_FINISH and at JVM_SHUT_DOWN; 0: never).
 * Lines:
 *   TSTART name=NAME group=GROUP [requested]     THREAD_START
 *   TEND name=NAME                               THREAD_END
 *   UNKNOWN ev=EVENT env=PTR [ended=NAME]        an env_id with no live thread record
 *   TLS ev=EVENT env=PTR                         the env_id's thread-local storage is not its record
 *   COUNT ev=EVENT n=N                           at JVM_SHUT_DOWN, events seen per kind
 *   MDUMP traces=N monitors=M / HDUMP traces=N   dumps received
 *   SHUTDOWN
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
static pthread_mutex_t lock;
static int dumps_every;

typedef struct thr {
    JNIEnv *env;
    int alive;
    char name[80];
} thr_t;

#define MAXT 8192
static thr_t *table[MAXT];
static int ntable;
static long counts[64];
static long contended;

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

static const char *evname(int e) {
    switch (e) {
    case JVMPI_EVENT_THREAD_START: return "THREAD_START";
    case JVMPI_EVENT_THREAD_END: return "THREAD_END";
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTER: return "MONITOR_CONTENDED_ENTER";
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTERED: return "MONITOR_CONTENDED_ENTERED";
    case JVMPI_EVENT_MONITOR_CONTENDED_EXIT: return "MONITOR_CONTENDED_EXIT";
    case JVMPI_EVENT_MONITOR_WAIT: return "MONITOR_WAIT";
    case JVMPI_EVENT_MONITOR_WAITED: return "MONITOR_WAITED";
    case JVMPI_EVENT_MONITOR_DUMP: return "MONITOR_DUMP";
    case JVMPI_EVENT_HEAP_DUMP: return "HEAP_DUMP";
    case JVMPI_EVENT_GC_START: return "GC_START";
    case JVMPI_EVENT_GC_FINISH: return "GC_FINISH";
    case JVMPI_EVENT_CLASS_LOAD: return "CLASS_LOAD";
    case JVMPI_EVENT_JVM_INIT_DONE: return "JVM_INIT_DONE";
    case JVMPI_EVENT_JVM_SHUT_DOWN: return "JVM_SHUT_DOWN";
    case JVMPI_EVENT_DATA_DUMP_REQUEST: return "DATA_DUMP_REQUEST";
    case JVMPI_EVENT_DATA_RESET_REQUEST: return "DATA_RESET_REQUEST";
    default: return "OTHER";
    }
}

/* The live record of env, or NULL (then logged). `what` names where the env_id came from. */
static thr_t *lookup(JNIEnv *env, const char *what) {
    int i;
    thr_t *r = NULL;
    const char *ended = NULL;
    pthread_mutex_lock(&lock);
    for (i = 0; i < ntable; i++) {
        if (table[i]->env != env) continue;
        if (table[i]->alive) r = table[i];
        else ended = table[i]->name;
    }
    pthread_mutex_unlock(&lock);
    if (r == NULL) {
        line("UNKNOWN ev=%s env=%p%s%s", what, (void *)env, ended ? " ended=" : "", ended ? ended : "");
    } else if (jvmpi->GetThreadLocalStorage(env) != r) {
        line("TLS ev=%s env=%p name=%s", what, (void *)env, r->name);
    }
    return r;
}

static void thread_start(JVMPI_Event *ev) {
    int i;
    thr_t *r;
    JNIEnv *env = ev->u.thread_start.thread_env_id;
    const char *name = ev->u.thread_start.thread_name ? ev->u.thread_start.thread_name : "(null)";
    const char *group = ev->u.thread_start.group_name ? ev->u.thread_start.group_name : "(null)";
    line("TSTART name=%s group=%s%s", name, group, (ev->event_type & JVMPI_REQUESTED_EVENT) ? " requested" : "");
    pthread_mutex_lock(&lock);
    for (i = 0; i < ntable; i++) {
        if (table[i]->env == env && table[i]->alive) {
            pthread_mutex_unlock(&lock);
            if (!(ev->event_type & JVMPI_REQUESTED_EVENT)) line("TWICE name=%s", name);
            return;
        }
    }
    r = calloc(1, sizeof *r);
    r->env = env;
    r->alive = 1;
    snprintf(r->name, sizeof r->name, "%s", name);
    if (ntable < MAXT) table[ntable++] = r;
    pthread_mutex_unlock(&lock);
    jvmpi->SetThreadLocalStorage(env, r);
}

static void thread_end(JNIEnv *env) {
    thr_t *r = lookup(env, "THREAD_END");
    if (r == NULL) return;
    line("TEND name=%s", r->name);
    jvmpi->SetThreadLocalStorage(env, NULL);
    pthread_mutex_lock(&lock);
    r->alive = 0;
    pthread_mutex_unlock(&lock);
}

static unsigned char *cur;
static unsigned read_u4(void) {
    unsigned v = ((unsigned)cur[0] << 24) | ((unsigned)cur[1] << 16) | ((unsigned)cur[2] << 8) | cur[3];
    cur += 4;
    return v;
}
static void *read_id(void) {
    void *p;
    memcpy(&p, cur, sizeof p);
    cur += sizeof p;
    return p;
}

static void monitor_dump(JVMPI_Event *ev) {
    int i, monitors = 0;
    for (i = 0; i < ev->u.monitor_dump.num_traces; i++)
        lookup(ev->u.monitor_dump.traces[i].env_id, "MONITOR_DUMP.trace");
    cur = (unsigned char *)ev->u.monitor_dump.begin;
    while (cur < (unsigned char *)ev->u.monitor_dump.end) {
        int kind = *cur++;
        unsigned n, j, lists;
        JNIEnv *owner;
        read_id();
        if (kind == JVMPI_MONITOR_RAW) read_id();
        else if (kind != JVMPI_MONITOR_JAVA) { line("BADKIND %d", kind); return; }
        owner = read_id();
        if (owner) lookup(owner, "MONITOR_DUMP.owner");
        read_u4();
        for (lists = 0; lists < 2; lists++) {
            n = read_u4();
            for (j = 0; j < n; j++) lookup(read_id(), lists ? "MONITOR_DUMP.notify" : "MONITOR_DUMP.enter");
        }
        monitors++;
    }
    line("MDUMP traces=%d monitors=%d", ev->u.monitor_dump.num_traces, monitors);
}

static void request_dumps(int heap) {
    jvmpi->RequestEvent(JVMPI_EVENT_MONITOR_DUMP, NULL);
    if (heap) {
        JVMPI_HeapDumpArg arg;
        arg.heap_dump_level = JVMPI_DUMP_LEVEL_1;
        jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &arg);
    }
}

static void notify(JVMPI_Event *ev) {
    int type = ev->event_type & ~JVMPI_REQUESTED_EVENT;
    int i;
    if (type >= 0 && type < 64) __sync_fetch_and_add(&counts[type], 1);
    switch (type) {
    case JVMPI_EVENT_THREAD_START:
        thread_start(ev);
        return;
    case JVMPI_EVENT_THREAD_END:
        thread_end(ev->env_id);
        return;
    default:
        break;
    }
    lookup(ev->env_id, evname(type));
    switch (type) {
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTERED:
        if (dumps_every > 0 && __sync_add_and_fetch(&contended, 1) % dumps_every == 0) request_dumps(0);
        break;
    case JVMPI_EVENT_GC_FINISH:
        if (dumps_every > 0) request_dumps(0);
        break;
    case JVMPI_EVENT_MONITOR_DUMP:
        monitor_dump(ev);
        break;
    case JVMPI_EVENT_HEAP_DUMP:
        for (i = 0; i < ev->u.heap_dump.num_traces; i++) lookup(ev->u.heap_dump.traces[i].env_id, "HEAP_DUMP.trace");
        line("HDUMP traces=%d", ev->u.heap_dump.num_traces);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        if (dumps_every > 0) request_dumps(1);
        for (i = 0; i < 64; i++)
            if (counts[i]) line("COUNT ev=%s n=%ld", evname(i), counts[i]);
        line("SHUTDOWN");
        break;
    default:
        break;
    }
}

static int opt(const char *options, const char *key, char *buf, size_t n) {
    const char *p = options;
    size_t k = strlen(key);
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > k && strncmp(p, key, k) == 0 && p[k] == '=') {
            size_t v = len - k - 1;
            if (v >= n) v = n - 1;
            memcpy(buf, p + k + 1, v);
            buf[v] = 0;
            return 1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    static const int events[] = {
        JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END, JVMPI_EVENT_MONITOR_CONTENDED_ENTER,
        JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, JVMPI_EVENT_MONITOR_CONTENDED_EXIT, JVMPI_EVENT_MONITOR_WAIT,
        JVMPI_EVENT_MONITOR_WAITED, JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH, JVMPI_EVENT_CLASS_LOAD,
        JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN, JVMPI_EVENT_DATA_DUMP_REQUEST,
        JVMPI_EVENT_DATA_RESET_REQUEST,
    };
    char buf[1024];
    unsigned i;
    pthread_mutexattr_t a;
    (void)reserved;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &a);
    if (opt(options, "log", buf, sizeof buf)) out = fopen(buf, "w");
    if (opt(options, "dumps", buf, sizeof buf)) dumps_every = atoi(buf);
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    for (i = 0; i < sizeof events / sizeof events[0]; i++) {
        if (jvmpi->EnableEvent(events[i], NULL) != JVMPI_SUCCESS) {
            line("ENABLE_FAILED %d", events[i]);
            return JNI_ERR;
        }
    }
    return JNI_OK;
}
