/*
 * methodtable: an allocation profiler written the way NiagaraST's is (tests/class_threads.rs).
 *
 * As NiagaraST does, it enables a fixed list of events in JVM_OnLoad (CLASS_LOAD, THREAD_START,
 * THREAD_END, OBJECT_ALLOC, JVM_SHUT_DOWN) and gives up at the first refusal. CLASS_LOAD
 * appends every method of the class to one global table that grows by reallocation, with no
 * lock: on HotSpot 1.5 a single-threaded program got all of its CLASS_LOADs in the thread that
 * defined each class, so the table never saw two writers. OBJECT_ALLOC takes a call trace of
 * depth 4 (GetCallTrace) and looks its frames up in that table.
 *
 * What it checks: every CLASS_LOAD is delivered in the thread its env_id names (the thread's
 * own JNIEnv, from the JavaVM) — and for the program's classes whose name starts with `only=`
 * (default "ClassThreads$A"), in the thread "main" that loaded them. A program class's
 * CLASS_LOAD handler running while another program class's runs is an overlap (the table's
 * writers racing, as when the shim announced the program's classes from a thread of its own
 * while main announced others); overlaps of other classes are counted apart, not judged: the
 * JDK's own threads (Common-Cleaner, from JDK 9) define boot classes while main starts, and the
 * shim delivers each CLASS_LOAD in its defining thread without serializing them, where HotSpot
 * 1.5 delivered a loader's CLASS_LOADs one at a time (under the loader's lock): a known
 * difference (compat-matrix.md, CLASS_LOAD).
 *
 * Its option parser is NiagaraST's, which skips to the next ',' or blank without looking for the
 * NUL: OPTIONS_SCAN says where it stops past the last option.
 *
 * Lines (log=PATH): CLASS <name> <main|other> for every `only=` class, VIOLATION ... and, at
 * JVM_SHUT_DOWN, TOTAL classes=<n> methods=<n> allocs=<n> unknown_frames=<n> overlaps=<n> other_overlaps=<n>.
 */
#include <jni.h>
#include <jvmpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

static JavaVM *vm;
static JVMPI_Interface *jvmpi;
static FILE *out;
static char only[128] = "ClassThreads$A";
static JNIEnv *main_env;

struct method { jmethodID id; char *name; };
static struct method *methods;
static int nmethods, cap;
static int nclasses, allocs, unknown_frames, overlaps;
static volatile int inside, inside_program;
static int other_overlaps;

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

/* NiagaraST's Method_List::checkSpace: a bigger array, the old one freed. */
static void add_method(const char *cls, const JVMPI_Method *m) {
    if (nmethods == cap) {
        int ncap = cap ? 2 * cap : 64;
        struct method *n = malloc(sizeof *n * ncap);
        if (methods) memcpy(n, methods, sizeof *n * nmethods);
        free(methods);
        methods = n;
        cap = ncap;
    }
    size_t len = strlen(cls) + strlen(m->method_name) + 2;
    char *name = malloc(len);
    snprintf(name, len, "%s.%s", cls, m->method_name);
    methods[nmethods].id = m->method_id;
    methods[nmethods].name = name;
    nmethods++;
}

static const char *method_name(jmethodID id) {
    for (int i = nmethods - 1; i >= 0; i--)
        if (methods[i].id == id) return methods[i].name;
    return NULL;
}

