//! Event control: `EnableEvent`, `DisableEvent`, `RequestEvent`, and what enabling an event
//! sets in motion.
//!
//! The event table (`face::event_table`) says, for each JVMPI event number, whether the shim
//! emulates it, which JVMTI events it needs, and what its room does when it is switched on,
//! caught up or requested; this room acts on those columns. Enabling a JVMPI event asks
//! [`crate::vm::jvm::want`] for its JVMTI events and switches on the room that produces it;
//! disabling gives them back, so a disabled event costs nothing. Enabling a defining event
//! (THREAD_START, CLASS_LOAD) announces what already exists. The enabled set itself and the delivery live in the gate (`face::events`),
//! which never calls back into this room or any other.
//!
//! Several agents: each door is the calling agent's own (`a`, its number in load order), and so
//! is each mask. The JVMTI side of an event is switched on by the first agent that enables it
//! and off when the last one disables it. A late enabler of a defining event gets its own
//! catch-up (only it hears it; the other agents heard those threads and classes already).

use crate::face::abi::*;
use crate::face::event_table::{self, CatchUp, Request, Support, Switch};
use crate::face::events;
use crate::face::record;
use crate::face::table::Agent;
use crate::rooms::error::RoomError;
use crate::rooms::{alloc, classes, dumps, methods, objects, threads};
use crate::vm::jvm;
use jvmti_bindings::sys::jni::jint;
use jvmti_bindings::sys::jvmti::jvmtiEvent;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Mutex;

/// The control room's state, shared by every thread.
struct ControlState {
    /// Held by EnableEvent and DisableEvent of an emulated event while they switch it: the
    /// JVMTI events wanted and given back, the room switched, the gate's bit, in one step.
    switch: Mutex<()>,
    /// Events whose "never sent" / "not available" reason has been logged (bit n = event n;
    /// set by [`explain_once`]).
    explained: AtomicU64,
}

static STATE: ControlState = ControlState { switch: Mutex::new(()), explained: AtomicU64::new(0) };

/// The switch, for EnableEvent and DisableEvent. Its holder makes JVMTI calls under it (the
/// JVMTI events wanted), where an agent's SuspendThread may stop it until the agent resumes it;
/// once VM death has begun (an agent's JVM_SHUT_DOWN handler disabling its events) it is tried
/// until the exit paths' common time limit only (`jvm::set_exiting`), as the thread stopped
/// there may be resumed only after JVM_SHUT_DOWN. None when it stays held.
fn switch_lock() -> Option<std::sync::MutexGuard<'static, ()>> {
    if !events::shutting_down() {
        return Some(crate::vm::logger::lock(&STATE.switch));
    }
    crate::vm::logger::lock_until(&STATE.switch, jvm::set_exiting())
}

/// Logs `why` for `event` at info level, the first time only.
fn explain_once(what: &str, event: jint, answer: &str, why: &str) {
    let bit = if (0..64).contains(&event) { 1u64 << event } else { 0 };
    if bit == 0 || STATE.explained.fetch_or(bit, SeqCst) & bit == 0 {
        log::info!("{what}({}): {answer}: {why}", event_table::name(event));
    }
}

pub fn enable(a: Agent, event: jint, arg: *mut c_void) -> jint {
    let r = enable_inner(a, event, arg);
    if r == JVMPI_SUCCESS {
        record::enabled_event(event);
    }
    r
}

fn enable_inner(a: Agent, event: jint, _arg: *mut c_void) -> jint {
    let Some(row) = event_table::get(event) else {
        // A number that is no JVMPI event: the agent's mistake.
        log::warn!("EnableEvent({}): JVMPI_NOT_AVAILABLE: no such JVMPI event", event_table::name(event));
        return JVMPI_NOT_AVAILABLE;
    };
    match row.support {
        Support::NotAvailable(why) => {
            // HotSpot 1.5's answer too, for events that are only ever requested.
            explain_once("EnableEvent", event, "JVMPI_NOT_AVAILABLE", why);
            JVMPI_NOT_AVAILABLE
        }
        Support::Never(why) => {
            explain_once("EnableEvent", event, "enabled, never sent", why);
            events::set_enabled(a, event, true);
            JVMPI_SUCCESS
        }
        Support::Emulated(needs) => {
            {
                let Some(_g) = switch_lock() else {
                    log::info!(
                        "EnableEvent({}) during VM death: another EnableEvent/DisableEvent is held up (a thread suspended in it?); JVMPI_FAIL",
                        event_table::name(event)
                    );
                    return JVMPI_FAIL;
                };
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
                events::only(a, || catch_up(row.catch_up));
            }
            JVMPI_SUCCESS
        }
    }
}

/// The first agent enables an emulated event: its JVMTI events, then the room's switch.
fn switch_on(a: Agent, event: jint, needs: &[jvmtiEvent]) -> Result<(), jint> {
    for (i, &ev) in needs.iter().enumerate() {
        if let Err(e) = jvm::want(ev) {
            log::error!("EnableEvent({}): JVMTI refused event {ev}: {}", event_table::name(event), jvm::err_name(e));
            needs[..i].iter().for_each(|&ev| jvm::unwant(ev));
            return Err(JVMPI_FAIL);
        }
    }
    events::set_enabled(a, event, true);
    if let Err(e) = switch(event, true) {
        log::error!("EnableEvent({}): JVMPI_FAIL: {e}", event_table::name(event));
        events::set_enabled(a, event, false);
        needs.iter().for_each(|&ev| jvm::unwant(ev));
        return Err(JVMPI_FAIL);
    }
    Ok(())
}

