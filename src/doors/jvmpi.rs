//! The `JVMPI_Interface` table an agent gets from `GetEnv(JVMPI_VERSION_1…)`, and its 28
//! doors. Each door converts the agent's raw pointers once and calls the room that owns the
//! function; a panic inside the shim is caught at the door and the JVMPI failure value is
//! returned.
//!
//! | function                                   | room          |
//! |--------------------------------------------|---------------|
//! | EnableEvent, DisableEvent, RequestEvent    | `control`     |
//! | GetCallTrace                               | `calltrace`   |
//! | ProfilerExit                               | `lifecycle`   |
//! | RawMonitorCreate/Enter/Exit/Wait/NotifyAll/Destroy | `monitors` |
//! | GetCurrentThreadCpuTime, SuspendThread, ResumeThread, SuspendThreadList, ResumeThreadList, GetThreadStatus, ThreadHasRun, CreateSystemThread, Set/GetThreadLocalStorage, GetThreadObject | `threads` |
//! | DisableGC, EnableGC, RunGC                 | `gc`          |
//! | GetMethodClass                             | `classes`     |
//! | jobjectID2jobject, jobject2jobjectID       | `ids`         |
//!
//! Who may call each function when (from a thread the JVM does not know, after JVM_SHUT_DOWN)
//! is [`access`], at the end of this file.

use crate::face::abi::*;
use crate::face::record::{self, Val};
use crate::face::table::Agent;
use crate::face::{events, ids};
use crate::rooms::{calltrace, classes, control, gc, lifecycle, monitors, threads};
use crate::vm::{jvm, logger::guard};
use jvmti_bindings::sys::jni::{jboolean, jint, jlong, jmethodID, jobject, JNIEnv, JNI_ERR};
use std::ffi::{c_char, c_void};

/// The `GetEnv` of the `JavaVM` every agent reaches (installed by `jvm::startup::hook_get_env`
/// at start-up): `JVMPI_VERSION_1/1_1/1_2` get the shim's interface for the calling agent,
/// every other version the JVM's own answer.
pub(crate) unsafe extern "system" fn get_env(
    vm: *mut jvmti_bindings::sys::jni::JavaVM,
    penv: *mut *mut c_void,
    version: jint,
) -> jint {
    if crate::face::table::is_jvmpi_version(version) {
        if penv.is_null() {
            return JNI_ERR;
        }
        let a = crate::face::table::current();
        if events::is_ready() && !events::in_agent_call() && !called_from_an_agent() {
            // A JNI library asking at run time: HotSpot's one interface, re-initialised for it.
            let n = control::reinitialise(a);
            if n > 0 {
                log::warn!(
                    "GetEnv(JVMPI version {version:#x}) from a JNI library at run time: as HotSpot 1.5 did, the one JVMPI \
                     interface is re-initialised for it, and the {n} event{} enabled so far {} disabled",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "is" } else { "are" }
                );
            }
        }
        // SAFETY: `penv` is the caller's out-pointer.
        unsafe { *penv = crate::face::table::for_version(version) };
        log::info!("GetEnv(JVMPI version {version:#x}): the shim's JVMPI interface");
        return jvmti_bindings::sys::jni::JNI_OK;
    }
    // SAFETY: the caller's JavaVM and out-pointer, passed on.
    unsafe { jvm::startup::real_get_env(vm, penv, version) }
}

/// Whether the code that called `GetEnv` lies in a legacy agent's library (the agent asking
/// again, at any time, keeps its events; see [`get_env`]). Read from the return address two
/// frames up (this function's caller is the door, whose caller is the library).
#[inline(never)]
fn called_from_an_agent() -> bool {
    let mut frames = [std::ptr::null_mut::<c_void>(); 3];
    // SAFETY: glibc's backtrace writes at most `frames.len()` return addresses into the array.
    let n = unsafe { libc::backtrace(frames.as_mut_ptr(), frames.len() as i32) };
    let Some(&caller) = frames.get(2).filter(|_| n >= 3) else { return true };
    crate::rooms::loader::lies_in_an_agent(caller)
}

