/*
 * dumpagent: requests heap and object dumps (from JNI natives of the test program, which live
 * in this library) and writes what it gets for tests/dumps.rs to parse:
 *   <out>.txt       CLASS <id> <name> <num_interfaces> S <n> (<name> <sig>)* I <n> (<name> <sig>)*
 *                   THREAD <env> <name>
 *                   HEAP <seq> level=<n> bytes=<n> traces=<n>   then   TRACE <env> <frames> per trace
 *                   RESOLVE <seq> ok=<n> fail=<n>   (level 0: RequestEvent(OBJECT_ALLOC) of every ID)
 *                   OBJDUMP <seq> bytes=<n>
 *                   OBJ <name> <id>   (objects named by the program before a monitor dump)
 *                   RAWMON <name> <handle>   (the agent's raw monitors)
 *                   MONDUMP <seq> bytes=<n> traces=<n> requested=<n> parsed=<ok|bad>
 *                   MTRACE <env> <frames> <status>    per trace
 *                   MJAVA <object> <owner> <entry> enter=<env,...> notify=<env,...>
 *                   MRAW <name> <handle> <owner> <entry> enter=<env,...> notify=<env,...>
 *   <out>.<seq>.bin the dump bytes as delivered
 * Options: out=<prefix>
 */
#include <jni.h>
#include <jvmpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static JVMPI_Interface *jvmpi;
static FILE *txt;
static char prefix[1024];
static int seq;
static int resolving, resolved_ok;
static jobjectID resolving_id;

static void save(const char *begin, const char *end) {
    char path[1100];
    snprintf(path, sizeof path, "%s.%d.bin", prefix, seq);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(begin, 1, (size_t)(end - begin), f);
        fclose(f);
    }
}

static JVMPI_RawMonitor held, parked;
static volatile int holder_in, enterer_started, released;

static void envs(const char *label, const char **pp, const char *end, int *ok) {
    uint32_t n;
    if (*pp + 4 > end) { *ok = 0; return; }
    n = ((uint32_t)(unsigned char)(*pp)[0] << 24) | ((uint32_t)(unsigned char)(*pp)[1] << 16) |
        ((uint32_t)(unsigned char)(*pp)[2] << 8) | (uint32_t)(unsigned char)(*pp)[3];
    *pp += 4;
    fprintf(txt, " %s=", label);
    for (uint32_t i = 0; i < n; i++) {
        void *env;
        if (*pp + sizeof env > end) { *ok = 0; return; }
        memcpy(&env, *pp, sizeof env);
        *pp += sizeof env;
        fprintf(txt, "%s%p", i ? "," : "", env);
    }
}

static uint32_t be4(const char *p) {
    return ((uint32_t)(unsigned char)p[0] << 24) | ((uint32_t)(unsigned char)p[1] << 16) |
           ((uint32_t)(unsigned char)p[2] << 8) | (uint32_t)(unsigned char)p[3];
}

/* Walks a monitor dump record by record, as old tools did. */
static int monitor_dump(const char *p, const char *end) {
    int ok = 1;
    while (ok && p < end) {
        int type = (unsigned char)*p++;
        void *a, *b, *c;
        if (type == JVMPI_MONITOR_JAVA) {
            if (p + 2 * sizeof(void *) + 4 > end) return 0;
            memcpy(&a, p, sizeof a); p += sizeof a;
            memcpy(&b, p, sizeof b); p += sizeof b;
            fprintf(txt, "MJAVA %p %p %u", a, b, be4(p)); p += 4;
        } else if (type == JVMPI_MONITOR_RAW) {
            if (p + 3 * sizeof(void *) + 4 > end) return 0;
            memcpy(&a, p, sizeof a); p += sizeof a;
            memcpy(&b, p, sizeof b); p += sizeof b;
            memcpy(&c, p, sizeof c); p += sizeof c;
            fprintf(txt, "MRAW %s %p %p %u", a ? (const char *)a : "(null)", b, c, be4(p)); p += 4;
        } else {
            fprintf(txt, "MBAD %d\n", type);
            return 0;
        }
        envs("enter", &p, end, &ok);
        envs("notify", &p, end, &ok);
        fprintf(txt, "\n");
    }
    return ok && p == end;
}