pub fn disable(a: Agent, event: jint, _arg: *mut c_void) -> jint {
    match event_table::support(event) {
        Support::NotAvailable(why) => {
            log::debug!("DisableEvent({}): JVMPI_NOT_AVAILABLE: {why}", event_table::name(event));
            JVMPI_NOT_AVAILABLE
        }
        Support::Never(_) => {
            events::set_enabled(a, event, false);
            JVMPI_SUCCESS
        }
        Support::Emulated(needs) => {
            let Some(_g) = switch_lock() else {
                // VM death: no more events reach the agent anyway; what JVMTI sends stays on.
                log::info!(
                    "DisableEvent({}) during VM death: another EnableEvent/DisableEvent is held up (a thread suspended in it?); disabled for the agent only",
                    event_table::name(event)
                );
                events::set_enabled(a, event, false);
                return JVMPI_SUCCESS;
            };
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

/// `GetEnv(JVMPI_VERSION_1…)` from a JNI library at run time (not from an agent library): as
/// HotSpot 1.5's `jvmpi::GetInterface_1` re-initialised its one interface for every caller,
/// every event agent `a` has enabled is disabled (its `NotifyEvent`, which the library is about
/// to set, is left alone, as there). Returns how many were.
pub fn reinitialise(a: Agent) -> usize {
    let on: Vec<jint> = event_table::ROWS.iter().map(|r| r.event).filter(|&ev| events::enabled_for(a, ev)).collect();
    for &ev in &on {
        disable(a, ev, std::ptr::null_mut());
    }
    on.len()
}

/// What switching an event on or off does beyond JVMTI events (its row's [`Switch`]).
fn switch(event: jint, on: bool) -> Result<(), RoomError> {
    let Some(row) = event_table::get(event) else { return Ok(()) };
    match (row.switch, on) {
        (Switch::Nothing, _) => Ok(()),
        (Switch::AgentHook, _) => jvm::set_agent_hook(on).map_err(RoomError::Jvmti),
        (Switch::Alloc, true) => alloc::enable(),
        (Switch::Alloc, false) => {
            alloc::disable();
            Ok(())
        }
        (Switch::JniHooks, true) => Ok(jvm::install_jni_hooks()?),
        (Switch::ResetSignal, true) => crate::rooms::reset::arm(),
        (Switch::JniHooks | Switch::ResetSignal, false) => Ok(()),
        (Switch::Methods, on) => methods::switch(event, on),
    }
}

/// Announces what already exists when a defining event is switched on (its row's
/// [`CatchUp`]), so that nothing is named before it was defined.
fn catch_up(what: CatchUp) {
    match what {
        CatchUp::Nothing => {}
        CatchUp::Threads => threads::announce_all(),
        CatchUp::Classes => classes::announce_all(),
        CatchUp::Compiled => crate::rooms::compiled::catch_up(),
    }
}

/// Runs a catch-up if an agent enabled an event that has it (the gate opens).
fn catch_up_if_enabled(what: CatchUp) {
    if event_table::ROWS.iter().any(|r| r.catch_up == what && events::enabled(r.event)) {
        catch_up(what);
    }
}

pub fn request(event: jint, arg: *mut c_void) -> jint {
    record::requested_event(event);
    let what = event_table::get(event).map_or(Request::No, |r| r.request);
    if what != Request::No && events::is_dead() && !events::in_last() {
        // The gate is closed for good (JVM_SHUT_DOWN is, or is about to be, the last event);
        // only JVM_SHUT_DOWN's own handler still gets what it requests.
        log::debug!("RequestEvent({}): JVMPI_FAIL: the VM is shutting down", event_table::name(event));
        return JVMPI_FAIL;
    }
    let r = match what {
        Request::Class => classes::request(arg as jobjectID),
        Request::Thread => threads::request(arg as jobjectID),
        Request::Object => objects::request(arg as jobjectID),
        Request::HeapDump => dumps::request_heap_dump(arg),
        Request::ObjectDump => dumps::request_object_dump(arg as jobjectID),
        Request::MonitorDump => dumps::request_monitor_dump(),
        Request::No => {
            log::warn!(
                "RequestEvent({}): JVMPI_NOT_AVAILABLE: only CLASS_LOAD, THREAD_START, OBJECT_ALLOC and the dumps can be requested",
                event_table::name(event)
            );
            return JVMPI_NOT_AVAILABLE;
        }
    };
    match r {
        Ok(()) => JVMPI_SUCCESS,
        Err(why) => {
            log::log!(events::edge_level(why.jvmti()), "RequestEvent({}): JVMPI_FAIL: {why}", event_table::name(event));
            JVMPI_FAIL
        }
    }
}

/// Opens the gate: the legacy `JVM_OnLoad` has returned. Replays the defining events of what
/// already exists for the events the agent enabled.
pub fn open_gate() {
    methods::gate_opening();
    // No start-up retransformation is to come: the rewrite cache's file read ahead goes.
    crate::vm::rewrites::gate_opened();
    events::open();
    // Threads first: every later event comes from a thread the agent has heard of.
    catch_up_if_enabled(CatchUp::Threads);
    crate::rooms::hooks::offer_early();
    catch_up_if_enabled(CatchUp::Classes);
    catch_up_if_enabled(CatchUp::Compiled);
}
