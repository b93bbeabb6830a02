/*
 * memprof: a memory profiler written the way JVMPI tools were, for object IDs.
 *
 * mode=report (default): at JVM_SHUT_DOWN it takes a level-0 heap dump, then, for every object
 * in it, RequestEvent(OBJECT_ALLOC, id) and RequestEvent(CLASS_LOAD, class_id) for the class
 * the answer names (every time, as a profiler that keeps no class table would), then
 * jobjectID2jobject(id) and jobject2jobjectID back. Every answer is checked: the object's ID,
 * its kind against the dump's record, a class name for every class ID, the same size for every
 * instance of a class. Writes <out>:
 *   DUMP objects=<n> ms=<t>
 *   REQ ms=<t> bad=<n> classes=<n>              (first bad answer: BADREQ <why>)
 *   J2J ms=<t> bad=<n>                            (with jobject2jobjectID back; first bad: BADJ2J <why>;
 *                                                  for the first three, also on a reference of its
 *                                                  own and on the shim's once deleted: NULL)
 *   J2J2 ms=<t>                                   (jobjectID2jobject alone, second time)
 *   ALLOC2 ms=<t>                                 (RequestEvent(OBJECT_ALLOC) alone, second time)
 *   COUNT <class> <instances> <size of one>      (normal objects, per class)
 *   ARRAYS <element class or prim type> <arrays> <bytes>
 * mode=reuse: counts OBJECT_ALLOC and OBJECT_FREE and keeps the set of live IDs: an ID
 * announced while it names a live object is a duplicate; an ID announced again after its
 * OBJECT_FREE is a reuse. Writes: REUSE allocs=<n> frees=<n> dups=<n> reused=<n> max_id=<hex>
 * large=<n> badfree=<n>
 * Options: out=<file>, mode=report|reuse
 */
#include <jni.h>
#include <jvmpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static JVMPI_Interface *jvmpi;
static char out_path[1024] = "memprof.txt";
static int reuse_mode;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- report mode ---- */
typedef struct { unsigned char ty; jobjectID id; } Rec;
static Rec *recs;
static long nrecs;
static int dump_ok;

typedef struct { jobjectID id; char *name; long instances, arrays, bytes; jint size; int mixed; } Class;
#define TABLE (1 << 16)
static Class classes[TABLE];
static long nclasses;

static Class *find(jobjectID id, int add) {
    uintptr_t h = ((uintptr_t)id >> 4) * 2654435761u;
    for (int i = 0; i < TABLE; i++) {
        Class *c = &classes[(h + i) & (TABLE - 1)];
        if (c->id == id) return c;
        if (c->id == NULL) {
            if (!add) return NULL;
            c->id = id;
            return c;
        }
    }
    return NULL;
}

static struct { int got; jobjectID class_id, obj_id; jint is_array, size; } alloc_answer;
static struct { int got; jobjectID class_id; char name[512]; } class_answer;
static long prim_arrays[16], prim_bytes[16];

static void parse_dump(JVMPI_Event *e) {
    char *p = e->u.heap_dump.begin, *end = e->u.heap_dump.end;
    long cap = (end - p) / (1 + sizeof(jobjectID)) + 1;
    recs = malloc(cap * sizeof(Rec));
    while (p + 1 + sizeof(jobjectID) <= end) {
        recs[nrecs].ty = (unsigned char)*p++;
        memcpy(&recs[nrecs].id, p, sizeof(jobjectID));
        p += sizeof(jobjectID);
        nrecs++;
    }
    dump_ok = p == end;
}

/* ---- reuse mode: bits by id >> 4 ---- */
#define SLOTS (1u << 27)
static unsigned char *live_bits, *seen_bits;
static long allocs, frees, dups, reused, large, badfree;
static uintptr_t max_id;

static int bit_set(unsigned char *b, uintptr_t s) { return __sync_fetch_and_or(&b[s >> 3], (unsigned char)(1u << (s & 7))) & (1u << (s & 7)); }
static int bit_clear(unsigned char *b, uintptr_t s) { return __sync_fetch_and_and(&b[s >> 3], (unsigned char)~(1u << (s & 7))) & (1u << (s & 7)); }

static void on_alloc(jobjectID id) {
    __sync_add_and_fetch(&allocs, 1);
    uintptr_t v = (uintptr_t)id;
    uintptr_t m;
    while ((m = max_id) < v && !__sync_bool_compare_and_swap(&max_id, m, v)) {}
    uintptr_t s = v >> 4;
    if (s >= SLOTS) { __sync_add_and_fetch(&large, 1); return; }
    if (bit_set(live_bits, s)) __sync_add_and_fetch(&dups, 1);
    if (bit_set(seen_bits, s)) __sync_add_and_fetch(&reused, 1);
}

