//! The entry points the JVM calls (`Agent_OnLoad`, `Agent_OnAttach`, `Agent_OnUnload`,
//! `JVM_OnLoad`) and the start-up they run: the options, loading each legacy agent and installing
//! its `JVMPI_Interface` table, the shim's JVMTI set-up (capabilities, callbacks, the class-hook
//! environment), `jcmd … JVMTI.agent_load` commands, and the "double agent" `JVM_OnLoad` with its
//! start deferred to the first JNI call of `-Xrun` on JDK 9+. The one wiring place: being a door,
//! it calls the other doors (`jvmti`, `jvmpi`, `jni`) directly. What happens from VMInit on is
//! `rooms::lifecycle`.
//!
//! Several agents: the first `Agent_OnLoad` sets everything up; each later one (one per further
//! `-agentpath` of the shim) only loads its agent and installs its table (`add_agent`).

use crate::doors::{jni as jni_hooks, jvmpi, jvmti as callbacks};
use crate::face::abi::*;
use crate::face::record;
use crate::face::table::Agent;
use crate::face::{events, table};
use crate::rooms::error::RoomError;
use crate::rooms::{lifecycle, loader, options, report, threads};
use crate::vm::jvm::startup;
use crate::vm::{jvm, logger, logger::guard};
use jvmti_bindings::sys::jni::{
    jboolean, jclass, jfieldID, jint, jmethodID, jthrowable, JNIEnv, JNINativeInterface_, JavaVM, JNI_EDETACHED,
    JNI_ERR, JNI_OK, JNI_VERSION_1_2,
};
use jvmti_bindings::sys::jvmti;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// JVMTI entry point: `-agentpath:` / `-agentlib:`.
///
/// # Safety
/// Called by the JVM with its `JavaVM` and a NULL or NUL-terminated option string.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnLoad(vm: *mut JavaVM, options: *mut c_char, _reserved: *mut c_void) -> jint {
    guard("Agent_OnLoad", JNI_ERR, || agent_onload(vm, loader::option_bytes(options)))
}

/// JVMTI entry point for a running JVM: `jcmd <pid> JVMTI.agent_load <path>/libjvmpi_shim.so
/// <command>`. Commands: `dump` (DATA_DUMP_REQUEST), `reset` (DATA_RESET_REQUEST),
/// `report[=<file>]` (the migration report now), or shim options ending in `agent=<lib>…`
/// (attach a legacy agent to the running JVM). See [`attach`].
///
/// # Safety
/// Called by the JVM with its `JavaVM` and a NULL or NUL-terminated option string.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnAttach(vm: *mut JavaVM, options: *mut c_char, _reserved: *mut c_void) -> jint {
    guard("Agent_OnAttach", JNI_ERR, || attach(vm, loader::option_bytes(options)))
}

/// JVMTI entry point: the library is being unloaded (after VM death); nothing to release.
///
/// # Safety
/// Called by the JVM.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnUnload(_vm: *mut JavaVM) {}

/// The legacy entry point, called for `-Xrun` (see [`double_agent`]).
///
/// # Safety
/// Called by the JVM (or a test) with a `JavaVM` and a NULL or NUL-terminated option string.
#[no_mangle]
pub unsafe extern "system" fn JVM_OnLoad(vm: *mut JavaVM, options: *mut c_char, reserved: *mut c_void) -> jint {
    guard("JVM_OnLoad", JNI_ERR, || double_agent(vm, loader::option_bytes(options), reserved))
}

