//! The event gate: which events the agent has enabled, and the one path by which every event
//! reaches the agent's `NotifyEvent`.
//!
//! Events flow only after the legacy `JVM_OnLoad` has returned (what happened before is
//! replayed by the catch-up of the defining events, see `rooms::control`), and never after
//! `JVM_SHUT_DOWN`: [`close`] shuts the gate for good and waits for events already inside the
//! agent to return, and [`send_last`] then delivers `JVM_SHUT_DOWN`, the last event.
//!
//! The gate calls no room. The one thing it needs from one — that the sending thread has been
//! announced to the agent before its first event — is a function the threads room registers
//! with [`set_announcer`].

use crate::abi::*;
use crate::face::{record, table};
use crate::jvm;
use jvmti_bindings::sys::jni::{jint, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Which JVMPI events the agent has enabled (bit n = event n).
static ENABLED: AtomicU64 = AtomicU64::new(0);

pub fn enabled(event: jint) -> bool {
    (0..64).contains(&event) && ENABLED.load(Relaxed) & (1 << event) != 0
}

/// Sets or clears an event's bit (the control room does, on EnableEvent/DisableEvent).
pub fn set_enabled(event: jint, on: bool) {
    if (0..64).contains(&event) {
        if on {
            ENABLED.fetch_or(1 << event, SeqCst);
        } else {
            ENABLED.fetch_and(!(1 << event), SeqCst);
        }
    }
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

// ---- delivery --------------------------------------------------------------------------------

static READY: AtomicBool = AtomicBool::new(false);
static DEAD: AtomicBool = AtomicBool::new(false);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

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

pub fn is_ready() -> bool {
    READY.load(SeqCst) && !DEAD.load(SeqCst)
}

fn deliver(ev: &mut JVMPI_Event, needs_ready: bool) -> bool {
    IN_FLIGHT.fetch_add(1, SeqCst);
    let open = !DEAD.load(SeqCst) && (!needs_ready || READY.load(SeqCst));
    let sent = match (open, table::notify_event()) {
        (true, Some(f)) => {
            // The caller owns every buffer `ev` points into, for the duration of the call.
            if record::on() {
                let t = Instant::now();
                // SAFETY: `ev` is a fully initialised JVMPI_Event (see above); `f` is the agent's NotifyEvent.
                jvm::as_agent(|| unsafe { f(ev) });
                record::event(ev, t.elapsed().as_nanos() as u64);
            } else {
                // SAFETY: as above.
                jvm::as_agent(|| unsafe { f(ev) });
            }
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
    if let Some(announce) = ANNOUNCER.get() {
        announce(ev.env_id);
    }
    deliver(ev, true)
}

/// The hot path of [`send`], for events sent from Java code many times a second (method
/// events): the caller has read the current thread's flags with [`jvm::here`] and found it
/// announced and not inside the shim's own JNI call, so nothing is left to do but the gate's
/// checks and the call.
#[inline]
pub fn send_here(ev: &mut JVMPI_Event) -> bool {
    IN_FLIGHT.fetch_add(1, SeqCst);
    let sent = match (!DEAD.load(SeqCst) && READY.load(SeqCst), table::notify_event()) {
        (true, Some(f)) => {
            if record::on() {
                let t = Instant::now();
                // SAFETY: as in `deliver`; the thread is not inside the shim's JNI call.
                unsafe { f(ev) };
                record::event(ev, t.elapsed().as_nanos() as u64);
            } else {
                // SAFETY: as above.
                unsafe { f(ev) };
            }
            true
        }
        _ => false,
    };
    IN_FLIGHT.fetch_sub(1, SeqCst);
    sent
}

/// Sends an event the agent requested with `RequestEvent` (flag set here).
pub fn send_requested(ev: &mut JVMPI_Event) -> bool {
    ev.event_type |= JVMPI_REQUESTED_EVENT;
    deliver(ev, false)
}

/// Registers the function that announces the current thread to the agent (threads room).
pub fn set_announcer(f: fn(*mut JNIEnv)) {
    let _ = ANNOUNCER.set(f);
}
static ANNOUNCER: OnceLock<fn(*mut JNIEnv)> = OnceLock::new();

/// Opens the gate: the legacy `JVM_OnLoad` has returned.
pub fn open() {
    READY.store(true, SeqCst);
}

/// Closes the gate for good and waits (2 s at most) for events inside the agent to return.
/// Returns false if it was closed already.
pub fn close() -> bool {
    if DEAD.swap(true, SeqCst) {
        return false;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while IN_FLIGHT.load(SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    if IN_FLIGHT.load(SeqCst) > 0 {
        log::warn!("an event handler of the agent did not return within 2 s of VM death; sending JVM_SHUT_DOWN anyway");
    }
    true
}

/// After [`close`]: delivers the last event (JVM_SHUT_DOWN) if the gate was ever open.
pub fn send_last(ev: &mut JVMPI_Event) {
    if READY.load(SeqCst) {
        if let Some(f) = table::notify_event() {
            let t = Instant::now();
            // SAFETY: as in `deliver`; this is the last call the shim makes into the agent.
            unsafe { f(ev) };
            if record::on() {
                record::event(ev, t.elapsed().as_nanos() as u64);
            }
        }
    }
}
