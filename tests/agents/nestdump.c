/*
 * nestdump: an agent that resolves what it meets on the spot, the way hprof's heap=dump did:
 * from inside its handlers (HEAP_DUMP, OBJECT_DUMP, MONITOR_DUMP, CLASS_LOAD, OBJECT_ALLOC,
 * JVM_SHUT_DOWN) it calls RequestEvent for OBJECT_DUMP, OBJECT_ALLOC, CLASS_LOAD, HEAP_DUMP
 * and MONITOR_DUMP, holding its own lock across every handler (hprof's data_access_lock), while
 * a second thread of its own takes the same lock and requests dumps too. After each successful
 * request the requested event must have arrived in this thread before RequestEvent returned,
 * naming what was asked for; an OBJECT_DUMP of a class names its superclass (java.lang.Object
 * for a direct subclass), which the agent must know from CLASS_LOAD.
 *   <out>: SITE <handler> <request> ok=<n> bad=<n> failed=<n>   (one line per pair tried)
 *          BAD <detail>                                        (the first 50 wrong answers)
 *          DUMPER <requests that succeeded>
 *          DONE
 * Options: out=<file>
 */
#include <jni.h>
#include <jvmpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static char out_path[1024] = "nestdump.txt";
static JVMPI_RawMonitor lock;
static volatile int init_done;
static volatile int dumper_ok;
static volatile int shutting;

/* ---- classes seen in CLASS_LOAD -------------------------------------------------------- */
#define TABLE (1 << 14)
static struct { jobjectID id; char *name; } classes[TABLE];

static int slot(jobjectID id) {
    uintptr_t h = ((uintptr_t)id >> 4) * 2654435761u;
    for (int i = 0; i < TABLE; i++) {
        int s = (int)((h + i) & (TABLE - 1));
        if (classes[s].id == id || classes[s].id == NULL) return s;
    }
    return -1;
}
static const char *class_name(jobjectID id) {
    int s = slot(id);
    return s >= 0 && classes[s].id == id ? classes[s].name : NULL;
}
static void add_class(jobjectID id, const char *name) {
    int s = slot(id);
    if (s >= 0 && classes[s].id == NULL) {
        classes[s].id = id;
        classes[s].name = strdup(name);
    }
}
static int is_object_class(const char *n) { return n && (!strcmp(n, "java.lang.Object") || !strcmp(n, "java/lang/Object")); }
static int is_leaf_class(const char *n) { return n && (!strcmp(n, "Census$Leaf") || !strcmp(n, "Census.Leaf")); }

/* ---- results ------------------------------------------------------------------------------ */
#define SITES 64
static struct { const char *handler, *request; int ok, bad, failed; } sites[SITES];
static int bad_lines;
static char bads[50][200];

static void note(const char *handler, const char *request, int outcome /* 1 ok, 0 bad, -1 failed */, const char *detail) {
    jvmpi->RawMonitorEnter(lock);
    int i;
    for (i = 0; i < SITES && sites[i].handler; i++)
        if (!strcmp(sites[i].handler, handler) && !strcmp(sites[i].request, request)) break;
    if (i < SITES) {
        sites[i].handler = handler;
        sites[i].request = request;
        if (outcome > 0) sites[i].ok++;
        else if (outcome == 0) sites[i].bad++;
        else sites[i].failed++;
    }
    if (outcome == 0 && bad_lines < 50) snprintf(bads[bad_lines++], 200, "%s/%s: %s", handler, request, detail);
    jvmpi->RawMonitorExit(lock);
}

/* ---- what the last requested event of this thread said -------------------------------------- */
typedef struct {
    int type;        /* event type without the flag; 0: nothing arrived */
    int requested;   /* the JVMPI_REQUESTED_EVENT flag was set */
    int kind;        /* OBJECT_DUMP: record type */
    jobjectID id;    /* OBJECT_DUMP: record's object; OBJECT_ALLOC: obj_id; CLASS_LOAD: class_id */
    jobjectID other; /* OBJECT_DUMP: class of an instance, super of a class; OBJECT_ALLOC: class_id */
    long records;    /* HEAP_DUMP: records; MONITOR_DUMP: bytes */
} Got;
static __thread Got got;
static __thread int depth;

/* Requests `event` with `arg`; returns the rc and what arrived meanwhile. */
static jint request(jint event, void *arg, Got *r) {
    Got saved = got;
    memset(&got, 0, sizeof got);
    depth++;
    jint rc = jvmpi->RequestEvent(event, arg);
    depth--;
    *r = got;
    got = saved;
    return rc;
}

static jobjectID read_id(const unsigned char *p) { jobjectID v; memcpy(&v, p, sizeof v); return v; }
static unsigned read_u4(const unsigned char *p) { return ((unsigned)p[0] << 24) | ((unsigned)p[1] << 16) | ((unsigned)p[2] << 8) | p[3]; }
#define W ((int)sizeof(void *))

