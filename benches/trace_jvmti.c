/* A plain JVMTI agent for the call-trace benchmark (benches/TraceBench.java): implements
 * TraceBench.probe(), which, by option,
 *   "empty"  does nothing (the floor: the loop and the JNI call),
 *   "trace"  takes the current thread's stack with GetStackTrace(depth 4),
 *   "lines"  the same, then each frame's line number as an agent without a cache gets it:
 *            GetLineNumberTable + search + Deallocate per frame,
 *   "cached" the same, line tables kept per jmethodID (a small open-addressing table).
 * Returns a checksum: frames * 100000 + the sum of the lines (-3 native, -1 unknown; 0 without lines). */
#include <jvmti.h>
#include <stdint.h>
#include <string.h>

#define DEPTH 4
static jvmtiEnv *jvmti;
#include "line_cache.h"
static int mode; /* 0 empty, 1 trace, 2 lines, 3 cached */

static jint line_of(jmethodID m, jlocation loc) {
    jint n;
    jvmtiLineNumberEntry *t;
    if (loc < 0) return -3;
    if ((*jvmti)->GetLineNumberTable(jvmti, m, &n, &t) != JVMTI_ERROR_NONE) return -1;
    jint line = line_in(t, n, loc);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)t);
    return line;
}


JNIEXPORT jint JNICALL Java_TraceBench_probe(JNIEnv *env, jclass c) {
    jvmtiFrameInfo f[DEPTH];
    jint n = 0, sum = 0;
    if (mode == 0) return 0;
    if ((*jvmti)->GetStackTrace(jvmti, NULL, 0, DEPTH, f, &n) != JVMTI_ERROR_NONE) return -1;
    for (jint i = 0; i < n; i++)
        sum += mode == 2 ? line_of(f[i].method, f[i].location) : mode == 3 ? cached_line_of(f[i].method, f[i].location) : 0;
    return n * 100000 + sum;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_get_line_numbers = 1;
    if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
    mode = !options ? 1 : !strcmp(options, "empty") ? 0 : !strcmp(options, "lines") ? 2 : !strcmp(options, "cached") ? 3 : 1;
    return JNI_OK;
}
