/*
 * legacy_hprof_lite.c -- a small JVMPI profiler agent, written the way agents
 * were written for JDK 1.2-1.5, used to demonstrate jvmpi-shim.
 *
 * It loads through JVM_OnLoad, asks the VM for the JVMPI interface, records
 * class loads (to name methods), thread starts and ends, and garbage
 * collections, and samples the running threads every 20 ms from a system
 * thread with the classic JVMPI sampling loop:
 *
 *     suspend every thread; for each thread that has run since the last
 *     sample, take its call trace and charge one sample to its top frame;
 *     resume every thread.
 *
 * With heap=sites it also counts allocation sites, as hprof's heap=sites did:
 * on each OBJECT_ALLOC it takes the allocating thread's call trace and charges
 * the object to (its class, the trace); OBJECT_FREE takes it off the site's
 * live count.  A class the agent has not heard of is asked for with
 * RequestEvent(JVMPI_EVENT_CLASS_LOAD, class_id).
 *
 * At VM shutdown (or on a data dump request) it prints a report: classes
 * loaded, threads, garbage collections, the ten most sampled methods and,
 * with heap=sites, the ten sites that allocated the most bytes.
 *
 * Options, comma separated:  file=<path>  write the report there, not stdout
 *                            depth=<n>    call trace depth (default 4)
 *                            heap=sites   count allocation sites
 * No options (NULL) means the defaults: stdout, depth 4, no allocation sites.
 *
 *   java -Xrunlegacy_hprof_lite:heap=sites,depth=4 Demo        (JDK 1.2-1.5)
 *   java -agentpath:libjvmpi_shim.so=agent=liblegacy_hprof_lite.so:heap=sites Demo
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmpi.h"

#define SAMPLER_NAME  "hprof_lite sampler"
#define INTERVAL_MS   20        /* sampling interval */
#define MAX_THREADS   256       /* threads sampled in one round */
#define MAX_DEPTH     64
#define TABLE_SIZE    4096      /* buckets of the class, method and sample tables */
#define TOP_N         10
#define SITE_BUCKETS  16384
#define MAX_SITES     20000     /* allocations at further sites are only totalled */
#define OBJECT_BUCKETS 262144
#define MAX_OBJECTS   1000000   /* live objects followed for the "live" columns */
#define OBJECT_CHUNK  4096      /* ObjectInfos allocated at a time */

/* A Java thread seen in THREAD_START. */
typedef struct ThreadInfo {
    JNIEnv *env;
    char *name;
    char *group;
    int alive;
    struct ThreadInfo *next;
} ThreadInfo;

/* A class seen in CLASS_LOAD, or named by an OBJECT_ALLOC and not described (name NULL). */
typedef struct ClassInfo {
    jobjectID id;
    char *name;                 /* "java.lang.String", "[I" */
    char *source;               /* "String.java"; NULL if the class file has none */
    struct ClassInfo *next;
} ClassInfo;

/* A method seen in CLASS_LOAD. */
typedef struct MethodInfo {
    jmethodID id;
    ClassInfo *klass;
    char *name;
    struct MethodInfo *next;
} MethodInfo;

/* Number of samples whose top frame was (method, line). */
typedef struct SampleCount {
    jmethodID method;
    jint lineno;
    long count;
    struct SampleCount *next;
} SampleCount;

/* Objects allocated with one class (or primitive array type) and one call trace. */
typedef struct Site {
    ClassInfo *klass;           /* class, or element class of an object array */
    jint is_array;              /* JVMPI_NORMAL_OBJECT, JVMPI_CLASS, JVMPI_INT ... */
    unsigned hash;
    long alloc_objects;
    long alloc_bytes;
    long live_objects;
    long live_bytes;
    struct Site *next;
    jint num_frames;
    JVMPI_CallFrame frames[1];  /* num_frames of them, callee first */
} Site;

