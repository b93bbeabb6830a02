/*
 * Prints the layout of every structure in shim/jvmpi.h and the value of
 * every constant it defines, one fact per line, in the format of
 * expected-offsets.txt and (with a "const " prefix) expected-constants.txt:
 *
 *   sizeof NAME = N (align A)
 *   offset NAME.member = N
 *   offset NAME.member = N size S      (for each event-specific struct)
 *   const NAME=VALUE
 *
 * Built and run by tests/abi_layout.rs, which compares the output with the
 * expected files.  Part of jvmpi-shim.
 */

#include <stddef.h>
#include <stdio.h>

#include "jvmpi.h"

/* sizeof NAME = N (align A) */
#define SIZE(T) \
    printf("sizeof %s = %zu (align %zu)\n", #T, sizeof(T), _Alignof(T))

/* offset NAME.member = N */
#define OFFSET(T, M) \
    printf("offset %s.%s = %zu\n", #T, #M, offsetof(T, M))

/* offset NAME.member = N size S */
#define MEMBER(T, M) \
    printf("offset %s.%s = %zu size %zu\n", #T, #M, offsetof(T, M), \
           sizeof(((T *)0)->M))

/* const NAME=VALUE */
#define CONST(C) printf("const %s=%ld\n", #C, (long)(C))

static void print_layout(void)
{
    SIZE(JVMPI_CallFrame);
    OFFSET(JVMPI_CallFrame, lineno);
    OFFSET(JVMPI_CallFrame, method_id);

    SIZE(JVMPI_CallTrace);
    OFFSET(JVMPI_CallTrace, env_id);
    OFFSET(JVMPI_CallTrace, num_frames);
    OFFSET(JVMPI_CallTrace, frames);

    SIZE(JVMPI_Method);
    OFFSET(JVMPI_Method, method_name);
    OFFSET(JVMPI_Method, method_signature);
    OFFSET(JVMPI_Method, start_lineno);
    OFFSET(JVMPI_Method, end_lineno);
    OFFSET(JVMPI_Method, method_id);

    SIZE(JVMPI_Field);
    OFFSET(JVMPI_Field, field_name);
    OFFSET(JVMPI_Field, field_signature);

    SIZE(JVMPI_Lineno);
    OFFSET(JVMPI_Lineno, offset);
    OFFSET(JVMPI_Lineno, lineno);

    SIZE(JVMPI_HeapDumpArg);

    SIZE(JVMPI_Event);
    OFFSET(JVMPI_Event, event_type);
    OFFSET(JVMPI_Event, env_id);
    OFFSET(JVMPI_Event, u);

    MEMBER(JVMPI_Event, u.class_load);
    OFFSET(JVMPI_Event, u.class_load.class_name);
    OFFSET(JVMPI_Event, u.class_load.source_name);
    OFFSET(JVMPI_Event, u.class_load.num_interfaces);
    OFFSET(JVMPI_Event, u.class_load.num_methods);
    OFFSET(JVMPI_Event, u.class_load.methods);
    OFFSET(JVMPI_Event, u.class_load.num_static_fields);
    OFFSET(JVMPI_Event, u.class_load.statics);
    OFFSET(JVMPI_Event, u.class_load.num_instance_fields);
    OFFSET(JVMPI_Event, u.class_load.instances);
    OFFSET(JVMPI_Event, u.class_load.class_id);

    MEMBER(JVMPI_Event, u.class_unload);
    OFFSET(JVMPI_Event, u.class_unload.class_id);

    MEMBER(JVMPI_Event, u.class_load_hook);
    OFFSET(JVMPI_Event, u.class_load_hook.class_data);
    OFFSET(JVMPI_Event, u.class_load_hook.class_data_len);
    OFFSET(JVMPI_Event, u.class_load_hook.new_class_data);
    OFFSET(JVMPI_Event, u.class_load_hook.new_class_data_len);
    OFFSET(JVMPI_Event, u.class_load_hook.malloc_f);

    MEMBER(JVMPI_Event, u.obj_alloc);
    OFFSET(JVMPI_Event, u.obj_alloc.arena_id);
    OFFSET(JVMPI_Event, u.obj_alloc.class_id);
    OFFSET(JVMPI_Event, u.obj_alloc.is_array);
    OFFSET(JVMPI_Event, u.obj_alloc.size);
    OFFSET(JVMPI_Event, u.obj_alloc.obj_id);

    MEMBER(JVMPI_Event, u.obj_free);
    OFFSET(JVMPI_Event, u.obj_free.obj_id);

    MEMBER(JVMPI_Event, u.obj_move);
    OFFSET(JVMPI_Event, u.obj_move.arena_id);
    OFFSET(JVMPI_Event, u.obj_move.obj_id);
    OFFSET(JVMPI_Event, u.obj_move.new_arena_id);
    OFFSET(JVMPI_Event, u.obj_move.new_obj_id);

    MEMBER(JVMPI_Event, u.new_arena);
    OFFSET(JVMPI_Event, u.new_arena.arena_id);
    OFFSET(JVMPI_Event, u.new_arena.arena_name);

    MEMBER(JVMPI_Event, u.delete_arena);
    OFFSET(JVMPI_Event, u.delete_arena.arena_id);

    MEMBER(JVMPI_Event, u.thread_start);
    OFFSET(JVMPI_Event, u.thread_start.thread_name);
    OFFSET(JVMPI_Event, u.thread_start.group_name);
    OFFSET(JVMPI_Event, u.thread_start.parent_name);
    OFFSET(JVMPI_Event, u.thread_start.thread_id);
    OFFSET(JVMPI_Event, u.thread_start.thread_env_id);

    MEMBER(JVMPI_Event, u.heap_dump);
    OFFSET(JVMPI_Event, u.heap_dump.dump_level);
    OFFSET(JVMPI_Event, u.heap_dump.begin);
    OFFSET(JVMPI_Event, u.heap_dump.end);
    OFFSET(JVMPI_Event, u.heap_dump.num_traces);
    OFFSET(JVMPI_Event, u.heap_dump.traces);

    MEMBER(JVMPI_Event, u.jni_globalref_alloc);
    OFFSET(JVMPI_Event, u.jni_globalref_alloc.obj_id);
    OFFSET(JVMPI_Event, u.jni_globalref_alloc.ref_id);

    MEMBER(JVMPI_Event, u.jni_globalref_free);
    OFFSET(JVMPI_Event, u.jni_globalref_free.ref_id);

    MEMBER(JVMPI_Event, u.method);
    OFFSET(JVMPI_Event, u.method.method_id);

    MEMBER(JVMPI_Event, u.method_entry2);
    OFFSET(JVMPI_Event, u.method_entry2.method_id);
    OFFSET(JVMPI_Event, u.method_entry2.obj_id);

    MEMBER(JVMPI_Event, u.compiled_method_load);
    OFFSET(JVMPI_Event, u.compiled_method_load.method_id);
    OFFSET(JVMPI_Event, u.compiled_method_load.code_addr);
    OFFSET(JVMPI_Event, u.compiled_method_load.code_size);
    OFFSET(JVMPI_Event, u.compiled_method_load.lineno_table_size);
    OFFSET(JVMPI_Event, u.compiled_method_load.lineno_table);

    MEMBER(JVMPI_Event, u.compiled_method_unload);
    OFFSET(JVMPI_Event, u.compiled_method_unload.method_id);

    MEMBER(JVMPI_Event, u.instruction);
    OFFSET(JVMPI_Event, u.instruction.method_id);
    OFFSET(JVMPI_Event, u.instruction.offset);
    OFFSET(JVMPI_Event, u.instruction.u.if_info.is_true);
    OFFSET(JVMPI_Event, u.instruction.u.tableswitch_info.key);
    OFFSET(JVMPI_Event, u.instruction.u.tableswitch_info.low);
    OFFSET(JVMPI_Event, u.instruction.u.tableswitch_info.hi);
    OFFSET(JVMPI_Event, u.instruction.u.lookupswitch_info.chosen_pair_index);

    MEMBER(JVMPI_Event, u.monitor_dump);
    OFFSET(JVMPI_Event, u.monitor_dump.begin);
    OFFSET(JVMPI_Event, u.monitor_dump.end);
    OFFSET(JVMPI_Event, u.monitor_dump.num_traces);
    OFFSET(JVMPI_Event, u.monitor_dump.traces);
    OFFSET(JVMPI_Event, u.monitor_dump.threads_status);

    MEMBER(JVMPI_Event, u.raw_monitor);
    OFFSET(JVMPI_Event, u.raw_monitor.name);
    OFFSET(JVMPI_Event, u.raw_monitor.id);

    MEMBER(JVMPI_Event, u.monitor);
    OFFSET(JVMPI_Event, u.monitor.object);

    MEMBER(JVMPI_Event, u.monitor_wait);
    OFFSET(JVMPI_Event, u.monitor_wait.object);
    OFFSET(JVMPI_Event, u.monitor_wait.timeout);

    MEMBER(JVMPI_Event, u.gc_info);
    OFFSET(JVMPI_Event, u.gc_info.used_objects);
    OFFSET(JVMPI_Event, u.gc_info.used_object_space);
    OFFSET(JVMPI_Event, u.gc_info.total_object_space);

    MEMBER(JVMPI_Event, u.object_dump);
    OFFSET(JVMPI_Event, u.object_dump.data_len);
    OFFSET(JVMPI_Event, u.object_dump.data);

    SIZE(JVMPI_Interface);
    OFFSET(JVMPI_Interface, version);
    OFFSET(JVMPI_Interface, NotifyEvent);
    OFFSET(JVMPI_Interface, EnableEvent);
    OFFSET(JVMPI_Interface, DisableEvent);
    OFFSET(JVMPI_Interface, RequestEvent);
    OFFSET(JVMPI_Interface, GetCallTrace);
    OFFSET(JVMPI_Interface, ProfilerExit);
    OFFSET(JVMPI_Interface, RawMonitorCreate);
    OFFSET(JVMPI_Interface, RawMonitorEnter);
    OFFSET(JVMPI_Interface, RawMonitorExit);
    OFFSET(JVMPI_Interface, RawMonitorWait);
    OFFSET(JVMPI_Interface, RawMonitorNotifyAll);
    OFFSET(JVMPI_Interface, RawMonitorDestroy);
    OFFSET(JVMPI_Interface, GetCurrentThreadCpuTime);
    OFFSET(JVMPI_Interface, SuspendThread);
    OFFSET(JVMPI_Interface, ResumeThread);
    OFFSET(JVMPI_Interface, GetThreadStatus);
    OFFSET(JVMPI_Interface, ThreadHasRun);
    OFFSET(JVMPI_Interface, CreateSystemThread);
    OFFSET(JVMPI_Interface, SetThreadLocalStorage);
    OFFSET(JVMPI_Interface, GetThreadLocalStorage);
    OFFSET(JVMPI_Interface, DisableGC);
    OFFSET(JVMPI_Interface, EnableGC);
    OFFSET(JVMPI_Interface, RunGC);
    OFFSET(JVMPI_Interface, GetThreadObject);
    OFFSET(JVMPI_Interface, GetMethodClass);
    OFFSET(JVMPI_Interface, jobjectID2jobject);
    OFFSET(JVMPI_Interface, jobject2jobjectID);
    OFFSET(JVMPI_Interface, SuspendThreadList);
    OFFSET(JVMPI_Interface, ResumeThreadList);
}

static void print_constants(void)
{
    CONST(JVMPI_VERSION_1);
    CONST(JVMPI_VERSION_1_1);
    CONST(JVMPI_VERSION_1_2);
    CONST(JVMPI_SUCCESS);
    CONST(JVMPI_NOT_AVAILABLE);
    CONST(JVMPI_FAIL);
    CONST(JVMPI_REQUESTED_EVENT);
    CONST(JVMPI_THREAD_RUNNABLE);
    CONST(JVMPI_THREAD_MONITOR_WAIT);
    CONST(JVMPI_THREAD_CONDVAR_WAIT);
    CONST(JVMPI_THREAD_SUSPENDED);
    CONST(JVMPI_THREAD_INTERRUPTED);
    CONST(JVMPI_MINIMUM_PRIORITY);
    CONST(JVMPI_NORMAL_PRIORITY);
    CONST(JVMPI_MAXIMUM_PRIORITY);
    CONST(JVMPI_NORMAL_OBJECT);
    CONST(JVMPI_CLASS);
    CONST(JVMPI_BOOLEAN);
    CONST(JVMPI_CHAR);
    CONST(JVMPI_FLOAT);
    CONST(JVMPI_DOUBLE);
    CONST(JVMPI_BYTE);
    CONST(JVMPI_SHORT);
    CONST(JVMPI_INT);
    CONST(JVMPI_LONG);
    CONST(JVMPI_MONITOR_JAVA);
    CONST(JVMPI_MONITOR_RAW);
    CONST(JVMPI_GC_ROOT_UNKNOWN);
    CONST(JVMPI_GC_ROOT_JNI_GLOBAL);
    CONST(JVMPI_GC_ROOT_JNI_LOCAL);
    CONST(JVMPI_GC_ROOT_JAVA_FRAME);
    CONST(JVMPI_GC_ROOT_NATIVE_STACK);
    CONST(JVMPI_GC_ROOT_STICKY_CLASS);
    CONST(JVMPI_GC_ROOT_THREAD_BLOCK);
    CONST(JVMPI_GC_ROOT_MONITOR_USED);
    CONST(JVMPI_GC_ROOT_THREAD_OBJ);
    CONST(JVMPI_GC_CLASS_DUMP);
    CONST(JVMPI_GC_INSTANCE_DUMP);
    CONST(JVMPI_GC_OBJ_ARRAY_DUMP);
    CONST(JVMPI_GC_PRIM_ARRAY_DUMP);
    CONST(JVMPI_DUMP_LEVEL_0);
    CONST(JVMPI_DUMP_LEVEL_1);
    CONST(JVMPI_DUMP_LEVEL_2);
    CONST(JVMPI_EVENT_METHOD_ENTRY);
    CONST(JVMPI_EVENT_METHOD_ENTRY2);
    CONST(JVMPI_EVENT_METHOD_EXIT);
    CONST(JVMPI_EVENT_OBJECT_ALLOC);
    CONST(JVMPI_EVENT_OBJECT_FREE);
    CONST(JVMPI_EVENT_OBJECT_MOVE);
    CONST(JVMPI_EVENT_COMPILED_METHOD_LOAD);
    CONST(JVMPI_EVENT_COMPILED_METHOD_UNLOAD);
    CONST(JVMPI_EVENT_INSTRUCTION_START);
    CONST(JVMPI_EVENT_THREAD_START);
    CONST(JVMPI_EVENT_THREAD_END);
    CONST(JVMPI_EVENT_CLASS_LOAD_HOOK);
    CONST(JVMPI_EVENT_HEAP_DUMP);
    CONST(JVMPI_EVENT_JNI_GLOBALREF_ALLOC);
    CONST(JVMPI_EVENT_JNI_GLOBALREF_FREE);
    CONST(JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC);
    CONST(JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE);
    CONST(JVMPI_EVENT_CLASS_LOAD);
    CONST(JVMPI_EVENT_CLASS_UNLOAD);
    CONST(JVMPI_EVENT_DATA_DUMP_REQUEST);
    CONST(JVMPI_EVENT_DATA_RESET_REQUEST);
    CONST(JVMPI_EVENT_JVM_INIT_DONE);
    CONST(JVMPI_EVENT_JVM_SHUT_DOWN);
    CONST(JVMPI_EVENT_ARENA_NEW);
    CONST(JVMPI_EVENT_ARENA_DELETE);
    CONST(JVMPI_EVENT_OBJECT_DUMP);
    CONST(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER);
    CONST(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED);
    CONST(JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT);
    CONST(JVMPI_EVENT_MONITOR_CONTENDED_ENTER);
    CONST(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED);
    CONST(JVMPI_EVENT_MONITOR_CONTENDED_EXIT);
    CONST(JVMPI_EVENT_MONITOR_WAIT);
    CONST(JVMPI_EVENT_MONITOR_WAITED);
    CONST(JVMPI_EVENT_MONITOR_DUMP);
    CONST(JVMPI_EVENT_GC_START);
    CONST(JVMPI_EVENT_GC_FINISH);
    CONST(JVMPI_MAX_EVENT_TYPE_VAL);
    CONST(JVMPI_EVENT_LOAD_COMPILED_METHOD);
    CONST(JVMPI_EVENT_UNLOAD_COMPILED_METHOD);
    CONST(JVMPI_EVENT_NEW_ARENA);
    CONST(JVMPI_EVENT_DELETE_ARENA);
    CONST(JVMPI_EVENT_DUMP_DATA_REQUEST);
    CONST(JVMPI_EVENT_RESET_DATA_REQUEST);
    CONST(JVMPI_EVENT_OBJ_ALLOC);
    CONST(JVMPI_EVENT_OBJ_FREE);
    CONST(JVMPI_EVENT_OBJ_MOVE);
}

int main(void)
{
    print_layout();
    print_constants();
    return fflush(stdout) == 0 ? 0 : 1;
}
