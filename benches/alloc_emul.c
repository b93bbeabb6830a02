/* The emulation floor of bytecode-instrumented allocation events: configuration (d) of
 * scripts/bench-javac-alloc.sh. The program runs the shim's instrumented bytecode unchanged
 * (after each `new C` an `ldc C; invokestatic JvmpiShimTracker.newObject`, after each array
 * allocation `dup; invokestatic newArray`, a hook first thing in Object.<init>; the tracker's
 * Java hooks call its natives with the object, its class and the class's identity hash), so it
 * pays the same instrumented code, the same JIT work and the same two JNI transitions a hook
 * costs; but the tracker's natives are this library's, doing per object only what no emulation
 * of OBJECT_ALLOC through such natives can skip:
 *   give the object an ID: JVMTI SetTag with a counter, as the tagging floor
 *     (benches/tag_all_jvmti.c) does, so that its OBJECT_FREE comes from JVMTI ObjectFree;
 *     at `new` the ID is announced before the object exists, kept on this thread's stack of
 *     reservations and set in Object.<init> (the object's constructor chain reaches it first);
 *   fill a JVMPI_Event OBJECT_ALLOC (class ID and size from a per-thread table indexed by the
 *     class's identity hash, filled at a class's first allocation; arrays measured with
 *     GetObjectSize) and hand it to the agent's NotifyEvent, read every time;
 *   OBJECT_FREE: JVMTI ObjectFree's tag handed on the same way, from the thread JVMTI posts it
 *     in (no GC bracket, no queue).
 * Lower than any sound emulation on purpose: the class is found by its identity hash alone
 * (the shim confirms the entry with one JNI IsSameObject: two classes may share a hash), no
 * check of the event's switch or of the thread, no re-entrancy guard for allocations of the
 * agent's own handler, reservations abandoned by a throwing constructor are matched by class
 * hash only; the per-thread state is reached with initial-exec TLS (the shim, a Rust cdylib,
 * pays a __tls_get_addr call per thread-local). Everything the shim does besides the tracker's
 * natives (its JVMTI VMObjectAlloc and JNI allocation hooks, its CLASS_LOAD catch-up, its GC
 * brackets for the deaths of the objects it tagged) stays as in (c); the objects it reports
 * there are not reported again here (see shim_reported), so the agent's counts are (c)'s.
 *
 * How: this library is the JVMPI agent the shim loads (agent=liballoc_emul.so:<options>). Its
 * JVM_OnLoad (run by the shim at VMInit, on an attached thread) loads the real agent,
 * benches/count_jvmpi.c, from its own directory and runs that agent's JVM_OnLoad with the same
 * JavaVM and options: the agent takes the shim's JVMPI interface, sets NotifyEvent and enables
 * OBJECT_ALLOC and OBJECT_FREE, so the shim defines its tracker class, binds its natives and
 * instruments every class. Then this library binds the tracker's natives again, to its own
 * functions (JNI RegisterNatives; the shim's natives report nothing before its event gate opens,
 * which comes after this, and no compiled code calls them yet), and takes a JVMTI environment of its own for
 * SetTag and ObjectFree. It wraps the agent's NotifyEvent to see what the shim sends: its
 * OBJECT_ALLOC of objects the VM or JNI made, and JVM_SHUT_DOWN, where, before the agent prints
 * its counts, the ObjectFree events the JVM still owes are flushed (setting the event's mode
 * again), as the shim does for its own tags at VM death.
 *
 * Experiment knob, off unless set: ALLOC_EMUL_SPIN=<n> makes onNewObject and onNew (one call
 * per allocation) first run an empty loop of n iterations (about a cycle each), a floor slowed
 * by a fixed amount of work per allocation (used to show that C2's work follows the program
 * thread's speed; docs/benchmarks.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jni.h>
#include <jvmti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jvmpi.h"

static jvmtiEnv *jvmti;
static JVMPI_Interface *table;
/* The agent's own NotifyEvent (what it set in its interface table), read every time. */
static void (*volatile inner)(JVMPI_Event *);
static jobject (JNICALL *real_alloc_object)(JNIEnv *, jclass);
static jclass system_class; /* java.lang.System, a global reference */
static jmethodID component_type, identity_hash;

static volatile jlong next_tag;
/* Classes get tags too (their IDs), with this bit: their ObjectFree is no OBJECT_FREE. */
#define CLASS_TAG ((jlong)1 << 62)
/* An object the shim reported (made by the VM or JNI), marked so that its Object.<init> does not
 * report it again; its ObjectFree is the shim's. */
