//! The `JVMPI_Interface` table an agent gets from `GetEnv(JVMPI_VERSION_1…)`, and its 28
//! doors. Each door converts the agent's raw pointers once and calls the room that owns the
//! function; a panic inside the shim is caught at the door and the JVMPI failure value is
//! returned.
//!
//! | function                                   | room          |
//! |--------------------------------------------|---------------|
//! | EnableEvent, DisableEvent, RequestEvent    | `events`      |
//! | GetCallTrace                               | `calltrace`   |
//! | ProfilerExit                               | `lifecycle`   |
//! | RawMonitorCreate/Enter/Exit/Wait/NotifyAll/Destroy | `monitors` |
//! | GetCurrentThreadCpuTime, SuspendThread, ResumeThread, SuspendThreadList, ResumeThreadList, GetThreadStatus, ThreadHasRun, CreateSystemThread, Set/GetThreadLocalStorage, GetThreadObject | `threads` |
//! | DisableGC, EnableGC, RunGC                 | `gc`          |
//! | GetMethodClass                             | `classes`     |
//! | jobjectID2jobject, jobject2jobjectID       | `ids`         |

use crate::abi::*;
use crate::{access, calltrace, classes, events, gc, guard, ids, jvm, lifecycle, monitors, threads};
use jvmti_bindings::sys::jni::{jboolean, jint, jlong, jmethodID, jobject, JNIEnv, JNI_ERR};
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void};

struct Table(UnsafeCell<JVMPI_Interface>);
// SAFETY: the agent writes `NotifyEvent` (and may read anything); the shim writes `version`
// before handing the table out and reads `NotifyEvent` with volatile loads. Pointer-sized
// stores are atomic on the supported targets.
unsafe impl Sync for Table {}

static TABLE: Table = Table(UnsafeCell::new(JVMPI_Interface {
    version: JVMPI_VERSION_1,
    NotifyEvent: None,
    EnableEvent: enable_event,
    DisableEvent: disable_event,
    RequestEvent: request_event,
    GetCallTrace: get_call_trace,
    ProfilerExit: profiler_exit,
    RawMonitorCreate: raw_monitor_create,
    RawMonitorEnter: raw_monitor_enter,
    RawMonitorExit: raw_monitor_exit,
    RawMonitorWait: raw_monitor_wait,
    RawMonitorNotifyAll: raw_monitor_notify_all,
    RawMonitorDestroy: raw_monitor_destroy,
    GetCurrentThreadCpuTime: get_current_thread_cpu_time,
    SuspendThread: suspend_thread,
    ResumeThread: resume_thread,
    GetThreadStatus: get_thread_status,
    ThreadHasRun: thread_has_run,
    CreateSystemThread: create_system_thread,
    SetThreadLocalStorage: set_thread_local_storage,
    GetThreadLocalStorage: get_thread_local_storage,
    DisableGC: disable_gc,
    EnableGC: enable_gc,
    RunGC: run_gc,
    GetThreadObject: get_thread_object,
    GetMethodClass: get_method_class,
    jobjectID2jobject: jobject_id_to_jobject,
    jobject2jobjectID: jobject_to_jobject_id,
    SuspendThreadList: suspend_thread_list,
    ResumeThreadList: resume_thread_list,
}));

pub fn is_jvmpi_version(v: jint) -> bool {
    matches!(v, JVMPI_VERSION_1 | JVMPI_VERSION_1_1 | JVMPI_VERSION_1_2)
}

/// The table for `GetEnv(version)`; its `version` field says which version was asked for.
pub fn for_version(version: jint) -> *mut c_void {
    let t = TABLE.0.get();
    // SAFETY: `t` points to the static table; `version` is a plain jint field.
    unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!((*t).version), version) };
    t as *mut c_void
}

/// The agent's NotifyEvent, as it is set right now.
pub fn notify_event() -> Option<NotifyEventFn> {
    let t = TABLE.0.get();
    // SAFETY: reading a pointer-sized field of the static table that the agent may write.
    unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*t).NotifyEvent)) }
}