/// Parses the options, loads the agent, sets up JVMTI. Errors are one-line messages.
fn set_up(vm: *mut JavaVM, raw_options: Option<Vec<u8>>) -> Result<(), RoomError> {
    let opts = options::parse(raw_options.as_deref())?;
    if table::count() > 0 {
        return add_agent(&opts);
    }
    if let Some(r) = &opts.report {
        report::set_destination(r);
    }
    let trace = opts.trace.as_ref().map(|path| record::TraceConfig {
        path: path.clone(),
        families: opts.trace_events.clone(),
        max_lines: opts.trace_max,
    });
    record::start(opts.report.is_some(), trace)?;
    table::install(Agent(0), jvmpi::doors(0));
    // The gate (face) announces a thread it is about to send from through the threads room:
    // a downward call would run up a layer, so the room's function is handed down here.
    events::set_announcer(threads::before_send);
    events::set_holder(threads::suspension_under_way);
    events::register_barrier();
    // The JNI hooks are a door; the facade (vm) installs them when a room asks for them, so
    // they are handed down too.
    jvm::set_jni_hooks(jni_hooks::install);
    logger::init(opts.log);
    jvm::connect(vm)?;
    if opts.agent.is_some() {
        let leg = loader::load(&opts)?;
        log::info!("legacy agent {} loaded", leg.path);
    } else {
        // HotSpot 1.2-1.5 answered GetEnv(JVMPI_VERSION_1…) for any library at any time: with no
        // agent named, the shim serves the one interface (agent 0's) to the libraries that ask.
        log::info!("no legacy agent named: JVMPI is served to the JNI libraries that ask GetEnv for it");
    }
    let owned_monitors = opts
        .owned_monitors
        .unwrap_or_else(|| jvm::jdk_feature().is_some_and(|f| f >= options::OWNED_MONITORS_FREE_FROM_JDK));
    if !owned_monitors {
        log::info!(
            "not taking can_get_owned_monitor_info (it turns C2's escape analysis off before JDK {}): \
             MONITOR_DUMP lists the monitors threads wait on, with their owners; owned-monitors=yes lists every owned one",
            options::OWNED_MONITORS_FREE_FROM_JDK
        );
    }
    let locals =
        opts.locals.unwrap_or_else(|| jvm::jdk_feature().is_some_and(|f| f >= options::OWNED_MONITORS_FREE_FROM_JDK));
    let locals = jvm::add_capabilities(owned_monitors, locals, !opts.vthreads_carrier)
        .map_err(|e| format!("JVMTI capabilities: {e}"))?;
    if !locals {
        log::info!(
            "not holding can_access_local_variables (locals=no, a live-phase start, or before JDK {}): \
             jobjectID2jobject answers NULL for an object whose OBJECT_ALLOC is delivered before its constructor runs",
            options::OWNED_MONITORS_FREE_FROM_JDK
        );
    }
    crate::rooms::alloc::keep_new_objects(locals);
    crate::rooms::methods::set_up(opts.methods_jvmti)?;
    crate::vm::rewrites::configure(opts.cache.as_deref());
    if let Some(d) = opts.disable_gc_max {
        crate::rooms::gc::set_disable_max(d);
    }
    if jvm::phase().ok() == Some(jvmti::JVMTI_PHASE_ONLOAD) {
        crate::vm::rewrites::prefetch();
    }
    jvm::set_callbacks(callbacks::table()).map_err(|e| format!("JVMTI callbacks: {}", jvm::err_name(e)))?;
    jvm::set_up_hook_env(callbacks::agent_class_file_load_hook, callbacks::early_class_file_load_hook)
        .map_err(|e| format!("JVMTI class-hook environment: {}", jvm::err_name(e)))?;
    for ev in [
        jvmti::JVMTI_EVENT_VM_INIT,
        jvmti::JVMTI_EVENT_VM_DEATH,
        jvmti::JVMTI_EVENT_THREAD_START,
        jvmti::JVMTI_EVENT_THREAD_END,
    ] {
        jvm::want(ev).map_err(|e| format!("JVMTI event {ev}: {}", jvm::err_name(e)))?;
    }
    // JDK 21+: each virtual thread a JVMPI thread of its own (`vthreads=carrier`: not).
    if !opts.vthreads_carrier && jvm::enable_virtual_thread_events(callbacks::vthread_mount, callbacks::vthread_unmount)
    {
        crate::rooms::threads::virtual_threads_on();
    }
    lifecycle::keep_vm(vm);
    // SAFETY: `vm` is the JavaVM the JVM passed to Agent_OnLoad.
    unsafe { startup::hook_get_env(vm, crate::doors::jvmpi::get_env) };
    Ok(())
}

