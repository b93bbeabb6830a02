/*
 * callall: a JVMPI agent that, from inside its event handlers, calls every function of the JVMPI
 * interface while the handler is still open (tests/reentrancy.rs). HotSpot 1.5 held no lock of
 * its own across a call into the agent that the agent could not take again: a handler could
 * request events (dumps inside dumps included), take traces, run or block collections, suspend
 * other threads, and use raw monitors. The shim must answer every such call, or refuse it with
 * an error code; it must never deadlock or crash.
 *
 * It enables a fixed list of events (giving up at the first refusal, as real tools did) and,
 * the first FIRST times it sees each event type (and in the requested events delivered inside
 * those calls, down to a nesting depth of 2), calls:
 *   GetCurrentThreadCpuTime, GetCallTrace, GetThreadStatus, ThreadHasRun, Get/SetThreadLocalStorage,
 *   GetThreadObject, RequestEvent(THREAD_START / OBJECT_ALLOC / OBJECT_DUMP) for the thread object,
 *   DisableGC + jobjectID2jobject + jobject2jobjectID + EnableGC, GetMethodClass +
 *   RequestEvent(CLASS_LOAD) for a method of the trace, the raw-monitor functions (with a 1 ms
 *   wait), Enable/DisableEvent of an event already on, (with `suspend`) Suspend/ResumeThread and the list forms on
 *   another thread, RequestEvent(HEAP_DUMP, level 0) and RequestEvent(MONITOR_DUMP), RunGC, and
 *   once CreateSystemThread.
 * Before each call it logs "CALL <event> <function>" (flushed), so a hang shows where it is;
 * after the handler's calls "DONE <event> ok=<n> refused=<n>".
 * Options: log=PATH, first=N (default 1), suspend (also Suspend/ResumeThread and the list forms on
 * another thread from every handler: this can hang the JVM today — seen on JDK 11 inside a HEAP_DUMP
 * handler nested in METHOD_ENTRY while other threads were in GC_START/OBJECT_ALLOC/MONITOR_DUMP
 * handlers — so the test leaves it out until that is fixed).
 */
#include <jni.h>
#include <jvmpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static JVMPI_Interface *jvmpi;
static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int first = 1;
static int opt_suspend;
static int seen[128];
static JNIEnv *known_threads[256];
static int n_known;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static int shut_down, sys_thread_made;
static __thread int depth;

static void line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&out_lock);
    if (out) {
        vfprintf(out, fmt, ap);
        fputc('\n', out);
        fflush(out);
    }
    pthread_mutex_unlock(&out_lock);
    va_end(ap);
}

static const char *ev_name(int t) {
    switch (t) {
    case JVMPI_EVENT_METHOD_ENTRY: return "METHOD_ENTRY";
    case JVMPI_EVENT_METHOD_EXIT: return "METHOD_EXIT";
    case JVMPI_EVENT_OBJECT_ALLOC: return "OBJECT_ALLOC";
    case JVMPI_EVENT_OBJECT_FREE: return "OBJECT_FREE";
    case JVMPI_EVENT_COMPILED_METHOD_LOAD: return "COMPILED_METHOD_LOAD";
    case JVMPI_EVENT_THREAD_START: return "THREAD_START";
    case JVMPI_EVENT_THREAD_END: return "THREAD_END";
    case JVMPI_EVENT_HEAP_DUMP: return "HEAP_DUMP";
    case JVMPI_EVENT_CLASS_LOAD: return "CLASS_LOAD";
    case JVMPI_EVENT_CLASS_UNLOAD: return "CLASS_UNLOAD";
    case JVMPI_EVENT_JVM_INIT_DONE: return "JVM_INIT_DONE";
    case JVMPI_EVENT_JVM_SHUT_DOWN: return "JVM_SHUT_DOWN";
    case JVMPI_EVENT_OBJECT_DUMP: return "OBJECT_DUMP";
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTER: return "MONITOR_CONTENDED_ENTER";
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTERED: return "MONITOR_CONTENDED_ENTERED";
    case JVMPI_EVENT_MONITOR_CONTENDED_EXIT: return "MONITOR_CONTENDED_EXIT";
    case JVMPI_EVENT_MONITOR_WAIT: return "MONITOR_WAIT";
    case JVMPI_EVENT_MONITOR_WAITED: return "MONITOR_WAITED";
    case JVMPI_EVENT_MONITOR_DUMP: return "MONITOR_DUMP";
    case JVMPI_EVENT_GC_START: return "GC_START";
    case JVMPI_EVENT_GC_FINISH: return "GC_FINISH";
    default: return "OTHER";
    }
}