#define SHIM_TAG ((jlong)1 << 61)
/* Misses of the per-thread class tables (their slow path), printed at JVM_SHUT_DOWN. */
static volatile long fills;

/* ---- the event ------------------------------------------------------------------------ */

typedef long long zero16 __attribute__((vector_size(16)));
_Static_assert(sizeof(JVMPI_Event) == 88, "JVMPI_Event is 88 bytes on LP64");
/* As in benches/fib_emul.c: the part of the event past the fields written (bytes 48 to 88) is
 * zeroed with aligned 16-byte stores, not a memset gcc makes `rep stos`. */
struct placed { JVMPI_Event ev; long pad; } __attribute__((aligned(16)));

static inline void send_alloc(JNIEnv *env, jlong tag, jobjectID class_id, jint is_array, jint size) {
    struct placed p;
    zero16 z = {0, 0};
    __builtin_memcpy((char *)&p.ev + 48, &z, 16);
    __builtin_memcpy((char *)&p.ev + 64, &z, 16);
    __builtin_memcpy((char *)&p.ev + 80, &z, 8);
    p.ev.event_type = JVMPI_EVENT_OBJECT_ALLOC;
    p.ev.env_id = env;
    p.ev.u.obj_alloc.arena_id = 1;
    p.ev.u.obj_alloc.class_id = class_id;
    p.ev.u.obj_alloc.is_array = is_array;
    p.ev.u.obj_alloc.size = size;
    p.ev.u.obj_alloc.obj_id = (jobjectID)(intptr_t)tag;
    void (*f)(JVMPI_Event *) = inner;
    if (f) f(&p.ev);
}

static void send_free(jlong tag) {
    JVMPI_Event ev;
    memset(&ev, 0, sizeof ev);
    ev.event_type = JVMPI_EVENT_OBJECT_FREE;
    ev.u.obj_free.obj_id = (jobjectID)(intptr_t)tag;
    void (*f)(JVMPI_Event *) = inner;
    if (f) f(&ev);
}

/* ---- the experiment's spin (ALLOC_EMUL_SPIN) --------------------------------------------- */

static long spin_iters; /* 0: no spin */

static void spin(void) {
    for (long i = spin_iters; i > 0; i--) __asm__ volatile("" ::: "memory");
}

static void set_spin(void) {
    const char *v = getenv("ALLOC_EMUL_SPIN");
    spin_iters = v ? atol(v) : 0;
    if (spin_iters < 0) spin_iters = 0;
    if (spin_iters) fprintf(stderr, "alloc_emul: spin of %ld iterations per allocation\n", spin_iters);
}

static inline jlong fresh_tag(void) { return __sync_add_and_fetch(&next_tag, 1); }

/* ---- per-thread state ------------------------------------------------------------------ */

/* Entries of a thread's class table: javac allocates a few thousand classes, and a miss costs
 * JVMTI calls (and a measuring instance), so the table is large enough to keep misses rare. */
#define DIRECT 8192
#define RESERVED_MAX 4096
struct klass {
    jint hash; /* the class's identity hash; 0: empty */
    jint is_array;
    jint size; /* of an instance; 0 for arrays, or not known yet */
    int nested; /* an array of arrays */
    jobjectID class_id;
};
struct reservation { jlong tag; jint hash; };
struct local {
    struct klass classes[DIRECT];
    int depth;
    struct reservation reserved[RESERVED_MAX];
};
/* initial-exec: one TLS read, no __tls_get_addr call (12 bytes of static TLS). */
static __thread struct local *me __attribute__((tls_model("initial-exec")));
/* Set when the shim has just sent OBJECT_ALLOC for a normal object in this thread: an object the
 * VM or JNI made (JVMTI VMObjectAlloc, the JNI hooks), which the shim tags and reports itself
 * (in its own JVMTI environment, whose tags this library cannot read). The next tracker native
 * in this thread consumes it: `made` (Unsafe.allocateInstance: the VM posted VMObjectAlloc for
 * it first) and Object.<init> without a reservation (JNI NewObject) then report nothing; every
 * other native clears it. An emulation with one environment reads its own tag there instead. */
static __thread int shim_reported __attribute__((tls_model("initial-exec")));

static inline struct local *local(void) {
    struct local *l = me;
    if (__builtin_expect(l == NULL, 0)) me = l = calloc(1, sizeof *l);
    return l;
}