/* An allocated object not freed yet. */
typedef struct ObjectInfo {
    jobjectID id;
    Site *site;
    jint size;
    struct ObjectInfo *next;
} ObjectInfo;

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor data_lock;      /* guards every table below */
static JVMPI_RawMonitor sampler_lock;   /* sampler sleep and shutdown */

static FILE *out;
static char *out_file;
static int depth = 4;
static int heap_sites;

static ThreadInfo *threads;             /* in start order */
static ThreadInfo **threads_tail = &threads;
static long threads_started;
static long threads_ended;
static long classes_loaded;
static long classes_requested;          /* described in answer to RequestEvent */
static long gc_count;
static jlong heap_used_space;

static ClassInfo *classes[TABLE_SIZE];
static MethodInfo *methods[TABLE_SIZE];
static SampleCount *samples[TABLE_SIZE];
static long total_samples;
static long sample_entries;             /* SampleCounts in the table */

static Site *sites[SITE_BUCKETS];
static long site_entries;
static long total_objects;              /* every OBJECT_ALLOC */
static long total_bytes;
static long other_objects;              /* allocated at sites beyond MAX_SITES */
static long other_bytes;
static ObjectInfo *objects[OBJECT_BUCKETS];
static ObjectInfo *free_objects;        /* unused ObjectInfos */
static long object_entries;             /* ObjectInfos in use or free */
static long untracked_objects;          /* allocated while MAX_OBJECTS were live */

static int sampler_stop;
static int sampler_running;

/* Filled while threads are suspended: no malloc, no stdio there. */
static JNIEnv *round_envs[MAX_THREADS];
static JVMPI_CallFrame round_frames[MAX_THREADS][MAX_DEPTH];
static jint round_num_frames[MAX_THREADS];

static char *copy_string(const char *s)
{
    char *p;

    if (s == NULL) {
        s = "";
    }
    p = (char *)malloc(strlen(s) + 1);
    if (p != NULL) {
        strcpy(p, s);
    }
    return p;
}

static unsigned hash_pointer(void *p, jint extra)
{
    unsigned long v = (unsigned long)p;

    v ^= (v >> 4) ^ (v >> 12) ^ (unsigned long)extra * 31u;
    return (unsigned)(v % TABLE_SIZE);
}

/* ---------------------------------------------------------------- classes */

/* Called with data_lock held. */
static ClassInfo *find_class(jobjectID id)
{
    ClassInfo *c;

    for (c = classes[hash_pointer(id, 0)]; c != NULL; c = c->next) {
        if (c->id == id) {
            return c;
        }
    }
    return NULL;
}

/* Called with data_lock held. */
static ClassInfo *add_class(jobjectID id)
{
    ClassInfo *c = (ClassInfo *)malloc(sizeof(ClassInfo));
    unsigned h = hash_pointer(id, 0);

    if (c != NULL) {
        c->id = id;
        c->name = NULL;
        c->source = NULL;
        c->next = classes[h];
        classes[h] = c;
    }
    return c;
}

static void class_load(JVMPI_Event *event, int requested)
{
    ClassInfo *c;
    jint i;

    jvmpi->RawMonitorEnter(data_lock);
    c = find_class(event->u.class_load.class_id);
    if (c == NULL) {
        c = add_class(event->u.class_load.class_id);
    } else if (c->name != NULL) {
        /* described already: a request and the VM's own event crossed */
        jvmpi->RawMonitorExit(data_lock);
        return;
    }
    if (requested) {
        classes_requested++;
    } else {
        classes_loaded++;
    }
    if (c == NULL) {
        jvmpi->RawMonitorExit(data_lock);
        return;
    }
    c->name = copy_string(event->u.class_load.class_name);
    if (event->u.class_load.source_name != NULL
        && event->u.class_load.source_name[0] != '\0') {
        c->source = copy_string(event->u.class_load.source_name);
    }
    for (i = 0; i < event->u.class_load.num_methods; i++) {
        JVMPI_Method *m = &event->u.class_load.methods[i];
        MethodInfo *info = (MethodInfo *)malloc(sizeof(MethodInfo));
        unsigned h = hash_pointer(m->method_id, 0);

        if (info == NULL) {
            break;
        }
        info->id = m->method_id;
        info->klass = c;
        info->name = copy_string(m->method_name);
        info->next = methods[h];
        methods[h] = info;
    }
    jvmpi->RawMonitorExit(data_lock);
}

