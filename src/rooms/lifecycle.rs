//! The life of the emulation: start-up from `Agent_OnLoad` (or from the shim's own
//! `JVM_OnLoad`), the legacy agent's `JVM_OnLoad`, `JVM_INIT_DONE`, `DATA_DUMP_REQUEST` and
//! `DATA_RESET_REQUEST`,
//! `JVM_SHUT_DOWN`, and `ProfilerExit`.
//!
//! When the legacy `JVM_OnLoad` runs: at JVMTI VMInit, on the main thread. There the thread is
//! attached (on JDK 1.2–1.5 `JVM_OnLoad` ran on an attached thread, and agents that ask
//! `GetEnv` for a JNI version there get one), and nothing is lost: threads and classes that
//! appeared earlier are announced by the catch-up when the event gate opens, before
//! `JVM_INIT_DONE`. The shim's own JVMTI set-up happens earlier, in `Agent_OnLoad`, where every
//! capability can still be added.
//!
//! Several agents: the first `Agent_OnLoad` sets everything up; each later one (one per further
//! `-agentpath` of the shim) only loads its agent and installs its table (`add_agent`). At
//! VMInit every agent's `JVM_OnLoad` runs in load order, then the gate opens once for all.

use crate::abi::*;
use crate::face::record;
use crate::{alloc, classes, control, events, gc, jvm, loader, logger, natives, options, report, reset, table, threads};
use jvmti_bindings::sys::jni::{
    self, jboolean, jclass, jfieldID, jint, jmethodID, jthread, jthrowable, JNIEnv, JNINativeInterface_, JavaVM,
    JNI_EDETACHED, JNI_ERR, JNI_OK,
};
use jvmti_bindings::sys::jvmti;
use std::ffi::{c_char, c_void};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static VM: OnceLock<usize> = OnceLock::new();
/// VMInit's work has been done (VMInit and a late start can both get there).
static INIT_RAN: AtomicBool = AtomicBool::new(false);

/// Ends the process with status 1, after an error line has been printed.
fn exit_failed() -> ! {
    let _ = std::io::stderr().flush();
    let _ = std::io::stdout().flush();
    // SAFETY: ends the process without running the JVM's exit machinery mid-initialisation.
    unsafe { libc::_exit(1) }
}

/// Prints a one-line error and ends the process with status 1 (the agent cannot run).
fn fatal(msg: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "jvmpi-shim: error: {msg}");
    exit_failed()
}