// ---- the doors ---------------------------------------------------------------------------------

unsafe extern "C" fn enable_event(event_type: jint, arg: *mut c_void) -> jint {
    guard("EnableEvent", JVMPI_FAIL, || access::call("EnableEvent", JVMPI_NOT_AVAILABLE, || events::enable(event_type, arg)))
}

unsafe extern "C" fn disable_event(event_type: jint, arg: *mut c_void) -> jint {
    guard("DisableEvent", JVMPI_FAIL, || access::call("DisableEvent", JVMPI_SUCCESS, || events::disable(event_type, arg)))
}

unsafe extern "C" fn request_event(event_type: jint, arg: *mut c_void) -> jint {
    guard("RequestEvent", JVMPI_FAIL, || access::call("RequestEvent", JVMPI_FAIL, || events::request(event_type, arg)))
}

unsafe extern "C" fn get_call_trace(trace: *mut JVMPI_CallTrace, depth: jint) {
    guard("GetCallTrace", (), || {
        if trace.is_null() {
            log::warn!("GetCallTrace(NULL trace); ignored");
            return;
        }
        // SAFETY: the agent passes its own JVMPI_CallTrace (spec: allocated by the agent).
        let trace = unsafe { &mut *trace };
        if trace.frames.is_null() || depth <= 0 {
            if depth > 0 {
                log::warn!("GetCallTrace: NULL frames buffer; no frames");
            }
            trace.num_frames = 0;
            return;
        }
        // SAFETY: the spec makes the agent allocate `depth` frames at `trace.frames`.
        let frames = unsafe { std::slice::from_raw_parts_mut(trace.frames, depth as usize) };
        trace.num_frames = access::call("GetCallTrace", 0, || calltrace::fill(trace, frames));
    })
}

unsafe extern "C" fn profiler_exit(code: jint) {
    guard("ProfilerExit", (), || lifecycle::profiler_exit(code))
}

unsafe extern "C" fn raw_monitor_create(name: *mut c_char) -> JVMPI_RawMonitor {
    guard("RawMonitorCreate", std::ptr::null_mut(), || monitors::create(jvm::c_str(name)))
}

unsafe extern "C" fn raw_monitor_enter(m: JVMPI_RawMonitor) {
    guard("RawMonitorEnter", (), || monitors::enter(m))
}

unsafe extern "C" fn raw_monitor_exit(m: JVMPI_RawMonitor) {
    guard("RawMonitorExit", (), || monitors::exit(m))
}

unsafe extern "C" fn raw_monitor_wait(m: JVMPI_RawMonitor, ms: jlong) {
    guard("RawMonitorWait", (), || monitors::wait(m, ms))
}

unsafe extern "C" fn raw_monitor_notify_all(m: JVMPI_RawMonitor) {
    guard("RawMonitorNotifyAll", (), || monitors::notify_all(m))
}

unsafe extern "C" fn raw_monitor_destroy(m: JVMPI_RawMonitor) {
    guard("RawMonitorDestroy", (), || monitors::destroy(m))
}

unsafe extern "C" fn get_current_thread_cpu_time() -> jlong {
    guard("GetCurrentThreadCpuTime", 0, threads::current_cpu_time)
}

unsafe extern "C" fn suspend_thread(env: *mut JNIEnv) {
    guard("SuspendThread", (), || access::call("SuspendThread", (), || threads::suspend(env)))
}

unsafe extern "C" fn resume_thread(env: *mut JNIEnv) {
    guard("ResumeThread", (), || access::call("ResumeThread", (), || threads::resume(env)))
}

unsafe extern "C" fn get_thread_status(env: *mut JNIEnv) -> jint {
    // Refused: RUNNABLE, HotSpot's answer for a thread it could not read.
    guard("GetThreadStatus", JVMPI_FAIL, || access::call("GetThreadStatus", JVMPI_THREAD_RUNNABLE, || threads::status(env)))
}

