//! The JVMPI binary interface, as Sun's `jvmpi.h` laid it out on LP64 (x86_64).
//!
//! Legacy agents were compiled against that header; every struct here must match it byte for
//! byte. The measured sizes and offsets (`../shared/reference/jvmpi-abi-lp64-offsets.txt`) are
//! asserted at compile time at the bottom of this file, and `tests/abi_layout.rs` compares them
//! with what a C compiler makes of `shim/jvmpi.h`. Nothing else in the crate defines a JVMPI type.

#![allow(
    missing_docs,
    reason = "each item is the declaration of the same name in Sun's jvmpi.h (shim/jvmpi.h), documented by the JVMPI specification"
)]
#![allow(non_camel_case_types, non_snake_case, dead_code)]

use jvmti_bindings::sys::jni::{jboolean, jint, jlong, jmethodID, jobject, JNIEnv, JavaVM};
use std::ffi::{c_char, c_uchar, c_uint, c_void};

pub type jobjectID = *mut c_void;
pub type JVMPI_RawMonitor = *mut c_void;

// ---- versions and return codes -------------------------------------------------------------
pub const JVMPI_VERSION_1: jint = 0x1000_0001;
pub const JVMPI_VERSION_1_1: jint = 0x1000_0002;
pub const JVMPI_VERSION_1_2: jint = 0x1000_0003;

pub const JVMPI_SUCCESS: jint = 0;
pub const JVMPI_NOT_AVAILABLE: jint = 1;
pub const JVMPI_FAIL: jint = -1;

pub const JVMPI_REQUESTED_EVENT: jint = 0x1000_0000;

// ---- thread status and priorities ------------------------------------------------------------
pub const JVMPI_THREAD_RUNNABLE: jint = 1;
pub const JVMPI_THREAD_MONITOR_WAIT: jint = 2;
pub const JVMPI_THREAD_CONDVAR_WAIT: jint = 3;
pub const JVMPI_THREAD_SUSPENDED: jint = 0x8000;
pub const JVMPI_THREAD_INTERRUPTED: jint = 0x4000;

pub const JVMPI_MINIMUM_PRIORITY: jint = 1;
pub const JVMPI_MAXIMUM_PRIORITY: jint = 10;
pub const JVMPI_NORMAL_PRIORITY: jint = 5;

// ---- object kinds (obj_alloc.is_array, dump `ty`) -------------------------------------------
pub const JVMPI_NORMAL_OBJECT: jint = 0;
pub const JVMPI_CLASS: jint = 2;
pub const JVMPI_BOOLEAN: jint = 4;
pub const JVMPI_CHAR: jint = 5;
pub const JVMPI_FLOAT: jint = 6;
pub const JVMPI_DOUBLE: jint = 7;
pub const JVMPI_BYTE: jint = 8;
pub const JVMPI_SHORT: jint = 9;
pub const JVMPI_INT: jint = 10;
pub const JVMPI_LONG: jint = 11;

// ---- call-frame line conventions of the original implementations -----------------------------
/// No line table for the method.
pub const LINE_UNKNOWN: jint = -1;
/// The frame is a compiled method whose line could not be resolved (never produced here).
pub const LINE_COMPILED: jint = -2;
/// The frame is a native method.
pub const LINE_NATIVE: jint = -3;