/// Agent `a`'s table of doors, installed once in `face::table` (the memory the agent is handed).
///
/// JVMPI functions receive no interface pointer, so the doors whose meaning depends on the
/// calling agent (its event mask, its requests, its thread-local storage, its threads) exist
/// once per agent: `enable_event::<A>` and so on, each table built from its own instantiation.
pub fn doors(a: usize) -> JVMPI_Interface {
    match a {
        0 => doors_of::<0>(),
        1 => doors_of::<1>(),
        2 => doors_of::<2>(),
        _ => doors_of::<3>(),
    }
}

const _: () = assert!(crate::face::table::MAX_AGENTS == 4, "doors() instantiates one table per agent");

fn doors_of<const A: usize>() -> JVMPI_Interface {
    JVMPI_Interface {
        version: JVMPI_VERSION_1,
        NotifyEvent: None,
        EnableEvent: enable_event::<A>,
        DisableEvent: disable_event::<A>,
        RequestEvent: request_event::<A>,
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
        CreateSystemThread: create_system_thread::<A>,
        SetThreadLocalStorage: set_thread_local_storage::<A>,
        GetThreadLocalStorage: get_thread_local_storage::<A>,
        DisableGC: disable_gc,
        EnableGC: enable_gc,
        RunGC: run_gc,
        GetThreadObject: get_thread_object,
        GetMethodClass: get_method_class,
        jobjectID2jobject: jobject_id_to_jobject,
        jobject2jobjectID: jobject_to_jobject_id,
        SuspendThreadList: suspend_thread_list,
        ResumeThreadList: resume_thread_list,
    }
}

// ---- the doors ---------------------------------------------------------------------------------

/// What a door records of a call's result: (the value the agent got, an error number).
type Outcome<R> = fn(&'static str, &[(&'static str, Val)], R) -> (Val, Option<i64>);

/// A door: runs the room's code under `guard` and, when recording is on (report or trace),
/// records the call, its arguments and what the agent got back.
fn door<R: Copy>(
    args: &[(&'static str, Val)],
    outcome: Outcome<R>,
    name: &'static str,
    fallback: R,
    body: impl FnOnce() -> R,
) -> R {
    let r = guard(name, fallback, body);
    if record::on() {
        let (v, err) = outcome(name, args, r);
        record::call(name, jvm::current_jni().map_or(0, |e| e as usize), args, v, err);
    }
    r
}

/// How a door's result reads in the record: the value, and the failure value if it is one.
mod outcome {
    use super::*;
    pub fn unit(_: &'static str, _: &[(&'static str, Val)], _: ()) -> (Val, Option<i64>) {
        (Val::None, None)
    }
    pub fn unit_trace(_: &'static str, _: &[(&'static str, Val)], _: ()) -> (Val, Option<i64>) {
        (Val::None, None)
    }
    /// A JVMPI or JNI result code: anything but 0 (JVMPI_SUCCESS, JNI_OK) is a failure.
    pub fn code(_: &'static str, _: &[(&'static str, Val)], r: jint) -> (Val, Option<i64>) {
        (Val::Int(r as i64), (r != 0).then_some(r as i64))
    }
    pub fn int(_: &'static str, _: &[(&'static str, Val)], r: jint) -> (Val, Option<i64>) {
        (Val::Int(r as i64), None)
    }
    pub fn quiet(_: &'static str, _: &[(&'static str, Val)], _: jlong) -> (Val, Option<i64>) {
        (Val::None, None)
    }
    pub fn boolean(_: &'static str, _: &[(&'static str, Val)], r: jboolean) -> (Val, Option<i64>) {
        (Val::Int(r as i64), None)
    }
    pub fn ptr(_: &'static str, _: &[(&'static str, Val)], r: *mut c_void) -> (Val, Option<i64>) {
        (Val::Ptr(r as usize), None)
    }
    pub fn monitor(_: &'static str, _: &[(&'static str, Val)], r: JVMPI_RawMonitor) -> (Val, Option<i64>) {
        (Val::Monitor(r as usize), r.is_null().then_some(0))
    }
    /// An ID answer: NULL for an argument that was not NULL is a failure.
    pub fn obj(_: &'static str, args: &[(&'static str, Val)], r: jobjectID) -> (Val, Option<i64>) {
        let asked =
            args.first().is_none_or(|(_, v)| !matches!(v, Val::Ptr(0) | Val::Obj(0) | Val::Env(0) | Val::Method(0)));
        (Val::Obj(r as usize), (r.is_null() && asked).then_some(0))
    }
    pub fn ptr_null_err(_: &'static str, args: &[(&'static str, Val)], r: jobject) -> (Val, Option<i64>) {
        let asked = args.first().is_none_or(|(_, v)| !matches!(v, Val::Obj(0)));
        (Val::Ptr(r as usize), (r.is_null() && asked).then_some(0))
    }
}