/*
 * The class behind a class ID of OBJECT_ALLOC; called with data_lock held.
 * A class the agent has not heard of is described now, in this thread, by a
 * requested CLASS_LOAD (asked for without holding the lock); if the VM cannot
 * describe it, it is remembered without a name and not asked for again.
 */
static ClassInfo *lookup_class(jobjectID id)
{
    ClassInfo *c = find_class(id);

    if (c != NULL) {
        return c;
    }
    jvmpi->RawMonitorExit(data_lock);
    jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, id);
    jvmpi->RawMonitorEnter(data_lock);
    c = find_class(id);
    if (c == NULL) {
        c = add_class(id);
    }
    return c;
}

/* ---------------------------------------------------------------- threads */

static void thread_start(JVMPI_Event *event)
{
    ThreadInfo *t = (ThreadInfo *)malloc(sizeof(ThreadInfo));

    if (t == NULL) {
        return;
    }
    t->env = event->u.thread_start.thread_env_id;
    t->name = copy_string(event->u.thread_start.thread_name);
    t->group = copy_string(event->u.thread_start.group_name);
    t->alive = 1;
    t->next = NULL;
    jvmpi->RawMonitorEnter(data_lock);
    *threads_tail = t;
    threads_tail = &t->next;
    threads_started++;
    jvmpi->RawMonitorExit(data_lock);
}

static void thread_end(JVMPI_Event *event)
{
    ThreadInfo *t;

    jvmpi->RawMonitorEnter(data_lock);
    for (t = threads; t != NULL; t = t->next) {
        if (t->alive && t->env == event->env_id) {
            t->alive = 0;
            threads_ended++;
            break;
        }
    }
    jvmpi->RawMonitorExit(data_lock);
}

/* ---------------------------------------------------------------- allocation sites */

static unsigned hash_site(ClassInfo *klass, jint is_array, JVMPI_CallFrame *frames,
                          jint num_frames)
{
    unsigned long v = (unsigned long)klass ^ (unsigned long)is_array;
    jint i;

    for (i = 0; i < num_frames; i++) {
        v = v * 31u + ((unsigned long)frames[i].method_id >> 3);
        v = v * 31u + (unsigned long)frames[i].lineno;
    }
    return (unsigned)(v ^ (v >> 16));
}

/* Called with data_lock held; NULL when the table is full. */
static Site *find_site(ClassInfo *klass, jint is_array, JVMPI_CallFrame *frames,
                       jint num_frames)
{
    unsigned h = hash_site(klass, is_array, frames, num_frames);
    Site **bucket = &sites[h % SITE_BUCKETS];
    Site *s;
    jint i;

    for (s = *bucket; s != NULL; s = s->next) {
        if (s->hash == h && s->klass == klass && s->is_array == is_array
            && s->num_frames == num_frames) {
            for (i = 0; i < num_frames; i++) {
                if (s->frames[i].method_id != frames[i].method_id
                    || s->frames[i].lineno != frames[i].lineno) {
                    break;
                }
            }
            if (i == num_frames) {
                return s;
            }
        }
    }
    if (site_entries >= MAX_SITES) {
        return NULL;
    }
    s = (Site *)malloc(sizeof(Site)
                       + (num_frames > 1 ? num_frames - 1 : 0) * sizeof(JVMPI_CallFrame));
    if (s == NULL) {
        return NULL;
    }
    s->klass = klass;
    s->is_array = is_array;
    s->hash = h;
    s->alloc_objects = 0;
    s->alloc_bytes = 0;
    s->live_objects = 0;
    s->live_bytes = 0;
    s->num_frames = num_frames;
    for (i = 0; i < num_frames; i++) {
        s->frames[i] = frames[i];
    }
    s->next = *bucket;
    *bucket = s;
    site_entries++;
    return s;
}