unsafe extern "C" fn thread_has_run(env: *mut JNIEnv) -> jboolean {
    guard("ThreadHasRun", 0, || threads::has_run(env))
}

unsafe extern "C" fn create_system_thread(
    name: *mut c_char,
    priority: jint,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
) -> jint {
    guard("CreateSystemThread", JNI_ERR, || {
        access::call("CreateSystemThread", JNI_ERR, || {
            threads::create_system_thread(&jvm::c_str(name).unwrap_or_default(), priority, f)
        })
    })
}

unsafe extern "C" fn set_thread_local_storage(env: *mut JNIEnv, p: *mut c_void) {
    guard("SetThreadLocalStorage", (), || threads::set_tls(env, p))
}

unsafe extern "C" fn get_thread_local_storage(env: *mut JNIEnv) -> *mut c_void {
    guard("GetThreadLocalStorage", std::ptr::null_mut(), || threads::get_tls(env))
}

unsafe extern "C" fn disable_gc() {
    guard("DisableGC", (), gc::disable_gc)
}

unsafe extern "C" fn enable_gc() {
    guard("EnableGC", (), gc::enable_gc)
}

unsafe extern "C" fn run_gc() {
    guard("RunGC", (), || access::call("RunGC", (), gc::run_gc))
}

unsafe extern "C" fn get_thread_object(env: *mut JNIEnv) -> jobjectID {
    guard("GetThreadObject", std::ptr::null_mut(), || threads::get_thread_object(env))
}

unsafe extern "C" fn get_method_class(m: jmethodID) -> jobjectID {
    guard("GetMethodClass", std::ptr::null_mut(), || classes::method_class(m))
}

unsafe extern "C" fn jobject_id_to_jobject(id: jobjectID) -> jobject {
    guard("jobjectID2jobject", std::ptr::null_mut(), || {
        if id.is_null() {
            return std::ptr::null_mut();
        }
        access::call("jobjectID2jobject", std::ptr::null_mut(), || {
            ids::object_of(id).unwrap_or_else(|e| {
                log::log!(events::edge_level(None), "jobjectID2jobject: {e}; NULL");
                std::ptr::null_mut()
            })
        })
    })
}

unsafe extern "C" fn jobject_to_jobject_id(obj: jobject) -> jobjectID {
    guard("jobject2jobjectID", std::ptr::null_mut(), || {
        if obj.is_null() {
            return std::ptr::null_mut();
        }
        access::call("jobject2jobjectID", std::ptr::null_mut(), || {
            ids::id_of(obj).unwrap_or_else(|e| {
                log::log!(events::edge_level(None), "jobject2jobjectID: {e}; NULL");
                std::ptr::null_mut()
            })
        })
    })
}

unsafe extern "C" fn suspend_thread_list(count: jint, list: *mut *mut JNIEnv, results: *mut jint) {
    guard("SuspendThreadList", (), || thread_list(count, list, results, true))
}

unsafe extern "C" fn resume_thread_list(count: jint, list: *mut *mut JNIEnv, results: *mut jint) {
    guard("ResumeThreadList", (), || thread_list(count, list, results, false))
}

fn thread_list(count: jint, list: *mut *mut JNIEnv, results: *mut jint, suspend: bool) {
    if count <= 0 || list.is_null() || results.is_null() {
        if count > 0 {
            log::warn!("Suspend/ResumeThreadList: NULL list or results; ignored");
        }
        return;
    }
    // SAFETY: the agent passes `count` JNIEnv pointers and room for `count` results.
    let (envs, res) = unsafe {
        (std::slice::from_raw_parts(list, count as usize), std::slice::from_raw_parts_mut(results, count as usize))
    };
    if !access::permitted(if suspend { "SuspendThreadList" } else { "ResumeThreadList" }) {
        res.fill(JVMPI_FAIL);
        return;
    }
    threads::for_list(envs, res, suspend);
}