static void sys_thread(void *arg) {
    (void)arg;
}

static JNIEnv *another_thread(JNIEnv *self) {
    JNIEnv *other = NULL;
    pthread_mutex_lock(&threads_lock);
    for (int i = 0; i < n_known; i++) {
        if (known_threads[i] && known_threads[i] != self) other = known_threads[i];
    }
    pthread_mutex_unlock(&threads_lock);
    return other;
}

#define CALL(fn) line("CALL %s %s", ev, fn)

static void call_everything(JVMPI_Event *e, const char *ev) {
    JNIEnv *env = e->env_id;
    int ok = 0, refused = 0;
    depth++;

    CALL("GetCurrentThreadCpuTime");
    jvmpi->GetCurrentThreadCpuTime();

    JVMPI_CallFrame frames[8];
    JVMPI_CallTrace trace = {env, 0, frames};
    jmethodID some_method = NULL;
    if (env) {
        CALL("GetCallTrace");
        jvmpi->GetCallTrace(&trace, 8);
        if (trace.num_frames > 0) some_method = frames[0].method_id;
        CALL("GetThreadStatus");
        jvmpi->GetThreadStatus(env);
        CALL("ThreadHasRun");
        jvmpi->ThreadHasRun(env);
        CALL("GetThreadLocalStorage");
        void *tls = jvmpi->GetThreadLocalStorage(env);
        CALL("SetThreadLocalStorage");
        jvmpi->SetThreadLocalStorage(env, tls);
        CALL("GetThreadObject");
        jobjectID tobj = jvmpi->GetThreadObject(env);
        if (tobj) {
            CALL("RequestEvent(THREAD_START)");
            jvmpi->RequestEvent(JVMPI_EVENT_THREAD_START, tobj) == JVMPI_SUCCESS ? ok++ : refused++;
            CALL("RequestEvent(OBJECT_ALLOC)");
            jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, tobj) == JVMPI_SUCCESS ? ok++ : refused++;
            CALL("RequestEvent(OBJECT_DUMP)");
            jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, tobj) == JVMPI_SUCCESS ? ok++ : refused++;
            CALL("DisableGC");
            jvmpi->DisableGC();
            CALL("jobjectID2jobject");
            jobject o = jvmpi->jobjectID2jobject(tobj);
            if (o) {
                CALL("jobject2jobjectID");
                jvmpi->jobject2jobjectID(o) == tobj ? ok++ : refused++;
            }
            CALL("EnableGC");
            jvmpi->EnableGC();
        }
    }
    if (some_method) {
        CALL("GetMethodClass");
        jobjectID cls = jvmpi->GetMethodClass(some_method);
        if (cls) {
            CALL("RequestEvent(CLASS_LOAD)");
            jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, cls) == JVMPI_SUCCESS ? ok++ : refused++;
        }
    }

    CALL("RawMonitorCreate");
    JVMPI_RawMonitor m = jvmpi->RawMonitorCreate("callall monitor");
    if (m) {
        CALL("RawMonitorEnter");
        jvmpi->RawMonitorEnter(m);
        CALL("RawMonitorNotifyAll");
        jvmpi->RawMonitorNotifyAll(m);
        CALL("RawMonitorWait");
        jvmpi->RawMonitorWait(m, 1);
        CALL("RawMonitorExit");
        jvmpi->RawMonitorExit(m);
        CALL("RawMonitorDestroy");
        jvmpi->RawMonitorDestroy(m);
    }

    CALL("EnableEvent");
    jvmpi->EnableEvent(JVMPI_EVENT_GC_START, NULL) == JVMPI_SUCCESS ? ok++ : refused++;
    CALL("DisableEvent+EnableEvent");
    jvmpi->DisableEvent(JVMPI_EVENT_THREAD_START, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_START, NULL) == JVMPI_SUCCESS ? ok++ : refused++;

    JNIEnv *other = opt_suspend ? another_thread(env) : NULL;
    if (other) {
        CALL("SuspendThread+ResumeThread");
        jvmpi->SuspendThread(other);
        jvmpi->ResumeThread(other);
        jint res[1];
        CALL("SuspendThreadList+ResumeThreadList");
        jvmpi->SuspendThreadList(1, &other, res);
        jvmpi->ResumeThreadList(1, &other, res);
    }

    if (depth <= 2) {
        JVMPI_HeapDumpArg arg = {JVMPI_DUMP_LEVEL_0};
        CALL("RequestEvent(HEAP_DUMP)");
        jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &arg) == JVMPI_SUCCESS ? ok++ : refused++;
        CALL("RequestEvent(MONITOR_DUMP)");
        jvmpi->RequestEvent(JVMPI_EVENT_MONITOR_DUMP, NULL) == JVMPI_SUCCESS ? ok++ : refused++;
        CALL("RunGC");
        jvmpi->RunGC();
    }
    if (!__sync_lock_test_and_set(&sys_thread_made, 1)) {
        CALL("CreateSystemThread");
        jvmpi->CreateSystemThread("callall system thread", JVMPI_NORMAL_PRIORITY, sys_thread) == JNI_OK ? ok++
                                                                                                 : refused++;
    }
    line("DONE %s ok=%d refused=%d depth=%d", ev, ok, refused, depth);
    depth--;
}