/// A further `-agentpath:…/libjvmpi_shim.so=agent=…` (HotSpot calls the same library's
/// `Agent_OnLoad` once per `-agentpath`): one more legacy agent, with its own interface table,
/// on the emulation the first one set up. Its `JVM_OnLoad` runs at VMInit after the earlier
/// agents'.
fn add_agent(opts: &options::Options) -> Result<(), RoomError> {
    let Some(agent) = &opts.agent else {
        return Err("jvmpi-shim is loaded already; a further -agentpath:…/libjvmpi_shim.so must name an agent \
                    (agent=<path-or-name>)"
            .into());
    };
    if opts.report.is_some()
        || opts.trace.is_some()
        || opts.methods_jvmti
        || opts.owned_monitors.is_some()
        || opts.cache.is_some()
        || opts.disable_gc_max.is_some()
    {
        return Err(format!(
            "agent={agent}: report=, trace=, methods=, owned-monitors=, cache= and disable-gc-max= apply to every agent of the JVM: give them in the first \
             -agentpath:…/libjvmpi_shim.so=…"
        ).into());
    }
    if lifecycle::init_ran() {
        return Err(format!(
            "agent={agent}: the JVM is running already; one more legacy agent can only be added at start-up"
        )
        .into());
    }
    if opts.log > log::max_level() {
        logger::init(opts.log);
    }
    let leg = loader::load(opts)?;
    let a = loader::count() - 1;
    table::install(Agent(a), jvmpi::doors(a));
    log::info!("legacy agent {} loaded (agent {} of this JVM)", leg.path, a + 1);
    Ok(())
}

/// `Agent_OnLoad`: the OnLoad phase of a JVMTI-capable JVM.
fn agent_onload(vm: *mut JavaVM, raw_options: Option<Vec<u8>>) -> jint {
    logger::init(log::LevelFilter::Warn);
    match set_up(vm, raw_options) {
        Ok(()) => JNI_OK,
        Err(msg) => {
            log::error!("{msg}");
            JNI_ERR
        }
    }
}

