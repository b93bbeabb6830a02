/*
 * recorder: the JVMPI test agent of jvmpi-shim's test suite.
 *
 * Written the way a JDK 1.2-era agent is: C, JVM_OnLoad, GetEnv(JVMPI_VERSION_1), NotifyEvent.
 * It records every event it receives as one line in a log file and checks, as it goes, the
 * promises JVMPI makes (a thread, class or method is defined before an event names it; GC
 * brackets pair up; nothing arrives after JVM_SHUT_DOWN). A broken promise is logged as a line
 * starting with "VIOLATION". The Java test programs call into it through the JNI natives of
 * class Probe (tests/java/Probe.java), which exercise the JVMPI functions on demand.
 *
 * Options (comma-separated, after the shim's "agent=<lib>:"):
 *   log=PATH          where to write (required)
 *   enable=A+B+...    events to enable in JVM_OnLoad, by name (see names[] below)
 *   detail=PREFIX     log METHOD/FIELD lines for classes whose name starts with PREFIX
 *   version=1|2|3     which JVMPI version to ask for (default 1)
 *   rc=N              value JVM_OnLoad returns (default 0)
 *   no-notify         do not set NotifyEvent
 *   jni-in-onload     ask GetEnv for JNI inside JVM_OnLoad and use it
 *   gc-lock           enter a raw monitor in GC_START, leave it in GC_FINISH
 *   hook-patch        CLASS_LOAD_HOOK: rewrite "ORIGINAL" to "PATCHED!" in classes that have it
 *   hook-log          CLASS_LOAD_HOOK: log "HOOK class=NAME len=N" for every class file offered, and a
 *                     VIOLATION if the bytes name the shim's JvmpiShimTracker (the agent must see a
 *                     class's own bytes)
 *   hook-edit=C:F:T+… CLASS_LOAD_HOOK: in class C (internal name), replace the CONSTANT_Utf8 entry F
 *                     by T (lengths may differ); "C::" hands back an identical copy of C
 *   set-notify-late   enable events in JVM_OnLoad before setting NotifyEvent
 *   alloc-filter=S    count OBJECT_ALLOC/OBJECT_FREE per class for class names containing S (and
 *                     primitive arrays per kind and size) instead of logging each allocation
 *   tls-mark=N        in every event, the sending thread's JVMPI thread-local storage must be NULL
 *                     (then set to N) or N; anything else is a VIOLATION (two agents in one JVM
 *                     must not see each other's); "TLS checked=C" at JVM_SHUT_DOWN
 *   enable-late=A+B   events to enable at JVM_INIT_DONE (needs "init" in enable=), after the gate opened
 *   resolve-threads   on every THREAD_START, RequestEvent(OBJECT_ALLOC) of its thread ID, logged as
 *                     "RESOLVE tid=ID rc=RC" (after the requested OBJECT_ALLOC line)
 */
#include <dlfcn.h>
#include <jni.h>
#include <jvmpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static JavaVM *the_vm;
static JVMPI_Interface *jvmpi;
static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char detail[256];
static int opt_gc_lock, opt_hook_patch, opt_hook_log;
#define MAX_EDITS 8
static struct { char cls[128], from[128], to[128]; } edits[MAX_EDITS];
static int nedits;
static JVMPI_RawMonitor gc_lock;
static int in_gc, shut_down, thread_start_on, thread_end_on, class_load_on;
static long tls_mark;
static long long tls_checked;
static int opt_resolve_threads;
static char enable_late[512];

