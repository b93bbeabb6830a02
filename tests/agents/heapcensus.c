/*
 * heapcensus: a heap profiler written the way JDK 1.2-1.5 tools did it (hprof's heap=dump):
 * it keeps a table of classes from CLASS_LOAD, requests a level-2 heap dump when the VM shuts
 * down (or on DATA_DUMP_REQUEST with at=dump), walks every record of the dump by the lengths
 * the format and the class table give, and prints the number of instances per class:
 *   <out>:  DUMP rc=<n> bytes=<n> records=<n> parsed=<ok|bad at <offset>>
 *           COUNT <class name> <instances> <bytes of values>     (one line per class, sorted)
 *           ARRAYS <element class name or primitive type> <arrays> <elements>
 * Options: out=<file>, at=shutdown|dump
 */
#include <jni.h>
#include <jvmpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static char out_path[1024] = "heapcensus.txt";
static int at_dump;
/* `hprof`: as hprof's heap=dump: OBJECT_ALLOC on from the start, and in JVM_SHUT_DOWN every
 * event switched off (CLASS_LOAD too) before the last dump is requested. */
static int like_hprof;
static int dumped;

typedef struct {
    jobjectID id;
    char *name;
    int num_interfaces;
    int num_statics;
    char *static_types; /* first byte of each static field's signature, in CLASS_LOAD order */
    long instances, bytes, arrays, elements;
} Class;

#define TABLE (1 << 16)
static Class table[TABLE];
static JVMPI_RawMonitor lock;

static Class *find(jobjectID id, int add) {
    uintptr_t h = ((uintptr_t)id >> 4) * 2654435761u;
    for (int i = 0; i < TABLE; i++) {
        Class *c = &table[(h + i) & (TABLE - 1)];
        if (c->id == id) return c;
        if (c->id == NULL) {
            if (!add) return NULL;
            c->id = id;
            return c;
        }
    }
    return NULL;
}

static int value_size(char ty) {
    switch (ty) {
    case 'Z': case 'B': return 1;
    case 'C': case 'S': return 2;
    case 'I': case 'F': return 4;
    case 'J': case 'D': return 8;
    default: return (int)sizeof(void *);
    }
}

static int prim_size(int ty) {
    switch (ty) {
    case JVMPI_BOOLEAN: case JVMPI_BYTE: return 1;
    case JVMPI_CHAR: case JVMPI_SHORT: return 2;
    case JVMPI_INT: case JVMPI_FLOAT: return 4;
    case JVMPI_LONG: case JVMPI_DOUBLE: return 8;
    default: return -1;
    }
}

static const char *prim_name(int ty) {
    switch (ty) {
    case JVMPI_BOOLEAN: return "boolean";
    case JVMPI_BYTE: return "byte";
    case JVMPI_CHAR: return "char";
    case JVMPI_SHORT: return "short";
    case JVMPI_INT: return "int";
    case JVMPI_FLOAT: return "float";
    case JVMPI_LONG: return "long";
    case JVMPI_DOUBLE: return "double";
    default: return "?";
    }
}

