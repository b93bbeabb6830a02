//! Event control: `EnableEvent`, `DisableEvent`, `RequestEvent`, and what enabling an event
//! sets in motion.
//!
//! The table [`support`] says, for each JVMPI event number, whether the shim emulates it and
//! which JVMTI events it needs. Enabling a JVMPI event asks [`crate::jvm::want`] for those JVMTI
//! events and switches on the room that produces it; disabling gives them back, so a disabled
//! event costs nothing. Enabling a defining event (THREAD_START, CLASS_LOAD) announces what
//! already exists. The enabled set itself and the delivery live in the gate (`face::events`),
//! which never calls back into this room or any other.
//!
//! Several agents: each door is the calling agent's own (`a`, its number in load order), and so
//! is each mask. The JVMTI side of an event is switched on by the first agent that enables it
//! and off when the last one disables it. A late enabler of a defining event gets its own
//! catch-up (only it hears it; the other agents heard those threads and classes already).

use crate::abi::*;
use crate::face::record;
use crate::{alloc, classes, dumps, events, jvm, methods, objects, threads};
use jvmti_bindings::sys::jni::jint;
use jvmti_bindings::sys::jvmti::{self, jvmtiEvent};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Mutex;

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

/// What the shim does for `event` (compat-matrix.md's table, checked by tests/matrix.rs).
pub fn support(event: jint) -> Support {
    use Support::*;
    const GC: &[jvmtiEvent] = &[jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_START, jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH];
    const UNLOAD: &[jvmtiEvent] = &[
        jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_START,
        jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
        jvmti::JVMTI_EVENT_OBJECT_FREE,
    ];
    const COMPILED: &[jvmtiEvent] = &[jvmti::JVMTI_EVENT_COMPILED_METHOD_LOAD, jvmti::JVMTI_EVENT_COMPILED_METHOD_UNLOAD];
    const CONTENDED: &[jvmtiEvent] =
        &[jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTER, jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTERED];
    const WAITS: &[jvmtiEvent] = &[jvmti::JVMTI_EVENT_MONITOR_WAIT, jvmti::JVMTI_EVENT_MONITOR_WAITED];
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
        // An unload goes only to code whose load the room saw: both need both JVMTI events.
        JVMPI_EVENT_COMPILED_METHOD_LOAD | JVMPI_EVENT_COMPILED_METHOD_UNLOAD => Emulated(COMPILED),
        JVMPI_EVENT_MONITOR_CONTENDED_ENTER => Emulated(&[jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTER]),
        JVMPI_EVENT_MONITOR_CONTENDED_ENTERED => Emulated(&[jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTERED]),
        // Emulated: the owner seen when a thread blocks, sent when that thread gets in.
        JVMPI_EVENT_MONITOR_CONTENDED_EXIT => Emulated(CONTENDED),
        JVMPI_EVENT_MONITOR_WAIT => Emulated(&[jvmti::JVMTI_EVENT_MONITOR_WAIT]),
        // WAITED carries the time waited, measured from the wait's start.
        JVMPI_EVENT_MONITOR_WAITED => Emulated(WAITS),
        JVMPI_EVENT_METHOD_ENTRY => Emulated(&[]),
        JVMPI_EVENT_METHOD_ENTRY2 => Emulated(&[]),
        JVMPI_EVENT_METHOD_EXIT => Emulated(&[]),
        JVMPI_EVENT_INSTRUCTION_START => Emulated(&[]),
        _ => NotAvailable("no such JVMPI event"),
    }
}

static SWITCH: Mutex<()> = Mutex::new(());
/// Events whose "never sent" / "not available" reason has been logged (bit n = event n).
static EXPLAINED: AtomicU64 = AtomicU64::new(0);

fn is_dump(event: jint) -> bool {
    matches!(event, JVMPI_EVENT_HEAP_DUMP | JVMPI_EVENT_MONITOR_DUMP | JVMPI_EVENT_OBJECT_DUMP)
}

/// Logs `why` for `event` at info level, the first time only.
fn explain_once(what: &str, event: jint, answer: &str, why: &str) {
    let bit = if (0..64).contains(&event) { 1u64 << event } else { 0 };
    if bit == 0 || EXPLAINED.fetch_or(bit, SeqCst) & bit == 0 {
        log::info!("{what}({}): {answer}: {why}", events::name(event));
    }
}

pub fn enable(a: usize, event: jint, arg: *mut c_void) -> jint {
    let r = enable_inner(a, event, arg);
    if r == JVMPI_SUCCESS {
        record::enabled_event(event);
    }
    r
}

fn enable_inner(a: usize, event: jint, _arg: *mut c_void) -> jint {
    match support(event) {
        Support::NotAvailable(why) if is_dump(event) => {
            // HotSpot 1.5's answer too, for events that are only ever requested.
            explain_once("EnableEvent", event, "JVMPI_NOT_AVAILABLE", why);
            JVMPI_NOT_AVAILABLE
        }
        Support::NotAvailable(why) => {
            // A number that is no JVMPI event: the agent's mistake.
            log::warn!("EnableEvent({}): JVMPI_NOT_AVAILABLE: {why}", events::name(event));
            JVMPI_NOT_AVAILABLE
        }
        Support::Never(why) => {
            explain_once("EnableEvent", event, "enabled, never sent", why);
            events::set_enabled(a, event, true);
            JVMPI_SUCCESS
        }
        Support::Emulated(needs) => {
            {
                let _g = SWITCH.lock().unwrap_or_else(|p| p.into_inner());
                if events::enabled_for(a, event) {
                    return JVMPI_SUCCESS;
                }
                if events::enabled(event) {
                    // Another agent switched it on already.
                    events::set_enabled(a, event, true);
                } else if let Err(r) = switch_on(a, event, needs) {
                    return r;
                }
            }
            if events::is_ready() {
                events::only(a, || catch_up(event));
            }
            JVMPI_SUCCESS
        }
    }
}