static void out_line(const char *fmt, ...) {
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

/* ---- small pointer sets (open addressing; never shrink) ---------------------------------- */
#define SET_SIZE (1 << 16)
typedef struct { void *k[SET_SIZE]; char *v[SET_SIZE]; } set_t;
static set_t threads_set, classes_set, methods_set;

static unsigned slot(void *k) { return (unsigned)(((unsigned long)k >> 3) * 2654435761u) & (SET_SIZE - 1); }
static void set_put(set_t *s, void *k, const char *v) {
    unsigned i;
    pthread_mutex_lock(&lock);
    for (i = slot(k); s->k[i] && s->k[i] != k; i = (i + 1) & (SET_SIZE - 1)) {}
    s->k[i] = k;
    if (v) { free(s->v[i]); s->v[i] = strdup(v); }
    pthread_mutex_unlock(&lock);
}
static const char *set_get(set_t *s, void *k) {
    unsigned i;
    const char *r = NULL;
    pthread_mutex_lock(&lock);
    for (i = slot(k); s->k[i]; i = (i + 1) & (SET_SIZE - 1))
        if (s->k[i] == k) { r = s->v[i] ? s->v[i] : ""; break; }
    pthread_mutex_unlock(&lock);
    return r;
}
static void set_del(set_t *s, void *k) {  /* tombstone: keep the key, mark value */
    set_put(s, k, "<gone>");
}

/* ---- allocation bookkeeping ----------------------------------------------------------------
 * Every allocated ID is remembered (live or freed) in a large open-addressing table, so that
 * OBJECT_FREE can be checked against a previous OBJECT_ALLOC and no ID is reused while live.
 * Allocations of classes whose name contains the alloc-filter are counted per (class, kind);
 * primitive arrays per (kind, size). Counts are printed at JVM_SHUT_DOWN. */
#define IDS_SIZE (1 << 23)
static void **id_keys;
static unsigned short *id_vals; /* 0 empty, 1 live unfiltered, 2 freed, 3+i live filtered group i */
static char alloc_filter[128];
static long long alloc_total, free_total, arena_sent, arena_seen_before_alloc = -1;
#define GROUPS 256
static struct { char name[160]; int kind; int size; long long allocs, frees; } groups[GROUPS];
static int ngroups;

static int group_of(const char *name, int kind, int size) {
    int i;
    for (i = 0; i < ngroups; i++)
        if (groups[i].kind == kind && groups[i].size == size && strcmp(groups[i].name, name) == 0) return i;
    if (ngroups == GROUPS) return -1;
    snprintf(groups[ngroups].name, sizeof groups[ngroups].name, "%s", name);
    groups[ngroups].kind = kind;
    groups[ngroups].size = size;
    return ngroups++;
}
static unsigned id_slot(void *k) {
    unsigned i = (unsigned)(((unsigned long)k >> 3) * 2654435761u) & (IDS_SIZE - 1);
    while (id_keys[i] && id_keys[i] != k) i = (i + 1) & (IDS_SIZE - 1);
    return i;
}
static void on_alloc(JVMPI_Event *e, const char *cn, int requested) {
    unsigned i;
    int g = -1;
    pthread_mutex_lock(&lock);
    if (!id_keys) { id_keys = calloc(IDS_SIZE, sizeof *id_keys); id_vals = calloc(IDS_SIZE, sizeof *id_vals); }
    alloc_total++;
    if (arena_seen_before_alloc < 0) arena_seen_before_alloc = arena_sent;
    if (alloc_filter[0] && cn && strstr(cn, alloc_filter))
        g = group_of(cn, (int)e->u.obj_alloc.is_array, -1);
    else if (alloc_filter[0] && !e->u.obj_alloc.class_id)
        g = group_of("(prim)", (int)e->u.obj_alloc.is_array, (int)e->u.obj_alloc.size);
    if (g >= 0) groups[g].allocs++;
    i = id_slot(e->u.obj_alloc.obj_id);
    if (id_keys[i] && id_vals[i] != 2 && !requested) {
        pthread_mutex_unlock(&lock);
        out_line("VIOLATION OBJECT_ALLOC of live ID %p", (void *)e->u.obj_alloc.obj_id);
        return;
    }
    id_keys[i] = e->u.obj_alloc.obj_id;
    id_vals[i] = (unsigned short)(g >= 0 ? 3 + g : 1);
    pthread_mutex_unlock(&lock);
}
static void on_free(JVMPI_Event *e) {
    unsigned i;
    int bad = 0;
    pthread_mutex_lock(&lock);
    free_total++;
    if (!id_keys) bad = 1;
    else {
        i = id_slot(e->u.obj_free.obj_id);
        if (!id_keys[i] || id_vals[i] == 2) bad = 1;
        else {
            if (id_vals[i] >= 3) groups[id_vals[i] - 3].frees++;
            id_vals[i] = 2;
        }
    }
    pthread_mutex_unlock(&lock);
    if (bad) out_line("VIOLATION OBJECT_FREE of %p, not a live allocated ID", (void *)e->u.obj_free.obj_id);
    if (!in_gc) out_line("VIOLATION OBJECT_FREE outside a GC bracket");
}
static void print_alloc_summary(void) {
    int i;
    if (!alloc_total && !free_total && !alloc_filter[0]) return;
    out_line("ALLOC_TOTAL allocs=%lld frees=%lld arena_before_first_alloc=%lld", alloc_total, free_total,
             arena_seen_before_alloc);
    for (i = 0; i < ngroups; i++)
        if (groups[i].size < 0 || groups[i].allocs >= 50)
            out_line("ACOUNT class=%s kind=%d size=%d allocs=%lld frees=%lld", groups[i].name, groups[i].kind,
                     groups[i].size, groups[i].allocs, groups[i].frees);
}

/* ---- event names --------------------------------------------------------------------------- */
static const struct { const char *name; jint ev; } names[] = {
    {"init", JVMPI_EVENT_JVM_INIT_DONE}, {"shutdown", JVMPI_EVENT_JVM_SHUT_DOWN},
    {"thread_start", JVMPI_EVENT_THREAD_START}, {"thread_end", JVMPI_EVENT_THREAD_END},
    {"class_load", JVMPI_EVENT_CLASS_LOAD}, {"class_unload", JVMPI_EVENT_CLASS_UNLOAD},
    {"class_load_hook", JVMPI_EVENT_CLASS_LOAD_HOOK}, {"gc_start", JVMPI_EVENT_GC_START},
    {"gc_finish", JVMPI_EVENT_GC_FINISH}, {"data_dump", JVMPI_EVENT_DATA_DUMP_REQUEST},
    {"data_reset", JVMPI_EVENT_DATA_RESET_REQUEST},
    {"raw_enter", JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER},
    {"raw_entered", JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED},
    {"raw_exit", JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT},
    {"object_alloc", JVMPI_EVENT_OBJECT_ALLOC}, {"object_free", JVMPI_EVENT_OBJECT_FREE},
    {"object_move", JVMPI_EVENT_OBJECT_MOVE}, {"arena_new", JVMPI_EVENT_ARENA_NEW},
    {"arena_delete", JVMPI_EVENT_ARENA_DELETE}, {"globalref_alloc", JVMPI_EVENT_JNI_GLOBALREF_ALLOC},
    {"globalref_free", JVMPI_EVENT_JNI_GLOBALREF_FREE}, {"weak_alloc", JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC},
    {"weak_free", JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE},
};

static void enable_by_name(const char *n, size_t len) {
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == len && strncmp(names[i].name, n, len) == 0) {
            jint rc = jvmpi->EnableEvent(names[i].ev, NULL);
            if (names[i].ev == JVMPI_EVENT_THREAD_START) thread_start_on = 1;
            if (names[i].ev == JVMPI_EVENT_CLASS_LOAD) class_load_on = 1;
            if (names[i].ev == JVMPI_EVENT_THREAD_END) thread_end_on = 1;
            out_line("ENABLE %s rc=%d", names[i].name, (int)rc);
            return;
        }
    out_line("ENABLE unknown-name %.*s", (int)len, n);
}