static uint32_t u4(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static jobjectID id_at(const unsigned char *p) {
    jobjectID id;
    memcpy(&id, p, sizeof id);
    return id;
}

static long prim_arrays[16], prim_elements[16];

/* Returns the offset of the first byte it could not parse, or -1 when all was parsed. */
/* The last CLASS_DUMP parsed, and the unknown ID met (for the failure line). */
static const char *last_class = "";
static void *unknown_id;

static long walk(const unsigned char *b, const unsigned char *end, long *records) {
    const int W = (int)sizeof(void *);
    const unsigned char *p = b;
    while (p < end) {
        int type = *p++;
        (*records)++;
        switch (type) {
        case JVMPI_GC_ROOT_UNKNOWN: case JVMPI_GC_ROOT_STICKY_CLASS: case JVMPI_GC_ROOT_MONITOR_USED:
            p += W;
            break;
        case JVMPI_GC_ROOT_JNI_GLOBAL: case JVMPI_GC_ROOT_NATIVE_STACK: case JVMPI_GC_ROOT_THREAD_BLOCK:
            p += 2 * W;
            break;
        case JVMPI_GC_ROOT_JNI_LOCAL: case JVMPI_GC_ROOT_JAVA_FRAME:
            p += 2 * W + 4;
            break;
        case JVMPI_GC_CLASS_DUMP: {
            Class *c = find(id_at(p), 0);
            if (!c || !c->name) {
                unknown_id = id_at(p);
                return (long)(p - 1 - b);
            }
            last_class = c->name;
            p += 7 * W + 4 + c->num_interfaces * W;
            int cp = (p[0] << 8) | p[1];
            p += 2;
            for (int i = 0; i < cp; i++) {
                char ty = (char)p[2];
                p += 3 + (ty == JVMPI_CLASS ? W : prim_size(ty));
            }
            for (int i = 0; i < c->num_statics; i++) p += value_size(c->static_types[i]);
            break;
        }
        case JVMPI_GC_INSTANCE_DUMP: {
            Class *c = find(id_at(p + W), 0);
            uint32_t n = u4(p + 2 * W);
            if (!c || !c->name) return (long)(p - 1 - b);
            c->instances++;
            c->bytes += n;
            p += 2 * W + 4 + n;
            break;
        }
        case JVMPI_GC_OBJ_ARRAY_DUMP: {
            uint32_t n = u4(p + W);
            Class *c = find(id_at(p + W + 4), 0);
            if (c && c->name) { /* element classes that are arrays have no CLASS_LOAD */
                c->arrays++;
                c->elements += n;
            }
            p += 2 * W + 4 + (size_t)n * W;
            break;
        }
        case JVMPI_GC_PRIM_ARRAY_DUMP: {
            uint32_t n = u4(p + W);
            int ty = p[W + 4];
            if (prim_size(ty) < 0) return (long)(p - 1 - b);
            prim_arrays[ty]++;
            prim_elements[ty] += n;
            p += W + 5 + (size_t)n * prim_size(ty);
            break;
        }
        default:
            return (long)(p - 1 - b);
        }
    }
    return p == end ? -1 : (long)(end - b);
}

static int by_instances(const void *x, const void *y) {
    const Class *a = *(const Class *const *)x, *b = *(const Class *const *)y;
    if (a->instances != b->instances) return a->instances < b->instances ? 1 : -1;
    return strcmp(a->name, b->name);
}

static void report(const unsigned char *b, const unsigned char *end) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    long records = 0;
    long bad = walk(b, end, &records);
    fprintf(f, "DUMP rc=0 bytes=%ld records=%ld parsed=", (long)(end - b), records);
    if (bad < 0) fprintf(f, "ok\n");
    else fprintf(f, "bad at %ld type=0x%x id=%p after class %s\n", bad, b[bad], unknown_id, last_class);
    static Class *sorted[TABLE];
    int n = 0;
    for (int i = 0; i < TABLE; i++)
        if (table[i].name && (table[i].instances || table[i].arrays)) sorted[n++] = &table[i];
    qsort(sorted, n, sizeof *sorted, by_instances);
    for (int i = 0; i < n; i++) {
        if (sorted[i]->instances) fprintf(f, "COUNT %s %ld %ld\n", sorted[i]->name, sorted[i]->instances, sorted[i]->bytes);
        if (sorted[i]->arrays) fprintf(f, "ARRAYS %s %ld %ld\n", sorted[i]->name, sorted[i]->arrays, sorted[i]->elements);
    }
    for (int t = 0; t < 16; t++)
        if (prim_arrays[t]) fprintf(f, "ARRAYS %s %ld %ld\n", prim_name(t), prim_arrays[t], prim_elements[t]);
    fclose(f);
    rename(tmp, out_path);
}

static void request_dump(void) {
    if (dumped) return;
    dumped = 1;
    JVMPI_HeapDumpArg arg;
    arg.heap_dump_level = JVMPI_DUMP_LEVEL_2;
    jint rc = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &arg);
    if (rc != JVMPI_SUCCESS) {
        FILE *f = fopen(out_path, "w");
        if (f) {
            fprintf(f, "DUMP rc=%d\n", (int)rc);
            fclose(f);
        }
    }
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD: {
        jvmpi->RawMonitorEnter(lock);
        Class *c = find(e->u.class_load.class_id, 1);
        if (c && !c->name) {
            c->name = strdup(e->u.class_load.class_name);
            c->num_interfaces = e->u.class_load.num_interfaces;
            c->num_statics = e->u.class_load.num_static_fields;
            c->static_types = malloc((size_t)c->num_statics + 1);
            for (int i = 0; i < c->num_statics; i++) c->static_types[i] = e->u.class_load.statics[i].field_signature[0];
        }
        jvmpi->RawMonitorExit(lock);
        break;
    }
    case JVMPI_EVENT_CLASS_UNLOAD: {
        jvmpi->RawMonitorEnter(lock);
        Class *c = find(e->u.class_unload.class_id, 0);
        if (c && c->name) {
            free(c->name);
            c->name = NULL;
        }
        jvmpi->RawMonitorExit(lock);
        break;
    }
    case JVMPI_EVENT_HEAP_DUMP:
        jvmpi->RawMonitorEnter(lock);
        report((const unsigned char *)e->u.heap_dump.begin, (const unsigned char *)e->u.heap_dump.end);
        jvmpi->RawMonitorExit(lock);
        break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST:
        if (at_dump) request_dump();
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        if (like_hprof)
            for (jint ev = 1; ev <= JVMPI_MAX_EVENT_TYPE_VAL; ev++) jvmpi->DisableEvent(ev, NULL);
        if (!at_dump) request_dump();
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    const char *o = options ? strstr(options, "out=") : NULL;
    if (o) {
        snprintf(out_path, sizeof out_path, "%s", o + 4);
        char *comma = strchr(out_path, ',');
        if (comma) *comma = 0;
    }
    at_dump = options && strstr(options, "at=dump") != NULL;
    like_hprof = options && strstr(options, "hprof") != NULL;
    lock = jvmpi->RawMonitorCreate("_heapcensus");
    jvmpi->NotifyEvent = notify;
    if (jvmpi->EnableEvent(JVMPI_EVENT_CLASS_LOAD, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    jvmpi->EnableEvent(JVMPI_EVENT_CLASS_UNLOAD, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_DATA_DUMP_REQUEST, NULL);
    if (like_hprof && jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_ALLOC, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    return JNI_OK;
}
