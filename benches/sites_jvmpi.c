/* A JVMPI agent doing benches/sites_jvmti.c's job through the shim (scripts/bench-sites.sh):
 * on every OBJECT_ALLOC its depth-4 stack (GetCallTrace: methods and lines), counted in its site
 * (stack + class) under one lock; a JVMPI agent has no tags, so it keeps object ID → site in its
 * own table (as HPROF does) and takes OBJECT_FREE off the site's live count. At JVM_SHUT_DOWN
 * prints the number of sites and allocations. */
#include <jni.h>
#include <jvmpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 4
#define SLOTS (1 << 20)
#define OBJ_SLOTS (1 << 22)

typedef struct {
    JVMPI_CallFrame f[DEPTH];
    jint n;
    jobjectID klass;
    long allocs, bytes, live, live_bytes;
    int used;
} site_t;

typedef struct obj { jobjectID id; unsigned site; jint size; struct obj *next; } obj_t;

static JVMPI_Interface *jvmpi;
static site_t *sites;
static obj_t **objs, *free_objs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long nsites, nallocs, nfrees;

static unsigned long hash(const JVMPI_CallFrame *f, jint n, jobjectID k) {
    unsigned long h = (unsigned long)k * 0x9E3779B97F4A7C15ul;
    for (jint i = 0; i < n; i++) h = (h ^ (unsigned long)f[i].method_id ^ ((unsigned long)f[i].lineno << 40)) * 0x9E3779B97F4A7C15ul;
    return h;
}
static unsigned long obj_slot(jobjectID id) { return ((unsigned long)id * 0x9E3779B97F4A7C15ul) >> 42; }

static void alloc(JVMPI_Event *e) {
    JVMPI_CallFrame f[DEPTH];
    JVMPI_CallTrace t;
    memset(f, 0, sizeof f);
    t.env_id = e->env_id;
    t.frames = f;
    t.num_frames = 0;
    jvmpi->GetCallTrace(&t, DEPTH);
    jobjectID k = e->u.obj_alloc.class_id;
    unsigned long h = hash(f, t.num_frames, k);
    pthread_mutex_lock(&lock);
    unsigned long i = h & (SLOTS - 1);
    for (;; i = (i + 1) & (SLOTS - 1)) {
        site_t *s = &sites[i];
        if (!s->used) {
            memcpy(s->f, f, sizeof f);
            s->n = t.num_frames;
            s->klass = k;
            s->used = 1;
            nsites++;
            break;
        }
        if (s->n == t.num_frames && s->klass == k && !memcmp(s->f, f, sizeof f)) break;
    }
    site_t *s = &sites[i];
    jint size = e->u.obj_alloc.size;
    s->allocs++, s->bytes += size, s->live++, s->live_bytes += size;
    nallocs++;
    obj_t *o = free_objs;
    if (o) free_objs = o->next; else o = malloc(sizeof *o);
    o->id = e->u.obj_alloc.obj_id, o->site = (unsigned)i, o->size = size;
    unsigned long b = obj_slot(o->id);
    o->next = objs[b];
    objs[b] = o;
    pthread_mutex_unlock(&lock);
}

static void freed(jobjectID id) {
    pthread_mutex_lock(&lock);
    for (obj_t **p = &objs[obj_slot(id)]; *p; p = &(*p)->next)
        if ((*p)->id == id) {
            obj_t *o = *p;
            *p = o->next;
            sites[o->site].live--, sites[o->site].live_bytes -= o->size;
            o->next = free_objs, free_objs = o;
            nfrees++;
            break;
        }
    pthread_mutex_unlock(&lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_OBJECT_ALLOC: alloc(e); break;
    case JVMPI_EVENT_OBJECT_FREE: freed(e->u.obj_free.obj_id); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        printf("agent: sites=%ld allocs=%ld frees=%ld\n", nsites, nallocs, nfrees);
        fflush(stdout);
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    sites = calloc(SLOTS, sizeof *sites);
    objs = calloc(OBJ_SLOTS, sizeof *objs);
    jvmpi->NotifyEvent = notify;
    if (jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_ALLOC, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    if (jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_FREE, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    return JNI_OK;
}
