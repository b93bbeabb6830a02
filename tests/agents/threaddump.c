/*
 * threaddump: a plain JNI library, no JVM_OnLoad, that takes JVMPI at run time the way the
 * thread-dump tools of 2000-2005 did (a Java class calls a native; the native asks its JNIEnv
 * for the JavaVM, GetEnv(JVMPI_VERSION_1) on it, sets its own NotifyEvent and requests a
 * MONITOR_DUMP). Inside the MONITOR_DUMP handler it resolves everything on the spot:
 * jobjectID2jobject and jobject2jobjectID for each Java monitor, GetObjectClass and a nested
 * RequestEvent(CLASS_LOAD) for its class, a nested RequestEvent(THREAD_START) for each thread's
 * name, and for the owner and every waiter SuspendThread, GetCallTrace (growing the buffer until
 * it is big enough), GetMethodClass and RequestEvent(CLASS_LOAD) per frame, ResumeThread; for a
 * monitor nobody owns it passes the NULL owner on to the same calls, as the tools did.
 *
 * Java: static native int ThreadDumpDemo.dump(String out, Object[] named) — `named` is pairs of
 * (label, object); returns the number of Java monitors in the dump, or -1.
 * Output (one file, appended):
 *   MONITOR <label> class=<class> owner=<thread|NULL> entries=<n> enter=<n> notify=<n> idok=<0|1>
 *   OWNER|ENTER|NOTIFY <label> <thread>
 *   FRAME <label> <thread> <class>.<method>:<source>:<line>
 *   NULLOWNER <label> status=<n> frames=<n>
 *   UNEXPECTED <event type>            (an event this library did not ask for)
 *   PATHS getjavavm=<0|1> created=<0|1> onload=<0|1>   (GetEnv(JVMPI_VERSION_1, 1_1, 1_2) through
 *         the JavaVM of GetJavaVM, of JNI_GetCreatedJavaVMs and of JNI_OnLoad: 1 when each gave
 *         the same working interface)
 *   DONE monitors=<n> version=<interface version>
 */
#include <dlfcn.h>
#include <jni.h>
#include <jvmpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static JNIEnv *dump_env;
static FILE *out;
static jobjectArray named;
static int monitors;

/* What the current request is for, and where its answer goes (as ThreadDump's callForEvent). */
static JavaVM *onload_vm;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void)reserved;
    onload_vm = vm;
    return JNI_VERSION_1_2;
}

/* GetEnv for JVMPI_VERSION_1_1 and 1_2 through `vm` gives `want` (the interface the dump uses). */
static int same_interface(JavaVM *vm, JVMPI_Interface *want) {
    JVMPI_Interface *p = NULL, *q = NULL;
    if (!vm || (*vm)->GetEnv(vm, (void **)&p, JVMPI_VERSION_1_1) != JNI_OK) return 0;
    if ((*vm)->GetEnv(vm, (void **)&q, JVMPI_VERSION_1_2) != JNI_OK) return 0;
    return p == want && q == want && p->GetCurrentThreadCpuTime() > 0;
}

static jint wanted;
static void (*delegate)(JVMPI_Event *, void *);
static void *delegate_arg;

static void call_for_event(void (*h)(JVMPI_Event *, void *), jint type, void *arg, void *extra) {
    jint saved_wanted = wanted;
    void (*saved_delegate)(JVMPI_Event *, void *) = delegate;
    void *saved_arg = delegate_arg;
    wanted = type;
    delegate = h;
    delegate_arg = extra;
    jvmpi->RequestEvent(type, arg);
    wanted = saved_wanted;
    delegate = saved_delegate;
    delegate_arg = saved_arg;
}