static void notify_locked(JVMPI_Event *e);

/* One event's lines at a time: events come from several threads. */
static void notify(JVMPI_Event *e) {
    flockfile(txt);
    notify_locked(e);
    funlockfile(txt);
}

static void notify_locked(JVMPI_Event *e) {
    int requested = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    switch (e->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD: {
        fprintf(txt, "CLASS %p %s %d S %d", (void *)e->u.class_load.class_id, e->u.class_load.class_name,
                (int)e->u.class_load.num_interfaces, (int)e->u.class_load.num_static_fields);
        for (int i = 0; i < e->u.class_load.num_static_fields; i++)
            fprintf(txt, " %s %s", e->u.class_load.statics[i].field_name, e->u.class_load.statics[i].field_signature);
        fprintf(txt, " I %d", (int)e->u.class_load.num_instance_fields);
        for (int i = 0; i < e->u.class_load.num_instance_fields; i++)
            fprintf(txt, " %s %s", e->u.class_load.instances[i].field_name, e->u.class_load.instances[i].field_signature);
        fprintf(txt, "\n");
        break;
    }
    case JVMPI_EVENT_THREAD_START:
        fprintf(txt, "THREAD %p %s\n", (void *)e->u.thread_start.thread_env_id, e->u.thread_start.thread_name);
        break;
    case JVMPI_EVENT_OBJECT_ALLOC:
        if (requested && resolving && e->u.obj_alloc.obj_id == resolving_id) resolved_ok++;
        if (requested && !resolving)
            fprintf(txt, "ALLOC %p class=%p is_array=%d size=%d\n", (void *)e->u.obj_alloc.obj_id,
                    (void *)e->u.obj_alloc.class_id, (int)e->u.obj_alloc.is_array, (int)e->u.obj_alloc.size);
        break;
    case JVMPI_EVENT_HEAP_DUMP: {
        seq++;
        const char *b = e->u.heap_dump.begin, *end = e->u.heap_dump.end;
        save(b, end);
        fprintf(txt, "HEAP %d level=%d bytes=%ld traces=%d requested=%d\n", seq, e->u.heap_dump.dump_level,
                (long)(end - b), (int)e->u.heap_dump.num_traces, requested);
        for (int i = 0; i < e->u.heap_dump.num_traces; i++)
            fprintf(txt, "TRACE %p %d\n", (void *)e->u.heap_dump.traces[i].env_id, (int)e->u.heap_dump.traces[i].num_frames);
        if (e->u.heap_dump.dump_level == JVMPI_DUMP_LEVEL_0) {
            /* hprof-style: every object named by the dump can be resolved. */
            int ok = 0, fail = 0;
            for (const char *p = b; p + 1 + sizeof(void *) <= end; p += 1 + sizeof(void *)) {
                jobjectID id;
                memcpy(&id, p + 1, sizeof id);
                resolving = 1;
                resolving_id = id;
                resolved_ok = 0;
                jint rc = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id);
                resolving = 0;
                if (rc == JVMPI_SUCCESS && resolved_ok == 1) ok++; else fail++;
            }
            fprintf(txt, "RESOLVE %d ok=%d fail=%d\n", seq, ok, fail);
        }
        if (getenv("DUMPAGENT_PROBE")) {
            jint rc = jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, (jobjectID)(uintptr_t)strtoull(getenv("DUMPAGENT_PROBE"), NULL, 0));
            fprintf(txt, "PROBE rc=%d\n", (int)rc);
        }
        break;
    }
    case JVMPI_EVENT_MONITOR_DUMP: {
        seq++;
        const char *b = e->u.monitor_dump.begin, *end = e->u.monitor_dump.end;
        save(b, end);
        fprintf(txt, "MONDUMP %d bytes=%ld traces=%d requested=%d\n", seq, (long)(end - b),
                (int)e->u.monitor_dump.num_traces, requested);
        for (int i = 0; i < e->u.monitor_dump.num_traces; i++)
            fprintf(txt, "MTRACE %p %d %d\n", (void *)e->u.monitor_dump.traces[i].env_id,
                    (int)e->u.monitor_dump.traces[i].num_frames,
                    e->u.monitor_dump.threads_status ? (int)e->u.monitor_dump.threads_status[i] : -1);
        int ok = monitor_dump(b, end);
        fprintf(txt, "MONPARSED %d %s\n", seq, ok ? "ok" : "bad");
        break;
    }
    case JVMPI_EVENT_OBJECT_DUMP:
        seq++;
        save(e->u.object_dump.data, e->u.object_dump.data + e->u.object_dump.data_len);
        fprintf(txt, "OBJDUMP %d bytes=%d requested=%d\n", seq, (int)e->u.object_dump.data_len, requested);
        break;
    }
    fflush(txt);
}