static void class_load(JVMPI_Event *e) {
    const char *name = e->u.class_load.class_name;
    int program = strncmp(name, only, strlen(only)) == 0;
    int before = __atomic_fetch_add(&inside, 1, __ATOMIC_SEQ_CST);
    if (program && __atomic_fetch_add(&inside_program, 1, __ATOMIC_SEQ_CST) != 0)
        __atomic_fetch_add(&overlaps, 1, __ATOMIC_SEQ_CST);
    else if (before != 0)
        __atomic_fetch_add(&other_overlaps, 1, __ATOMIC_SEQ_CST);
    JNIEnv *self = NULL;
    if ((*vm)->GetEnv(vm, (void **)&self, JNI_VERSION_1_2) != JNI_OK) self = NULL;
    if (self != e->env_id) {
        char tname[32] = "";
        prctl(PR_GET_NAME, tname);
        line("VIOLATION CLASS_LOAD of %s with env_id %p delivered in the thread \"%s\" (env %p)", name, (void *)e->env_id,
             tname, (void *)self);
    }
    if (strncmp(name, only, strlen(only)) == 0) {
        line("CLASS %s %s", name, main_env && self == main_env ? "main" : "other");
        usleep(2000); /* a handler that takes its time, as a real one printing does */
    }
    for (int i = 0; i < e->u.class_load.num_methods; i++) add_method(name, &e->u.class_load.methods[i]);
    nclasses++;
    if (program) __atomic_fetch_sub(&inside_program, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_sub(&inside, 1, __ATOMIC_SEQ_CST);
}

static void object_alloc(JVMPI_Event *e) {
    JVMPI_CallFrame frames[4];
    JVMPI_CallTrace t = { e->env_id, 0, frames };
    jvmpi->GetCallTrace(&t, 4);
    __atomic_fetch_add(&allocs, 1, __ATOMIC_RELAXED);
    if (t.num_frames > 0 && e->env_id == main_env && !method_name(frames[0].method_id))
        __atomic_fetch_add(&unknown_frames, 1, __ATOMIC_RELAXED);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_CLASS_LOAD:
    case JVMPI_EVENT_CLASS_LOAD | JVMPI_REQUESTED_EVENT:
        class_load(e);
        break;
    case JVMPI_EVENT_THREAD_START:
        if (strcmp(e->u.thread_start.thread_name, "main") == 0) main_env = e->u.thread_start.thread_env_id;
        break;
    case JVMPI_EVENT_OBJECT_ALLOC:
        object_alloc(e);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        line("TOTAL classes=%d methods=%d allocs=%d unknown_frames=%d overlaps=%d other_overlaps=%d", nclasses, nmethods, allocs,
             unknown_frames, overlaps, other_overlaps);
        break;
    default:
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved) {
    (void)reserved;
    vm = jvm;
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) return JNI_ERR;
    for (char *o = options; o && *o;) {
        char *end = strchr(o, ',');
        size_t n = end ? (size_t)(end - o) : strlen(o);
        if (n > 4 && strncmp(o, "log=", 4) == 0) {
            char path[512];
            snprintf(path, sizeof path, "%.*s", (int)(n - 4), o + 4);
            out = fopen(path, "w");
        } else if (n > 5 && strncmp(o, "only=", 5) == 0) {
            snprintf(only, sizeof only, "%.*s", (int)(n - 5), o + 5);
        }
        o = end ? end + 1 : NULL;
    }
    /* NiagaraST's goToNextOption: skip to the next ',' or blank, never looking for the NUL. Past
     * the last option it must meet a blank at once, not run into memory with a comma in it. */
    if (options) {
        const char *p = strrchr(options, ',') ? strrchr(options, ',') + 1 : options;
        while (*p != ',' && *p != ' ' && *p != '\t' && *p != '\n' && p < options + strlen(options) + 1) p++;
        line("OPTIONS_SCAN %s", *p == ' ' ? "stops at a blank" : "runs past the NUL");
    }
    jvmpi->NotifyEvent = notify;
    int want[] = { JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END,
                   JVMPI_EVENT_OBJECT_ALLOC, JVMPI_EVENT_JVM_SHUT_DOWN };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (jvmpi->EnableEvent(want[i], NULL) != JVMPI_SUCCESS) {
            fprintf(stderr, "methodtable: event %d refused\n", want[i]);
            return JNI_ERR;
        }
    return JNI_OK;
}