static uint32_t u4(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static void *ptr(const unsigned char *p) {
    void *v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ---- names ------------------------------------------------------------------------------ */
static void thread_name_of(JVMPI_Event *e, void *extra) {
    snprintf((char *)extra, 128, "%s", e->u.thread_start.thread_name ? e->u.thread_start.thread_name : "null");
}

static void thread_name(JNIEnv *t, char *buf) {
    snprintf(buf, 128, "%s", t ? "?" : "NULL");
    if (!t) return;
    jobjectID tid = jvmpi->GetThreadObject(t);
    if (tid) call_for_event(thread_name_of, JVMPI_EVENT_THREAD_START, tid, buf);
}

static void class_name_of(JVMPI_Event *e, void *extra) {
    snprintf((char *)extra, 256, "%s", e->u.class_load.class_name ? e->u.class_load.class_name : "?");
}

struct frame_ask { jmethodID m; char *buf; };
static void frame_of(JVMPI_Event *e, void *extra) {
    struct frame_ask *f = extra;
    const char *mname = "?";
    for (int i = 0; i < e->u.class_load.num_methods; i++)
        if (e->u.class_load.methods[i].method_id == f->m) mname = e->u.class_load.methods[i].method_name;
    snprintf(f->buf, 512, "%s.%s:%s", e->u.class_load.class_name, mname,
             e->u.class_load.source_name ? e->u.class_load.source_name : "Unknown Source");
}

/* ---- the owner and the waiters ------------------------------------------------------------ */
static void traces(const char *label, const char *role, JNIEnv **list, int n) {
    for (int i = 0; i < n; i++) {
        JNIEnv *t = list[i];
        char name[128];
        thread_name(t, name);
        fprintf(out, "%s %s %s\n", role, label, name);
        jint status = jvmpi->GetThreadStatus(t);
        jvmpi->SuspendThread(t);
        int depth = 4;
        JVMPI_CallTrace trace;
        JVMPI_CallFrame *frames = NULL;
        for (;;) {
            frames = calloc((size_t)depth, sizeof *frames);
            trace.env_id = t;
            trace.frames = frames;
            trace.num_frames = 0;
            jvmpi->GetCallTrace(&trace, depth);
            if (trace.num_frames < depth) break;
            free(frames);
            depth *= 2;
        }
        if (!t) fprintf(out, "NULLOWNER %s status=%d frames=%d\n", label, (int)status, (int)trace.num_frames);
        for (int k = 0; k < trace.num_frames; k++) {
            char where[512] = "?";
            struct frame_ask f = {frames[k].method_id, where};
            jobjectID cls = jvmpi->GetMethodClass(frames[k].method_id);
            if (cls) call_for_event(frame_of, JVMPI_EVENT_CLASS_LOAD, cls, &f);
            fprintf(out, "FRAME %s %s %s:%d\n", label, name, where, (int)frames[k].lineno);
        }
        free(frames);
        jvmpi->ResumeThread(t);
    }
}

static void label_of(jobject obj, char *buf) {
    snprintf(buf, 64, "?");
    if (!named || !obj) return;
    jsize n = (*dump_env)->GetArrayLength(dump_env, named);
    for (jsize i = 0; i + 1 < n; i += 2) {
        jobject o = (*dump_env)->GetObjectArrayElement(dump_env, named, i + 1);
        if ((*dump_env)->IsSameObject(dump_env, o, obj)) {
            jstring s = (*dump_env)->GetObjectArrayElement(dump_env, named, i);
            const char *c = (*dump_env)->GetStringUTFChars(dump_env, s, NULL);
            snprintf(buf, 64, "%s", c);
            (*dump_env)->ReleaseStringUTFChars(dump_env, s, c);
        }
    }
}

static void monitor_dump(JVMPI_Event *e, void *extra) {
    (void)extra;
    const unsigned char *p = (const unsigned char *)e->u.monitor_dump.begin, *end = (const unsigned char *)e->u.monitor_dump.end;
    const size_t W = sizeof(void *);
    while (p < end) {
        int type = *p++;
        if (type == JVMPI_MONITOR_JAVA) {
            jobjectID id = ptr(p);
            JNIEnv *owner = ptr(p + W);
            uint32_t entries = u4(p + 2 * W);
            p += 2 * W + 4;
            uint32_t n_enter = u4(p);
            JNIEnv **enter = (JNIEnv **)(p + 4);
            p += 4 + n_enter * W;
            uint32_t n_notify = u4(p);
            JNIEnv **notify = (JNIEnv **)(p + 4);
            p += 4 + n_notify * W;
            monitors++;
            jobject obj = jvmpi->jobjectID2jobject(id);
            int idok = obj && jvmpi->jobject2jobjectID(obj) == id;
            char label[64], cname[256] = "?", oname[128];
            label_of(obj, label);
            if (obj) {
                jclass k = (*dump_env)->GetObjectClass(dump_env, obj);
                jobjectID kid = jvmpi->jobject2jobjectID(k);
                if (kid) call_for_event(class_name_of, JVMPI_EVENT_CLASS_LOAD, kid, cname);
            }
            thread_name(owner, oname);
            fprintf(out, "MONITOR %s class=%s owner=%s entries=%u enter=%u notify=%u idok=%d\n", label, cname, oname,
                    entries, n_enter, n_notify, idok);
            traces(label, "OWNER", &owner, 1);
            traces(label, "ENTER", enter, (int)n_enter);
            traces(label, "NOTIFY", notify, (int)n_notify);
        } else if (type == JVMPI_MONITOR_RAW) {
            p += 3 * W + 4;
            uint32_t n = u4(p);
            p += 4 + n * W;
            n = u4(p);
            p += 4 + n * W;
        } else {
            fprintf(out, "BADRECORD %d\n", type);
            break;
        }
    }
}

static void notify(JVMPI_Event *e) {
    if (e->event_type == (wanted | JVMPI_REQUESTED_EVENT) && delegate) {
        delegate(e, delegate_arg);
    } else if (out) {
        fprintf(out, "UNEXPECTED %d\n", (int)e->event_type);
    }
}

JNIEXPORT jint JNICALL Java_ThreadDumpDemo_dump(JNIEnv *env, jclass k, jstring path, jobjectArray objs) {
    (void)k;
    JavaVM *vm;
    if ((*env)->GetJavaVM(env, &vm) != 0) return -1;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK || !jvmpi) return -1;
    jvmpi->NotifyEvent = notify;
    const char *file = (*env)->GetStringUTFChars(env, path, NULL);
    out = fopen(file, "a");
    (*env)->ReleaseStringUTFChars(env, path, file);
    if (!out) return -1;
    dump_env = env;
    named = objs;
    monitors = 0;
    call_for_event(monitor_dump, JVMPI_EVENT_MONITOR_DUMP, NULL, NULL);
    {
        jint (*created)(JavaVM **, jsize, jsize *) = (jint(*)(JavaVM **, jsize, jsize *))dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
        JavaVM *vms[1] = {NULL};
        jsize n = 0;
        int by_created = created && created(vms, 1, &n) == JNI_OK && n == 1 && same_interface(vms[0], jvmpi);
        fprintf(out, "PATHS getjavavm=%d created=%d onload=%d\n", same_interface(vm, jvmpi), by_created,
                same_interface(onload_vm, jvmpi));
    }
    fprintf(out, "DONE monitors=%d version=%#x\n", monitors, (unsigned)jvmpi->version);
    fclose(out);
    out = NULL;
    named = NULL;
    return monitors;
}