/* The class ID of a class: its tag (set with CLASS_TAG at its first sight). */
static jobjectID class_id_of(jclass k) {
    jlong t = 0;
    if (!k) return NULL;
    if ((*jvmti)->GetTag(jvmti, k, &t) != JVMTI_ERROR_NONE) return NULL;
    if (t == 0) {
        t = CLASS_TAG | fresh_tag();
        (*jvmti)->SetTag(jvmti, k, t);
    }
    return (jobjectID)(intptr_t)t;
}

static jint kind_of(char c) {
    switch (c) {
    case 'Z': return JVMPI_BOOLEAN;
    case 'B': return JVMPI_BYTE;
    case 'C': return JVMPI_CHAR;
    case 'S': return JVMPI_SHORT;
    case 'I': return JVMPI_INT;
    case 'J': return JVMPI_LONG;
    case 'F': return JVMPI_FLOAT;
    case 'D': return JVMPI_DOUBLE;
    default: return JVMPI_CLASS;
    }
}

/* The slow path, once per class and thread: what the class's allocation events need. */
static struct klass *fill(JNIEnv *env, struct local *l, jclass k, jint hash) {
    struct klass *c = &l->classes[(unsigned)hash % DIRECT];
    char *sig = NULL;
    __sync_add_and_fetch(&fills, 1);
    memset(c, 0, sizeof *c);
    if ((*jvmti)->GetClassSignature(jvmti, k, &sig, NULL) != JVMTI_ERROR_NONE || !sig) return NULL;
    if (sig[0] == '[') {
        c->is_array = kind_of(sig[1]);
        c->nested = sig[1] == '[';
        if (c->is_array == JVMPI_CLASS) {
            jclass e = (*env)->CallObjectMethod(env, k, component_type);
            if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
            c->class_id = class_id_of(e);
            if (e) (*env)->DeleteLocalRef(env, e);
        }
    } else {
        c->class_id = class_id_of(k);
    }
    (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
    c->hash = hash;
    return c;
}

static inline struct klass *class_of(JNIEnv *env, struct local *l, jclass k, jint hash) {
    struct klass *c = &l->classes[(unsigned)hash % DIRECT];
    if (__builtin_expect(c->hash == hash && hash != 0, 1)) return c;
    return fill(env, l, k, hash);
}

static jint hash_of(JNIEnv *env, jobject o) {
    jint h = (*env)->CallStaticIntMethod(env, system_class, identity_hash, o);
    if ((*env)->ExceptionCheck(env)) { (*env)->ExceptionClear(env); return 0; }
    return h;
}

static jint size_of(jobject o) {
    jlong s = 0;
    (*jvmti)->GetObjectSize(jvmti, o, &s);
    return (jint)s;
}

/* ---- reporting ------------------------------------------------------------------------- */

static void report_array(JNIEnv *env, struct local *l, jobject a, jclass k, jint hash);

/* An object or array seen for the first time: tagged and reported. */
static void report(JNIEnv *env, struct local *l, jobject o, jclass k, jint hash) {
    struct klass *c = class_of(env, l, k, hash);
    if (!c) return;
    if (c->is_array != JVMPI_NORMAL_OBJECT) {
        report_array(env, l, o, k, hash);
        return;
    }
    jlong tag = fresh_tag();
    (*jvmti)->SetTag(jvmti, o, tag);
    if (c->size == 0) c->size = size_of(o);
    send_alloc(env, tag, c->class_id, JVMPI_NORMAL_OBJECT, c->size);
}

static void report_unknown(JNIEnv *env, struct local *l, jobject o) {
    jlong t = 0;
    if (!o || (*jvmti)->GetTag(jvmti, o, &t) != JVMTI_ERROR_NONE || t != 0) return;
    jclass k = (*env)->GetObjectClass(env, o);
    jint h = hash_of(env, k);
    if (h) report(env, l, o, k, h);
    (*env)->DeleteLocalRef(env, k);
}

static void report_array(JNIEnv *env, struct local *l, jobject a, jclass k, jint hash) {
    struct klass *c = class_of(env, l, k, hash);
    if (!c) return;
    jlong tag = fresh_tag();
    (*jvmti)->SetTag(jvmti, a, tag);
    send_alloc(env, tag, c->class_id, c->is_array, size_of(a));
    if (c->nested) {
        /* Sub-arrays made together with their outer array (multianewarray). */
        jsize n = (*env)->GetArrayLength(env, a);
        for (jsize i = 0; i < n; i++) {
            jobject e = (*env)->GetObjectArrayElement(env, a, i);
            if (e) {
                report_unknown(env, l, e);
                (*env)->DeleteLocalRef(env, e);
            }
        }
    }
}

static void reserve(JNIEnv *env, struct local *l, jclass k, jint hash) {
    struct klass *c = class_of(env, l, k, hash);
    if (!c || c->is_array != JVMPI_NORMAL_OBJECT) return;
    if (c->size == 0) {
        /* Measured once on an instance made without a constructor (the shim does the same);
         * the JNI function the JVM had before the shim hooked it, so no one reports it. */
        jobject o = real_alloc_object(env, k);
        if (!o) { (*env)->ExceptionClear(env); return; }
        c->size = size_of(o);
        (*env)->DeleteLocalRef(env, o);
    }
    if (l->depth == RESERVED_MAX) {
        send_free(l->reserved[0].tag);
        memmove(l->reserved, l->reserved + 1, sizeof l->reserved[0] * (RESERVED_MAX - 1));
        l->depth--;
    }
    jlong tag = fresh_tag();
    l->reserved[l->depth].tag = tag;
    l->reserved[l->depth].hash = hash;
    l->depth++;
    send_alloc(env, tag, c->class_id, JVMPI_NORMAL_OBJECT, c->size);
}

/* ---- the tracker's natives ------------------------------------------------------------- */

/* onNewObject(Class, int): right after `new`. */
static void JNICALL on_new_object(JNIEnv *env, jclass tracker, jobject k, jint hash) {
    (void)tracker;
    spin();
    shim_reported = 0;
    reserve(env, local(), k, hash);
}

/* onInit(Object, Class, int): first thing in Object.<init>. */
static void JNICALL on_init(JNIEnv *env, jclass tracker, jobject o, jclass k, jint hash) {
    (void)tracker;
    struct local *l = local();
    int d = l->depth;
    int shims = shim_reported;
    shim_reported = 0;
    if (__builtin_expect(d > 0 && l->reserved[d - 1].hash == hash, 1)) {
        l->depth = d - 1;
        (*jvmti)->SetTag(jvmti, o, l->reserved[d - 1].tag);
        return;
    }
    for (int i = d - 2; i >= 0; i--) {
        if (l->reserved[i].hash == hash) {
            /* The reservations above were abandoned: their constructors threw. */
            for (int j = i + 1; j < d; j++) send_free(l->reserved[j].tag);
            l->depth = i;
            (*jvmti)->SetTag(jvmti, o, l->reserved[i].tag);
            return;
        }
    }
    /* Announced by no `new` (hidden classes, the VM's or JNI's allocations): reported now,
     * unless reported already (Unsafe.allocateInstance, below). */
    jlong t = 0;
    if (shims) return;
    if ((*jvmti)->GetTag(jvmti, o, &t) == JVMTI_ERROR_NONE && t == 0) report(env, l, o, k, hash);
}

/* onNew(Object, Class, int): right after an array allocation. */
static void JNICALL on_new(JNIEnv *env, jclass tracker, jobject a, jclass k, jint hash) {
    (void)tracker;
    spin();
    shim_reported = 0;
    report_array(env, local(), a, k, hash);
}

/* onMade(Object): Unsafe.allocateInstance has just made it. */
static void JNICALL on_made(JNIEnv *env, jclass tracker, jobject o) {
    (void)tracker;
    if (shim_reported) {
        shim_reported = 0;
        if (o) (*jvmti)->SetTag(jvmti, o, SHIM_TAG);
        return;
    }
    report_unknown(env, local(), o);
}

/* onReflectNew(Constructor): the VM is about to make an instance of its class. */
static void JNICALL on_reflect_new(JNIEnv *env, jclass tracker, jobject ctor) {
    (void)tracker;
    shim_reported = 0;
    jmethodID m = ctor ? (*env)->FromReflectedMethod(env, ctor) : NULL;
    jclass k = NULL;
    jint mods = 0, status = 0;
    if (!m || (*jvmti)->GetMethodDeclaringClass(jvmti, m, &k) != JVMTI_ERROR_NONE) return;
    if ((*jvmti)->GetClassModifiers(jvmti, k, &mods) == JVMTI_ERROR_NONE && !(mods & 0x0600)
        && (*jvmti)->GetClassStatus(jvmti, k, &status) == JVMTI_ERROR_NONE && (status & JVMTI_CLASS_STATUS_INITIALIZED)) {
        jint h = hash_of(env, k);
        if (h) reserve(env, local(), k, h);
    }
    (*env)->DeleteLocalRef(env, k);
}

/* ---- OBJECT_FREE, JVM_SHUT_DOWN, start-up ----------------------------------------------- */

static void JNICALL object_free(jvmtiEnv *j, jlong tag) {
    (void)j;
    if (!(tag & (CLASS_TAG | SHIM_TAG))) send_free(tag);
}

static void wrapper(JVMPI_Event *e) {
    if (e->event_type == JVMPI_EVENT_OBJECT_ALLOC && e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT) shim_reported = 1;
    if ((e->event_type & ~JVMPI_REQUESTED_EVENT) == JVMPI_EVENT_JVM_SHUT_DOWN) {
        /* The deaths the JVM still owes, posted now on this thread. */
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_OBJECT_FREE, NULL);
        printf("emulation floor: class-table misses=%ld\n", fills);
    }
    void (*f)(JVMPI_Event *) = inner;
    if (f) f(e);
}

