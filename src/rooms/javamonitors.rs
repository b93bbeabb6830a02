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
//!   owner stays pinned while the exit is delivered (its THREAD_END waits). An owner that ends
//!   before the entrant gets in sends the exits it owes itself, just before its THREAD_END (the
//!   entrant's ENTERED waits for them). An owner the agent does not know (the shim's own
//!   thread, a thread after its THREAD_END, such as one whose exit wakes the joiners blocked on
//!   its `Thread` object) gets no CONTENDED_EXIT.
//! - `Thread.sleep` (HotSpot 1.5: WAIT/WAITED with a NULL object): JVMTI reports no event for a
//!   sleep on any JDK, so none is sent.

use crate::face::abi::*;
use crate::face::{events, ids};
use crate::rooms::threads;
use crate::vm::idhash::IdMap;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jlong, jobject, JNIEnv};
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering::SeqCst};
use std::sync::{Arc, LazyLock};
use std::time::Instant;

/// This thread's side of the Java monitors room.
struct Here {
    /// When this thread's current wait began (set at its MonitorWait, taken at its MonitorWaited).
    wait_start: Cell<Option<Instant>>,
    /// The exit owed for the monitor this thread is blocked on (set at its
    /// MonitorContendedEnter, taken at its MonitorContendedEntered).
    owed: std::cell::RefCell<Option<Arc<Owed>>>,
}

thread_local! {
    static HERE: Here = const { Here { wait_start: Cell::new(None), owed: std::cell::RefCell::new(None) } };
}

/// A CONTENDED_EXIT owed by the owner of a monitor a thread is blocked on: sent by the entrant
/// when it gets in, or by the owner itself if it ends first (before its THREAD_END).
struct Owed {
    owner: usize,
    object: usize,
    /// 0: owed; 1: being sent; 2: sent (or given up).
    state: AtomicU8,
}

/// The Java monitors room's state, shared by every thread: the exits owed, by owner JNIEnv
/// (entered by the blocked thread at its MonitorContendedEnter, taken out by whoever sends or
/// gives up the exit, and by the owner before its THREAD_END).
static BY_OWNER: LazyLock<IdMap<usize, Vec<Arc<Owed>>>> = LazyLock::new(IdMap::default);

fn forget(o: &Arc<Owed>) {
    if let Some(mut v) = BY_OWNER.get_mut(&o.owner) {
        v.retain(|x| !Arc::ptr_eq(x, o));
    }
    BY_OWNER.remove_if(&o.owner, |_, v| v.is_empty());
}

fn send_exit(env: *mut JNIEnv, object: usize) {
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_MONITOR_CONTENDED_EXIT, env);
    ev.u.monitor = Monitor { object: object as jobjectID };
    events::send(&mut ev);
}

/// Before the THREAD_END of the thread of `env` (lifecycle): the exits it owes to threads still
/// blocked on (or just getting into) monitors it has left are sent now, from it, as HotSpot 1.5
/// sent them from the owner's thread.
pub fn on_thread_end(env: *mut JNIEnv) {
    let Some((_, owed)) = BY_OWNER.remove(&(env as usize)) else { return };
    for o in owed {
        if o.state.compare_exchange(0, 1, SeqCst, SeqCst).is_ok() {
            if events::enabled(JVMPI_EVENT_MONITOR_CONTENDED_EXIT) {
                send_exit(env, o.object);
            }
            o.state.store(2, SeqCst);
        }
    }
}

fn send_monitor(kind: i32, env: *mut JNIEnv, obj: jobject) {
    match ids::id_of(obj) {
        Ok(id) => {
            let mut ev = JVMPI_Event::new(kind, env);
            ev.u.monitor = Monitor { object: id };
            events::send(&mut ev);
        }
        Err(e) => log::debug!("{}: {e}", crate::face::event_table::name(kind)),
    }
}

fn send_wait(kind: i32, env: *mut JNIEnv, obj: jobject, timeout: jlong) {
    match ids::id_of(obj) {
        Ok(id) => {
            let mut ev = JVMPI_Event::new(kind, env);
            ev.u.monitor_wait = MonitorWait { object: id, timeout };
            events::send(&mut ev);
        }
        Err(e) => log::debug!("{}: {e}", crate::face::event_table::name(kind)),
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
        let owed = match (owner, ids::id_of(obj)) {
            (Some(e), Ok(id)) if e != env => {
                let o = Arc::new(Owed { owner: e as usize, object: id as usize, state: AtomicU8::new(0) });
                BY_OWNER.entry(e as usize).or_default().push(o.clone());
                Some(o)
            }
            _ => None,
        };
        if let Some(old) = HERE.with(|h| h.owed.replace(owed)) {
            forget(&old);
        }
    }
    if events::enabled(JVMPI_EVENT_MONITOR_CONTENDED_ENTER) {
        send_monitor(JVMPI_EVENT_MONITOR_CONTENDED_ENTER, env, obj);
    }
}

/// JVMTI MonitorContendedEntered: the thread got the monitor it blocked on.
pub fn on_contended_entered(env: *mut JNIEnv, obj: jobject) {
    let owed = HERE.with(|h| h.owed.borrow_mut().take());
    if let Some(o) = &owed {
        forget(o);
    }
    if !events::is_ready() {
        return;
    }
    if let Some(o) = owed.filter(|_| events::enabled(JVMPI_EVENT_MONITOR_CONTENDED_EXIT)) {
        if o.state.compare_exchange(0, 1, SeqCst, SeqCst).is_ok() {
            match threads::pin_known(o.owner, events::listeners(JVMPI_EVENT_MONITOR_CONTENDED_EXIT)) {
                Some(pin) => send_exit(pin.env(), o.object),
                None => {
                    log::debug!("MONITOR_CONTENDED_EXIT: the owner {:#x} is unknown to the agent; not sent", o.owner)
                }
            }
            o.state.store(2, SeqCst);
        } else {
            // The owner is sending it as it ends: the exit comes before this entry.
            let deadline = Instant::now() + std::time::Duration::from_secs(5);
            while o.state.load(SeqCst) != 2 && Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
    }
    if events::enabled(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED) {
        send_monitor(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, env, obj);
    }
}

/// JVMTI MonitorWait: the thread is about to wait, `timeout` ms (0: until notified).
pub fn on_wait(env: *mut JNIEnv, obj: jobject, timeout: jlong) {
    HERE.with(|h| h.wait_start.set(Some(Instant::now())));
    if events::is_ready() && events::enabled(JVMPI_EVENT_MONITOR_WAIT) {
        send_wait(JVMPI_EVENT_MONITOR_WAIT, env, obj, timeout);
    }
}

/// JVMTI MonitorWaited: the wait is over; WAITED carries how long it lasted.
pub fn on_waited(env: *mut JNIEnv, obj: jobject) {
    let Some(start) = HERE.with(|h| h.wait_start.take()) else { return };
    if events::is_ready() && events::enabled(JVMPI_EVENT_MONITOR_WAITED) {
        send_wait(JVMPI_EVENT_MONITOR_WAITED, env, obj, start.elapsed().as_millis() as jlong);
    }
}