/* The env of every event must be a thread the agent has heard of (once THREAD_START is on). */
static void check_env(const char *what, JNIEnv *env) {
    if (thread_start_on && env && !set_get(&threads_set, env))
        out_line("VIOLATION %s: env %p before its THREAD_START", what, (void *)env);
}

static void on_class_load(JVMPI_Event *e, int requested) {
    int i;
    int show = detail[0] && strncmp(e->u.class_load.class_name, detail, strlen(detail)) == 0;
    set_put(&classes_set, e->u.class_load.class_id, e->u.class_load.class_name);
    for (i = 0; i < e->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        char buf[512];
        snprintf(buf, sizeof buf, "%s.%s", e->u.class_load.class_name, m->method_name);
        set_put(&methods_set, m->method_id, buf);
    }
    out_line("CLASS_LOAD name=%s src=%s id=%p nif=%d nmethods=%d nstatics=%d ninst=%d req=%d",
             e->u.class_load.class_name, e->u.class_load.source_name ? e->u.class_load.source_name : "(null)",
             (void *)e->u.class_load.class_id, (int)e->u.class_load.num_interfaces,
             (int)e->u.class_load.num_methods, (int)e->u.class_load.num_static_fields,
             (int)e->u.class_load.num_instance_fields, requested);
    if (!show) return;
    for (i = 0; i < e->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &e->u.class_load.methods[i];
        out_line("METHOD class=%s name=%s sig=%s start=%d end=%d", e->u.class_load.class_name,
                 m->method_name, m->method_signature, (int)m->start_lineno, (int)m->end_lineno);
    }
    for (i = 0; i < e->u.class_load.num_static_fields; i++)
        out_line("FIELD class=%s static=1 name=%s sig=%s", e->u.class_load.class_name,
                 e->u.class_load.statics[i].field_name, e->u.class_load.statics[i].field_signature);
    for (i = 0; i < e->u.class_load.num_instance_fields; i++)
        out_line("FIELD class=%s static=0 name=%s sig=%s", e->u.class_load.class_name,
                 e->u.class_load.instances[i].field_name, e->u.class_load.instances[i].field_signature);
}