static void notify(JVMPI_Event *e) {
    int t = e->event_type & ~JVMPI_REQUESTED_EVENT;
    if (t == JVMPI_EVENT_THREAD_START && !(e->event_type & JVMPI_REQUESTED_EVENT)) {
        pthread_mutex_lock(&threads_lock);
        if (n_known < 256) known_threads[n_known++] = e->u.thread_start.thread_env_id;
        pthread_mutex_unlock(&threads_lock);
    }
    if (t == JVMPI_EVENT_THREAD_END) {
        pthread_mutex_lock(&threads_lock);
        for (int i = 0; i < n_known; i++)
            if (known_threads[i] == e->env_id) known_threads[i] = NULL;
        pthread_mutex_unlock(&threads_lock);
    }
    if (t == JVMPI_EVENT_JVM_SHUT_DOWN) shut_down = 1;
    if (t >= 0 && t < 128 && depth < 3) {
        int n = __sync_fetch_and_add(&seen[t], 1);
        if (n < first || (depth > 0 && n < first + 4)) {
            call_everything(e, ev_name(t));
        }
    }
    if (t == JVMPI_EVENT_JVM_SHUT_DOWN) line("SHUT_DOWN");
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", options ? options : "");
    for (char *save = NULL, *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        if (strncmp(o, "log=", 4) == 0) out = fopen(o + 4, "w");
        if (strncmp(o, "first=", 6) == 0) first = atoi(o + 6);
        if (strcmp(o, "suspend") == 0) opt_suspend = 1;
    }
    if (!out) out = stderr;
    jvmpi->NotifyEvent = notify;
    static const jint events[] = {
        JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN, JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END,
        JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_CLASS_UNLOAD, JVMPI_EVENT_OBJECT_ALLOC, JVMPI_EVENT_OBJECT_FREE,
        JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH, JVMPI_EVENT_MONITOR_CONTENDED_ENTER,
        JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, JVMPI_EVENT_MONITOR_CONTENDED_EXIT, JVMPI_EVENT_MONITOR_WAIT,
        JVMPI_EVENT_MONITOR_WAITED, JVMPI_EVENT_COMPILED_METHOD_LOAD, JVMPI_EVENT_METHOD_ENTRY,
        JVMPI_EVENT_METHOD_EXIT,
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        if (jvmpi->EnableEvent(events[i], NULL) != JVMPI_SUCCESS) {
            fprintf(stderr, "callall: event %s refused, giving up\n", ev_name(events[i]));
            return JNI_ERR;
        }
    }
    return JNI_OK;
}