static unsigned hash_object(jobjectID id)
{
    unsigned long v = (unsigned long)id;

    v ^= v >> 17;
    v *= 2654435761UL;
    v ^= v >> 15;
    return (unsigned)(v % OBJECT_BUCKETS);
}

/* Called with data_lock held. */
static void track_object(jobjectID id, Site *site, jint size)
{
    ObjectInfo *o;
    unsigned h;

    if (free_objects == NULL) {
        long i;

        if (object_entries + OBJECT_CHUNK > MAX_OBJECTS) {
            untracked_objects++;
            return;
        }
        o = (ObjectInfo *)malloc(OBJECT_CHUNK * sizeof(ObjectInfo));
        if (o == NULL) {
            untracked_objects++;
            return;
        }
        for (i = 0; i < OBJECT_CHUNK; i++) {
            o[i].next = free_objects;
            free_objects = &o[i];
        }
        object_entries += OBJECT_CHUNK;
    }
    o = free_objects;
    free_objects = o->next;
    h = hash_object(id);
    o->id = id;
    o->site = site;
    o->size = size;
    o->next = objects[h];
    objects[h] = o;
    site->live_objects++;
    site->live_bytes += size;
}

/* Called with data_lock held; removes the object from the table. */
static ObjectInfo *untrack_object(jobjectID id)
{
    ObjectInfo **p;
    ObjectInfo *o;

    for (p = &objects[hash_object(id)]; (o = *p) != NULL; p = &o->next) {
        if (o->id == id) {
            *p = o->next;
            return o;
        }
    }
    return NULL;
}

static void object_alloc(JVMPI_Event *event)
{
    JVMPI_CallFrame frames[MAX_DEPTH];
    JVMPI_CallTrace trace;
    ClassInfo *klass = NULL;
    jint is_array = event->u.obj_alloc.is_array;
    jint size = event->u.obj_alloc.size;
    Site *site;

    trace.env_id = event->env_id;
    trace.num_frames = 0;
    trace.frames = frames;
    jvmpi->GetCallTrace(&trace, depth);         /* before locking: data_lock is held briefly */
    if (trace.num_frames < 0 || trace.num_frames > depth) {
        trace.num_frames = 0;
    }

    jvmpi->RawMonitorEnter(data_lock);
    if (event->u.obj_alloc.class_id != NULL
        && (is_array == JVMPI_NORMAL_OBJECT || is_array == JVMPI_CLASS)) {
        klass = lookup_class(event->u.obj_alloc.class_id);
    }
    total_objects++;
    total_bytes += size;
    site = find_site(klass, is_array, frames, trace.num_frames);
    if (site == NULL) {
        other_objects++;
        other_bytes += size;
    } else {
        site->alloc_objects++;
        site->alloc_bytes += size;
        track_object(event->u.obj_alloc.obj_id, site, size);
    }
    jvmpi->RawMonitorExit(data_lock);
}

/* Sent inside GC_START ... GC_FINISH, which hold data_lock. */
static void object_free(JVMPI_Event *event)
{
    ObjectInfo *o = untrack_object(event->u.obj_free.obj_id);

    if (o != NULL) {
        o->site->live_objects--;
        o->site->live_bytes -= o->size;
        o->next = free_objects;
        free_objects = o;
    }
}

/* Sent inside GC_START ... GC_FINISH, which hold data_lock. */
static void object_move(JVMPI_Event *event)
{
    ObjectInfo *o = untrack_object(event->u.obj_move.obj_id);
    unsigned h;

    if (o != NULL) {
        h = hash_object(event->u.obj_move.new_obj_id);
        o->id = event->u.obj_move.new_obj_id;
        o->next = objects[h];
        objects[h] = o;
    }
}