/* ---- class files ---------------------------------------------------------------------------- */
static unsigned u2(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

static int contains(const unsigned char *d, jint len, const char *s) {
    jint i, n = (jint)strlen(s);
    for (i = 0; i + n <= len; i++)
        if (memcmp(d + i, s, (size_t)n) == 0) return 1;
    return 0;
}

/* The offset of each constant-pool entry (offs[1..count-1]; 0 for the second slot of a long or
 * double) and the offset just past the pool. 0 if the bytes are not a class file it can read. */
static int cp_read(const unsigned char *d, jint len, unsigned **offs_out, unsigned *count_out, unsigned *end_out) {
    unsigned count, i, p = 10, size;
    unsigned *offs;
    if (len < 10 || u2(d) != 0xCAFE || u2(d + 2) != 0xBABE) return 0;
    count = u2(d + 8);
    offs = calloc(count ? count : 1, sizeof *offs);
    for (i = 1; i < count; i++) {
        if (p + 3 > (unsigned)len) { free(offs); return 0; }
        offs[i] = p;
        switch (d[p]) {
        case 1: size = 3 + u2(d + p + 1); break;
        case 3: case 4: size = 5; break;
        case 5: case 6: size = 9; i++; break;
        case 7: case 8: case 16: case 19: case 20: size = 3; break;
        case 9: case 10: case 11: case 12: case 17: case 18: size = 5; break;
        case 15: size = 4; break;
        default: free(offs); return 0;
        }
        p += size;
    }
    if (p + 8 > (unsigned)len) { free(offs); return 0; }
    *offs_out = offs;
    *count_out = count;
    *end_out = p;
    return 1;
}

/* The class's own name (this_class), or "?". */
static void class_name(const unsigned char *d, jint len, unsigned *offs, unsigned count, unsigned end, char *out, size_t n) {
    unsigned k = u2(d + end + 2), u, ul;
    snprintf(out, n, "?");
    if (k == 0 || k >= count || d[offs[k]] != 7) return;
    u = u2(d + offs[k] + 1);
    if (u == 0 || u >= count || d[offs[u]] != 1) return;
    ul = u2(d + offs[u] + 1);
    snprintf(out, n, "%.*s", (int)(ul < n ? ul : n - 1), (const char *)d + offs[u] + 3);
}

/* hook-edit: a new class file with the Utf8 entry `from` replaced by `to` ("" from: a copy). */
static int edit(JVMPI_Event *e, unsigned *offs, unsigned count, const char *from, const char *to) {
    unsigned char *d = e->u.class_load_hook.class_data, *copy;
    jint len = e->u.class_load_hook.class_data_len;
    size_t fl = strlen(from), tl = strlen(to);
    unsigned i, at = 0;
    if (fl) {
        for (i = 1; i < count && !at; i++)
            if (offs[i] && d[offs[i]] == 1 && u2(d + offs[i] + 1) == fl && memcmp(d + offs[i] + 3, from, fl) == 0)
                at = offs[i];
        if (!at) return 0;
    }
    copy = e->u.class_load_hook.malloc_f((unsigned)(len - (jint)fl + (jint)tl));
    if (!fl) {
        memcpy(copy, d, (size_t)len);
        tl = fl;
    } else {
        memcpy(copy, d, at + 1);
        copy[at + 1] = (unsigned char)(tl >> 8);
        copy[at + 2] = (unsigned char)tl;
        memcpy(copy + at + 3, to, tl);
        memcpy(copy + at + 3 + tl, d + at + 3 + fl, (size_t)len - at - 3 - fl);
    }
    e->u.class_load_hook.new_class_data = copy;
    e->u.class_load_hook.new_class_data_len = len - (jint)fl + (jint)tl;
    return 1;
}

/* hook-log and hook-edit; returns whether the class was edited. */
static int hook_named(JVMPI_Event *e) {
    unsigned char *d = e->u.class_load_hook.class_data;
    jint len = e->u.class_load_hook.class_data_len;
    unsigned *offs, count, end;
    char name[256];
    int i, done = 0;
    if (!cp_read(d, len, &offs, &count, &end)) {
        out_line("HOOK class=? len=%d unreadable", (int)len);
        return 0;
    }
    class_name(d, len, offs, count, end, name, sizeof name);
    if (opt_hook_log) {
        out_line("HOOK class=%s len=%d", name, (int)len);
        if (contains(d, len, "JvmpiShimTracker")) out_line("VIOLATION hook bytes of %s name JvmpiShimTracker", name);
    }
    for (i = 0; i < nedits && !done; i++)
        if (strcmp(edits[i].cls, name) == 0) {
            done = edit(e, offs, count, edits[i].from, edits[i].to);
            out_line("HOOK %s class=%s from=%s to=%s", done ? "edited" : "edit-missed", name, edits[i].from, edits[i].to);
        }
    free(offs);
    return done;
}

static void hook(JVMPI_Event *e) {
    static const char from[] = "ORIGINAL", to[] = "PATCHED!";
    unsigned char *d = e->u.class_load_hook.class_data;
    jint len = e->u.class_load_hook.class_data_len, i;
    int boot = 0;
    if ((opt_hook_log || nedits) && hook_named(e)) return;
    for (i = 0; i + 21 <= len; i++)
        if (memcmp(d + i, "java/util/zip/Adler32", 21) == 0) { boot = 1; break; }
    if (boot) {
        /* A bootstrap class: hand back an identical copy made with malloc_f. */
        unsigned char *copy = e->u.class_load_hook.malloc_f((unsigned)len);
        memcpy(copy, d, (size_t)len);
        e->u.class_load_hook.new_class_data = copy;
        e->u.class_load_hook.new_class_data_len = len;
        out_line("HOOK boot Adler32 len=%d", (int)len);
        return;
    }
    if (!opt_hook_patch) return;
    for (i = 0; i + 8 <= len; i++)
        if (memcmp(d + i, from, 8) == 0) {
            unsigned char *copy = e->u.class_load_hook.malloc_f((unsigned)len);
            memcpy(copy, d, (size_t)len);
            memcpy(copy + i, to, 8);
            e->u.class_load_hook.new_class_data = copy;
            e->u.class_load_hook.new_class_data_len = len;
            out_line("HOOK patched len=%d", (int)len);
            return;
        }
}

static void notify(JVMPI_Event *e) {
    int requested = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    jint type = e->event_type & ~JVMPI_REQUESTED_EVENT;
    if (shut_down) out_line("VIOLATION event %d after JVM_SHUT_DOWN", (int)type);
    if (tls_mark && e->env_id) {
        void *t = jvmpi->GetThreadLocalStorage(e->env_id);
        if (!t) jvmpi->SetThreadLocalStorage(e->env_id, (void *)tls_mark);
        else if (t != (void *)tls_mark)
            out_line("VIOLATION TLS of env %p is %p, not this agent's %p", (void *)e->env_id, t, (void *)tls_mark);
        pthread_mutex_lock(&lock);
        tls_checked++;
        pthread_mutex_unlock(&lock);
    }
    switch (type) {
    case JVMPI_EVENT_JVM_INIT_DONE: {
        JavaVM *vm2 = NULL;
        void *p = NULL;
        jint rc = -99;
        check_env("JVM_INIT_DONE", e->env_id);
        if ((*e->env_id)->GetJavaVM(e->env_id, &vm2) == 0)
            rc = (*vm2)->GetEnv(vm2, &p, JVMPI_VERSION_1);
        out_line("INIT_DONE env=%p getjavavm_getenv_rc=%d same_iface=%d", (void *)e->env_id, (int)rc, p == (void *)jvmpi);
        if (enable_late[0]) {
            char *q = enable_late;
            while (*q) {
                char *end = strchr(q, '+');
                size_t len = end ? (size_t)(end - q) : strlen(q);
                enable_by_name(q, len);
                q += len + (end ? 1 : 0);
            }
        }
        break;
    }
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        print_alloc_summary();
        if (tls_mark) out_line("TLS checked=%lld", tls_checked);
        out_line("SHUT_DOWN");
        shut_down = 1;
        break;
    case JVMPI_EVENT_THREAD_START:
        if (!requested) {
            /* A JNIEnv may be reused after THREAD_END; without THREAD_END reuse can't be told apart. */
            if (thread_end_on && set_get(&threads_set, e->u.thread_start.thread_env_id) &&
                strcmp(set_get(&threads_set, e->u.thread_start.thread_env_id), "<gone>") != 0)
                out_line("VIOLATION THREAD_START twice for env %p", (void *)e->u.thread_start.thread_env_id);
            set_put(&threads_set, e->u.thread_start.thread_env_id, e->u.thread_start.thread_name);
        }
        check_env("THREAD_START", e->env_id);
        out_line("THREAD_START name=%s group=%s parent=%s tid=%p tenv=%p env=%p req=%d", e->u.thread_start.thread_name,
                 e->u.thread_start.group_name, e->u.thread_start.parent_name, (void *)e->u.thread_start.thread_id,
                 (void *)e->u.thread_start.thread_env_id, (void *)e->env_id, requested);
        if (opt_resolve_threads && !requested) {
            jint rc = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, e->u.thread_start.thread_id);
            out_line("RESOLVE tid=%p rc=%d", (void *)e->u.thread_start.thread_id, (int)rc);
        }
        break;
    case JVMPI_EVENT_THREAD_END:
        check_env("THREAD_END", e->env_id);
        out_line("THREAD_END env=%p name=%s", (void *)e->env_id,
                 set_get(&threads_set, e->env_id) ? set_get(&threads_set, e->env_id) : "?");
        set_del(&threads_set, e->env_id);
        break;
    case JVMPI_EVENT_CLASS_LOAD:
        check_env("CLASS_LOAD", e->env_id);
        if (!requested && set_get(&classes_set, e->u.class_load.class_id))
            out_line("VIOLATION CLASS_LOAD twice for %p", (void *)e->u.class_load.class_id);
        on_class_load(e, requested);
        break;
    case JVMPI_EVENT_CLASS_UNLOAD: {
        const char *n = set_get(&classes_set, e->u.class_unload.class_id);
        if (!n) out_line("VIOLATION CLASS_UNLOAD of unknown class %p", (void *)e->u.class_unload.class_id);
        out_line("CLASS_UNLOAD id=%p name=%s in_gc=%d", (void *)e->u.class_unload.class_id, n ? n : "?", in_gc);
        break;
    }
    case JVMPI_EVENT_CLASS_LOAD_HOOK:
        hook(e);
        break;
    case JVMPI_EVENT_GC_START:
        check_env("GC_START", e->env_id);
        if (in_gc) out_line("VIOLATION GC_START inside a GC bracket");
        if (opt_gc_lock) jvmpi->RawMonitorEnter(gc_lock);
        in_gc = 1;
        out_line("GC_START");
        break;
    case JVMPI_EVENT_GC_FINISH:
        if (!in_gc) out_line("VIOLATION GC_FINISH without GC_START");
        in_gc = 0;
        out_line("GC_FINISH objects=%lld used=%lld total=%lld", (long long)e->u.gc_info.used_objects,
                 (long long)e->u.gc_info.used_object_space, (long long)e->u.gc_info.total_object_space);
        if (opt_gc_lock) jvmpi->RawMonitorExit(gc_lock);
        break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST:
        check_env("DATA_DUMP_REQUEST", e->env_id);
        out_line("DATA_DUMP");
        break;
    case JVMPI_EVENT_DATA_RESET_REQUEST:
        check_env("DATA_RESET_REQUEST", e->env_id);
        out_line("DATA_RESET");
        break;
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER:
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED:
    case JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT:
        out_line("RAW_%s name=%s id=%p env=%p",
                 type == JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER ? "ENTER" :
                 type == JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED ? "ENTERED" : "EXIT",
                 e->u.raw_monitor.name, (void *)e->u.raw_monitor.id, (void *)e->env_id);
        break;
    case JVMPI_EVENT_OBJECT_ALLOC: {
        const char *cn = e->u.obj_alloc.class_id ? set_get(&classes_set, e->u.obj_alloc.class_id) : "(none)";
        if (class_load_on && !cn) out_line("VIOLATION OBJECT_ALLOC names unknown class %p", (void *)e->u.obj_alloc.class_id);
        check_env("OBJECT_ALLOC", e->env_id);
        on_alloc(e, cn, requested);
        if (requested || !alloc_filter[0])
            out_line("OBJECT_ALLOC id=%p class=%s is_array=%d size=%d arena=%d req=%d", (void *)e->u.obj_alloc.obj_id,
                     cn ? cn : "?", (int)e->u.obj_alloc.is_array, (int)e->u.obj_alloc.size, (int)e->u.obj_alloc.arena_id,
                     requested);
        break;
    }
    case JVMPI_EVENT_OBJECT_FREE:
        on_free(e);
        break;
    case JVMPI_EVENT_ARENA_NEW:
        arena_sent++;
        out_line("ARENA_NEW id=%d name=%s", (int)e->u.new_arena.arena_id, e->u.new_arena.arena_name);
        break;
    case JVMPI_EVENT_JNI_GLOBALREF_ALLOC:
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC:
        out_line("%s obj=%p ref=%p", type == JVMPI_EVENT_JNI_GLOBALREF_ALLOC ? "GREF_ALLOC" : "WREF_ALLOC",
                 (void *)e->u.jni_globalref_alloc.obj_id, (void *)e->u.jni_globalref_alloc.ref_id);
        break;
    case JVMPI_EVENT_JNI_GLOBALREF_FREE:
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE:
        out_line("%s ref=%p", type == JVMPI_EVENT_JNI_GLOBALREF_FREE ? "GREF_FREE" : "WREF_FREE",
                 (void *)e->u.jni_globalref_free.ref_id);
        break;
    default:
        out_line("EVENT %d req=%d", (int)type, requested);
    }
}

