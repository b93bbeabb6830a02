/* Line numbers for the call-trace benchmark's JVMTI side (benches/trace_jvmti.c and the
 * "alternate" mode of benches/trace_jvmpi.c): the line of a location in a line-number table,
 * and line tables kept per jmethodID in a small open-addressing table, as an agent with a
 * cache does. The including file declares `static jvmtiEnv *jvmti` first. */
#ifndef LINE_CACHE_H
#define LINE_CACHE_H
#include <jvmti.h>
#include <stdint.h>

static jint line_in(jvmtiLineNumberEntry *t, jint n, jlocation loc) {
    jint line = -1;
    for (jint i = 0; i < n; i++) {
        if (t[i].start_location <= loc) line = t[i].line_number;
        else break;
    }
    if (line == -1 && n > 0) line = t[0].line_number;
    return line;
}

#define SLOTS 4096
static struct { jmethodID m; jint n; jvmtiLineNumberEntry *t; } cache[SLOTS];

static jint cached_line_of(jmethodID m, jlocation loc) {
    if (loc < 0) return -3;
    uintptr_t h = ((uintptr_t)m >> 3) * 0x9E3779B97F4A7C15ull;
    for (unsigned i = (unsigned)(h >> 52) % SLOTS;; i = (i + 1) % SLOTS) {
        if (cache[i].m == m) return cache[i].t ? line_in(cache[i].t, cache[i].n, loc) : -1;
        if (cache[i].m == NULL) {
            if ((*jvmti)->GetLineNumberTable(jvmti, m, &cache[i].n, &cache[i].t) != JVMTI_ERROR_NONE) cache[i].t = NULL;
            cache[i].m = m;
            return cache[i].t ? line_in(cache[i].t, cache[i].n, loc) : -1;
        }
    }
}
#endif