/* The checks, one per kind of request. may_fail: an answer of JVMPI_FAIL is allowed. */
static void ask_object_dump(const char *handler, jobjectID id, int may_fail) {
    Got r;
    char d[160];
    jint rc = request(JVMPI_EVENT_OBJECT_DUMP, id, &r);
    if (rc != JVMPI_SUCCESS) {
        snprintf(d, sizeof d, "rc=%d for %p", (int)rc, (void *)id);
        note(handler, "OBJECT_DUMP", may_fail ? -1 : 0, d);
        return;
    }
    if (r.type != JVMPI_EVENT_OBJECT_DUMP || !r.requested || r.id != id) {
        snprintf(d, sizeof d, "asked %p, got type %d requested %d id %p", (void *)id, r.type, r.requested, (void *)r.id);
        note(handler, "OBJECT_DUMP", 0, d);
        return;
    }
    if (r.kind == JVMPI_GC_CLASS_DUMP) {
        const char *self = class_name(id), *sup = class_name(r.other);
        if (!self) {
            snprintf(d, sizeof d, "CLASS_DUMP of %p: no CLASS_LOAD for it", (void *)id);
            note(handler, "OBJECT_DUMP", 0, d);
            return;
        }
        if (r.other == NULL ? !is_object_class(self) : sup == NULL) {
            snprintf(d, sizeof d, "CLASS_DUMP of %s: superclass %p unknown", self, (void *)r.other);
            note(handler, "OBJECT_DUMP", 0, d);
            return;
        }
        if (is_leaf_class(self) && !is_object_class(sup)) {
            snprintf(d, sizeof d, "CLASS_DUMP of %s: superclass %s, not java.lang.Object", self, sup ? sup : "NULL");
            note(handler, "OBJECT_DUMP", 0, d);
            return;
        }
    }
    note(handler, "OBJECT_DUMP", 1, "");
}

static jobjectID ask_object_alloc(const char *handler, jobjectID id, int may_fail) {
    Got r;
    char d[160];
    jint rc = request(JVMPI_EVENT_OBJECT_ALLOC, id, &r);
    if (rc != JVMPI_SUCCESS) {
        snprintf(d, sizeof d, "rc=%d for %p", (int)rc, (void *)id);
        note(handler, "OBJECT_ALLOC", may_fail ? -1 : 0, d);
        return NULL;
    }
    if (r.type != JVMPI_EVENT_OBJECT_ALLOC || !r.requested || r.id != id) {
        snprintf(d, sizeof d, "asked %p, got type %d requested %d id %p", (void *)id, r.type, r.requested, (void *)r.id);
        note(handler, "OBJECT_ALLOC", 0, d);
        return NULL;
    }
    note(handler, "OBJECT_ALLOC", 1, "");
    return r.other;
}

static void ask_class_load(const char *handler, jobjectID id) {
    Got r;
    char d[160];
    jint rc = request(JVMPI_EVENT_CLASS_LOAD, id, &r);
    if (rc != JVMPI_SUCCESS || r.type != JVMPI_EVENT_CLASS_LOAD || !r.requested || r.id != id) {
        snprintf(d, sizeof d, "asked %p: rc=%d, got type %d requested %d id %p", (void *)id, (int)rc, r.type, r.requested, (void *)r.id);
        note(handler, "CLASS_LOAD", 0, d);
        return;
    }
    note(handler, "CLASS_LOAD", 1, "");
}

static void ask_heap_dump(const char *handler) {
    Got r;
    char d[160];
    JVMPI_HeapDumpArg a = { JVMPI_DUMP_LEVEL_0 };
    jint rc = request(JVMPI_EVENT_HEAP_DUMP, &a, &r);
    if (rc != JVMPI_SUCCESS || r.type != JVMPI_EVENT_HEAP_DUMP || !r.requested || r.records < 100) {
        snprintf(d, sizeof d, "rc=%d, got type %d requested %d records %ld", (int)rc, r.type, r.requested, r.records);
        note(handler, "HEAP_DUMP", 0, d);
        return;
    }
    note(handler, "HEAP_DUMP", 1, "");
}

static void ask_monitor_dump(const char *handler) {
    Got r;
    char d[160];
    jint rc = request(JVMPI_EVENT_MONITOR_DUMP, NULL, &r);
    if (rc != JVMPI_SUCCESS || r.type != JVMPI_EVENT_MONITOR_DUMP || !r.requested) {
        snprintf(d, sizeof d, "rc=%d, got type %d requested %d", (int)rc, r.type, r.requested);
        note(handler, "MONITOR_DUMP", 0, d);
        return;
    }
    note(handler, "MONITOR_DUMP", 1, "");
}