static int fail(const char *what) {
    fprintf(stderr, "alloc_emul: %s\n", what);
    return JNI_ERR;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_2) != JNI_OK) return fail("no JNIEnv (JVM_OnLoad before VMInit?)");
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_11) != JNI_OK) return fail("no JVMTI environment");
    /* Before the agent's EnableEvent(OBJECT_ALLOC) makes the shim hook the JNI functions. */
    real_alloc_object = (*env)->AllocObject;

    Dl_info self;
    char path[4096];
    if (!dladdr((void *)wrapper, &self) || !self.dli_fname) return fail("dladdr");
    snprintf(path, sizeof path, "%s", self.dli_fname);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (slash ? (size_t)(slash + 1 - path) : 0), "libcount_jvmpi.so");
    void *agent = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!agent) return fail(dlerror());
    jint (*on_load)(JavaVM *, char *, void *) = (jint(*)(JavaVM *, char *, void *))dlsym(agent, "JVM_OnLoad");
    if (!on_load) return fail("the agent has no JVM_OnLoad");
    jint rc = on_load(vm, options, reserved);
    if (rc != JNI_OK) return rc;

    if ((*vm)->GetEnv(vm, (void **)&table, JVMPI_VERSION_1) != JNI_OK) return fail("no JVMPI interface");
    inner = table->NotifyEvent;
    table->NotifyEvent = wrapper;

    jvmtiCapabilities c;
    memset(&c, 0, sizeof c);
    c.can_tag_objects = 1;
    c.can_generate_object_free_events = 1;
    if ((*jvmti)->AddCapabilities(jvmti, &c) != JVMTI_ERROR_NONE) return fail("capabilities refused in the live phase");
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.ObjectFree = object_free;
    (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
    if ((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_OBJECT_FREE, NULL) != JVMTI_ERROR_NONE)
        return fail("ObjectFree refused");

    jclass cls = (*env)->FindClass(env, "java/lang/Class");
    jclass sys = (*env)->FindClass(env, "java/lang/System");
    if (!cls || !sys) return fail("java.lang.Class or System not found");
    system_class = (*env)->NewGlobalRef(env, sys);
    component_type = (*env)->GetMethodID(env, cls, "getComponentType", "()Ljava/lang/Class;");
    identity_hash = (*env)->GetStaticMethodID(env, sys, "identityHashCode", "(Ljava/lang/Object;)I");
    if (!component_type || !identity_hash) return fail("getComponentType or identityHashCode not found");

    set_spin();
    jclass tracker = (*env)->FindClass(env, "JvmpiShimTracker");
    if (!tracker) {
        (*env)->ExceptionClear(env);
        return fail("the shim's tracker class is not defined (did the agent enable OBJECT_ALLOC?)");
    }
    JNINativeMethod natives[] = {
        {"onInit", "(Ljava/lang/Object;Ljava/lang/Class;I)V", (void *)on_init},
        {"onNew", "(Ljava/lang/Object;Ljava/lang/Class;I)V", (void *)on_new},
        {"onNewObject", "(Ljava/lang/Object;I)V", (void *)on_new_object},
        {"onMade", "(Ljava/lang/Object;)V", (void *)on_made},
        {"onReflectNew", "(Ljava/lang/Object;)V", (void *)on_reflect_new},
    };
    if ((*env)->RegisterNatives(env, tracker, natives, 5) != 0) {
        (*env)->ExceptionClear(env);
        return fail("RegisterNatives on the tracker refused");
    }
    (*env)->DeleteLocalRef(env, tracker);
    return JNI_OK;
}