/// The argument of RequestEvent, as the trace shows it.
fn arg_val(event: jint, arg: *mut c_void) -> Val {
    crate::face::event_table::request_arg(event, arg)
}

/// The thread a GetCallTrace names.
fn unsafe_env(trace: *mut JVMPI_CallTrace) -> usize {
    crate::vm::safemem::read(trace).map_or(0, |t| t.env_id as usize)
}

/// The most frames one GetCallTrace fills (a garbage depth must not make the shim allocate
/// gigabytes); deeper stacks are cut there, as HotSpot cut them at its own limit.
const MAX_DEPTH: jint = 1 << 16;

unsafe extern "C" fn enable_event<const A: usize>(event_type: jint, arg: *mut c_void) -> jint {
    door(&[("event", Val::Int(event_type as i64))], outcome::code, "EnableEvent", JVMPI_FAIL, || {
        access::call("EnableEvent", JVMPI_NOT_AVAILABLE, || control::enable(Agent(A), event_type, arg))
    })
}

unsafe extern "C" fn disable_event<const A: usize>(event_type: jint, arg: *mut c_void) -> jint {
    door(&[("event", Val::Int(event_type as i64))], outcome::code, "DisableEvent", JVMPI_FAIL, || {
        access::call("DisableEvent", JVMPI_SUCCESS, || control::disable(Agent(A), event_type, arg))
    })
}

unsafe extern "C" fn request_event<const A: usize>(event_type: jint, arg: *mut c_void) -> jint {
    door(
        &[("event", Val::Int(event_type as i64)), ("arg", arg_val(event_type, arg))],
        outcome::code,
        "RequestEvent",
        JVMPI_FAIL,
        || {
            access::call("RequestEvent", JVMPI_FAIL, || {
                events::as_requester(Agent(A), || control::request(event_type, arg))
            })
        },
    )
}

unsafe extern "C" fn get_call_trace(trace: *mut JVMPI_CallTrace, depth: jint) {
    if !record::on() && guard("GetCallTrace", false, || quick_call_trace(trace, depth)) {
        return;
    }
    full_call_trace(trace, depth)
}

/// GetCallTrace's full path: any thread, any depth, any memory, the call recorded.
#[cold]
#[inline(never)]
fn full_call_trace(trace: *mut JVMPI_CallTrace, depth: jint) {
    // The thread is read for the record only when there is one (a checked read is not free).
    let env = if trace.is_null() || !record::on() { 0 } else { unsafe_env(trace) };
    door(&[("env", Val::Env(env)), ("depth", Val::Int(depth as i64))], outcome::unit_trace, "GetCallTrace", (), || {
        if trace.is_null() {
            log::warn!("GetCallTrace(NULL trace); ignored");
            return;
        }
        // The agent's JVMPI_CallTrace and frames are read and written through `safemem`: a
        // garbage pointer gives no frames and one log line, not a crash.
        crate::vm::safemem::checked(|mem| {
            let Some(mut copy) = mem.read(trace) else {
                log::warn!("GetCallTrace: the JVMPI_CallTrace at {trace:p} is not readable; ignored");
                return;
            };
            // SAFETY: only the address of the field is taken (no read): `trace` is not NULL.
            let num_frames = unsafe { std::ptr::addr_of_mut!((*trace).num_frames) };
            if copy.frames.is_null() || depth <= 0 {
                if depth > 0 {
                    log::warn!("GetCallTrace: NULL frames buffer; no frames");
                }
                if !mem.write(num_frames, 0) {
                    log::warn!("GetCallTrace: the JVMPI_CallTrace at {trace:p} is not writable; ignored");
                }
                return;
            }
            // Agents ask for a few frames (HPROF: 4): those are filled on the stack (not cleared:
            // only the frames written are read).
            let mut small = [const { std::mem::MaybeUninit::<JVMPI_CallFrame>::uninit() }; 16];
            let mut large = Vec::new();
            let frames = if depth as usize <= small.len() {
                &mut small[..depth as usize]
            } else {
                large.resize(depth.min(MAX_DEPTH) as usize, std::mem::MaybeUninit::uninit());
                &mut large[..]
            };
            let n = access::call_in_java_thread("GetCallTrace", 0, |env| {
                calltrace::fill(env, &mut copy, frames, |id| threads::jthread_of(id, "GetCallTrace"))
            });
            let n = n.clamp(0, frames.len() as jint);
            // SAFETY: `fill` wrote the first `n` frames.
            let filled = unsafe { std::slice::from_raw_parts(frames.as_ptr() as *const JVMPI_CallFrame, n as usize) };
            let n = if mem.write_slice(copy.frames, filled) {
                n
            } else {
                log::warn!(
                    "GetCallTrace: the frames buffer at {:p} is not writable for {n} frames; no frames",
                    copy.frames
                );
                0
            };
            if !mem.write(num_frames, n) {
                log::warn!("GetCallTrace: the JVMPI_CallTrace at {trace:p} is not writable; ignored");
            }
        })
    })
}