/// `Agent_OnAttach`: a command for the running emulation, or a legacy agent to attach late.
/// Errors are one line on the JVM's stderr and JNI_ERR, which `jcmd` shows as the return code.
fn attach(vm: *mut JavaVM, raw_options: Option<Vec<u8>>) -> jint {
    logger::init(log::LevelFilter::Warn);
    let text = String::from_utf8_lossy(raw_options.as_deref().unwrap_or(b"")).into_owned();
    let running = events::is_ready() && !events::is_dead();
    let (cmd, arg) = text.split_once('=').map_or((text.as_str(), None), |(c, a)| (c, Some(a)));
    let command = |ev: jint| -> jint {
        if !running {
            log::error!("jcmd {text}: no legacy agent runs in this JVM (attach one with agent=<lib>[:<options>])");
            return JNI_ERR;
        }
        let env = jvm::current_jni().unwrap_or(std::ptr::null_mut());
        if events::enabled(ev) {
            events::send(&mut JVMPI_Event::new(ev, env));
        } else {
            log::info!("jcmd {text}: the agent has not enabled {}; nothing sent", events::name(ev));
        }
        JNI_OK
    };
    match cmd {
        "dump" if arg.is_none() => command(JVMPI_EVENT_DATA_DUMP_REQUEST),
        "reset" if arg.is_none() => command(JVMPI_EVENT_DATA_RESET_REQUEST),
        "report" => {
            if report::destination().is_none() && arg.is_none() && !running {
                log::error!("jcmd report: no legacy agent runs in this JVM, so there is nothing to report");
                return JNI_ERR;
            }
            report::write(Some(arg.or(report::destination()).unwrap_or("-")));
            JNI_OK
        }
        _ if text.contains("agent=") => {
            if running || lifecycle::init_ran() {
                if loader::count() == 0 {
                    log::error!(
                        "jcmd agent=…: the shim runs in this JVM without an agent (serving JVMPI to JNI libraries); \
                         a legacy agent can only be named at start-up then"
                    );
                } else {
                    log::error!("jcmd agent=…: a legacy agent already runs in this JVM (one per shim; see README)");
                }
                return JNI_ERR;
            }
            log::info!("attaching a legacy agent to the running JVM");
            if agent_onload(vm, raw_options) != JNI_OK {
                return JNI_ERR;
            }
            let (Some(env), Ok(t)) = (jvm::current_jni(), jvm::current_thread()) else {
                log::error!("jcmd agent=…: the attaching thread has no JNIEnv");
                return JNI_ERR;
            };
            match lifecycle::start_agent(env, t) {
                Ok(()) => JNI_OK,
                Err(msg) => {
                    // The JVM keeps running: the agent simply does not start.
                    log::error!("{msg}; the agent was not attached");
                    JNI_ERR
                }
            }
        }
        _ if options::unquoted_jcmd_hint(&text).is_some() => {
            log::error!("{}", options::unquoted_jcmd_hint(&text).unwrap_or_default());
            JNI_ERR
        }
        _ => {
            log::error!("jcmd: unknown jvmpi-shim command `{text}` (known: dump, reset, report[=<file>], [<shim options>,]agent=<lib>[:<options>])");
            JNI_ERR
        }
    }
}

/// The shim's `JVM_OnLoad` (the "double agent"): a JVM that calls it instead of `Agent_OnLoad`.
/// With JVMTI reachable the emulation starts from the current phase; with JVMTI present but not
/// reachable yet (`-Xrun` on JDK 9+) it starts later (see [`defer`]); on a pre-JVMTI JVM, whose
/// JVMPI is native, the legacy agent is loaded and given the JVM's own `JavaVM`.
fn double_agent(vm: *mut JavaVM, raw_options: Option<Vec<u8>>, reserved: *mut c_void) -> jint {
    logger::init(log::LevelFilter::Warn);
    if vm.is_null() {
        log::error!("JVM_OnLoad called with a NULL JavaVM");
        return JNI_ERR;
    }
    // SAFETY: `vm` is the JavaVM the JVM passed.
    let get_env = unsafe { startup::get_env_fn(vm) };
    // SAFETY: the JVM's GetEnv and JavaVM.
    let (mut rc, _) = unsafe { startup::get_env_with(get_env, vm, jvmti::JVMTI_VERSION_1_2) };
    if rc == JNI_EDETACHED {
        // Either this thread is not attached, or JVMTI exists but not in this phase.
        // SAFETY: as above.
        if unsafe { startup::get_env_with(get_env, vm, JNI_VERSION_1_2) }.0 != JNI_OK {
            // SAFETY: `vm` is the JavaVM the JVM passed.
            unsafe { startup::attach_current_thread(vm) };
        }
        // SAFETY: as above.
        rc = unsafe { startup::get_env_with(get_env, vm, jvmti::JVMTI_VERSION_1_2) }.0;
        if rc == JNI_EDETACHED {
            return defer(vm, raw_options);
        }
    }
    if rc != JNI_OK {
        // No JVMTI: a JVM with native JVMPI. Hand the legacy agent the real thing.
        let opts = match options::parse(raw_options.as_deref()) {
            Ok(o) => o,
            Err(msg) => {
                log::error!("{msg}");
                return JNI_ERR;
            }
        };
        logger::init(opts.log);
        if opts.agent.is_none() {
            log::info!("no JVMTI in this JVM and no legacy agent named: the JVM's own JVMPI serves the libraries");
            return JNI_OK;
        }
        let leg = match loader::load(&opts) {
            Ok(l) => l,
            Err(msg) => {
                log::error!("{msg}");
                return JNI_ERR;
            }
        };
        log::info!("no JVMTI in this JVM: running {} on the JVM's own JVMPI", leg.path);
        let _ = reserved;
        return loader::call_onload(leg, vm);
    }
    start_late(vm, raw_options)
}