/* ---------------------------------------------------------------- sampling */

static void count_sample(jmethodID method, jint lineno)
{
    unsigned h = hash_pointer(method, lineno);
    SampleCount *s;

    for (s = samples[h]; s != NULL; s = s->next) {
        if (s->method == method && s->lineno == lineno) {
            break;
        }
    }
    if (s == NULL) {
        s = (SampleCount *)malloc(sizeof(SampleCount));
        if (s == NULL) {
            return;
        }
        s->method = method;
        s->lineno = lineno;
        s->count = 0;
        s->next = samples[h];
        samples[h] = s;
        sample_entries++;
    }
    s->count++;
    total_samples++;
}

/* One round of the sampling loop.  Called with data_lock held. */
static void sample_threads(void)
{
    JVMPI_CallTrace trace;
    ThreadInfo *t;
    int n = 0;
    int i;

    for (t = threads; t != NULL && n < MAX_THREADS; t = t->next) {
        if (t->alive && strcmp(t->group, "system") != 0
            && strcmp(t->name, SAMPLER_NAME) != 0) {
            round_envs[n++] = t->env;
        }
    }
    if (n == 0) {
        return;
    }

    jvmpi->DisableGC();
    for (i = 0; i < n; i++) {
        jvmpi->SuspendThread(round_envs[i]);
    }
    for (i = 0; i < n; i++) {
        round_num_frames[i] = 0;
        if (jvmpi->ThreadHasRun(round_envs[i])) {
            trace.env_id = round_envs[i];
            trace.num_frames = 0;
            trace.frames = round_frames[i];
            jvmpi->GetCallTrace(&trace, depth);
            round_num_frames[i] = trace.num_frames;
        }
    }
    for (i = 0; i < n; i++) {
        jvmpi->ResumeThread(round_envs[i]);
    }
    jvmpi->EnableGC();

    /* Threads run again: now it is safe to allocate. */
    for (i = 0; i < n; i++) {
        if (round_num_frames[i] > 0) {
            count_sample(round_frames[i][0].method_id, round_frames[i][0].lineno);
        }
    }
}

static void sampler(void *arg)
{
    (void)arg;
    jvmpi->RawMonitorEnter(sampler_lock);
    sampler_running = 1;
    while (!sampler_stop) {
        jvmpi->RawMonitorWait(sampler_lock, (jlong)INTERVAL_MS);
        if (sampler_stop) {
            break;
        }
        jvmpi->RawMonitorExit(sampler_lock);

        jvmpi->RawMonitorEnter(data_lock);
        sample_threads();
        jvmpi->RawMonitorExit(data_lock);

        jvmpi->RawMonitorEnter(sampler_lock);
    }
    sampler_running = 0;
    jvmpi->RawMonitorNotifyAll(sampler_lock);
    jvmpi->RawMonitorExit(sampler_lock);
}

static void stop_sampler(void)
{
    int waits = 0;

    jvmpi->RawMonitorEnter(sampler_lock);
    sampler_stop = 1;
    jvmpi->RawMonitorNotifyAll(sampler_lock);
    while (sampler_running && waits++ < 20) {
        jvmpi->RawMonitorWait(sampler_lock, (jlong)50);
    }
    jvmpi->RawMonitorExit(sampler_lock);
}

/* ---------------------------------------------------------------- report */

static MethodInfo *find_method(jmethodID id)
{
    MethodInfo *m;

    for (m = methods[hash_pointer(id, 0)]; m != NULL; m = m->next) {
        if (m->id == id) {
            return m;
        }
    }
    return NULL;
}

