/*
 * A minimal agent-shaped translation unit written in the common subset of
 * C89 and C++98.  tests/abi_layout.rs compiles it as C (c89, c99, c11) and as
 * C++ (c++98, c++11, c++17) with warnings as errors, to check that
 * shim/jvmpi.h works unmodified in both languages, the way legacy agents use
 * it.  It is only compiled, never run.  Part of jvmpi-shim.
 */

#include <stddef.h>
#include <string.h>

#include "jvmpi.h"
#include "jvmpi.h" /* the include guard must make a second inclusion harmless */

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static jint classes_loaded;

static void sampler(void *arg)
{
    JVMPI_CallFrame frames[4];
    JVMPI_CallTrace trace;

    trace.env_id = (JNIEnv *)arg;
    trace.frames = frames;
    jvmpi->DisableGC();
    jvmpi->SuspendThread(trace.env_id);
    if (jvmpi->ThreadHasRun(trace.env_id) == JNI_TRUE) {
        jvmpi->GetCallTrace(&trace, 4);
    }
    jvmpi->ResumeThread(trace.env_id);
    jvmpi->EnableGC();
}

static void notify_event(JVMPI_Event *event)
{
    char name[64];
    jint i;

    switch (event->event_type & ~JVMPI_REQUESTED_EVENT) {
    case JVMPI_EVENT_CLASS_LOAD:
        jvmpi->RawMonitorEnter(lock);
        classes_loaded++;
        strncpy(name, event->u.class_load.class_name, sizeof name - 1);
        name[sizeof name - 1] = '\0';
        for (i = 0; i < event->u.class_load.num_methods; i++) {
            JVMPI_Method *m = &event->u.class_load.methods[i];
            if (m->start_lineno > m->end_lineno) {
                break;
            }
        }
        jvmpi->RawMonitorExit(lock);
        break;
    case JVMPI_EVENT_THREAD_START:
        jvmpi->SetThreadLocalStorage(event->u.thread_start.thread_env_id, NULL);
        break;
    case JVMPI_EVENT_JVM_INIT_DONE:
        jvmpi->CreateSystemThread((char *)"sampler", JVMPI_NORMAL_PRIORITY,
                                  sampler);
        break;
    case JVMPI_EVENT_GC_FINISH:
        if (event->u.gc_info.used_objects < 0) {
            jvmpi->ProfilerExit((jint)1);
        }
        break;
    case JVMPI_EVENT_INSTRUCTION_START:
        if (event->u.instruction.u.lookupswitch_info.chosen_pair_index ==
            event->u.instruction.u.lookupswitch_info.pairs_total) {
            break;
        }
        break;
    case JVMPI_EVENT_OBJ_ALLOC:
        if (event->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT) {
            break;
        }
        break;
    default:
        break;
    }
}

/* The signature every legacy agent uses; the header must not declare it. */
#ifdef __cplusplus
extern "C"
#endif
JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved)
{
    JVMPI_HeapDumpArg arg;
    jint status = JVMPI_THREAD_RUNNABLE | JVMPI_THREAD_SUSPENDED;
    jint rc;

    (void)options;
    (void)reserved;
    (void)status;
#ifdef __cplusplus
    rc = vm->GetEnv((void **)&jvmpi, JVMPI_VERSION_1);
#else
    rc = (*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1);
#endif
    if (rc != JNI_OK) {
        return JNI_ERR;
    }
    jvmpi->NotifyEvent = notify_event;
    lock = jvmpi->RawMonitorCreate((char *)"_compat_lock");
    arg.heap_dump_level = JVMPI_DUMP_LEVEL_0;
    (void)arg;
    if (jvmpi->EnableEvent(JVMPI_EVENT_CLASS_LOAD, NULL) != JVMPI_SUCCESS) {
        return JNI_ERR;
    }
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_START, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_INIT_DONE, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_GC_FINISH, NULL);
    return JNI_OK;
}