/// GetCallTrace's usual call on a short path (`calltrace::quick`): the calling thread's own
/// trace, a few frames deep, into a `JVMPI_CallTrace` and frames that need no checked copy (on
/// the caller's stack, or where this thread's checked copies went before), while the JVM is
/// alive. False when nothing was done: the full path takes the call (and its refusals and log
/// lines), with the same result.
#[inline]
fn quick_call_trace(trace: *mut JVMPI_CallTrace, depth: jint) -> bool {
    if trace.is_null() || depth <= 0 || depth as usize > calltrace::QUICK || events::shutting_down() {
        return false;
    }
    let Some(env) = jvm::current_jni_kept() else { return false };
    crate::vm::safemem::checked(|mem| {
        if !mem.known(trace as usize, std::mem::size_of::<JVMPI_CallTrace>(), true) {
            return false;
        }
        // SAFETY: readable and writable without a check (`known`).
        let t = unsafe { trace.read_unaligned() };
        let size = depth as usize * std::mem::size_of::<JVMPI_CallFrame>();
        if t.env_id != env || t.frames.is_null() || !mem.known(t.frames as usize, size, true) {
            return false;
        }
        let mut frames = [const { std::mem::MaybeUninit::<JVMPI_CallFrame>::uninit() }; calltrace::QUICK];
        let frames = &mut frames[..depth as usize];
        let Some(n) = calltrace::quick(frames) else { return false };
        for (i, f) in frames[..n].iter().enumerate() {
            // `quick` wrote the first `n` frames; the agent's `depth` frames passed `known`.
            // SAFETY: frame `i` is initialised, and `t.frames + i` is writable without a check.
            unsafe { t.frames.add(i).write_unaligned(f.assume_init()) };
        }
        // SAFETY: writable without a check (`known`); only the field's address is taken.
        unsafe { std::ptr::addr_of_mut!((*trace).num_frames).write_unaligned(n as jint) };
        true
    })
}

unsafe extern "C" fn profiler_exit(code: jint) {
    door(&[("code", Val::Int(code as i64))], outcome::unit, "ProfilerExit", (), || lifecycle::profiler_exit(code))
}

unsafe extern "C" fn raw_monitor_create(name: *mut c_char) -> JVMPI_RawMonitor {
    door(&[("name", Val::Ptr(name as usize))], outcome::monitor, "RawMonitorCreate", std::ptr::null_mut(), || {
        match crate::vm::safemem::c_str(name) {
            Ok(n) => monitors::create(n),
            Err(e) => {
                log::warn!("RawMonitorCreate: {e}; NULL");
                std::ptr::null_mut()
            }
        }
    })
}

unsafe extern "C" fn raw_monitor_enter(m: JVMPI_RawMonitor) {
    door(&[("monitor", Val::Monitor(m as usize))], outcome::unit, "RawMonitorEnter", (), || monitors::enter(m))
}

unsafe extern "C" fn raw_monitor_exit(m: JVMPI_RawMonitor) {
    door(&[("monitor", Val::Monitor(m as usize))], outcome::unit, "RawMonitorExit", (), || monitors::exit(m))
}

unsafe extern "C" fn raw_monitor_wait(m: JVMPI_RawMonitor, ms: jlong) {
    door(&[("monitor", Val::Monitor(m as usize)), ("ms", Val::Int(ms))], outcome::unit, "RawMonitorWait", (), || {
        monitors::wait(m, ms)
    })
}