static void print_class_name(ClassInfo *c)
{
    if (c == NULL) {
        fprintf(out, "<unknown class>");
    } else if (c->name == NULL) {
        fprintf(out, "<unknown class %p>", (void *)c->id);
    } else {
        fprintf(out, "%s", c->name);
    }
}

/* Class.method(File.java:line) */
static void print_frame(jmethodID method, jint lineno)
{
    MethodInfo *m = find_method(method);
    const char *source = NULL;

    if (m != NULL) {
        print_class_name(m->klass);
        fprintf(out, ".%s(", m->name);
        source = m->klass->source;
    } else {
        fprintf(out, "<unknown method %p>(", (void *)method);
    }
    if (source != NULL) {
        fprintf(out, "%s:", source);
    } else if (lineno > 0) {
        fprintf(out, "Unknown source:");
    }
    switch (lineno) {
    case -1: fprintf(out, "%s)\n", source != NULL ? "Unknown line" : "Unknown source"); break;
    case -2: fprintf(out, "Compiled method)\n"); break;
    case -3: fprintf(out, "Native method)\n"); break;
    default: fprintf(out, "%ld)\n", (long)lineno); break;
    }
}

static void print_site_class(Site *s)
{
    switch (s->is_array) {
    case JVMPI_NORMAL_OBJECT:
        print_class_name(s->klass);
        break;
    case JVMPI_CLASS:
        if (s->klass != NULL && s->klass->name != NULL && s->klass->name[0] == '[') {
            fprintf(out, "[%s", s->klass->name);
        } else {
            fprintf(out, "[L");
            print_class_name(s->klass);
            fprintf(out, ";");
        }
        break;
    case JVMPI_BOOLEAN: fprintf(out, "[Z"); break;
    case JVMPI_CHAR:    fprintf(out, "[C"); break;
    case JVMPI_FLOAT:   fprintf(out, "[F"); break;
    case JVMPI_DOUBLE:  fprintf(out, "[D"); break;
    case JVMPI_BYTE:    fprintf(out, "[B"); break;
    case JVMPI_SHORT:   fprintf(out, "[S"); break;
    case JVMPI_INT:     fprintf(out, "[I"); break;
    case JVMPI_LONG:    fprintf(out, "[J"); break;
    default: fprintf(out, "<array of type %ld>", (long)s->is_array); break;
    }
}

static int by_count_desc(const void *a, const void *b)
{
    long ca = (*(SampleCount *const *)a)->count;
    long cb = (*(SampleCount *const *)b)->count;

    return ca < cb ? 1 : ca > cb ? -1 : 0;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const Site *sa = *(Site *const *)a;
    const Site *sb = *(Site *const *)b;

    if (sa->alloc_bytes != sb->alloc_bytes) {
        return sa->alloc_bytes < sb->alloc_bytes ? 1 : -1;
    }
    return sa->alloc_objects < sb->alloc_objects ? 1
         : sa->alloc_objects > sb->alloc_objects ? -1 : 0;
}

/* Called with data_lock held. */
static void print_samples(void)
{
    SampleCount **all;
    SampleCount *s;
    long n = 0;
    long i;

    fprintf(out, "samples: %ld (every %d ms, depth %d)\n", total_samples, INTERVAL_MS, depth);
    all = (SampleCount **)malloc((sample_entries + 1) * sizeof(SampleCount *));
    if (all == NULL) {
        return;
    }
    for (i = 0; i < TABLE_SIZE; i++) {
        for (s = samples[i]; s != NULL; s = s->next) {
            all[n++] = s;
        }
    }
    qsort(all, (size_t)n, sizeof(SampleCount *), by_count_desc);
    fprintf(out, "rank   self  count  method\n");
    for (i = 0; i < n && i < TOP_N; i++) {
        fprintf(out, "%4ld %5.1f%% %6ld  ", i + 1,
                100.0 * all[i]->count / total_samples, all[i]->count);
        print_frame(all[i]->method, all[i]->lineno);
    }
    free(all);
}