// ---- event numbers ---------------------------------------------------------------------------
pub const JVMPI_EVENT_METHOD_ENTRY: jint = 1;
pub const JVMPI_EVENT_METHOD_ENTRY2: jint = 2;
pub const JVMPI_EVENT_METHOD_EXIT: jint = 3;
pub const JVMPI_EVENT_OBJECT_ALLOC: jint = 4;
pub const JVMPI_EVENT_OBJECT_FREE: jint = 5;
pub const JVMPI_EVENT_OBJECT_MOVE: jint = 6;
pub const JVMPI_EVENT_COMPILED_METHOD_LOAD: jint = 7;
pub const JVMPI_EVENT_COMPILED_METHOD_UNLOAD: jint = 8;
pub const JVMPI_EVENT_INSTRUCTION_START: jint = 9;
pub const JVMPI_EVENT_THREAD_START: jint = 33;
pub const JVMPI_EVENT_THREAD_END: jint = 34;
pub const JVMPI_EVENT_CLASS_LOAD_HOOK: jint = 35;
pub const JVMPI_EVENT_HEAP_DUMP: jint = 37;
pub const JVMPI_EVENT_JNI_GLOBALREF_ALLOC: jint = 38;
pub const JVMPI_EVENT_JNI_GLOBALREF_FREE: jint = 39;
pub const JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC: jint = 40;
pub const JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE: jint = 41;
pub const JVMPI_EVENT_CLASS_LOAD: jint = 42;
pub const JVMPI_EVENT_CLASS_UNLOAD: jint = 43;
pub const JVMPI_EVENT_DATA_DUMP_REQUEST: jint = 44;
pub const JVMPI_EVENT_DATA_RESET_REQUEST: jint = 45;
pub const JVMPI_EVENT_JVM_INIT_DONE: jint = 46;
pub const JVMPI_EVENT_JVM_SHUT_DOWN: jint = 47;
pub const JVMPI_EVENT_ARENA_NEW: jint = 48;
pub const JVMPI_EVENT_ARENA_DELETE: jint = 49;
pub const JVMPI_EVENT_OBJECT_DUMP: jint = 50;
pub const JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER: jint = 51;
pub const JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED: jint = 52;
pub const JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT: jint = 53;
pub const JVMPI_EVENT_MONITOR_CONTENDED_ENTER: jint = 54;
pub const JVMPI_EVENT_MONITOR_CONTENDED_ENTERED: jint = 55;
pub const JVMPI_EVENT_MONITOR_CONTENDED_EXIT: jint = 56;
pub const JVMPI_EVENT_MONITOR_WAIT: jint = 57;
pub const JVMPI_EVENT_MONITOR_WAITED: jint = 58;
pub const JVMPI_EVENT_MONITOR_DUMP: jint = 59;
pub const JVMPI_EVENT_GC_START: jint = 60;
pub const JVMPI_EVENT_GC_FINISH: jint = 61;
pub const JVMPI_MAX_EVENT_TYPE_VAL: jint = 61;