unsafe extern "C" fn raw_monitor_notify_all(m: JVMPI_RawMonitor) {
    door(&[("monitor", Val::Monitor(m as usize))], outcome::unit, "RawMonitorNotifyAll", (), || monitors::notify_all(m))
}

unsafe extern "C" fn raw_monitor_destroy(m: JVMPI_RawMonitor) {
    door(&[("monitor", Val::Monitor(m as usize))], outcome::unit, "RawMonitorDestroy", (), || monitors::destroy(m))
}

unsafe extern "C" fn get_current_thread_cpu_time() -> jlong {
    door(&[], outcome::quiet, "GetCurrentThreadCpuTime", 0, threads::current_cpu_time)
}

unsafe extern "C" fn suspend_thread(env: *mut JNIEnv) {
    door(&[("env", Val::Env(env as usize))], outcome::unit, "SuspendThread", (), || {
        access::call("SuspendThread", (), || threads::suspend(env))
    })
}

unsafe extern "C" fn resume_thread(env: *mut JNIEnv) {
    door(&[("env", Val::Env(env as usize))], outcome::unit, "ResumeThread", (), || {
        access::call("ResumeThread", (), || threads::resume(env))
    })
}

unsafe extern "C" fn get_thread_status(env: *mut JNIEnv) -> jint {
    // Refused: RUNNABLE, HotSpot's answer for a thread it could not read.
    door(&[("env", Val::Env(env as usize))], outcome::int, "GetThreadStatus", JVMPI_FAIL, || {
        access::call("GetThreadStatus", JVMPI_THREAD_RUNNABLE, || threads::status(env))
    })
}

unsafe extern "C" fn thread_has_run(env: *mut JNIEnv) -> jboolean {
    door(&[("env", Val::Env(env as usize))], outcome::boolean, "ThreadHasRun", 0, || threads::has_run(env))
}

unsafe extern "C" fn create_system_thread<const A: usize>(
    name: *mut c_char,
    priority: jint,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
) -> jint {
    door(
        &[("name", Val::Ptr(name as usize)), ("priority", Val::Int(priority as i64))],
        outcome::code,
        "CreateSystemThread",
        JNI_ERR,
        || {
            access::call("CreateSystemThread", JNI_ERR, || match crate::vm::safemem::c_str(name) {
                Ok(n) => threads::create_system_thread(Agent(A), &n.unwrap_or_default(), priority, f),
                Err(e) => {
                    log::warn!("CreateSystemThread: {e}; JNI_ERR");
                    JNI_ERR
                }
            })
        },
    )
}

unsafe extern "C" fn set_thread_local_storage<const A: usize>(env: *mut JNIEnv, p: *mut c_void) {
    door(
        &[("env", Val::Env(env as usize)), ("ptr", Val::Ptr(p as usize))],
        outcome::unit,
        "SetThreadLocalStorage",
        (),
        || threads::set_tls(Agent(A), env, p),
    )
}

unsafe extern "C" fn get_thread_local_storage<const A: usize>(env: *mut JNIEnv) -> *mut c_void {
    door(&[("env", Val::Env(env as usize))], outcome::ptr, "GetThreadLocalStorage", std::ptr::null_mut(), || {
        threads::get_tls(Agent(A), env)
    })
}

unsafe extern "C" fn disable_gc() {
    door(&[], outcome::unit, "DisableGC", (), gc::disable_gc)
}

unsafe extern "C" fn enable_gc() {
    door(&[], outcome::unit, "EnableGC", (), gc::enable_gc)
}

unsafe extern "C" fn run_gc() {
    door(&[], outcome::unit, "RunGC", (), || access::call("RunGC", (), gc::run_gc))
}

unsafe extern "C" fn get_thread_object(env: *mut JNIEnv) -> jobjectID {
    door(&[("env", Val::Env(env as usize))], outcome::obj, "GetThreadObject", std::ptr::null_mut(), || {
        threads::get_thread_object(env)
    })
}

unsafe extern "C" fn get_method_class(m: jmethodID) -> jobjectID {
    door(&[("method", Val::Method(m as usize))], outcome::obj, "GetMethodClass", std::ptr::null_mut(), || {
        classes::method_class(m)
    })
}

