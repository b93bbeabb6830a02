//! Event control and delivery: `EnableEvent`, `DisableEvent`, `RequestEvent`, and the one path
//! by which every event reaches the agent's `NotifyEvent`.
//!
//! The table [`support`] says, for each JVMPI event number, whether the shim emulates it and
//! which JVMTI events it needs. Enabling a JVMPI event asks [`crate::jvm::want`] for those JVMTI
//! events; disabling gives them back, so a disabled event costs nothing.
//!
//! Delivery has a gate. Events flow only after the legacy `JVM_OnLoad` has returned (what
//! happened before is replayed by the catch-up of the defining events), and never after
//! `JVM_SHUT_DOWN`: shutdown closes the gate, waits for events already inside the agent to
//! return, and only then sends `JVM_SHUT_DOWN`, which is always the last event.

use crate::abi::*;
use crate::{alloc, classes, gc, interface, jnihooks, jvm, objects, threads};
use jvmti_bindings::sys::jni::jint;
use jvmti_bindings::sys::jvmti::{self, jvmtiEvent};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the shim does for one JVMPI event number.
pub enum Support {
    /// Emulated; enabling it switches on these JVMTI events.
    Emulated(&'static [jvmtiEvent]),
    /// On HotSpot 1.5's list of supported events, so `EnableEvent` succeeds as it did there,
    /// but the event is never sent: in the shim's model it cannot happen, or the shim has no
    /// source for it yet (the reason is logged once, at info level).
    Never(&'static str),
    /// `EnableEvent` answers `JVMPI_NOT_AVAILABLE`, as HotSpot 1.5 did: the dump events (they
    /// are only ever requested) and numbers that are no JVMPI event.
    NotAvailable(&'static str),
}

pub fn support(event: jint) -> Support {
    use Support::*;
    const GC: &[jvmtiEvent] = &[jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_START, jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH];
    const UNLOAD: &[jvmtiEvent] = &[
        jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_START,
        jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
        jvmti::JVMTI_EVENT_OBJECT_FREE,
    ];
    const NOT_YET: &str = "accepted as HotSpot 1.5 accepted it; this version of the shim has no source for it and never sends it";
    match event {
        JVMPI_EVENT_JVM_INIT_DONE | JVMPI_EVENT_JVM_SHUT_DOWN => Emulated(&[]),
        JVMPI_EVENT_THREAD_START | JVMPI_EVENT_THREAD_END => Emulated(&[]),
        JVMPI_EVENT_CLASS_LOAD => Emulated(&[jvmti::JVMTI_EVENT_CLASS_PREPARE, jvmti::JVMTI_EVENT_CLASS_LOAD]),
        JVMPI_EVENT_CLASS_UNLOAD => Emulated(UNLOAD),
        JVMPI_EVENT_CLASS_LOAD_HOOK => Emulated(&[]),
        JVMPI_EVENT_OBJECT_ALLOC => Emulated(&[]),
        JVMPI_EVENT_OBJECT_FREE => Emulated(UNLOAD),
        JVMPI_EVENT_ARENA_NEW => Emulated(&[]),
        JVMPI_EVENT_JNI_GLOBALREF_ALLOC
        | JVMPI_EVENT_JNI_GLOBALREF_FREE
        | JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC
        | JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE => Emulated(&[]),
        JVMPI_EVENT_OBJECT_MOVE => Never("object IDs are JVMTI tags, which never change while the object lives"),
        JVMPI_EVENT_ARENA_DELETE => Never("the shim's one arena (the Java heap) lives as long as the JVM"),
        JVMPI_EVENT_GC_START | JVMPI_EVENT_GC_FINISH => Emulated(GC),
        // HotSpot sent DATA_RESET_REQUEST right after DATA_DUMP_REQUEST, on the same signal.
        JVMPI_EVENT_DATA_DUMP_REQUEST | JVMPI_EVENT_DATA_RESET_REQUEST => {
            Emulated(&[jvmti::JVMTI_EVENT_DATA_DUMP_REQUEST])
        }
        JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER
        | JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED
        | JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT => Emulated(&[]),
        JVMPI_EVENT_HEAP_DUMP | JVMPI_EVENT_MONITOR_DUMP | JVMPI_EVENT_OBJECT_DUMP => {
            NotAvailable("dump events are only sent on RequestEvent (JVMPI spec; HotSpot 1.5 answered the same)")
        }
        JVMPI_EVENT_METHOD_ENTRY
        | JVMPI_EVENT_METHOD_ENTRY2
        | JVMPI_EVENT_METHOD_EXIT
        | JVMPI_EVENT_COMPILED_METHOD_LOAD
        | JVMPI_EVENT_COMPILED_METHOD_UNLOAD
        | JVMPI_EVENT_INSTRUCTION_START
        | JVMPI_EVENT_MONITOR_CONTENDED_ENTER
        | JVMPI_EVENT_MONITOR_CONTENDED_ENTERED
        | JVMPI_EVENT_MONITOR_CONTENDED_EXIT
        | JVMPI_EVENT_MONITOR_WAIT
        | JVMPI_EVENT_MONITOR_WAITED => Never(NOT_YET),
        _ => NotAvailable("no such JVMPI event"),
    }
}

/// Which JVMPI events the agent has enabled (bit n = event n).
static ENABLED: AtomicU64 = AtomicU64::new(0);
static SWITCH: Mutex<()> = Mutex::new(());
/// Events whose "never sent" / "not available" reason has been logged (bit n = event n).
static EXPLAINED: AtomicU64 = AtomicU64::new(0);

pub fn enabled(event: jint) -> bool {
    (0..64).contains(&event) && ENABLED.load(Relaxed) & (1 << event) != 0
}

/// The JVMPI name of an event number, for log lines.
pub fn name(event: jint) -> String {
    let n = match event {
        JVMPI_EVENT_METHOD_ENTRY => "METHOD_ENTRY",
        JVMPI_EVENT_METHOD_ENTRY2 => "METHOD_ENTRY2",
        JVMPI_EVENT_METHOD_EXIT => "METHOD_EXIT",
        JVMPI_EVENT_OBJECT_ALLOC => "OBJECT_ALLOC",
        JVMPI_EVENT_OBJECT_FREE => "OBJECT_FREE",
        JVMPI_EVENT_OBJECT_MOVE => "OBJECT_MOVE",
        JVMPI_EVENT_COMPILED_METHOD_LOAD => "COMPILED_METHOD_LOAD",
        JVMPI_EVENT_COMPILED_METHOD_UNLOAD => "COMPILED_METHOD_UNLOAD",
        JVMPI_EVENT_INSTRUCTION_START => "INSTRUCTION_START",
        JVMPI_EVENT_THREAD_START => "THREAD_START",
        JVMPI_EVENT_THREAD_END => "THREAD_END",
        JVMPI_EVENT_CLASS_LOAD_HOOK => "CLASS_LOAD_HOOK",
        JVMPI_EVENT_HEAP_DUMP => "HEAP_DUMP",
        JVMPI_EVENT_JNI_GLOBALREF_ALLOC => "JNI_GLOBALREF_ALLOC",
        JVMPI_EVENT_JNI_GLOBALREF_FREE => "JNI_GLOBALREF_FREE",
        JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC => "JNI_WEAK_GLOBALREF_ALLOC",
        JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE => "JNI_WEAK_GLOBALREF_FREE",
        JVMPI_EVENT_CLASS_LOAD => "CLASS_LOAD",
        JVMPI_EVENT_CLASS_UNLOAD => "CLASS_UNLOAD",
        JVMPI_EVENT_DATA_DUMP_REQUEST => "DATA_DUMP_REQUEST",
        JVMPI_EVENT_DATA_RESET_REQUEST => "DATA_RESET_REQUEST",
        JVMPI_EVENT_JVM_INIT_DONE => "JVM_INIT_DONE",
        JVMPI_EVENT_JVM_SHUT_DOWN => "JVM_SHUT_DOWN",
        JVMPI_EVENT_ARENA_NEW => "ARENA_NEW",
        JVMPI_EVENT_ARENA_DELETE => "ARENA_DELETE",
        JVMPI_EVENT_OBJECT_DUMP => "OBJECT_DUMP",
        JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER => "RAW_MONITOR_CONTENDED_ENTER",
        JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED => "RAW_MONITOR_CONTENDED_ENTERED",
        JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT => "RAW_MONITOR_CONTENDED_EXIT",
        JVMPI_EVENT_MONITOR_CONTENDED_ENTER => "MONITOR_CONTENDED_ENTER",
        JVMPI_EVENT_MONITOR_CONTENDED_ENTERED => "MONITOR_CONTENDED_ENTERED",
        JVMPI_EVENT_MONITOR_CONTENDED_EXIT => "MONITOR_CONTENDED_EXIT",
        JVMPI_EVENT_MONITOR_WAIT => "MONITOR_WAIT",
        JVMPI_EVENT_MONITOR_WAITED => "MONITOR_WAITED",
        JVMPI_EVENT_MONITOR_DUMP => "MONITOR_DUMP",
        JVMPI_EVENT_GC_START => "GC_START",
        JVMPI_EVENT_GC_FINISH => "GC_FINISH",
        _ => return format!("event {event}"),
    };
    n.to_string()
}

fn is_dump(event: jint) -> bool {
    matches!(event, JVMPI_EVENT_HEAP_DUMP | JVMPI_EVENT_MONITOR_DUMP | JVMPI_EVENT_OBJECT_DUMP)
}

/// Logs `why` for `event` at info level, the first time only.
fn explain_once(what: &str, event: jint, answer: &str, why: &str) {
    let bit = if (0..64).contains(&event) { 1u64 << event } else { 0 };
    if bit == 0 || EXPLAINED.fetch_or(bit, SeqCst) & bit == 0 {
        log::info!("{what}({}): {answer}: {why}", name(event));
    }
}

pub fn enable(event: jint, _arg: *mut c_void) -> jint {
    match support(event) {
        Support::NotAvailable(why) if is_dump(event) => {
            // HotSpot 1.5's answer too, for events that are only ever requested.
            explain_once("EnableEvent", event, "JVMPI_NOT_AVAILABLE", why);
            JVMPI_NOT_AVAILABLE
        }
        Support::NotAvailable(why) => {
            // A number that is no JVMPI event: the agent's mistake.
            log::warn!("EnableEvent({}): JVMPI_NOT_AVAILABLE: {why}", name(event));
            JVMPI_NOT_AVAILABLE
        }
        Support::Never(why) => {
            explain_once("EnableEvent", event, "enabled, never sent", why);
            ENABLED.fetch_or(1 << event, SeqCst);
            JVMPI_SUCCESS
        }
        Support::Emulated(needs) => {
            {
                let _g = SWITCH.lock().unwrap_or_else(|p| p.into_inner());
                if enabled(event) {
                    return JVMPI_SUCCESS;
                }
                for (i, &ev) in needs.iter().enumerate() {
                    if let Err(e) = jvm::want(ev) {
                        log::error!("EnableEvent({}): JVMTI refused event {ev}: {}", name(event), jvm::err_name(e));
                        needs[..i].iter().for_each(|&ev| jvm::unwant(ev));
                        return JVMPI_FAIL;
                    }
                }
                ENABLED.fetch_or(1 << event, SeqCst);
                if let Err(e) = switch(event, true) {
                    log::error!("EnableEvent({}): JVMPI_FAIL: {e}", name(event));
                    ENABLED.fetch_and(!(1 << event), SeqCst);
                    needs.iter().for_each(|&ev| jvm::unwant(ev));
                    return JVMPI_FAIL;
                }
            }
            if READY.load(SeqCst) {
                catch_up(event);
            }
            JVMPI_SUCCESS
        }
    }
}

pub fn disable(event: jint, _arg: *mut c_void) -> jint {
    match support(event) {
        Support::NotAvailable(why) => {
            log::debug!("DisableEvent({}): JVMPI_NOT_AVAILABLE: {why}", name(event));
            JVMPI_NOT_AVAILABLE
        }
        Support::Never(_) => {
            ENABLED.fetch_and(!(1 << event), SeqCst);
            JVMPI_SUCCESS
        }
        Support::Emulated(needs) => {
            let _g = SWITCH.lock().unwrap_or_else(|p| p.into_inner());
            if enabled(event) {
                ENABLED.fetch_and(!(1 << event), SeqCst);
                needs.iter().for_each(|&ev| jvm::unwant(ev));
                let _ = switch(event, false);
            }
            JVMPI_SUCCESS
        }
    }
}

/// What switching an event on or off does beyond JVMTI events.
fn switch(event: jint, on: bool) -> Result<(), String> {
    match (event, on) {
        (JVMPI_EVENT_CLASS_LOAD_HOOK, _) => jvm::set_agent_hook(on).map_err(jvm::err_name),
        (JVMPI_EVENT_OBJECT_ALLOC, true) => alloc::enable(),
        (JVMPI_EVENT_OBJECT_ALLOC, false) => {
            alloc::disable();
            Ok(())
        }
        (
            JVMPI_EVENT_JNI_GLOBALREF_ALLOC
            | JVMPI_EVENT_JNI_GLOBALREF_FREE
            | JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC
            | JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE,
            true,
        ) => jnihooks::install(),
        _ => Ok(()),
    }
}

/// Announces what already exists when a defining event is switched on, so that nothing is
/// named before it was defined.
fn catch_up(event: jint) {
    match event {
        JVMPI_EVENT_THREAD_START => threads::announce_all(),
        JVMPI_EVENT_CLASS_LOAD => classes::announce_all(),
        _ => {}
    }
}

pub fn request(event: jint, arg: *mut c_void) -> jint {
    if is_dead() && !is_dump(event) {
        // The gate is closed for good (JVM_SHUT_DOWN is, or is about to be, the last event).
        log::debug!("RequestEvent({}): JVMPI_FAIL: the VM is shutting down", name(event));
        return JVMPI_FAIL;
    }
    let r = match event {
        JVMPI_EVENT_CLASS_LOAD => classes::request(arg as jobjectID),
        JVMPI_EVENT_THREAD_START => threads::request(arg as jobjectID),
        JVMPI_EVENT_OBJECT_ALLOC => objects::request(arg as jobjectID),
        JVMPI_EVENT_HEAP_DUMP | JVMPI_EVENT_MONITOR_DUMP | JVMPI_EVENT_OBJECT_DUMP => {
            log::warn!("RequestEvent({}): JVMPI_NOT_AVAILABLE: dumps are not emulated by this version", name(event));
            return JVMPI_NOT_AVAILABLE;
        }
        _ => {
            log::warn!(
                "RequestEvent({}): JVMPI_NOT_AVAILABLE: only CLASS_LOAD, THREAD_START, OBJECT_ALLOC and the dumps can be requested",
                name(event)
            );
            return JVMPI_NOT_AVAILABLE;
        }
    };
    match r {
        Ok(()) => JVMPI_SUCCESS,
        Err(why) => {
            log::log!(edge_level(None), "RequestEvent({}): JVMPI_FAIL: {why}", name(event));
            JVMPI_FAIL
        }
    }
}

// ---- delivery --------------------------------------------------------------------------------

static READY: AtomicBool = AtomicBool::new(false);
static DEAD: AtomicBool = AtomicBool::new(false);
/// VM death has begun (the shim's shutdown runs); `OVER` once JVM_SHUT_DOWN has been delivered.
static SHUTTING: AtomicBool = AtomicBool::new(false);
static OVER: AtomicBool = AtomicBool::new(false);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Events in flight in threads that are leaving the JVM from inside a handler (ProfilerExit):
/// they never return, so VM death does not wait for them.
static PARKED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Events being delivered in this thread (nested when a handler causes another event).
    static IN_FLIGHT_HERE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Opens the gate: the legacy `JVM_OnLoad` has returned. Replays the defining events of what
/// already exists for the events the agent enabled.
pub fn open_gate() {
    READY.store(true, SeqCst);
    // Threads first: every later event comes from a thread the agent has heard of.
    if enabled(JVMPI_EVENT_THREAD_START) {
        catch_up(JVMPI_EVENT_THREAD_START);
    }
    crate::hooks::offer_early();
    if enabled(JVMPI_EVENT_CLASS_LOAD) {
        catch_up(JVMPI_EVENT_CLASS_LOAD);
    }
}

/// The level of a line about a refused call: a warning when the agent made a mistake, debug
/// when the refusal comes from the shim's or the JVM's own state (the VM is going away, JVMTI
/// answers WRONG_PHASE), where HotSpot answered quietly.
pub fn edge_level(e: Option<jvm::Error>) -> log::Level {
    if is_dead() || e == Some(jvmti::jvmtiError::WRONG_PHASE) || jvm::phase().is_ok_and(|p| p != jvmti::JVMTI_PHASE_LIVE) {
        log::Level::Debug
    } else {
        log::Level::Warn
    }
}

pub fn is_dead() -> bool {
    DEAD.load(SeqCst)
}

/// Whether VM death has begun: the shim is shutting down, or has (JVM_SHUT_DOWN delivered).
pub fn shutting_down() -> bool {
    SHUTTING.load(SeqCst)
}

/// Whether JVM_SHUT_DOWN has been delivered (or would have been): the emulation is over.
pub fn is_over() -> bool {
    OVER.load(SeqCst)
}

/// Runs `f`, which leaves the JVM from the current thread (System.exit for ProfilerExit) and
/// may never return: meanwhile VM death does not wait for the events this thread is
/// delivering (one of their handlers is the caller).
pub fn leaving<R>(f: impl FnOnce() -> R) -> R {
    let mine = IN_FLIGHT_HERE.with(|n| n.get());
    PARKED.fetch_add(mine, SeqCst);
    let r = f();
    PARKED.fetch_sub(mine, SeqCst);
    r
}

pub fn is_ready() -> bool {
    READY.load(SeqCst) && !DEAD.load(SeqCst)
}

fn deliver(ev: &mut JVMPI_Event, needs_ready: bool) -> bool {
    if jvm::temporarily_attached() && jvm::current_jni() == Some(ev.env_id) {
        // Caused by a call from an agent's thread the JVM does not know (attached for that
        // call only): it is no JVMPI thread, so the event names none.
        ev.env_id = std::ptr::null_mut();
    }
    IN_FLIGHT.fetch_add(1, SeqCst);
    IN_FLIGHT_HERE.with(|n| n.set(n.get() + 1));
    let open = !DEAD.load(SeqCst) && (!needs_ready || READY.load(SeqCst));
    let sent = match (open, interface::notify_event()) {
        (true, Some(f)) => {
            // The caller owns every buffer `ev` points into, for the duration of the call.
            // SAFETY: `ev` is a fully initialised JVMPI_Event (see above); `f` is the agent's NotifyEvent.
            jvm::as_agent(|| unsafe { f(ev) });
            true
        }
        _ => false,
    };
    IN_FLIGHT_HERE.with(|n| n.set(n.get() - 1));
    IN_FLIGHT.fetch_sub(1, SeqCst);
    sent
}

/// Sends an event the agent enabled, in the current thread. The thread itself is announced
/// first if the agent has not heard of it.
pub fn send(ev: &mut JVMPI_Event) -> bool {
    if !is_ready() {
        return false;
    }
    threads::ensure_current_announced(ev.env_id);
    deliver(ev, true)
}

/// Sends an event the agent requested with `RequestEvent` (flag set here).
pub fn send_requested(ev: &mut JVMPI_Event) -> bool {
    ev.event_type |= JVMPI_REQUESTED_EVENT;
    deliver(ev, false)
}

/// Closes the gate for good, waits (bounded) for events inside the agent to return, and sends
/// `JVM_SHUT_DOWN` if enabled. Nothing is delivered after this.
///
/// VM death may come from inside an event handler (ProfilerExit or System.exit called there):
/// then the events this thread is delivering cannot return before it does, so they are not
/// waited for, nor are those of threads stuck in an exit of their own. Every wait here (the
/// last GC bracket, handlers in flight) shares one deadline of 2 s.
pub fn shut_down(env: *mut jvmti_bindings::sys::jni::JNIEnv) {
    if DEAD.load(SeqCst) || SHUTTING.swap(true, SeqCst) {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    gc::stop();
    classes::flush_pending(env, Duration::ZERO);
    gc::last_bracket(env, deadline);
    // JVM_SHUT_DOWN's thread (often `DestroyJavaVM`, on main's reused JNIEnv) is announced
    // while the gate is still open, so the agent finds its thread and thread-local storage.
    if READY.load(SeqCst) {
        threads::ensure_current_announced(env);
    }
    if DEAD.swap(true, SeqCst) {
        return;
    }
    let mine = IN_FLIGHT_HERE.with(|n| n.get());
    let others = || IN_FLIGHT.load(SeqCst).saturating_sub(mine + PARKED.load(SeqCst));
    while others() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    if others() > 0 {
        log::warn!("an event handler of the agent did not return within 2 s of VM death; sending JVM_SHUT_DOWN anyway");
    }
    if READY.load(SeqCst) && enabled(JVMPI_EVENT_JVM_SHUT_DOWN) {
        if let Some(f) = interface::notify_event() {
            let mut ev = JVMPI_Event::new(JVMPI_EVENT_JVM_SHUT_DOWN, env);
            // SAFETY: as in `deliver`; this is the last call the shim makes into the agent.
            unsafe { f(&mut ev) };
        }
    }
    OVER.store(true, SeqCst);
}