/* ---- JVM_OnLoad ---------------------------------------------------------------------------- */
static const char *opt(const char *options, const char *key, char *buf, size_t n) {
    const char *p = options;
    size_t kl = strlen(key);
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= kl && strncmp(p, key, kl) == 0 && (len == kl || p[kl] == '=')) {
            size_t vl = len > kl ? len - kl - 1 : 0;
            if (vl >= n) vl = n - 1;
            memcpy(buf, len > kl ? p + kl + 1 : "", vl);
            buf[vl] = 0;
            return buf;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    char buf[1024];
    jint version = JVMPI_VERSION_1, rc = 0, got;
    void *iface = NULL;
    the_vm = vm;
    if (opt(options, "log", buf, sizeof buf)) out = fopen(buf, "w");
    out_line("ONLOAD options=%s reserved=%p", options ? options : "(null)", reserved);
    if (opt(options, "version", buf, sizeof buf))
        version = buf[0] == '3' ? JVMPI_VERSION_1_2 : buf[0] == '2' ? JVMPI_VERSION_1_1 : JVMPI_VERSION_1;
    got = (*vm)->GetEnv(vm, &iface, version);
    out_line("GETENV rc=%d version_field=%#x asked=%#x", (int)got, iface ? (unsigned)((JVMPI_Interface *)iface)->version : 0u,
             (unsigned)version);
    if (got != JNI_OK) return JNI_ERR;
    jvmpi = (JVMPI_Interface *)iface;
    if (opt(options, "jni-in-onload", buf, sizeof buf)) {
        JNIEnv *env = NULL;
        jint r = (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_2);
        jclass s = (r == JNI_OK) ? (*env)->FindClass(env, "java/lang/String") : NULL;
        out_line("ONLOAD_JNI rc=%d findclass=%d", (int)r, s != NULL);
    }
    if (opt(options, "detail", buf, sizeof buf)) snprintf(detail, sizeof detail, "%s", buf);
    if (opt(options, "alloc-filter", buf, sizeof buf)) snprintf(alloc_filter, sizeof alloc_filter, "%s", buf);
    opt_gc_lock = opt(options, "gc-lock", buf, sizeof buf) != NULL;
    if (opt(options, "tls-mark", buf, sizeof buf)) tls_mark = atol(buf);
    opt_resolve_threads = opt(options, "resolve-threads", buf, sizeof buf) != NULL;
    if (opt(options, "enable-late", buf, sizeof buf)) snprintf(enable_late, sizeof enable_late, "%s", buf);
    opt_hook_patch = opt(options, "hook-patch", buf, sizeof buf) != NULL;
    opt_hook_log = opt(options, "hook-log", buf, sizeof buf) != NULL;
    if (opt(options, "hook-edit", buf, sizeof buf)) {
        char *p = strtok(buf, "+");
        for (; p && nedits < MAX_EDITS; p = strtok(NULL, "+")) {
            char *c1 = strchr(p, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2) { out_line("HOOK bad edit %s", p); continue; }
            *c1 = *c2 = 0;
            snprintf(edits[nedits].cls, sizeof edits[nedits].cls, "%s", p);
            snprintf(edits[nedits].from, sizeof edits[nedits].from, "%s", c1 + 1);
            snprintf(edits[nedits].to, sizeof edits[nedits].to, "%s", c2 + 1);
            nedits++;
        }
    }
    if (opt_gc_lock) gc_lock = jvmpi->RawMonitorCreate("gclock");
    if (!opt(options, "no-notify", buf, sizeof buf) && !opt(options, "set-notify-late", buf, sizeof buf))
        jvmpi->NotifyEvent = notify;
    if (opt(options, "enable", buf, sizeof buf)) {
        char *p = buf;
        while (*p) {
            char *e = strchr(p, '+');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            enable_by_name(p, len);
            p += len + (e ? 1 : 0);
        }
    }
    if (opt(options, "set-notify-late", buf, sizeof buf)) jvmpi->NotifyEvent = notify;
    if (opt(options, "rc", buf, sizeof buf)) rc = atoi(buf);
    return rc;
}