unsafe extern "C" fn jobject_id_to_jobject(id: jobjectID) -> jobject {
    door(&[("id", Val::Obj(id as usize))], outcome::ptr_null_err, "jobjectID2jobject", std::ptr::null_mut(), || {
        if id.is_null() {
            return std::ptr::null_mut();
        }
        access::call("jobjectID2jobject", std::ptr::null_mut(), || {
            if crate::rooms::alloc::pending_description(id).is_some() {
                // Announced by OBJECT_ALLOC at its `new` in this thread; its constructor has not
                // reached `Object.<init>` yet: found in the frame of its `new` while its hook runs
                // (the OBJECT_ALLOC handler), else not to be had before its constructor runs.
                if let Some(o) = crate::rooms::alloc::pending_object(id) {
                    ids::handed_out(o, id);
                    return o;
                }
                log::debug!("jobjectID2jobject: {id:p} is being constructed; NULL until its constructor runs");
                return std::ptr::null_mut();
            }
            ids::object_of(id).inspect(|&o| ids::handed_out(o, id)).unwrap_or_else(|e| {
                record::refused("jobjectID2jobject");
                // A JVMTI refusal while the VM goes away is said quietly; a bad or dead ID is the
                // agent's mistake.
                log::log!(events::edge_level(e.jvmti()), "jobjectID2jobject: {e}; NULL");
                std::ptr::null_mut()
            })
        })
    })
}

unsafe extern "C" fn jobject_to_jobject_id(obj: jobject) -> jobjectID {
    door(&[("obj", Val::Ptr(obj as usize))], outcome::obj, "jobject2jobjectID", std::ptr::null_mut(), || {
        if obj.is_null() {
            return std::ptr::null_mut();
        }
        access::call("jobject2jobjectID", std::ptr::null_mut(), || {
            // A reference jobjectID2jobject just gave this thread: known without the JVM.
            if let Some(id) = ids::recent_id(obj) {
                return id;
            }
            // JNI tells a handle that is none of the thread's local, global or weak references
            // without reading through it (HotSpot looks the address up in its handle blocks):
            // refused before JVMTI's GetTag would dereference it.
            if !jvm::current_jni().is_some_and(|env| jvm::Jni::of(env).is_valid_ref(obj)) {
                log::warn!("jobject2jobjectID({obj:p}): not a JNI reference of this thread (local, global or weak global); NULL");
                return std::ptr::null_mut();
            }
            ids::id_of(obj).unwrap_or_else(|e| {
                log::log!(events::edge_level(e.jvmti()), "jobject2jobjectID: {e}; NULL");
                std::ptr::null_mut()
            })
        })
    })
}

unsafe extern "C" fn suspend_thread_list(count: jint, list: *mut *mut JNIEnv, results: *mut jint) {
    door(&[("count", Val::Int(count as i64))], outcome::unit, "SuspendThreadList", (), || {
        thread_list(count, list, results, true)
    })
}

unsafe extern "C" fn resume_thread_list(count: jint, list: *mut *mut JNIEnv, results: *mut jint) {
    door(&[("count", Val::Int(count as i64))], outcome::unit, "ResumeThreadList", (), || {
        thread_list(count, list, results, false)
    })
}

fn thread_list(count: jint, list: *mut *mut JNIEnv, results: *mut jint, suspend: bool) {
    if count <= 0 || list.is_null() || results.is_null() {
        if count > 0 {
            log::warn!("Suspend/ResumeThreadList: NULL list or results; ignored");
        }
        return;
    }
    let name = if suspend { "SuspendThreadList" } else { "ResumeThreadList" };
    if count > 1 << 16 {
        log::warn!("{name}: {count} threads is no plausible count; ignored");
        return;
    }
    // The agent's list and results are copied through `safemem`: garbage is one log line.
    let mut envs = vec![std::ptr::null_mut::<JNIEnv>(); count as usize];
    let mut res = vec![JVMPI_FAIL; count as usize];
    if !crate::vm::safemem::read_bytes(list as *const u8, slice_bytes(&mut envs)) {
        log::warn!("{name}: the list at {list:p} is not readable for {count} entries; ignored");
        return;
    }
    if !crate::vm::safemem::write_slice(results, &res) {
        log::warn!("{name}: the results at {results:p} are not writable for {count} entries; ignored");
        return;
    }
    if access::permitted(name) {
        threads::for_list(&envs, &mut res, suspend);
    }
    crate::vm::safemem::write_slice(results, &res);
}