/// The first agent enables an emulated event: its JVMTI events, then the room's switch.
fn switch_on(a: usize, event: jint, needs: &[jvmtiEvent]) -> Result<(), jint> {
    for (i, &ev) in needs.iter().enumerate() {
        if let Err(e) = jvm::want(ev) {
            log::error!("EnableEvent({}): JVMTI refused event {ev}: {}", events::name(event), jvm::err_name(e));
            needs[..i].iter().for_each(|&ev| jvm::unwant(ev));
            return Err(JVMPI_FAIL);
        }
    }
    events::set_enabled(a, event, true);
    if let Err(e) = switch(event, true) {
        log::error!("EnableEvent({}): JVMPI_FAIL: {e}", events::name(event));
        events::set_enabled(a, event, false);
        needs.iter().for_each(|&ev| jvm::unwant(ev));
        return Err(JVMPI_FAIL);
    }
    Ok(())
}

pub fn disable(a: usize, event: jint, _arg: *mut c_void) -> jint {
    match support(event) {
        Support::NotAvailable(why) => {
            log::debug!("DisableEvent({}): JVMPI_NOT_AVAILABLE: {why}", events::name(event));
            JVMPI_NOT_AVAILABLE
        }
        Support::Never(_) => {
            events::set_enabled(a, event, false);
            JVMPI_SUCCESS
        }
        Support::Emulated(needs) => {
            let _g = SWITCH.lock().unwrap_or_else(|p| p.into_inner());
            if events::enabled_for(a, event) {
                events::set_enabled(a, event, false);
                if !events::enabled(event) {
                    // The last agent that wanted it.
                    needs.iter().for_each(|&ev| jvm::unwant(ev));
                    let _ = switch(event, false);
                }
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
        ) => jvm::install_jni_hooks(),
        (JVMPI_EVENT_DATA_RESET_REQUEST, true) => crate::reset::arm(),
        (
            JVMPI_EVENT_METHOD_ENTRY | JVMPI_EVENT_METHOD_ENTRY2 | JVMPI_EVENT_METHOD_EXIT | JVMPI_EVENT_INSTRUCTION_START,
            on,
        ) => methods::switch(event, on),
        _ => Ok(()),
    }
}

/// Announces what already exists when a defining event is switched on, so that nothing is
/// named before it was defined.
fn catch_up(event: jint) {
    match event {
        JVMPI_EVENT_THREAD_START => threads::announce_all(),
        JVMPI_EVENT_CLASS_LOAD => classes::announce_all(),
        JVMPI_EVENT_COMPILED_METHOD_LOAD | JVMPI_EVENT_COMPILED_METHOD_UNLOAD => crate::compiled::catch_up(),
        _ => {}
    }
}

pub fn request(event: jint, arg: *mut c_void) -> jint {
    record::requested_event(event);
    let requestable = matches!(
        event,
        JVMPI_EVENT_CLASS_LOAD
            | JVMPI_EVENT_THREAD_START
            | JVMPI_EVENT_OBJECT_ALLOC
            | JVMPI_EVENT_HEAP_DUMP
            | JVMPI_EVENT_OBJECT_DUMP
            | JVMPI_EVENT_MONITOR_DUMP
    );
    if requestable && events::is_dead() && !events::in_last() {
        // The gate is closed for good (JVM_SHUT_DOWN is, or is about to be, the last event);
        // only JVM_SHUT_DOWN's own handler still gets what it requests.
        log::debug!("RequestEvent({}): JVMPI_FAIL: the VM is shutting down", events::name(event));
        return JVMPI_FAIL;
    }
    let r = match event {
        JVMPI_EVENT_CLASS_LOAD => classes::request(arg as jobjectID),
        JVMPI_EVENT_THREAD_START => threads::request(arg as jobjectID),
        JVMPI_EVENT_OBJECT_ALLOC => objects::request(arg as jobjectID),
        JVMPI_EVENT_HEAP_DUMP => dumps::request_heap_dump(arg),
        JVMPI_EVENT_OBJECT_DUMP => dumps::request_object_dump(arg as jobjectID),
        JVMPI_EVENT_MONITOR_DUMP => dumps::request_monitor_dump(),
        _ => {
            log::warn!(
                "RequestEvent({}): JVMPI_NOT_AVAILABLE: only CLASS_LOAD, THREAD_START, OBJECT_ALLOC and the dumps can be requested",
                events::name(event)
            );
            return JVMPI_NOT_AVAILABLE;
        }
    };
    match r {
        Ok(()) => JVMPI_SUCCESS,
        Err(why) => {
            log::log!(events::edge_level(None), "RequestEvent({}): JVMPI_FAIL: {why}", events::name(event));
            JVMPI_FAIL
        }
    }
}

/// Opens the gate: the legacy `JVM_OnLoad` has returned. Replays the defining events of what
/// already exists for the events the agent enabled.
pub fn open_gate() {
    methods::gate_opening();
    events::open();
    // Threads first: every later event comes from a thread the agent has heard of.
    if events::enabled(JVMPI_EVENT_THREAD_START) {
        catch_up(JVMPI_EVENT_THREAD_START);
    }
    crate::hooks::offer_early();
    if events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        catch_up(JVMPI_EVENT_CLASS_LOAD);
    }
    if events::enabled(JVMPI_EVENT_COMPILED_METHOD_LOAD) || events::enabled(JVMPI_EVENT_COMPILED_METHOD_UNLOAD) {
        catch_up(JVMPI_EVENT_COMPILED_METHOD_LOAD);
    }
}