/* ---- natives of class Probe ---------------------------------------------------------------- */
#define P(name) JNICALL Java_Probe_##name

static void check_created_vms(void) {
    typedef jint (*gcv_t)(JavaVM **, jsize, jsize *);
    gcv_t gcv = (gcv_t)dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
    JavaVM *vms[2];
    jsize n = 0;
    void *p = NULL;
    jint rc = -99;
    if (gcv && gcv(vms, 2, &n) == 0 && n > 0) rc = (*vms[0])->GetEnv(vms[0], &p, JVMPI_VERSION_1_2);
    out_line("CREATED_VMS found=%d getenv_rc=%d same_iface=%d", gcv != NULL, (int)rc, p == (void *)jvmpi);
}

JNIEXPORT void P(mark)(JNIEnv *env, jclass c, jstring s) {
    const char *u = (*env)->GetStringUTFChars(env, s, NULL);
    out_line("MARK %s", u);
    /* JNI_GetCreatedJavaVMs lists the VM only once it is fully created: ask from main(). */
    if (strcmp(u, "main-start") == 0) check_created_vms();
    (*env)->ReleaseStringUTFChars(env, s, u);
}

JNIEXPORT jlong P(threadEnv)(JNIEnv *env, jclass c) { return (jlong)(long)env; }

/* "Class.method:line;..." for the current thread, callee first. */
JNIEXPORT jstring P(callTrace)(JNIEnv *env, jclass c, jlong target, jint depth) {
    JVMPI_CallFrame frames[64];
    JVMPI_CallTrace t;
    char buf[8192];
    size_t n = 0;
    int i;
    if (depth > 64) depth = 64;
    t.env_id = target ? (JNIEnv *)(long)target : env;
    t.num_frames = -7;
    t.frames = frames;
    jvmpi->GetCallTrace(&t, depth);
    buf[0] = 0;
    for (i = 0; i < t.num_frames && n < sizeof buf - 600; i++) {
        const char *name = set_get(&methods_set, frames[i].method_id);
        if (!name && class_load_on) out_line("VIOLATION trace names unknown method %p", (void *)frames[i].method_id);
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s:%d", i ? ";" : "", name ? name : "?", (int)frames[i].lineno);
    }
    out_line("TRACE n=%d %s", (int)t.num_frames, buf);
    return (*env)->NewStringUTF(env, buf);
}