/// Sets up as `Agent_OnLoad` would, then, if the VM is already live, does what VMInit would have.
fn start_late(vm: *mut JavaVM, raw_options: Option<Vec<u8>>) -> jint {
    if agent_onload(vm, raw_options) != JNI_OK {
        return JNI_ERR;
    }
    if jvm::phase().ok() == Some(jvmti::JVMTI_PHASE_LIVE) {
        if let (Some(env), Ok(t)) = (jvm::current_jni(), jvm::current_thread()) {
            lifecycle::vm_init(env, t);
        }
    }
    JNI_OK
}

// ---- the deferred start (-Xrun on JDK 9+) -----------------------------------------------------

/// What the deferred start needs, saved by `JVM_OnLoad`.
struct Deferred {
    vm: usize,
    /// The JVM's own GetEnv (the loader replaces the `JavaVM`'s table later).
    get_env: startup::GetEnvFn,
    options: Option<Vec<u8>>,
    /// The hooked thread's JNI function table: its own and the copy with the hooks.
    table: startup::HookedThreadTable,
}

/// The entry door's state (the deferred start): one `static`, each field what it holds and who
/// writes it.
struct EntryState {
    /// What the deferred start needs, saved once by `JVM_OnLoad` before the live phase
    /// ([`defer`]); it lives as long as the process (the hooked table is in it).
    deferred: OnceLock<Deferred>,
    /// The deferred start has been made (set once, by the first hooked call that finds JVMTI
    /// reachable, [`deferred_start`]).
    deferred_fired: AtomicBool,
}

static STATE: EntryState = EntryState { deferred: OnceLock::new(), deferred_fired: AtomicBool::new(false) };

/// `JVM_OnLoad` before the live phase: check the options now (the JVM can still refuse to start),
/// hook the calling thread's JNI functions, and start at the first hooked call made once JVMTI
/// can be had.
fn defer(vm: *mut JavaVM, raw_options: Option<Vec<u8>>) -> jint {
    let opts = match options::parse(raw_options.as_deref()) {
        Ok(o) => o,
        Err(msg) => {
            log::error!("{msg}");
            return JNI_ERR;
        }
    };
    logger::init(opts.log);
    // SAFETY: `vm` is the JavaVM the JVM passed, not yet hooked by the loader.
    let get_env = unsafe { startup::get_env_fn(vm) };
    // SAFETY: the JVM's own GetEnv and JavaVM.
    let (rc, e) = unsafe { startup::get_env_with(get_env, vm, JNI_VERSION_1_2) };
    if rc != JNI_OK || e.is_null() {
        log::error!("JVM_OnLoad: JVMTI is not available yet and the JVM gave no JNIEnv either (GetEnv returned {rc})");
        return JNI_ERR;
    }
    let env = e as *mut JNIEnv;
    let hooks = [
        (startup::jni_slot!(FindClass), late_find_class as *const ()),
        (startup::jni_slot!(GetMethodID), late_get_method_id as *const ()),
        (startup::jni_slot!(GetStaticMethodID), late_get_static_method_id as *const ()),
        (startup::jni_slot!(GetFieldID), late_get_field_id as *const ()),
        (startup::jni_slot!(GetStaticFieldID), late_get_static_field_id as *const ()),
        (startup::jni_slot!(ExceptionOccurred), late_exception_occurred as *const ()),
        (startup::jni_slot!(ExceptionCheck), late_exception_check as *const ()),
    ];
    // SAFETY: `env` is this thread's JNIEnv (GetEnv just gave it); each hook has its slot's signature.
    let table = unsafe { startup::HookedThreadTable::new(env, &hooks) };
    let d = Deferred { vm: vm as usize, get_env, options: raw_options, table };
    if STATE.deferred.set(d).is_err() {
        log::error!("JVM_OnLoad called twice");
        return JNI_ERR;
    }
    let d = STATE.deferred.get().expect("just set");
    // The table lives for the rest of the process and starts with the JVM's own functions.
    // SAFETY: on the thread the table was copied from; `STATE.deferred` lives as long as the process.
    unsafe { d.table.install() };
    log::info!(
        "JVM_OnLoad before the live phase (-Xrun): the emulation starts at the main thread's first JNI call \
         once JVMTI is available"
    );
    JNI_OK
}