/// Parses the options, loads the agent, sets up JVMTI. Errors are one-line messages.
fn set_up(vm: *mut JavaVM, raw_options: Option<Vec<u8>>) -> Result<(), String> {
    let opts = options::parse(raw_options.as_deref())?;
    if loader::count() > 0 {
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
    if let Some(d) = DOORS.get() {
        table::install(0, (d.interface)(0));
    }
    events::set_announcer(threads::before_send);
    events::set_holder(threads::suspension_under_way);
    if let Some(d) = DOORS.get() {
        jvm::set_jni_hooks(d.jni_hooks);
    }
    logger::init(opts.log);
    jvm::connect(vm)?;
    let leg = loader::load(&opts)?;
    log::info!("legacy agent {} loaded", leg.path);
    jvm::add_capabilities().map_err(|e| format!("JVMTI capabilities: {e}"))?;
    crate::methods::set_up(opts.methods_jvmti)?;
    let doors = *DOORS.get().ok_or("the shim's doors are missing")?;
    jvm::set_callbacks((doors.callbacks)()).map_err(|e| format!("JVMTI callbacks: {}", jvm::err_name(e)))?;
    jvm::set_up_hook_env(doors.agent_hook, doors.early_hook)
        .map_err(|e| format!("JVMTI class-hook environment: {}", jvm::err_name(e)))?;
    for ev in [
        jvmti::JVMTI_EVENT_VM_INIT,
        jvmti::JVMTI_EVENT_VM_DEATH,
        jvmti::JVMTI_EVENT_THREAD_START,
        jvmti::JVMTI_EVENT_THREAD_END,
    ] {
        jvm::want(ev).map_err(|e| format!("JVMTI event {ev}: {}", jvm::err_name(e)))?;
    }
    let _ = VM.set(vm as usize);
    loader::hook_vm(vm);
    Ok(())
}

/// A further `-agentpath:…/libjvmpi_shim.so=agent=…` (HotSpot calls the same library's
/// `Agent_OnLoad` once per `-agentpath`): one more legacy agent, with its own interface table,
/// on the emulation the first one set up. Its `JVM_OnLoad` runs at VMInit after the earlier
/// agents'.
fn add_agent(opts: &options::Options) -> Result<(), String> {
    if opts.report.is_some() || opts.trace.is_some() || opts.methods_jvmti {
        return Err(format!(
            "agent={}: report=, trace= and methods= apply to every agent of the JVM: give them in the first \
             -agentpath:…/libjvmpi_shim.so=…",
            opts.agent
        ));
    }
    if INIT_RAN.load(Ordering::Acquire) {
        return Err(format!("agent={}: the JVM is running already; one more legacy agent can only be added at start-up", opts.agent));
    }
    if opts.log > log::max_level() {
        logger::init(opts.log);
    }
    let leg = loader::load(opts)?;
    let a = loader::count() - 1;
    let d = DOORS.get().ok_or("the shim's doors are missing")?;
    table::install(a, (d.interface)(a));
    log::info!("legacy agent {} loaded (agent {} of this JVM)", leg.path, a + 1);
    Ok(())
}

/// `Agent_OnLoad`: the OnLoad phase of a JVMTI-capable JVM.
pub fn agent_onload(vm: *mut JavaVM, raw_options: Option<Vec<u8>>, doors: Doors) -> jint {
    let _ = DOORS.set(doors);
    logger::init(log::LevelFilter::Warn);
    match set_up(vm, raw_options) {
        Ok(()) => JNI_OK,
        Err(msg) => {
            log::error!("{msg}");
            JNI_ERR
        }
    }
}

/// JVMTI VMInit: run the legacy `JVM_OnLoad`, open the gate (catch-up), send JVM_INIT_DONE.
pub fn vm_init(env: *mut JNIEnv, thread: jthread) {
    if let Err(msg) = start_agent(env, thread) {
        fatal(&format!("{msg}: the JVM will not start"));
    }
}

/// Runs the legacy `JVM_OnLoad`, opens the gate (catch-up), sends JVM_INIT_DONE.
fn start_agent(env: *mut JNIEnv, thread: jthread) -> Result<(), String> {
    if INIT_RAN.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    threads::on_thread_start(env, thread);
    let Some(&vm) = VM.get() else { return Ok(()) };
    // Each agent's JVM_OnLoad in load order, each on its own behalf (its GetEnv answers its table).
    for (a, leg) in loader::legacies().into_iter().enumerate() {
        let rc = table::within(a, || loader::call_onload(leg, vm as *mut JavaVM));
        if rc != JNI_OK {
            return Err(format!("legacy agent {}: JVM_OnLoad returned {rc} (JNI_ERR)", leg.path));
        }
        if table::notify_event(a).is_none() {
            return Err(format!(
                "legacy agent {}: JVM_OnLoad returned without setting NotifyEvent in its JVMPI interface \
                 (did it call GetEnv with JVMPI_VERSION_1?)",
                leg.path
            ));
        }
    }
    if let Err(e) = gc::start(env) {
        log::error!("GC events will not be delivered: {e}");
    }
    if let Err(e) = threads::start(env) {
        log::warn!("threads suspended at their end wait for the agent's ResumeThread: {e}");
    }
    natives::start(env);
    control::open_gate();
    classes::flush_own(env);
    if events::enabled(JVMPI_EVENT_JVM_INIT_DONE) {
        events::send(&mut JVMPI_Event::new(JVMPI_EVENT_JVM_INIT_DONE, env));
    }
    Ok(())
}

/// JVMTI ThreadEnd. JDK 11+ posts it also for the thread that takes the JVM down
/// (`System.exit`, `Runtime.halt`, `DestroyJavaVM`), just before VM death: then the GC room
/// starts no more heap walks (see [`gc::quiesce_for_exit`]) before the thread ends for the agent.
pub fn on_thread_end(env: *mut JNIEnv, thread: jthread) {
    if takes_the_jvm_down(thread) {
        let _ = HALT_AT.set(std::time::Instant::now());
        gc::quiesce_for_exit();
    }
    alloc::on_thread_end(env);
    crate::javamonitors::on_thread_end(env);
    threads::on_thread_end(env, thread);
}

/// A thread that ends with Java frames on its stack is in `Shutdown.halt0` (a normal end comes
/// after `run` has returned, a detach with none); `DestroyJavaVM` ends only with the JVM.
fn takes_the_jvm_down(thread: jthread) -> bool {
    if jvm::stack_trace(thread, 1).is_ok_and(|s| !s.is_empty()) {
        return true;
    }
    jvm::thread_name(thread).is_ok_and(|name| name == "DestroyJavaVM")
}

/// JVMTI VMDeath: what is still owed is reported while the gate is open (classes nothing
/// linked, deaths in a last GC bracket, the sending thread's announcement), then the gate closes
/// for good, events in flight finish, and JVM_SHUT_DOWN is the last event.
///
/// Every wait here (the last GC bracket, handlers in flight) shares one patience (2 s without
/// any event delivered, 30 s in all); VM
/// death from inside a handler (ProfilerExit, System.exit) waits for neither its own thread's
/// events nor a bracket that thread has open.
pub fn vm_death(env: *mut JNIEnv) {
    if events::is_dead() || !events::begin_shutdown() {
        return;
    }
    let mut patience = events::Patience::new();
    // The dying thread has had its THREAD_END already (JDK 11+ posts ThreadEnd first); it sends
    // what follows (classes owed, the last bracket, JVM_SHUT_DOWN), so it is announced again
    // while the gate is open, and the agent finds its thread and thread-local storage.
    if events::is_ready() {
        threads::announce_for_shutdown(env);
    }
    gc::stop();
    classes::flush_pending(env, std::time::Duration::ZERO);
    gc::last_bracket(env, &mut patience);
    if events::close(&mut patience) && events::enabled(JVMPI_EVENT_JVM_SHUT_DOWN) {
        events::send_last(&mut JVMPI_Event::new(JVMPI_EVENT_JVM_SHUT_DOWN, threads::event_env(env)));
    }
    events::finish();
    threads::release_all();
    reset::disarm();
    record::finish_trace();
    report::write(None);
}

/// The doors the entry points hand to the start-up (see `lib.rs`).
#[derive(Clone, Copy)]
pub struct Doors {
    pub callbacks: fn() -> jvmti::jvmtiEventCallbacks,
    pub agent_hook: jvmti::JvmtiClassFileLoadHookFn,
    pub early_hook: jvmti::JvmtiClassFileLoadHookFn,
    /// Agent n's interface table (its own instantiation of the doors).
    pub interface: fn(usize) -> JVMPI_Interface,
    pub jni_hooks: fn() -> Result<(), String>,
}
static DOORS: OnceLock<Doors> = OnceLock::new();



/// JVMTI DataDumpRequest (SIGQUIT, `jcmd <pid> Thread.print`): DATA_DUMP_REQUEST, then
/// DATA_RESET_REQUEST, as HotSpot 1.5 sent them both on the same signal.
pub fn data_dump_request() {
    let env = jvm::current_jni().unwrap_or(std::ptr::null_mut());
    for ev in [JVMPI_EVENT_DATA_DUMP_REQUEST, JVMPI_EVENT_DATA_RESET_REQUEST] {
        if events::enabled(ev) {
            events::send(&mut JVMPI_Event::new(ev, env));
        }
    }
}

/// `Agent_OnAttach`: a command for the running emulation, or a legacy agent to attach late.
/// Errors are one line on the JVM's stderr and JNI_ERR, which `jcmd` shows as the return code.
pub fn attach(vm: *mut JavaVM, raw_options: Option<Vec<u8>>, doors: Doors) -> jint {
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
            log::info!("jcmd {text}: the agent has not enabled {}; nothing sent", crate::face::event_table::name(ev));
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
            if running || INIT_RAN.load(Ordering::Acquire) {
                log::error!("jcmd agent=…: a legacy agent already runs in this JVM (one per shim; see README)");
                return JNI_ERR;
            }
            let _ = DOORS.set(doors);
            log::info!("attaching a legacy agent to the running JVM");
            if agent_onload(vm, raw_options, doors) != JNI_OK {
                return JNI_ERR;
            }
            let (Some(env), Ok(t)) = (jvm::current_jni(), jvm::current_thread()) else {
                log::error!("jcmd agent=…: the attaching thread has no JNIEnv");
                return JNI_ERR;
            };
            match start_agent(env, t) {
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

/// `ProfilerExit(code)`: the JVM exits with that code (shutdown hooks and JVM_SHUT_DOWN run).
///
/// From any thread, attached or not, and from inside any event handler: `System.exit` runs in
/// the calling thread, which never comes back; VM death does not wait for the events that
/// thread is delivering, nor for a GC bracket it has open. Once the JVM is exiting already
/// (another thread's exit runs the shutdown hooks, VM death has begun, JVM_SHUT_DOWN), the call
/// returns at once: `System.exit` would wait for the exit under way for ever — with whatever the
/// calling handler holds (the lock the agent's JVM_SHUT_DOWN handler then waits for), or in
/// the very thread that is exiting. HotSpot's stubs after shutdown blocked the caller forever.
pub fn profiler_exit(code: jint) {
    if events::shutting_down() {
        log::info!("ProfilerExit({code}): the JVM is already shutting down; returned");
        return;
    }
    let Some(env) = jvm::attach_current() else {
        log::info!("ProfilerExit({code}): the calling thread cannot be attached (the JVM is going away); returned");
        return;
    };
    let jni = jvm::Jni::of(env);
    if jni.shutdown_in_progress() {
        // Another thread's exit is under way: System.exit would wait for it for ever, holding
        // whatever the agent holds here (a handler's lock its JVM_SHUT_DOWN handler wants).
        log::info!("ProfilerExit({code}): the JVM is already exiting; returned");
        // No new bracket, and no heap walk in one under way (in this thread, maybe).
        gc::stop();
        return;
    }
    log::info!("ProfilerExit({code})");
    // No new GC bracket, and a watchdog in case the JVM's exit itself hangs.
    jvm::silence_for_exit();
    gc::stop();
    exit_watchdog(code, threads::event_env(env));
    gc::leaving();
    events::leaving(|| jni.system_exit(code));
    if events::shutting_down() {
        // System.exit returned because the JVM is going away already.
        return;
    }
    // System.exit returns only if it could not run: end the process directly.
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

/// When the thread taking the JVM down had its ThreadEnd (the shutdown hooks have run; VM death
/// comes next).
static HALT_AT: OnceLock<std::time::Instant> = OnceLock::new();

/// How long the JVM's halt (after the shutdown hooks) may go without VM death beginning before
/// the watchdog ends it.
const EXIT_STUCK: std::time::Duration = std::time::Duration::from_secs(8);

/// ProfilerExit's promise is that the process ends with `code`. HotSpot's own exit can hang
/// before VM death: on JDK 17 its flush of pending ObjectFree events in the exiting thread can
/// deadlock with the Service Thread's (one waits for the other without a safepoint check while
/// the other is stopped for a safepoint), about 1 exit in 20 while threads allocate and collect.
/// A plain pthread (not a JVM thread) watches: if VM death has not begun [`EXIT_STUCK`] after
/// the exiting thread's ThreadEnd (shutdown hooks may take their time before that),
/// it delivers JVM_SHUT_DOWN itself (named by the exiting thread, which the agent knows, and
/// owning the raw monitors that thread owns, as if it ran there), so the
/// agent still writes its data, and ends the process with `code`; if VM death began but the
/// emulation is not over 60 s later, or the JVM has not ended 10 s after JVM_SHUT_DOWN, it ends
/// the process too.
fn exit_watchdog(code: jint, env: *mut JNIEnv) {
    let env = env as usize;
    let me = crate::monitors::identity();
    let spawned = std::thread::Builder::new().name("JVMPI exit watchdog".into()).spawn(move || {
        let start = std::time::Instant::now();
        let mut over_at: Option<std::time::Instant> = None;
        loop {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let now = std::time::Instant::now();
            if events::is_over() {
                let t = *over_at.get_or_insert(now);
                if now.duration_since(t) < std::time::Duration::from_secs(10) {
                    continue;
                }
                log::warn!("ProfilerExit({code}): the JVM had not ended 10 s after JVM_SHUT_DOWN; the process ends now");
                break;
            }
            if events::shutting_down() {
                if now.duration_since(start) < std::time::Duration::from_secs(60) {
                    continue;
                }
                log::warn!("ProfilerExit({code}): VM death has not finished after 60 s; the process ends now");
                break;
            }
            if HALT_AT.get().is_none_or(|&t| now.duration_since(t) < EXIT_STUCK) {
                continue;
            }
            log::warn!(
                "ProfilerExit({code}): the JVM's exit made no progress for {} s (HotSpot's exit is stuck before VM \
                 death); JVM_SHUT_DOWN is sent now and the process ends",
                EXIT_STUCK.as_secs()
            );
            if events::begin_shutdown() {
                // JVM_SHUT_DOWN in one more thread, so that a handler stuck in a call into the
                // stuck JVM does not keep the process alive either.
                let last = std::thread::spawn(move || {
                    // On behalf of the stuck exiting thread, whose raw monitors it holds.
                    crate::monitors::assume_identity(me);
                    let mut patience = events::Patience::new();
                    if events::close(&mut patience) && events::enabled(JVMPI_EVENT_JVM_SHUT_DOWN) {
                        events::send_last(&mut JVMPI_Event::new(JVMPI_EVENT_JVM_SHUT_DOWN, env as *mut JNIEnv));
                    }
                    events::finish();
                    record::finish_trace();
                    report::write(None);
                });
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                while !last.is_finished() && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
            break;
        }
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: ends the process with the agent's code; the JVM's own exit is stuck.
        unsafe { libc::_exit(code) }
    });
    if let Err(e) = spawned {
        log::debug!("ProfilerExit: no exit watchdog ({e})");
    }
}

/// The shim's `JVM_OnLoad` (the "double agent"): a JVM that calls it instead of `Agent_OnLoad`.
/// With JVMTI reachable the emulation starts from the current phase; with JVMTI present but not
/// reachable yet (`-Xrun` on JDK 9+) it starts later (see [`defer`]); on a pre-JVMTI JVM, whose
/// JVMPI is native, the legacy agent is loaded and given the JVM's own `JavaVM`.
pub fn double_agent(vm: *mut JavaVM, raw_options: Option<Vec<u8>>, reserved: *mut c_void, doors: Doors) -> jint {
    let _ = DOORS.set(doors);
    logger::init(log::LevelFilter::Warn);
    if vm.is_null() {
        log::error!("JVM_OnLoad called with a NULL JavaVM");
        return JNI_ERR;
    }
    // SAFETY: `vm` is the JavaVM the JVM passed; its table has GetEnv and AttachCurrentThread.
    let table = unsafe { &**vm };
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the JVM's GetEnv with a valid out-pointer.
    let mut rc = unsafe { (table.GetEnv)(vm, &mut p, jvmti::JVMTI_VERSION_1_2) };
    if rc == JNI_EDETACHED {
        // Either this thread is not attached, or JVMTI exists but not in this phase.
        let mut e: *mut c_void = std::ptr::null_mut();
        // SAFETY: the JVM's GetEnv with a valid out-pointer.
        if unsafe { (table.GetEnv)(vm, &mut e, jni::JNI_VERSION_1_2) } != JNI_OK {
            // SAFETY: attaching the calling thread with default arguments.
            unsafe { (table.AttachCurrentThread)(vm, &mut e, std::ptr::null_mut()) };
        }
        // SAFETY: as above.
        rc = unsafe { (table.GetEnv)(vm, &mut p, jvmti::JVMTI_VERSION_1_2) };
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
    let Some(&doors) = DOORS.get() else { return JNI_ERR };
    if agent_onload(vm, raw_options, doors) != JNI_OK {
        return JNI_ERR;
    }
    if jvm::phase().ok() == Some(jvmti::JVMTI_PHASE_LIVE) {
        if let (Some(env), Ok(t)) = (jvm::current_jni(), jvm::current_thread()) {
            vm_init(env, t);
        }
    }
    JNI_OK
}

// ---- the deferred start (-Xrun on JDK 9+) -----------------------------------------------------

/// What the deferred start needs, saved by `JVM_OnLoad`.
struct Deferred {
    vm: usize,
    /// The JVM's own GetEnv (the loader replaces the `JavaVM`'s table later).
    get_env: unsafe extern "system" fn(*mut JavaVM, *mut *mut c_void, jint) -> jint,
    options: Option<Vec<u8>>,
    /// The hooked thread's JNIEnv, its own function table, and the copy with the hooks.
    env: usize,
    original: usize,
    hooked: Box<[usize; TABLE_SLOTS]>,
}
static DEFERRED: OnceLock<Deferred> = OnceLock::new();
static DEFERRED_FIRED: AtomicBool = AtomicBool::new(false);

/// Room for the largest JNI function table (236 slots in JDK 24+), and then some.
const TABLE_SLOTS: usize = 256;

/// The number of slots of the JNI function table of a JVM whose `GetVersion` says `version`:
/// 233 up to JNI 1.8, `GetModule` from 9, `IsVirtualThread` from 19, `GetStringUTFLengthAsLong`
/// from 24.
fn jni_table_slots(version: jint) -> usize {
    match version {
        v if v >= 0x0018_0000 => 236,
        v if v >= 0x0013_0000 => 235,
        v if v >= 0x0009_0000 => 234,
        _ => 233,
    }
}

/// Index of a JNI function in the table.
macro_rules! slot {
    ($f:ident) => {
        std::mem::offset_of!(JNINativeInterface_, $f) / std::mem::size_of::<usize>()
    };
}

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
    let get_env = unsafe { (**vm).GetEnv };
    let mut e: *mut c_void = std::ptr::null_mut();
    // SAFETY: the JVM's GetEnv with a valid out-pointer.
    let rc = unsafe { get_env(vm, &mut e, jni::JNI_VERSION_1_2) };
    if rc != JNI_OK || e.is_null() {
        log::error!(
            "JVM_OnLoad: JVMTI is not available yet and the JVM gave no JNIEnv either (GetEnv returned {rc})"
        );
        return JNI_ERR;
    }
    let env = e as *mut JNIEnv;
    // SAFETY: `env` is the current thread's JNIEnv; its first word is its function table.
    let original = unsafe { *env };
    // SAFETY: GetVersion of the JVM's own table, on the thread the JNIEnv belongs to.
    let n = jni_table_slots(unsafe { ((*original).GetVersion)(env) })
        .min(std::mem::size_of::<JNINativeInterface_>() / std::mem::size_of::<usize>());
    let mut hooked = Box::new([0usize; TABLE_SLOTS]);
    // SAFETY: the JVM's table has at least `n` pointer-sized slots (its JNI version says so).
    unsafe { std::ptr::copy_nonoverlapping(original as *const usize, hooked.as_mut_ptr(), n) };
    hooked[slot!(FindClass)] = late_find_class as *const () as usize;
    hooked[slot!(GetMethodID)] = late_get_method_id as *const () as usize;
    hooked[slot!(GetStaticMethodID)] = late_get_static_method_id as *const () as usize;
    hooked[slot!(GetFieldID)] = late_get_field_id as *const () as usize;
    hooked[slot!(GetStaticFieldID)] = late_get_static_field_id as *const () as usize;
    hooked[slot!(ExceptionOccurred)] = late_exception_occurred as *const () as usize;
    hooked[slot!(ExceptionCheck)] = late_exception_check as *const () as usize;
    let d = Deferred {
        vm: vm as usize,
        get_env,
        options: raw_options,
        env: env as usize,
        original: original as usize,
        hooked,
    };
    if DEFERRED.set(d).is_err() {
        log::error!("JVM_OnLoad called twice");
        return JNI_ERR;
    }
    let d = DEFERRED.get().expect("just set");
    // The table lives for the rest of the process and starts with the JVM's own functions.
    // SAFETY: the JNIEnv's function-table slot is the calling thread's own writable word.
    unsafe { *env = d.hooked.as_ptr() as *const JNINativeInterface_ };
    log::info!(
        "JVM_OnLoad before the live phase (-Xrun): the emulation starts at the main thread's first JNI call \
         once JVMTI is available"
    );
    JNI_OK
}

/// Whether JVMTI can be had now (the live phase). The probe's environment is given back.
fn jvmti_reachable(d: &Deferred) -> bool {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the JVM's own GetEnv with its JavaVM and a valid out-pointer.
    let rc = unsafe { (d.get_env)(d.vm as *mut JavaVM, &mut p, jvmti::JVMTI_VERSION_1_2) };
    if rc != JNI_OK || p.is_null() {
        return false;
    }
    let j = p as *mut jvmti::jvmtiEnv;
    // SAFETY: `j` is the jvmtiEnv GetEnv just created; disposing of it is its only use.
    if let Some(dispose) = unsafe { (*(*j).functions).DisposeEnvironment } {
        // SAFETY: as above.
        unsafe { dispose(j) };
    }
    true
}

/// Called by every hooked JNI function before the real one; returns the JVM's own table.
fn deferred_start(env: *mut JNIEnv) -> *const JNINativeInterface_ {
    let d = DEFERRED.get().expect("JNI hooks are installed only after DEFERRED is set");
    let original = d.original as *const JNINativeInterface_;
    // Not while the caller has an exception pending: the start makes JNI calls of its own.
    // SAFETY: the JVM's ExceptionCheck on the calling thread's own JNIEnv.
    let pending = unsafe { ((*original).ExceptionCheck)(env) } != 0;
    let fire = !pending && !DEFERRED_FIRED.load(Ordering::Acquire) && jvmti_reachable(d);
    if fire && !DEFERRED_FIRED.swap(true, Ordering::AcqRel) {
        let hooked = d.hooked.as_ptr() as *const JNINativeInterface_;
        if env as usize == d.env {
            // Put back unless someone (JVMTI SetJNIFunctionTable) replaced it since.
            // SAFETY: the thread's own function-table slot, set by `defer`.
            unsafe {
                if *env == hooked {
                    *env = d.original as *const JNINativeInterface_;
                }
            }
        }
        log::info!("JVMTI is available: starting the emulation deferred by JVM_OnLoad");
        let ok = crate::guard("the deferred start", JNI_ERR, || {
            start_late(d.vm as *mut JavaVM, d.options.clone())
        });
        if ok != JNI_OK {
            // The reason is already on stderr; the JVM can no longer refuse to start.
            exit_failed();
        }
    }
    original
}

unsafe extern "system" fn late_find_class(env: *mut JNIEnv, name: *const c_char) -> jclass {
    let t = deferred_start(env);
    // SAFETY: the JVM's own FindClass (its table lives as long as the process), the caller's arguments.
    unsafe { ((*t).FindClass)(env, name) }
}

/// Hooks of the form `(env, class, name, signature) -> id` that start the deferred emulation.
macro_rules! late_member_id {
    ($($name:ident => $field:ident -> $ret:ty),* $(,)?) => {$(
        unsafe extern "system" fn $name(env: *mut JNIEnv, k: jclass, name: *const c_char, sig: *const c_char) -> $ret {
            let t = deferred_start(env);
            // SAFETY: the JVM's own function (its table lives as long as the process), the caller's arguments.
            unsafe { ((*t).$field)(env, k, name, sig) }
        }
    )*};
}
late_member_id!(
    late_get_method_id => GetMethodID -> jmethodID,
    late_get_static_method_id => GetStaticMethodID -> jmethodID,
    late_get_field_id => GetFieldID -> jfieldID,
    late_get_static_field_id => GetStaticFieldID -> jfieldID,
);

unsafe extern "system" fn late_exception_occurred(env: *mut JNIEnv) -> jthrowable {
    let t = deferred_start(env);
    // SAFETY: the JVM's ExceptionOccurred with the caller's argument.
    unsafe { ((*t).ExceptionOccurred)(env) }
}

unsafe extern "system" fn late_exception_check(env: *mut JNIEnv) -> jboolean {
    let t = deferred_start(env);
    // SAFETY: the JVM's ExceptionCheck with the caller's argument.
    unsafe { ((*t).ExceptionCheck)(env) }
}