JNIEXPORT void P(suspend)(JNIEnv *env, jclass c, jlong e) { jvmpi->SuspendThread((JNIEnv *)(long)e); }
JNIEXPORT void P(resume)(JNIEnv *env, jclass c, jlong e) { jvmpi->ResumeThread((JNIEnv *)(long)e); }
JNIEXPORT jint P(status)(JNIEnv *env, jclass c, jlong e) { return jvmpi->GetThreadStatus((JNIEnv *)(long)e); }
JNIEXPORT jboolean P(hasRun)(JNIEnv *env, jclass c, jlong e) { return jvmpi->ThreadHasRun((JNIEnv *)(long)e); }
JNIEXPORT void P(setTls)(JNIEnv *env, jclass c, jlong e, jlong v) {
    jvmpi->SetThreadLocalStorage((JNIEnv *)(long)e, (void *)(long)v);
}
JNIEXPORT jlong P(getTls)(JNIEnv *env, jclass c, jlong e) { return (jlong)(long)jvmpi->GetThreadLocalStorage((JNIEnv *)(long)e); }
JNIEXPORT jlong P(cpuTime)(JNIEnv *env, jclass c) { return jvmpi->GetCurrentThreadCpuTime(); }
JNIEXPORT jlong P(threadObjectId)(JNIEnv *env, jclass c, jlong e) {
    return (jlong)(long)jvmpi->GetThreadObject((JNIEnv *)(long)e);
}
JNIEXPORT jlong P(objectId)(JNIEnv *env, jclass c, jobject o) { return (jlong)(long)jvmpi->jobject2jobjectID(o); }
JNIEXPORT jobject P(objectFor)(JNIEnv *env, jclass c, jlong id) { return jvmpi->jobjectID2jobject((jobjectID)(long)id); }

/* The class (object) that defines the caller of this native, through GetCallTrace + GetMethodClass. */
JNIEXPORT jobject P(callerClass)(JNIEnv *env, jclass c) {
    JVMPI_CallFrame frames[2];
    JVMPI_CallTrace t;
    t.env_id = env;
    t.frames = frames;
    jvmpi->GetCallTrace(&t, 2);
    if (t.num_frames < 2) return NULL;
    return jvmpi->jobjectID2jobject(jvmpi->GetMethodClass(frames[1].method_id));
}

JNIEXPORT jint P(enable)(JNIEnv *env, jclass c, jint ev) { return jvmpi->EnableEvent(ev, NULL); }
JNIEXPORT jint P(disable)(JNIEnv *env, jclass c, jint ev) { return jvmpi->DisableEvent(ev, NULL); }
JNIEXPORT jint P(request)(JNIEnv *env, jclass c, jint ev, jobject o) {
    return jvmpi->RequestEvent(ev, o ? (void *)jvmpi->jobject2jobjectID(o) : NULL);
}
JNIEXPORT jint P(requestId)(JNIEnv *env, jclass c, jint ev, jlong id) { return jvmpi->RequestEvent(ev, (void *)(long)id); }
JNIEXPORT void P(runGC)(JNIEnv *env, jclass c) { jvmpi->RunGC(); }
JNIEXPORT void P(disableGC)(JNIEnv *env, jclass c) { jvmpi->DisableGC(); }
JNIEXPORT void P(enableGC)(JNIEnv *env, jclass c) { jvmpi->EnableGC(); }

JNIEXPORT jlong P(rawCreate)(JNIEnv *env, jclass c, jstring s) {
    const char *u = (*env)->GetStringUTFChars(env, s, NULL);
    JVMPI_RawMonitor m = jvmpi->RawMonitorCreate((char *)u);
    (*env)->ReleaseStringUTFChars(env, s, u);
    return (jlong)(long)m;
}
JNIEXPORT void P(rawEnter)(JNIEnv *env, jclass c, jlong m) { jvmpi->RawMonitorEnter((JVMPI_RawMonitor)(long)m); }
JNIEXPORT void P(rawExit)(JNIEnv *env, jclass c, jlong m) { jvmpi->RawMonitorExit((JVMPI_RawMonitor)(long)m); }
JNIEXPORT void P(rawWait)(JNIEnv *env, jclass c, jlong m, jlong ms) { jvmpi->RawMonitorWait((JVMPI_RawMonitor)(long)m, ms); }
JNIEXPORT void P(rawNotifyAll)(JNIEnv *env, jclass c, jlong m) { jvmpi->RawMonitorNotifyAll((JVMPI_RawMonitor)(long)m); }
JNIEXPORT void P(rawDestroy)(JNIEnv *env, jclass c, jlong m) { jvmpi->RawMonitorDestroy((JVMPI_RawMonitor)(long)m); }
JNIEXPORT void P(gcLockTouch)(JNIEnv *env, jclass c) {
    if (gc_lock) { jvmpi->RawMonitorEnter(gc_lock); jvmpi->RawMonitorExit(gc_lock); }
}

static void system_thread_body(void *arg) {
    JNIEnv *env = NULL;
    (*the_vm)->GetEnv(the_vm, (void **)&env, JNI_VERSION_1_2);
    check_env("system thread", env);
    out_line("SYSTHREAD_RUN env=%p arg=%p cpu=%lld", (void *)env, arg, (long long)jvmpi->GetCurrentThreadCpuTime());
}
JNIEXPORT jint P(createSystemThread)(JNIEnv *env, jclass c, jstring s, jint prio) {
    const char *u = (*env)->GetStringUTFChars(env, s, NULL);
    jint r = jvmpi->CreateSystemThread((char *)u, prio, system_thread_body);
    (*env)->ReleaseStringUTFChars(env, s, u);
    return r;
}