/// The bytes of a slice of plain pointers, to copy into.
fn slice_bytes<T: Copy>(v: &mut [*mut T]) -> &mut [u8] {
    // SAFETY: pointers are plain bytes; the slice is borrowed mutably for the copy.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v)) }
}

// ---- who may call each function when ------------------------------------------------------

pub mod access {
    //! Who may call each JVMPI function, and when: from a thread the JVM does not know (an agent's
    //! own pthread, never attached), and after `JVM_SHUT_DOWN`.
    //!
    //! HotSpot 1.5 ran most JVMPI functions only in threads it knew (`JavaThread::current()`), and
    //! after `JVM_SHUT_DOWN` it replaced the table's functions with stubs that blocked the caller
    //! forever. The shim never crashes and never blocks: [`policy`] says, per function, what it does
    //! in either case, and [`call`] applies it at the function's door. compat-matrix.md lists the
    //! same table, and tests/matrix.rs checks the two agree.
    //!
    //! * From a thread the JVM does not know: [`Caller::Any`] functions need nothing of the JVM for
    //!   the caller (raw monitors are the shim's own locks; thread-local storage, thread objects and
    //!   method classes are answered from the shim's tables; the CPU time is the OS clock's).
    //!   [`Caller::Attached`] functions — those HotSpot served from any thread because they set
    //!   flags or started work elsewhere — attach the caller for the call and detach it after,
    //!   unseen by the agent (no THREAD_START; events it causes carry a NULL `env_id`).
    //!   [`Caller::JavaThread`] functions act in or on the caller's JVM thread (events sent in it,
    //!   local references, JVMTI thread operations): the JVMPI failure value and one log line.
    //! * After JVM_SHUT_DOWN (the agent's handler has returned, or the JVMTI phase is dead): no
    //!   call into the JVM may be made any more (a JNI call in a JVM that has exited never
    //!   returns). [`Afterwards::Works`] functions go on working without the JVM;
    //!   [`Afterwards::Quietly`] ones have nothing left to do and say so only at debug level;
    //!   [`Afterwards::Refused`] ones answer the JVMPI failure value with one log line (info).
    //!
    //! Each kind of refusal is logged once per function: a warning from a thread the JVM does not
    //! know (the agent's mistake: HotSpot crashed there), an info line after JVM_SHUT_DOWN (a
    //! sampler racing the JVM's exit does it as a matter of course; HotSpot blocked it silently).

    use crate::face::events;
    use crate::vm::jvm;
    use jvmti_bindings::sys::jvmti;
    use std::sync::Mutex;