/* The sites that allocated the most bytes, as hprof's heap=sites listed them. Called with
 * data_lock held. */
static void print_sites(void)
{
    Site **all;
    Site *s;
    long live_objects = 0;
    long live_bytes = 0;
    long n = 0;
    long i;
    jint f;
    double accum = 0.0;

    all = (Site **)malloc((site_entries + 1) * sizeof(Site *));
    if (all == NULL) {
        return;
    }
    for (i = 0; i < SITE_BUCKETS; i++) {
        for (s = sites[i]; s != NULL; s = s->next) {
            all[n++] = s;
            live_objects += s->live_objects;
            live_bytes += s->live_bytes;
        }
    }
    qsort(all, (size_t)n, sizeof(Site *), by_bytes_desc);
    fprintf(out, "allocated: %ld objects, %ld bytes, at %ld sites (depth %d); "
            "not freed: %ld objects, %ld bytes\n",
            total_objects, total_bytes, n, depth, live_objects, live_bytes);
    if (other_objects > 0) {
        fprintf(out, "    (%ld objects, %ld bytes at sites beyond the first %d)\n",
                other_objects, other_bytes, MAX_SITES);
    }
    if (untracked_objects > 0) {
        fprintf(out, "    (live columns leave out %ld objects allocated while %d were live)\n",
                untracked_objects, MAX_OBJECTS);
    }
    fprintf(out, "SITES BEGIN (ordered by allocated bytes)\n");
    fprintf(out, "          percent           live           alloc'ed\n");
    fprintf(out, " rank   self  accum      bytes   objs      bytes   objs  class\n");
    for (i = 0; i < n && i < TOP_N; i++) {
        double self = total_bytes > 0 ? 100.0 * all[i]->alloc_bytes / total_bytes : 0.0;

        accum += self;
        fprintf(out, "%5ld %5.1f%% %5.1f%% %10ld %6ld %10ld %6ld  ", i + 1, self, accum,
                all[i]->live_bytes, all[i]->live_objects,
                all[i]->alloc_bytes, all[i]->alloc_objects);
        print_site_class(all[i]);
        fprintf(out, "\n");
        if (all[i]->num_frames == 0) {
            fprintf(out, "            <no Java frames>\n");
        }
        for (f = 0; f < all[i]->num_frames; f++) {
            fprintf(out, "            ");
            print_frame(all[i]->frames[f].method_id, all[i]->frames[f].lineno);
        }
    }
    fprintf(out, "SITES END\n");
    free(all);
}

static void print_report(void)
{
    ThreadInfo *t;

    jvmpi->RawMonitorEnter(data_lock);
    fprintf(out, "HPROF-LITE REPORT\n");
    fprintf(out, "classes loaded: %ld", classes_loaded);
    if (classes_requested > 0) {
        fprintf(out, " (and %ld described on request)", classes_requested);
    }
    fprintf(out, "\n");
    fprintf(out, "threads started: %ld, ended: %ld\n", threads_started, threads_ended);
    for (t = threads; t != NULL; t = t->next) {
        fprintf(out, "    \"%s\" (group %s)%s\n", t->name, t->group,
                t->alive ? "" : " ended");
    }
    fprintf(out, "garbage collections: %ld (%ld bytes used after the last)\n",
            gc_count, (long)heap_used_space);
    print_samples();
    if (heap_sites) {
        print_sites();
    }
    fprintf(out, "END\n");
    fflush(out);
    jvmpi->RawMonitorExit(data_lock);
}

/* ---------------------------------------------------------------- dispatch */