// ---- structs ---------------------------------------------------------------------------------
#[repr(C)]
#[derive(Clone, Copy)]
pub struct JVMPI_CallFrame {
    pub lineno: jint,
    pub method_id: jmethodID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct JVMPI_CallTrace {
    pub env_id: *mut JNIEnv,
    pub num_frames: jint,
    pub frames: *mut JVMPI_CallFrame,
}

#[repr(C)]
pub struct JVMPI_Method {
    pub method_name: *mut c_char,
    pub method_signature: *mut c_char,
    pub start_lineno: jint,
    pub end_lineno: jint,
    pub method_id: jmethodID,
}

#[repr(C)]
pub struct JVMPI_Field {
    pub field_name: *mut c_char,
    pub field_signature: *mut c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct JVMPI_HeapDumpArg {
    pub heap_dump_level: jint,
}

#[repr(C)]
pub struct JVMPI_Lineno {
    pub offset: jint,
    pub lineno: jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ClassLoad {
    pub class_name: *mut c_char,
    pub source_name: *mut c_char,
    pub num_interfaces: jint,
    pub num_methods: jint,
    pub methods: *mut JVMPI_Method,
    pub num_static_fields: jint,
    pub statics: *mut JVMPI_Field,
    pub num_instance_fields: jint,
    pub instances: *mut JVMPI_Field,
    pub class_id: jobjectID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ClassUnload {
    pub class_id: jobjectID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ClassLoadHook {
    pub class_data: *mut c_uchar,
    pub class_data_len: jint,
    pub new_class_data: *mut c_uchar,
    pub new_class_data_len: jint,
    pub malloc_f: Option<unsafe extern "C" fn(c_uint) -> *mut c_void>,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ObjAlloc {
    pub arena_id: jint,
    pub class_id: jobjectID,
    pub is_array: jint,
    pub size: jint,
    pub obj_id: jobjectID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ObjFree {
    pub obj_id: jobjectID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ObjMove {
    pub arena_id: jint,
    pub obj_id: jobjectID,
    pub new_arena_id: jint,
    pub new_obj_id: jobjectID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct NewArena {
    pub arena_id: jint,
    pub arena_name: *mut c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DeleteArena {
    pub arena_id: jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ThreadStart {
    pub thread_name: *mut c_char,
    pub group_name: *mut c_char,
    pub parent_name: *mut c_char,
    pub thread_id: jobjectID,
    pub thread_env_id: *mut JNIEnv,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct HeapDump {
    pub dump_level: jint,
    pub begin: *mut c_char,
    pub end: *mut c_char,
    pub num_traces: jint,
    pub traces: *mut JVMPI_CallTrace,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct JniGlobalrefAlloc {
    pub obj_id: jobjectID,
    pub ref_id: jobject,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct JniGlobalrefFree {
    pub ref_id: jobject,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Method {
    pub method_id: jmethodID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct MethodEntry2 {
    pub method_id: jmethodID,
    pub obj_id: jobjectID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct CompiledMethodLoad {
    pub method_id: jmethodID,
    pub code_addr: *mut c_void,
    pub code_size: jint,
    pub lineno_table_size: jint,
    pub lineno_table: *mut JVMPI_Lineno,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct CompiledMethodUnload {
    pub method_id: jmethodID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct IfInfo {
    pub is_true: jboolean,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct TableswitchInfo {
    pub key: jint,
    pub low: jint,
    pub hi: jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct LookupswitchInfo {
    pub chosen_pair_index: jint,
    pub pairs_total: jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union InstructionInfo {
    pub if_info: IfInfo,
    pub tableswitch_info: TableswitchInfo,
    pub lookupswitch_info: LookupswitchInfo,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Instruction {
    pub method_id: jmethodID,
    pub offset: jint,
    pub u: InstructionInfo,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct MonitorDump {
    pub begin: *mut c_char,
    pub end: *mut c_char,
    pub num_traces: jint,
    pub traces: *mut JVMPI_CallTrace,
    pub threads_status: *mut jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct RawMonitorInfo {
    pub name: *mut c_char,
    pub id: JVMPI_RawMonitor,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Monitor {
    pub object: jobjectID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct MonitorWait {
    pub object: jobjectID,
    pub timeout: jlong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct GcInfo {
    pub used_objects: jlong,
    pub used_object_space: jlong,
    pub total_object_space: jlong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ObjectDump {
    pub data_len: jint,
    pub data: *mut c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union EventData {
    pub class_load: ClassLoad,
    pub class_unload: ClassUnload,
    pub class_load_hook: ClassLoadHook,
    pub obj_alloc: ObjAlloc,
    pub obj_free: ObjFree,
    pub obj_move: ObjMove,
    pub new_arena: NewArena,
    pub delete_arena: DeleteArena,
    pub thread_start: ThreadStart,
    pub heap_dump: HeapDump,
    pub jni_globalref_alloc: JniGlobalrefAlloc,
    pub jni_globalref_free: JniGlobalrefFree,
    pub method: Method,
    pub method_entry2: MethodEntry2,
    pub compiled_method_load: CompiledMethodLoad,
    pub compiled_method_unload: CompiledMethodUnload,
    pub instruction: Instruction,
    pub monitor_dump: MonitorDump,
    pub raw_monitor: RawMonitorInfo,
    pub monitor: Monitor,
    pub monitor_wait: MonitorWait,
    pub gc_info: GcInfo,
    pub object_dump: ObjectDump,
    /// Pads the union to its C size; zero-initialising through it clears every member.
    pub raw: [u64; 9],
}

#[repr(C)]
pub struct JVMPI_Event {
    pub event_type: jint,
    pub env_id: *mut JNIEnv,
    pub u: EventData,
}

impl JVMPI_Event {
    /// An event of `event_type` sent in thread `env`, with every union member zeroed.
    pub fn new(event_type: jint, env: *mut JNIEnv) -> Self {
        JVMPI_Event { event_type, env_id: env, u: EventData { raw: [0; 9] } }
    }
}

pub type NotifyEventFn = unsafe extern "C" fn(event: *mut JVMPI_Event);

/// The function table an agent gets from `GetEnv(JVMPI_VERSION_1…)`. Field order is ABI.
#[repr(C)]
pub struct JVMPI_Interface {
    pub version: jint,
    pub NotifyEvent: Option<NotifyEventFn>,
    pub EnableEvent: unsafe extern "C" fn(event_type: jint, arg: *mut c_void) -> jint,
    pub DisableEvent: unsafe extern "C" fn(event_type: jint, arg: *mut c_void) -> jint,
    pub RequestEvent: unsafe extern "C" fn(event_type: jint, arg: *mut c_void) -> jint,
    pub GetCallTrace: unsafe extern "C" fn(trace: *mut JVMPI_CallTrace, depth: jint),
    pub ProfilerExit: unsafe extern "C" fn(code: jint),
    pub RawMonitorCreate: unsafe extern "C" fn(name: *mut c_char) -> JVMPI_RawMonitor,
    pub RawMonitorEnter: unsafe extern "C" fn(m: JVMPI_RawMonitor),
    pub RawMonitorExit: unsafe extern "C" fn(m: JVMPI_RawMonitor),
    pub RawMonitorWait: unsafe extern "C" fn(m: JVMPI_RawMonitor, ms: jlong),
    pub RawMonitorNotifyAll: unsafe extern "C" fn(m: JVMPI_RawMonitor),
    pub RawMonitorDestroy: unsafe extern "C" fn(m: JVMPI_RawMonitor),
    pub GetCurrentThreadCpuTime: unsafe extern "C" fn() -> jlong,
    pub SuspendThread: unsafe extern "C" fn(env: *mut JNIEnv),
    pub ResumeThread: unsafe extern "C" fn(env: *mut JNIEnv),
    pub GetThreadStatus: unsafe extern "C" fn(env: *mut JNIEnv) -> jint,
    pub ThreadHasRun: unsafe extern "C" fn(env: *mut JNIEnv) -> jboolean,
    pub CreateSystemThread:
        unsafe extern "C" fn(name: *mut c_char, priority: jint, f: Option<unsafe extern "C" fn(*mut c_void)>) -> jint,
    pub SetThreadLocalStorage: unsafe extern "C" fn(env: *mut JNIEnv, ptr: *mut c_void),
    pub GetThreadLocalStorage: unsafe extern "C" fn(env: *mut JNIEnv) -> *mut c_void,
    pub DisableGC: unsafe extern "C" fn(),
    pub EnableGC: unsafe extern "C" fn(),
    pub RunGC: unsafe extern "C" fn(),
    pub GetThreadObject: unsafe extern "C" fn(env: *mut JNIEnv) -> jobjectID,
    pub GetMethodClass: unsafe extern "C" fn(mid: jmethodID) -> jobjectID,
    pub jobjectID2jobject: unsafe extern "C" fn(id: jobjectID) -> jobject,
    pub jobject2jobjectID: unsafe extern "C" fn(obj: jobject) -> jobjectID,
    pub SuspendThreadList: unsafe extern "C" fn(count: jint, list: *mut *mut JNIEnv, results: *mut jint),
    pub ResumeThreadList: unsafe extern "C" fn(count: jint, list: *mut *mut JNIEnv, results: *mut jint),
}

/// The legacy entry point: `jint JVM_OnLoad(JavaVM *vm, char *options, void *reserved)`.
pub type JvmOnLoadFn = unsafe extern "C" fn(vm: *mut JavaVM, options: *mut c_char, reserved: *mut c_void) -> jint;

// ---- compile-time layout checks (values from jvmpi-abi-lp64-offsets.txt) -----------------------
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<JVMPI_CallFrame>() == 16 && align_of::<JVMPI_CallFrame>() == 8);
    assert!(offset_of!(JVMPI_CallFrame, method_id) == 8);
    assert!(size_of::<JVMPI_CallTrace>() == 24);
    assert!(offset_of!(JVMPI_CallTrace, num_frames) == 8 && offset_of!(JVMPI_CallTrace, frames) == 16);
    assert!(size_of::<JVMPI_Method>() == 32);
    assert!(offset_of!(JVMPI_Method, start_lineno) == 16 && offset_of!(JVMPI_Method, end_lineno) == 20);
    assert!(offset_of!(JVMPI_Method, method_id) == 24);
    assert!(size_of::<JVMPI_Field>() == 16);
    assert!(size_of::<JVMPI_Lineno>() == 8 && align_of::<JVMPI_Lineno>() == 4);
    assert!(size_of::<JVMPI_HeapDumpArg>() == 4);
    assert!(size_of::<JVMPI_Event>() == 88 && align_of::<JVMPI_Event>() == 8);
    assert!(offset_of!(JVMPI_Event, env_id) == 8 && offset_of!(JVMPI_Event, u) == 16);
    assert!(size_of::<ClassLoad>() == 72);
    assert!(offset_of!(ClassLoad, num_interfaces) == 16 && offset_of!(ClassLoad, num_methods) == 20);
    assert!(offset_of!(ClassLoad, methods) == 24 && offset_of!(ClassLoad, num_static_fields) == 32);
    assert!(offset_of!(ClassLoad, statics) == 40 && offset_of!(ClassLoad, num_instance_fields) == 48);
    assert!(offset_of!(ClassLoad, instances) == 56 && offset_of!(ClassLoad, class_id) == 64);
    assert!(size_of::<ClassLoadHook>() == 40);
    assert!(offset_of!(ClassLoadHook, class_data_len) == 8 && offset_of!(ClassLoadHook, new_class_data) == 16);
    assert!(offset_of!(ClassLoadHook, new_class_data_len) == 24 && offset_of!(ClassLoadHook, malloc_f) == 32);
    assert!(size_of::<ObjAlloc>() == 32);
    assert!(offset_of!(ObjAlloc, class_id) == 8 && offset_of!(ObjAlloc, is_array) == 16);
    assert!(offset_of!(ObjAlloc, size) == 20 && offset_of!(ObjAlloc, obj_id) == 24);
    assert!(
        size_of::<ObjMove>() == 32 && offset_of!(ObjMove, new_arena_id) == 16 && offset_of!(ObjMove, new_obj_id) == 24
    );
    assert!(size_of::<NewArena>() == 16 && offset_of!(NewArena, arena_name) == 8);
    assert!(size_of::<DeleteArena>() == 4);
    assert!(size_of::<ThreadStart>() == 40 && offset_of!(ThreadStart, thread_env_id) == 32);
    assert!(
        size_of::<HeapDump>() == 40 && offset_of!(HeapDump, num_traces) == 24 && offset_of!(HeapDump, traces) == 32
    );
    assert!(size_of::<JniGlobalrefAlloc>() == 16);
    assert!(size_of::<MethodEntry2>() == 16);
    assert!(size_of::<CompiledMethodLoad>() == 32);
    assert!(offset_of!(CompiledMethodLoad, code_size) == 16 && offset_of!(CompiledMethodLoad, lineno_table_size) == 20);
    assert!(offset_of!(CompiledMethodLoad, lineno_table) == 24);
    assert!(size_of::<Instruction>() == 24 && offset_of!(Instruction, offset) == 8 && offset_of!(Instruction, u) == 12);
    assert!(offset_of!(TableswitchInfo, low) == 4 && offset_of!(TableswitchInfo, hi) == 8);
    assert!(size_of::<MonitorDump>() == 40 && offset_of!(MonitorDump, num_traces) == 16);
    assert!(offset_of!(MonitorDump, traces) == 24 && offset_of!(MonitorDump, threads_status) == 32);
    assert!(size_of::<RawMonitorInfo>() == 16 && offset_of!(RawMonitorInfo, id) == 8);
    assert!(size_of::<MonitorWait>() == 16 && offset_of!(MonitorWait, timeout) == 8);
    assert!(size_of::<GcInfo>() == 24 && offset_of!(GcInfo, total_object_space) == 16);
    assert!(size_of::<ObjectDump>() == 16 && offset_of!(ObjectDump, data) == 8);
    assert!(size_of::<EventData>() == 72);
    assert!(size_of::<JVMPI_Interface>() == 240);
    assert!(offset_of!(JVMPI_Interface, NotifyEvent) == 8);
    assert!(offset_of!(JVMPI_Interface, GetCallTrace) == 40);
    assert!(offset_of!(JVMPI_Interface, RawMonitorCreate) == 56);
    assert!(offset_of!(JVMPI_Interface, GetCurrentThreadCpuTime) == 104);
    assert!(offset_of!(JVMPI_Interface, CreateSystemThread) == 144);
    assert!(offset_of!(JVMPI_Interface, DisableGC) == 168);
    assert!(offset_of!(JVMPI_Interface, GetThreadObject) == 192);
    assert!(offset_of!(JVMPI_Interface, jobject2jobjectID) == 216);
    assert!(offset_of!(JVMPI_Interface, SuspendThreadList) == 224);
    assert!(offset_of!(JVMPI_Interface, ResumeThreadList) == 232);
};

/// `JVMPI_HeapDumpArg.heap_dump_level`: the three levels of HEAP_DUMP.
pub const JVMPI_DUMP_LEVEL_0: jint = 0;
pub const JVMPI_DUMP_LEVEL_1: jint = 1;
pub const JVMPI_DUMP_LEVEL_2: jint = 2;
