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
    /// `EnableEvent` succeeds and the event is never sent, because in the shim's model it can
    /// never happen (the reason is logged once).
    Never(&'static str),
    /// `EnableEvent` answers `JVMPI_NOT_AVAILABLE` (the reason is logged once).
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
    match event {
        JVMPI_EVENT_JVM_INIT_DONE | JVMPI_EVENT_JVM_SHUT_DOWN => Emulated(&[]),
        JVMPI_EVENT_THREAD_START | JVMPI_EVENT_THREAD_END => Emulated(&[]),
        JVMPI_EVENT_CLASS_LOAD => Emulated(&[jvmti::JVMTI_EVENT_CLASS_PREPARE]),
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
        JVMPI_EVENT_DATA_DUMP_REQUEST => Emulated(&[jvmti::JVMTI_EVENT_DATA_DUMP_REQUEST]),
        JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER
        | JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED
        | JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT => Emulated(&[]),
        JVMPI_EVENT_DATA_RESET_REQUEST => {
            NotAvailable("JVMTI has no reset request (JDK 1.2-1.5 never sent one either)")
        }
        JVMPI_EVENT_HEAP_DUMP | JVMPI_EVENT_MONITOR_DUMP | JVMPI_EVENT_OBJECT_DUMP => {
            NotAvailable("dump events are only sent on RequestEvent (JVMPI spec)")
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
        | JVMPI_EVENT_MONITOR_WAITED => NotAvailable("not emulated by this version of the shim"),
        _ => NotAvailable("no such JVMPI event"),
    }
}

/// Which JVMPI events the agent has enabled (bit n = event n).
static ENABLED: AtomicU64 = AtomicU64::new(0);
static SWITCH: Mutex<()> = Mutex::new(());

pub fn enabled(event: jint) -> bool {
    (0..64).contains(&event) && ENABLED.load(Relaxed) & (1 << event) != 0
}

fn name(event: jint) -> String {
    format!("event {event}")
}

pub fn enable(event: jint, _arg: *mut c_void) -> jint {
    match support(event) {
        Support::NotAvailable(why) => {
            log::warn!("EnableEvent({}): JVMPI_NOT_AVAILABLE: {why}", name(event));
            JVMPI_NOT_AVAILABLE
        }
        Support::Never(why) => {
            log::info!("EnableEvent({}): enabled, never sent: {why}", name(event));
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
            log::warn!("DisableEvent({}): JVMPI_NOT_AVAILABLE: {why}", name(event));
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
            log::warn!("RequestEvent({}): JVMPI_FAIL: {why}", name(event));
            JVMPI_FAIL
        }
    }
}

// ---- delivery --------------------------------------------------------------------------------

static READY: AtomicBool = AtomicBool::new(false);
static DEAD: AtomicBool = AtomicBool::new(false);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Opens the gate: the legacy `JVM_OnLoad` has returned. Replays the defining events of what
/// already exists for the events the agent enabled.
pub fn open_gate() {
    READY.store(true, SeqCst);
    crate::hooks::offer_early();
    for ev in [JVMPI_EVENT_THREAD_START, JVMPI_EVENT_CLASS_LOAD] {
        if enabled(ev) {
            catch_up(ev);
        }
    }
}

pub fn is_dead() -> bool {
    DEAD.load(SeqCst)
}

pub fn is_ready() -> bool {
    READY.load(SeqCst) && !DEAD.load(SeqCst)
}

fn deliver(ev: &mut JVMPI_Event, needs_ready: bool) -> bool {
    IN_FLIGHT.fetch_add(1, SeqCst);
    let open = !DEAD.load(SeqCst) && (!needs_ready || READY.load(SeqCst));
    let sent = match (open, interface::notify_event()) {
        (true, Some(f)) => {
            // The caller owns every buffer `ev` points into, for the duration of the call.
            // SAFETY: `ev` is a fully initialised JVMPI_Event (see above); `f` is the agent's NotifyEvent.
            unsafe { f(ev) };
            true
        }
        _ => false,
    };
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
pub fn shut_down(env: *mut jvmti_bindings::sys::jni::JNIEnv) {
    if DEAD.load(SeqCst) {
        return;
    }
    gc::stop();
    gc::last_bracket(env);
    if DEAD.swap(true, SeqCst) {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while IN_FLIGHT.load(SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    if IN_FLIGHT.load(SeqCst) > 0 {
        log::warn!("an event handler of the agent did not return within 2 s of VM death; sending JVM_SHUT_DOWN anyway");
    }
    if READY.load(SeqCst) && enabled(JVMPI_EVENT_JVM_SHUT_DOWN) {
        if let Some(f) = interface::notify_event() {
            let mut ev = JVMPI_Event::new(JVMPI_EVENT_JVM_SHUT_DOWN, env);
            // SAFETY: as in `deliver`; this is the last call the shim makes into the agent.
            unsafe { f(&mut ev) };
        }
    }
}