    /// From which threads a function may be called.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Caller {
        /// Works in any thread.
        Any,
        /// A thread the JVM does not know is attached for the call.
        Attached,
        /// Needs a thread the JVM knows: from any other, the failure value and one log line.
        JavaThread,
    }

    /// What a function does once JVM_SHUT_DOWN has been delivered.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Afterwards {
        /// Works after JVM_SHUT_DOWN as before.
        Works,
        /// Nothing left to do: answers at once, logged at debug level only.
        Quietly,
        /// The failure value and one log line.
        Refused,
    }

    /// Who may call a function when.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub struct Policy {
        /// From which threads.
        pub caller: Caller,
        /// After JVM_SHUT_DOWN.
        pub after: Afterwards,
    }

    /// The policy of a JVMPI function, by name (None: not a JVMPI function).
    pub fn policy(function: &str) -> Option<Policy> {
        use Afterwards::*;
        use Caller::*;
        let (caller, after) = match function {
            "EnableEvent" => (Attached, Refused),
            "DisableEvent" => (Attached, Quietly),
            "RequestEvent" => (JavaThread, Refused),
            "GetCallTrace" => (JavaThread, Refused),
            // Attaches the caller for good, as the process ends; during and after VM death it
            // returns at once (see lifecycle::profiler_exit).
            "ProfilerExit" => (Any, Works),
            "RawMonitorCreate"
            | "RawMonitorEnter"
            | "RawMonitorExit"
            | "RawMonitorWait"
            | "RawMonitorNotifyAll"
            | "RawMonitorDestroy" => (Any, Works),
            "GetCurrentThreadCpuTime" => (Any, Works),
            "SuspendThread" | "ResumeThread" | "SuspendThreadList" | "ResumeThreadList" => (JavaThread, Refused),
            "GetThreadStatus" => (JavaThread, Refused),
            "ThreadHasRun" => (Any, Works),
            "CreateSystemThread" => (Attached, Refused),
            "SetThreadLocalStorage" | "GetThreadLocalStorage" => (Any, Works),
            "DisableGC" | "EnableGC" => (Any, Works),
            "RunGC" => (Attached, Quietly),
            "GetThreadObject" => (Any, Works),
            "GetMethodClass" => (Any, Works),
            "jobjectID2jobject" | "jobject2jobjectID" => (JavaThread, Refused),
            _ => return None,
        };
        Some(Policy { caller, after })
    }

    /// Whether the emulation is over: JVM_SHUT_DOWN has been delivered, or the JVM is dead.
    ///
    /// The JVM's phase is asked only once the shim's VM death has begun: JVMTI enters the dead
    /// phase after every VMDeath callback has returned, the shim's (`lifecycle::vm_death`,
    /// enabled from the start) among them, whose first step begins the shutdown. A JVMTI call
    /// on every GetCallTrace costs a tenth of the stack walk's own time.
    fn over() -> bool {
        events::is_over() || (events::shutting_down() && jvm::phase().is_ok_and(|p| p == jvmti::JVMTI_PHASE_DEAD))
    }

    /// Runs the body of JVMPI function `function` under its policy; `answer` is what it returns
    /// when the policy refuses the call (or has nothing to do).
    pub(crate) fn call<R>(function: &'static str, answer: R, body: impl FnOnce() -> R) -> R {
        let Some(p) = policy(function) else { return body() };
        if p.after != Afterwards::Works && over() {
            if p.after == Afterwards::Refused && first(function, true) {
                // A sampler racing the JVM's exit does this as a matter of course: info, not warn.
                log::info!(
                    "{function} called after JVM_SHUT_DOWN: the JVM is gone; the JVMPI failure value is returned"
                );
            } else {
                log::debug!("{function} called after JVM_SHUT_DOWN: nothing to do");
            }
            return answer;
        }
        if p.caller == Caller::Any || jvm::current_jni().is_some() {
            return body();
        }
        match p.caller {
            Caller::Attached => jvm::attached(body).unwrap_or_else(|| {
                log::warn!("{function}: the calling thread could not be attached to the JVM; the JVMPI failure value is returned");
                answer
            }),
            _ => {
                log::warn!(
                    "{function} called from a thread the JVM does not know (HotSpot needed a Java thread for it too); \
                     the JVMPI failure value is returned"
                );
                answer
            }
        }
    }

    /// [`call`] for a function whose policy is ([`Caller::JavaThread`], [`Afterwards::Refused`]),
    /// its body handed the calling thread's JNIEnv (looked up once for both). For the hot
    /// functions (GetCallTrace): no lookup of the policy by name.
    pub(crate) fn call_in_java_thread<R>(
        function: &'static str,
        answer: R,
        body: impl FnOnce(*mut jvmti_bindings::sys::jni::JNIEnv) -> R,
    ) -> R {
        debug_assert_eq!(policy(function), Some(Policy { caller: Caller::JavaThread, after: Afterwards::Refused }));
        if over() {
            if first(function, true) {
                log::info!(
                    "{function} called after JVM_SHUT_DOWN: the JVM is gone; the JVMPI failure value is returned"
                );
            } else {
                log::debug!("{function} called after JVM_SHUT_DOWN: nothing to do");
            }
            return answer;
        }
        match jvm::current_jni_kept() {
            Some(env) => body(env),
            None => {
                log::warn!(
                    "{function} called from a thread the JVM does not know (HotSpot needed a Java thread for it too); \
                     the JVMPI failure value is returned"
                );
                answer
            }
        }
    }

    /// Whether this is the first refusal of `function` of this kind (after shutdown or not).
    fn first(function: &'static str, after: bool) -> bool {
        // The door's only state, and only this function's: the refusals logged so far (function,
        // after shutdown), added here. A one-off, so it stays here rather than in a struct.
        static SAID: Mutex<Vec<(&'static str, bool)>> = Mutex::new(Vec::new());
        let mut said = crate::vm::logger::lock(&SAID);
        if said.contains(&(function, after)) {
            return false;
        }
        said.push((function, after));
        true
    }

    /// [`call`] for functions that report through out-parameters: whether the body may run.
    pub(crate) fn permitted(function: &'static str) -> bool {
        call(function, false, || true)
    }
}