JNIEXPORT jint JNICALL Java_Dumps_heapDump(JNIEnv *env, jclass c, jint level) {
    JVMPI_HeapDumpArg arg;
    arg.heap_dump_level = level;
    return jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, level < 0 ? NULL : &arg);
}

JNIEXPORT jint JNICALL Java_Dumps_objectDump(JNIEnv *env, jclass c, jobject o) {
    return jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, jvmpi->jobject2jobjectID(o));
}

/* Agent thread 1: holds "held", then waits on "parked" until released. */
static void holder(void *arg) {
    jvmpi->RawMonitorEnter(held);
    jvmpi->RawMonitorEnter(parked);
    holder_in = 1;
    while (!released) jvmpi->RawMonitorWait(parked, 0);
    jvmpi->RawMonitorExit(parked);
    jvmpi->RawMonitorExit(held);
}

/* Agent thread 2: blocks entering "held". */
static void enterer(void *arg) {
    enterer_started = 1;
    jvmpi->RawMonitorEnter(held);
    jvmpi->RawMonitorExit(held);
}

JNIEXPORT void JNICALL Java_Dumps_rawHold(JNIEnv *env, jclass c) {
    held = jvmpi->RawMonitorCreate("dumpagent held");
    parked = jvmpi->RawMonitorCreate("dumpagent parked");
    fprintf(txt, "RAWMON held %p\nRAWMON parked %p\n", (void *)held, (void *)parked);
    jvmpi->CreateSystemThread("raw-holder", JVMPI_NORMAL_PRIORITY, holder);
    while (!holder_in) usleep(1000);
    jvmpi->CreateSystemThread("raw-enterer", JVMPI_NORMAL_PRIORITY, enterer);
    while (!enterer_started) usleep(1000);
    usleep(100000); /* the enterer is blocked in RawMonitorEnter by now */
}

JNIEXPORT void JNICALL Java_Dumps_rawRelease(JNIEnv *env, jclass c) {
    jvmpi->RawMonitorEnter(parked);
    released = 1;
    jvmpi->RawMonitorNotifyAll(parked);
    jvmpi->RawMonitorExit(parked);
}

JNIEXPORT jint JNICALL Java_Dumps_monitorDump(JNIEnv *env, jclass c, jobjectArray named) {
    jsize n = (*env)->GetArrayLength(env, named);
    for (jsize i = 0; i + 1 < n; i += 2) {
        jstring name = (jstring)(*env)->GetObjectArrayElement(env, named, i);
        jobject o = (*env)->GetObjectArrayElement(env, named, i + 1);
        const char *s = (*env)->GetStringUTFChars(env, name, NULL);
        fprintf(txt, "OBJ %s %p\n", s, (void *)jvmpi->jobject2jobjectID(o));
        (*env)->ReleaseStringUTFChars(env, name, s);
    }
    fflush(txt);
    return jvmpi->RequestEvent(JVMPI_EVENT_MONITOR_DUMP, NULL);
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1_1) != JNI_OK) return JNI_ERR;
    const char *o = options ? strstr(options, "out=") : NULL;
    snprintf(prefix, sizeof prefix, "%s", o ? o + 4 : "dumpagent");
    char *comma = strchr(prefix, ',');
    if (comma) *comma = 0;
    char path[1100];
    snprintf(path, sizeof path, "%s.txt", prefix);
    txt = fopen(path, "w");
    if (!txt) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    jvmpi->EnableEvent(JVMPI_EVENT_CLASS_LOAD, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_START, NULL);
    return JNI_OK;
}