static void notify_event(JVMPI_Event *event)
{
    int requested = (event->event_type & JVMPI_REQUESTED_EVENT) != 0;

    switch (event->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:
        class_load(event, requested);
        break;
    case JVMPI_EVENT_THREAD_START:
        thread_start(event);
        break;
    case JVMPI_EVENT_THREAD_END:
        thread_end(event);
        break;
    case JVMPI_EVENT_OBJECT_ALLOC:
        if (!requested) {
            object_alloc(event);
        }
        break;
    case JVMPI_EVENT_OBJECT_FREE:
        object_free(event);
        break;
    case JVMPI_EVENT_OBJECT_MOVE:
        object_move(event);
        break;
    case JVMPI_EVENT_GC_START:
        /* No malloc until GC_FINISH.  With heap=sites the tables stay locked until
         * then: OBJECT_FREE and OBJECT_MOVE come in between. */
        if (heap_sites) {
            jvmpi->RawMonitorEnter(data_lock);
        }
        break;
    case JVMPI_EVENT_GC_FINISH:
        gc_count++;
        heap_used_space = event->u.gc_info.used_object_space;
        if (heap_sites) {
            jvmpi->RawMonitorExit(data_lock);
        }
        break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        if (jvmpi->CreateSystemThread(SAMPLER_NAME, JVMPI_NORMAL_PRIORITY,
                                      sampler) != JNI_OK) {
            fprintf(stderr, "hprof_lite: cannot create the sampling thread\n");
        }
        break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST:
        print_report();
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        stop_sampler();
        print_report();
        if (out != stdout) {
            fclose(out);
            out = stdout;
        }
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------- start-up */

/* Parses "file=out.txt,depth=4,heap=sites"; returns 0 on success. */
static int parse_options(char *options)
{
    char *copy;
    char *opt;
    char *next;

    if (options == NULL || *options == '\0') {
        return 0;
    }
    copy = copy_string(options);
    for (opt = copy; opt != NULL && *opt != '\0'; opt = next) {
        next = strchr(opt, ',');
        if (next != NULL) {
            *next++ = '\0';
        }
        if (strncmp(opt, "file=", 5) == 0 && opt[5] != '\0') {
            out_file = copy_string(opt + 5);
        } else if (strncmp(opt, "depth=", 6) == 0
                   && atoi(opt + 6) >= 1 && atoi(opt + 6) <= MAX_DEPTH) {
            depth = atoi(opt + 6);
        } else if (strcmp(opt, "heap=sites") == 0) {
            heap_sites = 1;
        } else {
            fprintf(stderr, "hprof_lite: bad option \"%s\"\n", opt);
            free(copy);
            return -1;
        }
    }
    free(copy);
    return 0;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *jvm, char *options, void *reserved)
{
    (void)reserved;

    if (parse_options(options) != 0) {
        fprintf(stderr, "hprof_lite options: file=<path>,depth=<1-%d>,heap=sites\n",
                MAX_DEPTH);
        return JNI_ERR;
    }
    if ((*jvm)->GetEnv(jvm, (void **)&jvmpi, JVMPI_VERSION_1) < 0) {
        fprintf(stderr, "hprof_lite: JVMPI is not available in this VM\n");
        return JNI_ERR;
    }
    out = stdout;
    if (out_file != NULL) {
        out = fopen(out_file, "w");
        if (out == NULL) {
            fprintf(stderr, "hprof_lite: cannot open %s\n", out_file);
            return JNI_ERR;
        }
    }

    jvmpi->NotifyEvent = notify_event;
    /* Names starting with '_' keep our own monitors out of contention events. */
    data_lock = jvmpi->RawMonitorCreate("_hprof_lite_data");
    sampler_lock = jvmpi->RawMonitorCreate("_hprof_lite_sampler");

    jvmpi->EnableEvent(JVMPI_EVENT_JVM_INIT_DONE, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_START, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_END, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_CLASS_LOAD, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_GC_START, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_GC_FINISH, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_DATA_DUMP_REQUEST, NULL);
    if (heap_sites) {
        jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_ALLOC, NULL);
        jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_FREE, NULL);
        jvmpi->EnableEvent(JVMPI_EVENT_OBJECT_MOVE, NULL);
    }
    return JNI_OK;
}
