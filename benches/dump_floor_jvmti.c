/* The floor of the heap-dump benchmark: the least a JVMTI-based dump whose IDs stay resolvable
 * (object IDs = JVMTI tags) must do on the same heap. A plain JVMTI agent, loaded next to the
 * shim with its own -agentpath, with one JVMTI environment (so one tag map) per walk:
 *   f1  FollowReferences from the heap roots, only a heap_reference_callback that reads the
 *       referee's and referrer's tags and tags untagged objects (returns JVMTI_VISIT_OBJECTS);
 *   f2  IterateThroughHeap, only a heap_iteration_callback that does the same for each object;
 *   f3  FollowReferences as f1 plus the value callbacks a level-2 dump needs as well
 *       (primitive instance/static fields, primitive array elements), each only reading the tag;
 *   f4  f2 plus the same value callbacks: with f1, what a dump that takes its object records
 *       from IterateThroughHeap and only the references from FollowReferences would pay;
 *   f5  f3 that tags nothing (its callbacks only read the tag slots): with f3 run in a process
 *       of its own, what tagging every object costs on a first pass;
 *   f6  f3 that also writes what a level-2 dump holds into one buffer grown by doubling, as the
 *       shim's is (per reference the referee's tag, per primitive field its value, per primitive
 *       array its tag and its elements: about as many bytes as the shim's dump; freed after the timing, as the shim's is freed
 *       after the event): the least a dump that writes its records must do.
 * The program calls Java_HeapDumpBench_floorDump(mode) (a native of this library: HotSpot looks
 * up natives in agent libraries too); each call is one walk, timed around the JVMTI call.
 * The first call of a walk tags every object it meets in that environment's tag map; a second
 * call of the same walk only looks the tags up.
 * cpu_ms: the process's CPU time over the same span (see dump_jvmpi.c).
 * Prints: floor: f<mode> rc=<rc> ms=<ms> cpu_ms=<ms> objects=<objects tagged now> refs=<callbacks> bytes=<written> */
#include <jvmti.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

static jvmtiEnv *envs[7];
static int tagging = 1, writing;
static char *buf;
static size_t used, cap;

static inline void put(const void *p, size_t n) {
    if (used + n > cap) {
        size_t c = cap ? cap : 1 << 16;
        while (c < used + n) c *= 2;
        char *b = realloc(buf, c);
        if (!b) return;
        buf = b;
        cap = c;
    }
    memcpy(buf + used, p, n);
    used += n;
}
static long next_tag, tagged, calls;

static inline void tag(jlong *p) {
    if (p && *p == 0 && tagging) {
        *p = (++next_tag) << 4;
        tagged++;
    }
}

static jint JNICALL ref(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info, jlong class_tag,
                        jlong referrer_class_tag, jlong size, jlong *tag_ptr, jlong *referrer_tag_ptr, jint length,
                        void *ud) {
    calls++;
    tag(tag_ptr);
    tag(referrer_tag_ptr);
    if (writing) {
        put(tag_ptr, sizeof *tag_ptr);
    }
    return JVMTI_VISIT_OBJECTS;
}

static jint JNICALL iter(jlong class_tag, jlong size, jlong *tag_ptr, jint length, void *ud) {
    calls++;
    tag(tag_ptr);
    return 0;
}

static jint JNICALL prim_field(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo *info, jlong class_tag,
                               jlong *tag_ptr, jvalue value, jvmtiPrimitiveType ty, void *ud) {
    calls++;
    tag(tag_ptr);
    if (writing) put(&value, sizeof value);
    return 0;
}

static jint JNICALL array_values(jlong class_tag, jlong size, jlong *tag_ptr, jint count, jvmtiPrimitiveType ty,
                                 const void *elements, void *ud) {
    calls++;
    tag(tag_ptr);
    if (writing) {
        static const int sz[] = {['Z'] = 1, ['B'] = 1, ['C'] = 2, ['S'] = 2, ['I'] = 4, ['F'] = 4, ['J'] = 8, ['D'] = 8};
        put(tag_ptr, sizeof *tag_ptr);
        put(elements, (size_t)count * sz[ty]);
    }
    return 0;
}

JNIEXPORT void JNICALL Java_HeapDumpBench_floorDump(JNIEnv *env, jclass c, jint mode) {
    jvmtiHeapCallbacks cb;
    struct timespec t0, t1, c0, c1;
    jvmtiError err;
    if (mode < 1 || mode > 6) return;
    jvmtiEnv *j = envs[mode];
    tagging = mode != 5;
    writing = mode == 6;
    buf = NULL;
    used = cap = 0;
    memset(&cb, 0, sizeof cb);
    tagged = calls = 0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (mode == 2 || mode == 4) {
        cb.heap_iteration_callback = iter;
        if (mode == 4) {
            cb.primitive_field_callback = prim_field;
            cb.array_primitive_value_callback = array_values;
        }
        err = (*j)->IterateThroughHeap(j, 0, NULL, &cb, NULL);
    } else {
        cb.heap_reference_callback = ref;
        if (mode == 3 || mode == 5 || mode == 6) {
            cb.primitive_field_callback = prim_field;
            cb.array_primitive_value_callback = array_values;
        }
        err = (*j)->FollowReferences(j, 0, NULL, NULL, &cb, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    free(buf);
    printf("floor: f%d rc=%d ms=%.1f cpu_ms=%.1f objects=%ld refs=%ld bytes=%zu\n", (int)mode, (int)err,
           (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
           (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6, tagged, calls, used);
    fflush(stdout);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_tag_objects = 1;
    for (int i = 1; i < 7; i++) {
        if ((*vm)->GetEnv(vm, (void **)&envs[i], JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
        if ((*envs[i])->AddCapabilities(envs[i], &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
    }
    return JNI_OK;
}
