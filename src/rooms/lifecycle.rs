//! The life of the emulation: the legacy agent's `JVM_OnLoad` at VMInit, `JVM_INIT_DONE`,
//! `DATA_DUMP_REQUEST` and `DATA_RESET_REQUEST`, a thread taking the JVM down, `JVM_SHUT_DOWN`,
//! and `ProfilerExit`. The start-up before VMInit (options, loading the agent, the shim's JVMTI
//! set-up, the deferred start of `-Xrun`) is in `doors::entry`.
//!
//! When the legacy `JVM_OnLoad` runs: at JVMTI VMInit, on the main thread. There the thread is
//! attached (on JDK 1.2–1.5 `JVM_OnLoad` ran on an attached thread, and agents that ask
//! `GetEnv` for a JNI version there get one), and nothing is lost: threads and classes that
//! appeared earlier are announced by the catch-up when the event gate opens, before
//! `JVM_INIT_DONE`. The shim's own JVMTI set-up happens earlier, in `Agent_OnLoad`, where every
//! capability can still be added.
//!
//! Several agents: at VMInit every agent's `JVM_OnLoad` runs in load order, then the gate opens
//! once for all.

use crate::face::abi::*;
use crate::face::record;
use crate::face::table::Agent;
use crate::face::{events, table};
use crate::rooms::error::RoomError;
use crate::rooms::{alloc, classes, control, gc, loader, natives, report, reset, threads};
use crate::vm::{jvm, rewrites};
use jvmti_bindings::sys::jni::{jint, jthread, JNIEnv, JavaVM, JNI_OK};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The life room's state: one `static`, each field what it holds and who writes it.
struct LifecycleState {
    /// The `JavaVM` the legacy agents' `JVM_OnLoad` get, kept by the start-up ([`keep_vm`]).
    vm: OnceLock<usize>,
    /// VMInit's work has begun (VMInit and a late start can both get there): set by
    /// [`start_agent`], which runs it once.
    init_ran: AtomicBool,
    /// When the thread taking the JVM down had its ThreadEnd (the shutdown hooks have run; VM
    /// death comes next): set by [`on_thread_end`], read by the exit watchdog.
    halt_at: OnceLock<std::time::Instant>,
}

static STATE: LifecycleState =
    LifecycleState { vm: OnceLock::new(), init_ran: AtomicBool::new(false), halt_at: OnceLock::new() };

/// The `JavaVM` the legacy agents' `JVM_OnLoad` get at VMInit, kept by the start-up.
pub(crate) fn keep_vm(vm: *mut JavaVM) {
    let _ = STATE.vm.set(vm as usize);
}

/// Whether VMInit's work (the agents' `JVM_OnLoad`, the gate's opening) has begun.
pub(crate) fn init_ran() -> bool {
    STATE.init_ran.load(Ordering::Acquire)
}

/// Ends the process with status 1, after an error line has been printed.
pub(crate) fn exit_failed() -> ! {
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

/// JVMTI VMInit: run the legacy `JVM_OnLoad`, open the gate (catch-up), send JVM_INIT_DONE.
pub fn vm_init(env: *mut JNIEnv, thread: jthread) {
    if let Err(msg) = start_agent(env, thread) {
        fatal(&format!("{msg}: the JVM will not start"));
    }
}

/// Runs the legacy `JVM_OnLoad`, opens the gate (catch-up), sends JVM_INIT_DONE.
pub(crate) fn start_agent(env: *mut JNIEnv, thread: jthread) -> Result<(), RoomError> {
    if STATE.init_ran.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    threads::on_thread_start(env, thread);
    let Some(&vm) = STATE.vm.get() else { return Ok(()) };
    // Each agent's JVM_OnLoad in load order, each on its own behalf (its GetEnv answers its table).
    for (a, leg) in loader::legacies().into_iter().enumerate() {
        let a = Agent(a);
        let rc = table::within(a, || loader::call_onload(leg, vm as *mut JavaVM));
        if rc != JNI_OK {
            return Err(format!("legacy agent {}: JVM_OnLoad returned {rc} (JNI_ERR)", leg.path).into());
        }
        if table::notify_event(a).is_none() {
            // HotSpot started such an agent (one that only uses the interface's functions, such
            // as GetCurrentThreadCpuTime from its JNI natives): so does the shim. An event it
            // enables finds no handler and is not delivered (logged once, `events::send`).
            log::info!(
                "legacy agent {}: JVM_OnLoad returned without setting NotifyEvent; it gets no events until it sets one",
                leg.path
            );
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
    let exiting = takes_the_jvm_down(thread);
    if exiting {
        let _ = STATE.halt_at.set(std::time::Instant::now());
        gc::quiesce_for_exit();
    }
    alloc::on_thread_end(env);
    crate::rooms::javamonitors::on_thread_end(env);
    if exiting && events::is_ready() {
        // Its THREAD_END comes at VM death, just before JVM_SHUT_DOWN, as in HotSpot 1.5.
        threads::hold_end(env, thread);
    } else {
        threads::on_thread_end(env, thread);
    }
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
    // From now on the shim's waits for its JVMTI event switch are bounded (a thread an agent
    // suspended inside a JVMTI call made under it may be resumed only after JVM_SHUT_DOWN).
    jvm::set_exiting();
    // The dying thread's THREAD_END is held back (see `on_thread_end`): it sends what follows
    // (classes owed, the last bracket, JVM_SHUT_DOWN) as the thread the agent knows, announced
    // once. HotSpot 1.5's `before_exit` sent that thread's THREAD_END just before JVM_SHUT_DOWN;
    // agents look the JVM_SHUT_DOWN thread up (HPROF's thread table), so here it never ends
    // for the agent: its end is only recorded once the gate has closed.
    gc::stop();
    classes::flush_pending(env, std::time::Duration::ZERO);
    gc::last_bracket(env, &mut patience);
    if events::close(&mut patience) && events::enabled(JVMPI_EVENT_JVM_SHUT_DOWN) {
        events::send_last(&mut JVMPI_Event::new(JVMPI_EVENT_JVM_SHUT_DOWN, threads::event_env(env)));
    }
    threads::end_exiting();
    events::finish();
    threads::release_all();
    reset::disarm();
    record::finish_trace();
    report::write(None);
    rewrites::at_exit();
}

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
    let me = crate::rooms::monitors::identity();
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
                log::warn!(
                    "ProfilerExit({code}): the JVM had not ended 10 s after JVM_SHUT_DOWN; the process ends now"
                );
                break;
            }
            if events::shutting_down() {
                if now.duration_since(start) < std::time::Duration::from_secs(60) {
                    continue;
                }
                log::warn!("ProfilerExit({code}): VM death has not finished after 60 s; the process ends now");
                break;
            }
            if STATE.halt_at.get().is_none_or(|&t| now.duration_since(t) < EXIT_STUCK) {
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
                    crate::rooms::monitors::assume_identity(me);
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
