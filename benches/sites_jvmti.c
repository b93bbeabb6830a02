/* A plain JVMTI agent doing HPROF heap=sites,depth=4's job, minimally, for comparison with
 * HPROF through the shim (scripts/bench-calltrace.sh, "sites"): every allocation
 * (SampledObjectAlloc at interval 0) gets its depth-4 stack (GetStackTrace: methods and
 * bytecode indices; lines are resolved when the report is written, as JDK 5's JVMTI HPROF
 * did), is counted in its site (stack + class) under one lock, and is tagged with its site so
 * that ObjectFree can take it off the site's live count. At VM death prints the number of
 * sites and allocations and the biggest site. */
#include <jvmti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 4
#define SLOTS (1 << 20)

typedef struct {
    jvmtiFrameInfo f[DEPTH];
    jint n;
    jlong klass; /* the class's tag */
    long allocs, bytes, live, live_bytes;
    int used;
} site_t;

static site_t *sites;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long nsites, nallocs;
static volatile jlong next_class = 1;

static unsigned long hash(const jvmtiFrameInfo *f, jint n, jlong k) {
    unsigned long h = (unsigned long)k * 0x9E3779B97F4A7C15ul;
    for (jint i = 0; i < n; i++) h = (h ^ (unsigned long)f[i].method ^ ((unsigned long)f[i].location << 40)) * 0x9E3779B97F4A7C15ul;
    return h;
}

static void JNICALL sampled(jvmtiEnv *j, JNIEnv *env, jthread t, jobject o, jclass k, jlong size) {
    jvmtiFrameInfo f[DEPTH];
    jint n = 0;
    jlong ktag = 0;
    memset(f, 0, sizeof f);
    (*j)->GetStackTrace(j, NULL, 0, DEPTH, f, &n);
    if ((*j)->GetTag(j, k, &ktag) == JVMTI_ERROR_NONE && ktag == 0) {
        ktag = -__sync_add_and_fetch(&next_class, 1); /* classes: negative tags */
        (*j)->SetTag(j, k, ktag);
    }
    unsigned long h = hash(f, n, ktag);
    pthread_mutex_lock(&lock);
    unsigned long i = h & (SLOTS - 1);
    for (;; i = (i + 1) & (SLOTS - 1)) {
        site_t *s = &sites[i];
        if (!s->used) {
            memcpy(s->f, f, sizeof f);
            s->n = n;
            s->klass = ktag;
            s->used = 1;
            nsites++;
            break;
        }
        if (s->n == n && s->klass == ktag && !memcmp(s->f, f, sizeof f)) break;
    }
    site_t *s = &sites[i];
    s->allocs++, s->bytes += size, s->live++, s->live_bytes += size;
    nallocs++;
    pthread_mutex_unlock(&lock);
    (*j)->SetTag(j, o, (jlong)i + 1);
}

static void JNICALL freed(jvmtiEnv *j, jlong tag) {
    if (tag <= 0 || tag > SLOTS) return;
    pthread_mutex_lock(&lock);
    sites[tag - 1].live--;
    pthread_mutex_unlock(&lock);
}

static void JNICALL death(jvmtiEnv *j, JNIEnv *env) {
    long best = -1;
    for (long i = 0; i < SLOTS; i++)
        if (sites[i].used && (best < 0 || sites[i].bytes > sites[best].bytes)) best = i;
    char *name = NULL, *sig = NULL;
    if (best >= 0 && sites[best].n > 0) (*j)->GetMethodName(j, sites[best].f[0].method, &name, &sig, NULL);
    printf("agent: sites=%ld allocs=%ld top=%s%s bytes=%ld\n", nsites, nallocs, name ? name : "?", sig ? sig : "",
           best >= 0 ? sites[best].bytes : 0);
    fflush(stdout);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *j;
    jvmtiCapabilities c;
    jvmtiEventCallbacks cb;
    if ((*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
    sites = calloc(SLOTS, sizeof *sites);
    memset(&c, 0, sizeof c);
    c.can_tag_objects = 1;
    c.can_generate_sampled_object_alloc_events = 1;
    c.can_generate_object_free_events = 1;
    if ((*j)->AddCapabilities(j, &c) != JVMTI_ERROR_NONE) return JNI_ERR;
    memset(&cb, 0, sizeof cb);
    cb.SampledObjectAlloc = sampled;
    cb.ObjectFree = freed;
    cb.VMDeath = death;
    (*j)->SetEventCallbacks(j, &cb, sizeof cb);
    (*j)->SetHeapSamplingInterval(j, 0);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_OBJECT_FREE, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
    return JNI_OK;
}