/* ---- handlers ------------------------------------------------------------------------------ */
static void ask_leaf_class(const char *handler) {
    for (int i = 0; i < TABLE; i++)
        if (classes[i].id && is_leaf_class(classes[i].name)) ask_object_dump(handler, classes[i].id, 0);
}

static void on_heap_dump(JVMPI_Event *e) {
    if (e->u.heap_dump.dump_level == JVMPI_DUMP_LEVEL_2) {
        /* hprof's heap=dump: the class of an instance it prints, dumped on the spot. */
        got.records = 100;
        ask_leaf_class("HEAP_DUMP-level2");
        return;
    }
    const unsigned char *p = (const unsigned char *)e->u.heap_dump.begin, *end = (const unsigned char *)e->u.heap_dump.end;
    long n = 0;
    jobjectID ids[40];
    int nids = 0;
    while (p + 1 + W <= end) {
        int ty = p[0];
        jobjectID id = read_id(p + 1);
        if (nids < 40 && (ty == JVMPI_NORMAL_OBJECT || ty == JVMPI_CLASS) && n % 97 == 5) ids[nids++] = id;
        p += 1 + W;
        n++;
    }
    got.records = (p == end) ? n : -1;
    if (depth > 2) return;
    /* Resolve a sample of what the dump named, as a heap analyser does. */
    for (int i = 0; i < nids; i++) {
        ask_object_dump("HEAP_DUMP", ids[i], 0);
        jobjectID k = ask_object_alloc("HEAP_DUMP", ids[i], 0);
        if (k) ask_class_load("HEAP_DUMP", k);
    }
    if (depth <= 1) {
        ask_heap_dump("HEAP_DUMP");
        ask_monitor_dump("HEAP_DUMP");
    }
}

static void on_object_dump(JVMPI_Event *e) {
    const unsigned char *p = (const unsigned char *)e->u.object_dump.data;
    int len = e->u.object_dump.data_len;
    if (len < 1 + W) return;
    got.kind = p[0];
    got.id = read_id(p + 1);
    if (got.kind == JVMPI_GC_CLASS_DUMP && len >= 1 + 2 * W) got.other = read_id(p + 1 + W);
    if (got.kind == JVMPI_GC_INSTANCE_DUMP && len >= 1 + 2 * W) got.other = read_id(p + 1 + W);
    /* hprof: a class whose superclass it does not know yet is dumped on the spot. */
    if (got.kind == JVMPI_GC_INSTANCE_DUMP && got.other && depth <= 3) ask_object_dump("OBJECT_DUMP", got.other, 0);
}

static void on_monitor_dump(JVMPI_Event *e) {
    const unsigned char *p = (const unsigned char *)e->u.monitor_dump.begin, *end = (const unsigned char *)e->u.monitor_dump.end;
    got.records = (long)(end - p);
    if (depth > 2) return;
    int seen = 0;
    while (p < end && seen < 8) {
        int ty = *p++;
        if (ty == JVMPI_MONITOR_JAVA) {
            jobjectID obj = read_id(p);
            p += 2 * W;
            ask_object_dump("MONITOR_DUMP", obj, 0);
        } else if (ty == JVMPI_MONITOR_RAW) {
            p += 3 * W;
        } else {
            break;
        }
        p += 4;
        for (int l = 0; l < 2 && p + 4 <= end; l++) {
            unsigned k = read_u4(p);
            p += 4 + (size_t)k * W;
        }
        seen++;
    }
    jobjectID me = jvmpi->GetThreadObject(e->env_id);
    if (me) ask_object_dump("MONITOR_DUMP", me, 0);
    if (depth <= 1) ask_heap_dump("MONITOR_DUMP");
}

static volatile int class_loads_asked, allocs_asked;

static void on_class_load(JVMPI_Event *e) {
    add_class(e->u.class_load.class_id, e->u.class_load.class_name);
    if (e->event_type & JVMPI_REQUESTED_EVENT) {
        got.id = e->u.class_load.class_id;
        return;
    }
    if (!init_done || shutting || depth > 0 || class_loads_asked >= 4) return;
    class_loads_asked++;
    ask_object_dump("CLASS_LOAD", e->u.class_load.class_id, 0);
    ask_class_load("CLASS_LOAD", e->u.class_load.class_id);
    if (class_loads_asked == 1) ask_heap_dump("CLASS_LOAD");
}

