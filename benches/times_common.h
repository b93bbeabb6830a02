/* What benches/times_jvmti.c and benches/times_jvmpi.c share: a thread's own call stack with the
 * CPU time at each entry, and its table of methods (calls, CPU time) — the job of HPROF
 * `cpu=times` reduced to one method per entry instead of a depth-n trace. Each thread keeps its
 * own (found through thread-local storage, as HPROF does by env_id), so no lock is taken per event.
 * A method that ends while the stack is deeper than MAX_DEPTH is not timed; a table that fills is
 * left as it is (counted in `dropped`). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_DEPTH 4096
#define SLOTS (1 << 15)

typedef struct { const void *m; long calls; long long ns; } cost_t;
typedef struct tstate {
    const void *m[MAX_DEPTH];
    long long start[MAX_DEPTH];
    int depth, used;
    long dropped;
    cost_t costs[SLOTS];
    struct tstate *next;
} tstate_t;

static __thread tstate_t *me;
static tstate_t *all;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;

static tstate_t *here(void) {
    if (!me) {
        me = calloc(1, sizeof *me);
        pthread_mutex_lock(&all_lock);
        me->next = all;
        all = me;
        pthread_mutex_unlock(&all_lock);
    }
    return me;
}

static void on_entry(const void *m, long long now) {
    tstate_t *s = here();
    if (s->depth < MAX_DEPTH) s->m[s->depth] = m, s->start[s->depth] = now;
    s->depth++;
}

static void on_exit_(long long now) {
    tstate_t *s = here();
    if (s->depth == 0) return;
    s->depth--;
    if (s->depth >= MAX_DEPTH) return;
    const void *m = s->m[s->depth];
    unsigned long i = ((unsigned long)m * 0x9E3779B97F4A7C15ul) >> 49;
    while (s->costs[i].m && s->costs[i].m != m) i = (i + 1) & (SLOTS - 1);
    if (!s->costs[i].m) {
        if (s->used >= SLOTS * 3 / 4) { s->dropped++; return; }
        s->costs[i].m = m;
        s->used++;
    }
    s->costs[i].calls++;
    s->costs[i].ns += now - s->start[s->depth];
}

static void report(void) {
    long threads = 0, calls = 0, methods = 0, dropped = 0;
    pthread_mutex_lock(&all_lock);
    for (tstate_t *s = all; s; s = s->next) {
        threads++, methods += s->used, dropped += s->dropped;
        for (int i = 0; i < SLOTS; i++) calls += s->costs[i].calls;
    }
    pthread_mutex_unlock(&all_lock);
    printf("agent: threads=%ld methods=%ld timed_calls=%ld dropped=%ld\n", threads, methods, calls, dropped);
    fflush(stdout);
}