/// Called by every hooked JNI function before the real one; returns the JVM's own table.
fn deferred_start(env: *mut JNIEnv) -> *const JNINativeInterface_ {
    let d = STATE.deferred.get().expect("JNI hooks are installed only after the deferred start is saved");
    let original = d.table.original();
    // Not while the caller has an exception pending: the start makes JNI calls of its own.
    // SAFETY: the JVM's own table, on the calling thread's own JNIEnv.
    let pending = unsafe { startup::exception_check(original, env) } != 0;
    let reachable = || {
        // SAFETY: the JVM's own GetEnv, saved by `defer`, with its JavaVM.
        unsafe { startup::jvmti_reachable(d.get_env, d.vm as *mut JavaVM) }
    };
    let fire = !pending && !STATE.deferred_fired.load(Ordering::Acquire) && reachable();
    if fire && !STATE.deferred_fired.swap(true, Ordering::AcqRel) {
        // SAFETY: `env` is the calling thread's JNIEnv.
        unsafe { d.table.remove(env) };
        log::info!("JVMTI is available: starting the emulation deferred by JVM_OnLoad");
        let ok = guard("the deferred start", JNI_ERR, || start_late(d.vm as *mut JavaVM, d.options.clone()));
        if ok != JNI_OK {
            // The reason is already on stderr; the JVM can no longer refuse to start.
            lifecycle::exit_failed();
        }
    }
    original
}

unsafe extern "system" fn late_find_class(env: *mut JNIEnv, name: *const c_char) -> jclass {
    let t = deferred_start(env);
    // SAFETY: the JVM's own table (it lives as long as the process), the caller's arguments.
    unsafe { startup::find_class(t, env, name) }
}

/// Hooks of the form `(env, class, name, signature) -> id` that start the deferred emulation.
macro_rules! late_member_id {
    ($($name:ident => $call:ident -> $ret:ty),* $(,)?) => {$(
        unsafe extern "system" fn $name(env: *mut JNIEnv, k: jclass, name: *const c_char, sig: *const c_char) -> $ret {
            let t = deferred_start(env);
            // SAFETY: the JVM's own table (it lives as long as the process), the caller's arguments.
            unsafe { startup::$call(t, env, k, name, sig) }
        }
    )*};
}
late_member_id!(
    late_get_method_id => get_method_id -> jmethodID,
    late_get_static_method_id => get_static_method_id -> jmethodID,
    late_get_field_id => get_field_id -> jfieldID,
    late_get_static_field_id => get_static_field_id -> jfieldID,
);

unsafe extern "system" fn late_exception_occurred(env: *mut JNIEnv) -> jthrowable {
    let t = deferred_start(env);
    // SAFETY: the JVM's own table, the caller's argument.
    unsafe { startup::exception_occurred(t, env) }
}

unsafe extern "system" fn late_exception_check(env: *mut JNIEnv) -> jboolean {
    let t = deferred_start(env);
    // SAFETY: the JVM's own table, the caller's argument.
    unsafe { startup::exception_check(t, env) }
}