JNIEXPORT jintArray P(threadList)(JNIEnv *env, jclass c, jlongArray envs, jboolean suspend) {
    jsize n = (*env)->GetArrayLength(env, envs), i;
    jlong *e = (*env)->GetLongArrayElements(env, envs, NULL);
    JNIEnv *list[64];
    jint res[64];
    jintArray r;
    for (i = 0; i < n && i < 64; i++) { list[i] = (JNIEnv *)(long)e[i]; res[i] = 12345; }
    (*env)->ReleaseLongArrayElements(env, envs, e, JNI_ABORT);
    if (suspend) jvmpi->SuspendThreadList(n, list, res); else jvmpi->ResumeThreadList(n, list, res);
    r = (*env)->NewIntArray(env, n);
    (*env)->SetIntArrayRegion(env, r, 0, n, res);
    return r;
}

JNIEXPORT void P(profilerExit)(JNIEnv *env, jclass c, jint code) { jvmpi->ProfilerExit(code); }
JNIEXPORT void P(sigquit)(JNIEnv *env, jclass c) { kill(getpid(), SIGQUIT); }

/* Every ID-taking function with IDs the shim never gave out; the JVM must survive. */
JNIEXPORT jstring P(garbage)(JNIEnv *env, jclass c) {
    JNIEnv *bad = (JNIEnv *)(long)0x1234568;
    JVMPI_CallFrame f[4];
    JVMPI_CallTrace t;
    jint res[1];
    char buf[1024];
    t.env_id = bad;
    t.frames = f;
    t.num_frames = 99;
    jvmpi->GetCallTrace(&t, 4);
    jvmpi->SuspendThread(bad);
    jvmpi->ResumeThread(bad);
    jvmpi->SetThreadLocalStorage(bad, (void *)1);
    jvmpi->RawMonitorEnter((JVMPI_RawMonitor)(long)0x4242);
    jvmpi->RawMonitorExit((JVMPI_RawMonitor)(long)0x4242);
    jvmpi->RawMonitorDestroy((JVMPI_RawMonitor)(long)0x4242);
    jvmpi->SuspendThreadList(1, &bad, res);
    snprintf(buf, sizeof buf,
             "trace=%d obj=%p tobj=%p mclass=%p status=%d hasrun=%d tls=%p list=%d enable999=%d enableneg=%d "
             "disable999=%d enable_heapdump=%d req_heapdump=%d req_method=%d req_classbad=%d req_threadbad=%d "
             "req_objbad=%d enable_twice=%d,%d disable_unknown=%d",
             (int)t.num_frames, (void *)jvmpi->jobjectID2jobject((jobjectID)(long)0xdead0),
             (void *)jvmpi->GetThreadObject(bad), (void *)jvmpi->GetMethodClass((jmethodID)(long)0xbad0),
             (int)jvmpi->GetThreadStatus(bad), (int)jvmpi->ThreadHasRun(bad), jvmpi->GetThreadLocalStorage(bad),
             (int)res[0], (int)jvmpi->EnableEvent(999, NULL), (int)jvmpi->EnableEvent(-5, NULL),
             (int)jvmpi->DisableEvent(999, NULL), (int)jvmpi->EnableEvent(JVMPI_EVENT_HEAP_DUMP, NULL),
             (int)jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, NULL), (int)jvmpi->RequestEvent(JVMPI_EVENT_METHOD_ENTRY, NULL),
             (int)jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, (void *)(long)0xdead0),
             (int)jvmpi->RequestEvent(JVMPI_EVENT_THREAD_START, (void *)(long)0xdead0),
             (int)jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, (void *)(long)0xdead0),
             (int)jvmpi->EnableEvent(JVMPI_EVENT_DATA_DUMP_REQUEST, NULL),
             (int)jvmpi->EnableEvent(JVMPI_EVENT_DATA_DUMP_REQUEST, NULL),
             (int)jvmpi->DisableEvent(JVMPI_EVENT_GC_FINISH, NULL));
    out_line("GARBAGE %s", buf);
    return (*env)->NewStringUTF(env, buf);
}

/* JNI allocations and global references, for the heap tests. */
JNIEXPORT void P(jniAlloc)(JNIEnv *env, jclass c, jclass k, jint n) {
    jint i;
    for (i = 0; i < n; i++) (*env)->DeleteLocalRef(env, (*env)->AllocObject(env, k));
}
JNIEXPORT void P(jniArrays)(JNIEnv *env, jclass c, jclass k, jint n) {
    jint i;
    for (i = 0; i < n; i++) {
        (*env)->DeleteLocalRef(env, (*env)->NewIntArray(env, 333));
        (*env)->DeleteLocalRef(env, (*env)->NewObjectArray(env, 4, k, NULL));
        (*env)->DeleteLocalRef(env, (*env)->NewStringUTF(env, "jvmpi-jni-string"));
    }
}
JNIEXPORT void P(globalRefs)(JNIEnv *env, jclass c, jobject o) {
    jobject g = (*env)->NewGlobalRef(env, o);
    jweak w = (*env)->NewWeakGlobalRef(env, o);
    out_line("REFS id=%p g=%p w=%p", (void *)jvmpi->jobject2jobjectID(o), (void *)g, (void *)w);
    (*env)->DeleteGlobalRef(env, g);
    (*env)->DeleteWeakGlobalRef(env, w);
    out_line("REFS deleted");
}