static void on_free(jobjectID id) {
    __sync_add_and_fetch(&frees, 1);
    uintptr_t s = (uintptr_t)id >> 4;
    if (s >= SLOTS) return;
    if (!bit_clear(live_bits, s)) __sync_add_and_fetch(&badfree, 1);
}

static void report(JNIEnv *env) {
    FILE *f = fopen(out_path, "w");
    if (!f) return;
    JVMPI_HeapDumpArg arg;
    arg.heap_dump_level = JVMPI_DUMP_LEVEL_0;
    double t0 = now_ms();
    jint rc = jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &arg);
    double t1 = now_ms();
    fprintf(f, "DUMP rc=%d objects=%ld parsed=%s ms=%.1f\n", (int)rc, nrecs, dump_ok ? "ok" : "bad", t1 - t0);
    long bad = 0;
    char why[600] = "";
#define BAD(...) do { if (!bad++) snprintf(why, sizeof why, __VA_ARGS__); } while (0)
    for (long i = 0; i < nrecs; i++) {
        Rec *r = &recs[i];
        alloc_answer.got = 0;
        jint rc2 = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, r->id);
        if (rc2 != JVMPI_SUCCESS || !alloc_answer.got) { BAD("OBJECT_ALLOC %p rc=%d got=%d", r->id, (int)rc2, alloc_answer.got); continue; }
        if (alloc_answer.obj_id != r->id) BAD("OBJECT_ALLOC %p answered for %p", r->id, alloc_answer.obj_id);
        if (alloc_answer.is_array != r->ty) BAD("OBJECT_ALLOC %p is_array=%d, dump said %d", r->id, (int)alloc_answer.is_array, r->ty);
        if (alloc_answer.size <= 0) BAD("OBJECT_ALLOC %p size %d", r->id, (int)alloc_answer.size);
        jobjectID cid = alloc_answer.class_id;
        jint ty = alloc_answer.is_array, size = alloc_answer.size;
        if (cid == NULL) {
            if (ty == JVMPI_NORMAL_OBJECT || ty == JVMPI_CLASS) {
                /* only the Class object of java.lang.Class has no class */
                static int class_class;
                if (class_class++) BAD("OBJECT_ALLOC %p: a second object without a class", r->id);
            } else if (ty >= 0 && ty < 16) {
                prim_arrays[ty]++;
                prim_bytes[ty] += size;
            }
            continue;
        }
        class_answer.got = 0;
        rc2 = jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, cid);
        if (rc2 != JVMPI_SUCCESS || !class_answer.got || class_answer.class_id != cid || !class_answer.name[0]) {
            BAD("CLASS_LOAD %p (of %p) rc=%d got=%d", cid, r->id, (int)rc2, class_answer.got);
            continue;
        }
        Class *c = find(cid, 1);
        if (!c) continue;
        if (!c->name) { c->name = strdup(class_answer.name); nclasses++; }
        else if (strcmp(c->name, class_answer.name) != 0) BAD("class %p named %s then %s", cid, c->name, class_answer.name);
        if (ty == JVMPI_NORMAL_OBJECT) {
            if (c->instances && c->size != size && strcmp(c->name, "java.lang.Class") != 0) c->mixed = 1;
            c->instances++;
            c->size = size;
        } else {
            c->arrays++;
        }
        c->bytes += size;
    }
    double t2 = now_ms();
    fprintf(f, "REQ ms=%.1f bad=%ld classes=%ld\n", t2 - t1, bad, nclasses);
    if (bad) fprintf(f, "BADREQ %s\n", why);
    long jbad = 0;
    char jwhy[300] = "";