static void on_object_alloc(JVMPI_Event *e) {
    if (e->event_type & JVMPI_REQUESTED_EVENT) {
        got.id = e->u.obj_alloc.obj_id;
        got.other = e->u.obj_alloc.class_id;
        return;
    }
    if (!init_done || shutting || depth > 0 || allocs_asked >= 4 || !e->u.obj_alloc.class_id) return;
    allocs_asked++;
    ask_class_load("OBJECT_ALLOC", e->u.obj_alloc.class_id);
    /* The object may not be complete yet: an answer, not necessarily a dump. */
    ask_object_dump("OBJECT_ALLOC", e->u.obj_alloc.obj_id, 1);
    ask_object_alloc("OBJECT_ALLOC", e->u.obj_alloc.obj_id, 1);
    if (allocs_asked == 1) {
        ask_heap_dump("OBJECT_ALLOC");
        ask_monitor_dump("OBJECT_ALLOC");
    }
}

/* A second thread that takes the agent's lock and requests dumps while the main thread's
 * handlers (holding the same lock) request theirs. */
static void dumper(void *arg) {
    (void)arg;
    for (int i = 0; i < 3 && !shutting; i++) {
        JVMPI_HeapDumpArg a = { JVMPI_DUMP_LEVEL_0 };
        jvmpi->RawMonitorEnter(lock);
        Got r;
        if (request(JVMPI_EVENT_HEAP_DUMP, &a, &r) == JVMPI_SUCCESS && r.type == JVMPI_EVENT_HEAP_DUMP) dumper_ok++;
        if (request(JVMPI_EVENT_MONITOR_DUMP, NULL, &r) == JVMPI_SUCCESS && r.type == JVMPI_EVENT_MONITOR_DUMP) dumper_ok++;
        jvmpi->RawMonitorExit(lock);
    }
}

static void write_results(void) {
    FILE *f = fopen(out_path, "w");
    if (!f) return;
    for (int i = 0; i < SITES && sites[i].handler; i++)
        fprintf(f, "SITE %s %s ok=%d bad=%d failed=%d\n", sites[i].handler, sites[i].request, sites[i].ok, sites[i].bad, sites[i].failed);
    for (int i = 0; i < bad_lines; i++) fprintf(f, "BAD %s\n", bads[i]);
    fprintf(f, "DUMPER %d\nDONE\n", dumper_ok);
    fclose(f);
}

static void notify(JVMPI_Event *e) {
    jvmpi->RawMonitorEnter(lock);
    int type = e->event_type & ~JVMPI_REQUESTED_EVENT;
    if (e->event_type & JVMPI_REQUESTED_EVENT) {
        got.type = type;
        got.requested = 1;
    }
    switch (type) {
    case JVMPI_EVENT_CLASS_LOAD: on_class_load(e); break;
    case JVMPI_EVENT_OBJECT_ALLOC: on_object_alloc(e); break;
    case JVMPI_EVENT_HEAP_DUMP: on_heap_dump(e); break;
    case JVMPI_EVENT_OBJECT_DUMP: on_object_dump(e); break;
    case JVMPI_EVENT_MONITOR_DUMP: on_monitor_dump(e); break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        init_done = 1;
        if (jvmpi->CreateSystemThread("nest-dumper", JVMPI_NORMAL_PRIORITY, dumper) != JNI_OK) note("INIT_DONE", "CreateSystemThread", 0, "failed");
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN: {
        shutting = 1;
        jobjectID me = jvmpi->GetThreadObject(e->env_id);
        ask_heap_dump("JVM_SHUT_DOWN");
        ask_monitor_dump("JVM_SHUT_DOWN");
        if (me) {
            ask_object_dump("JVM_SHUT_DOWN", me, 0);
            jobjectID k = ask_object_alloc("JVM_SHUT_DOWN", me, 0);
            if (k) ask_class_load("JVM_SHUT_DOWN", k);
        }
        /* A direct subclass of java.lang.Object: its superclass is Object, as HotSpot wrote it. */
        ask_leaf_class("JVM_SHUT_DOWN-leaf-class");
        {
            Got r;
            if (request(JVMPI_EVENT_HEAP_DUMP, NULL, &r) != JVMPI_SUCCESS || r.type != JVMPI_EVENT_HEAP_DUMP)
                note("JVM_SHUT_DOWN", "HEAP_DUMP-level2", 0, "no level-2 dump");
        }
        write_results();
        break;
    }
    }
    jvmpi->RawMonitorExit(lock);
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    const char *o = options ? strstr(options, "out=") : NULL;
    if (o) {
        snprintf(out_path, sizeof out_path, "%s", o + 4);
        char *comma = strchr(out_path, ',');
        if (comma) *comma = 0;
    }
    lock = jvmpi->RawMonitorCreate("_nestdump");
    jvmpi->NotifyEvent = notify;
    jint events[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_OBJECT_ALLOC, JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN };
    for (unsigned i = 0; i < sizeof events / sizeof events[0]; i++)
        if (jvmpi->EnableEvent(events[i], NULL) != JVMPI_SUCCESS) return JNI_ERR;
    return JNI_OK;
}
