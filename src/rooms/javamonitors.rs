//! Java monitors (`synchronized`, `Object.wait`): `MONITOR_CONTENDED_ENTER / ENTERED / EXIT` and
//! `MONITOR_WAIT / WAITED`, from JVMTI MonitorContendedEnter / Entered and MonitorWait / Waited.
//!
//! The object is named by its object ID (a JVMTI tag, see `ids`), which the agent can resolve
//! with `RequestEvent(OBJECT_ALLOC)`.
//!
//! - `MONITOR_WAIT.timeout` is the timeout given to `wait` in milliseconds (0: forever).
//! - `MONITOR_WAITED.timeout` is, as HotSpot 1.5 sent it, the time the thread actually waited,
//!   in milliseconds: measured here from its MonitorWait to its MonitorWaited (JVMTI only says
//!   whether the wait timed out).
//! - `MONITOR_CONTENDED_EXIT`: JVMTI has no event for a thread leaving a monitor. HotSpot 1.5
//!   sent it in the owner's thread when the owner left a monitor other threads were blocked on.
//!   The shim learns the owner when a thread blocks (JVMTI `GetObjectMonitorUsage` in
//!   MonitorContendedEnter, only while CONTENDED_EXIT is enabled) and sends CONTENDED_EXIT, with
//!   that owner's `JNIEnv*` as `env_id`, when the blocked thread gets in — just before its
//!   CONTENDED_ENTERED, from the thread that entered. So each contended entry is preceded by
//!   exactly one exit of the thread that held the monitor, in the right order relative to the
//!   entry; the exit arrives in the entering thread, and later than the owner left. Its env_id
//!   is always of a thread the agent was told about and has not had the THREAD_END of: the
//!   owner stays pinned while the exit is delivered (its THREAD_END waits), and an owner the
//!   agent does not know (the shim's own thread, a thread already ended, such as one whose exit
//!   woke the joiners blocked on its `Thread` object) gets no CONTENDED_EXIT.
//! - `Thread.sleep` (HotSpot 1.5: WAIT/WAITED with a NULL object): JVMTI reports no event for a
//!   sleep on any JDK, so none is sent.

use crate::abi::*;
use crate::{events, ids, jvm, threads};
use jvmti_bindings::sys::jni::{jlong, jobject, JNIEnv};
use std::cell::Cell;
use std::time::Instant;

thread_local! {
    /// When this thread's current wait began.
    static WAIT_START: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The JNIEnv of the thread that owned the monitor this thread is blocked on.
    static OWNER: Cell<usize> = const { Cell::new(0) };
}

fn send_monitor(kind: i32, env: *mut JNIEnv, obj: jobject) {
    match ids::id_of(obj) {
        Ok(id) => {
            let mut ev = JVMPI_Event::new(kind, env);
            ev.u.monitor = Monitor { object: id };
            events::send(&mut ev);
        }
        Err(e) => log::debug!("{}: {e}", events::name(kind)),
    }
}

fn send_wait(kind: i32, env: *mut JNIEnv, obj: jobject, timeout: jlong) {
    match ids::id_of(obj) {
        Ok(id) => {
            let mut ev = JVMPI_Event::new(kind, env);
            ev.u.monitor_wait = MonitorWait { object: id, timeout };
            events::send(&mut ev);
        }
        Err(e) => log::debug!("{}: {e}", events::name(kind)),
    }
}

/// JVMTI MonitorContendedEnter: the thread blocks on a monitor another thread owns.
pub fn on_contended_enter(env: *mut JNIEnv, obj: jobject) {
    if !events::is_ready() {
        return;
    }
    if events::enabled(JVMPI_EVENT_MONITOR_CONTENDED_EXIT) {
        let owner = jvm::monitor_owner(obj).ok().flatten().and_then(|t| {
            let e = threads::env_of(t);
            jvm::Jni::of(env).delete_local_ref(t);
            e
        });
        OWNER.with(|o| o.set(owner.map_or(0, |e| e as usize)));
    }
    if events::enabled(JVMPI_EVENT_MONITOR_CONTENDED_ENTER) {
        send_monitor(JVMPI_EVENT_MONITOR_CONTENDED_ENTER, env, obj);
    }
}

/// JVMTI MonitorContendedEntered: the thread got the monitor it blocked on.
pub fn on_contended_entered(env: *mut JNIEnv, obj: jobject) {
    let owner = OWNER.with(|o| o.replace(0));
    if !events::is_ready() {
        return;
    }
    if owner != 0 && owner != env as usize && events::enabled(JVMPI_EVENT_MONITOR_CONTENDED_EXIT) {
        match threads::pin_known(owner, events::listeners(JVMPI_EVENT_MONITOR_CONTENDED_EXIT)) {
            Some(pin) => send_monitor(JVMPI_EVENT_MONITOR_CONTENDED_EXIT, pin.env(), obj),
            None => log::debug!("MONITOR_CONTENDED_EXIT: the owner {owner:#x} has ended or is unknown to the agent; not sent"),
        }
    }
    if events::enabled(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED) {
        send_monitor(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, env, obj);
    }
}

/// JVMTI MonitorWait: the thread is about to wait, `timeout` ms (0: until notified).
pub fn on_wait(env: *mut JNIEnv, obj: jobject, timeout: jlong) {
    WAIT_START.with(|w| w.set(Some(Instant::now())));
    if events::is_ready() && events::enabled(JVMPI_EVENT_MONITOR_WAIT) {
        send_wait(JVMPI_EVENT_MONITOR_WAIT, env, obj, timeout);
    }
}

/// JVMTI MonitorWaited: the wait is over; WAITED carries how long it lasted.
pub fn on_waited(env: *mut JNIEnv, obj: jobject) {
    let Some(start) = WAIT_START.with(|w| w.take()) else { return };
    if events::is_ready() && events::enabled(JVMPI_EVENT_MONITOR_WAITED) {
        send_wait(JVMPI_EVENT_MONITOR_WAITED, env, obj, start.elapsed().as_millis() as jlong);
    }
}