#define JBAD(...) do { if (!jbad++) snprintf(jwhy, sizeof jwhy, __VA_ARGS__); } while (0)
    for (long i = 0; i < nrecs; i++) {
        jobject o = jvmpi->jobjectID2jobject(recs[i].id);
        if (!o) { JBAD("jobjectID2jobject(%p) NULL", recs[i].id); continue; }
        jobjectID back = jvmpi->jobject2jobjectID(o);
        if (back != recs[i].id) JBAD("jobject2jobjectID(jobjectID2jobject(%p)) = %p", recs[i].id, back);
        if (i < 3) {
            /* A reference of the agent's own to the same object, and the shim's after its
             * deletion (cleared: no object any more, as JNI says). */
            jobject mine = (*env)->NewLocalRef(env, o);
            back = jvmpi->jobject2jobjectID(mine);
            if (back != recs[i].id) JBAD("jobject2jobjectID(NewLocalRef of %p) = %p", recs[i].id, back);
            (*env)->DeleteLocalRef(env, mine);
            (*env)->DeleteLocalRef(env, o);
            back = jvmpi->jobject2jobjectID(o);
            if (back) JBAD("jobject2jobjectID(deleted reference to %p) = %p", recs[i].id, back);
            continue;
        }
        (*env)->DeleteLocalRef(env, o);
    }
    double t3 = now_ms();
    fprintf(f, "J2J ms=%.1f bad=%ld\n", t3 - t2, jbad);
    if (jbad) fprintf(f, "BADJ2J %s\n", jwhy);
    /* again, now that every ID has been resolved once */
    for (long i = 0; i < nrecs; i++) {
        jobject o = jvmpi->jobjectID2jobject(recs[i].id);
        if (o) (*env)->DeleteLocalRef(env, o);
    }
    double t4 = now_ms();
    fprintf(f, "J2J2 ms=%.1f\n", t4 - t3);
    /* the report again: OBJECT_ALLOC alone, then with CLASS_LOAD */
    for (long i = 0; i < nrecs; i++) jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, recs[i].id);
    double t5 = now_ms();
    fprintf(f, "ALLOC2 ms=%.1f\n", t5 - t4);
    for (int i = 0; i < TABLE; i++) {
        Class *c = &classes[i];
        if (!c->name) continue;
        if (c->instances) fprintf(f, "COUNT %s %ld %d%s\n", c->name, c->instances, (int)c->size, c->mixed ? " mixed" : "");
        if (c->arrays) fprintf(f, "ARRAYS %s %ld %ld\n", c->name, c->arrays, c->bytes);
    }
    static const char *prim[16] = {[JVMPI_BOOLEAN] = "boolean", [JVMPI_BYTE] = "byte", [JVMPI_CHAR] = "char", [JVMPI_SHORT] = "short",
                                   [JVMPI_INT] = "int", [JVMPI_LONG] = "long", [JVMPI_FLOAT] = "float", [JVMPI_DOUBLE] = "double"};
    for (int t = 0; t < 16; t++)
        if (prim_arrays[t]) fprintf(f, "ARRAYS %s %ld %ld\n", prim[t] ? prim[t] : "?", prim_arrays[t], prim_bytes[t]);
    fclose(f);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_HEAP_DUMP: parse_dump(e); break;
    case JVMPI_EVENT_OBJECT_ALLOC:
        if (reuse_mode) { on_alloc(e->u.obj_alloc.obj_id); break; }
        alloc_answer.got = 1;
        alloc_answer.class_id = e->u.obj_alloc.class_id;
        alloc_answer.obj_id = e->u.obj_alloc.obj_id;
        alloc_answer.is_array = e->u.obj_alloc.is_array;
        alloc_answer.size = e->u.obj_alloc.size;
        break;
    case JVMPI_EVENT_OBJECT_FREE: on_free(e->u.obj_free.obj_id); break;
    case JVMPI_EVENT_CLASS_LOAD:
        class_answer.got = 1;
        class_answer.class_id = e->u.class_load.class_id;
        snprintf(class_answer.name, sizeof class_answer.name, "%s", e->u.class_load.class_name ? e->u.class_load.class_name : "");
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        if (reuse_mode) {
            FILE *f = fopen(out_path, "w");
            if (f) {
                fprintf(f, "REUSE allocs=%ld frees=%ld dups=%ld reused=%ld max_id=%lx large=%ld badfree=%ld\n", allocs, frees, dups,
                        reused, (unsigned long)max_id, large, badfree);
                fclose(f);
            }
        } else {
            report(e->env_id);
        }
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    for (char *o = options ? strtok(options, ",") : NULL; o; o = strtok(NULL, ",")) {
        if (!strncmp(o, "out=", 4)) snprintf(out_path, sizeof out_path, "%s", o + 4);
        if (!strcmp(o, "mode=reuse")) reuse_mode = 1;
    }
    jvmpi->NotifyEvent = notify;
    if (jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    if (reuse_mode) {
        live_bits = calloc(SLOTS / 8, 1);
        seen_bits = calloc(SLOTS / 8, 1);
        if (!live_bits || !seen_bits) return JNI_ERR;
        if (jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_ALLOC, NULL) != JVMPI_SUCCESS) return JNI_ERR;
        if (jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_FREE, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    }
    return JNI_OK;
}
