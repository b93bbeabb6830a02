//! Raw monitors: `RawMonitorCreate/Enter/Exit/Wait/NotifyAll/Destroy` and the
//! `RAW_MONITOR_CONTENDED_ENTER/ENTERED/EXIT` events.
//!
//! A JVMPI raw monitor is a JVMTI raw monitor plus what JVMTI does not tell: who owns it, how
//! often it is entered, and how many threads are waiting to enter. That is enough to send the
//! contention events JVMTI lacks: a thread that finds the monitor owned by another sends
//! CONTENDED_ENTER, blocks, then sends CONTENDED_ENTERED; an owner that leaves while others wait
//! sends CONTENDED_EXIT just before it lets go. Monitors whose name starts with `_` send no events (JVMPI spec).
//! The handle given to the agent is a key into this room's table, so a stale or garbage handle
//! is refused with a log line instead of reaching JVMTI.

use crate::abi::*;
use crate::{events, jvm};
use dashmap::DashMap;
use jvmti_bindings::sys::jni::jlong;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, LazyLock, Mutex};

struct RawMon {
    jvmti: jvm::RawMonitorId,
    name: CString,
    quiet: bool,
    /// Shim thread number of the owner, 0 when free.
    owner: AtomicU64,
    /// Entry count of the owner.
    count: AtomicUsize,
    /// Threads blocked entering.
    entering: AtomicUsize,
    /// JNIEnv of the owner (0: free, or owned by a thread the JVM does not know).
    owner_env: AtomicUsize,
    /// For MONITOR_DUMP: JNIEnvs of the threads waiting to enter and of those in
    /// RawMonitorWait (0 for a thread the JVM does not know). Never held across a blocking call.
    queues: Mutex<Queues>,
}

#[derive(Default)]
struct Queues {
    enter: Vec<usize>,
    notify: Vec<usize>,
}

fn env_now() -> usize {
    jvm::current_jni().map_or(0, |e| e as usize)
}

fn queue(m: &RawMon, notify: bool, env: usize, add: bool) {
    let mut q = m.queues.lock().unwrap_or_else(|p| p.into_inner());
    let v = if notify { &mut q.notify } else { &mut q.enter };
    if add {
        v.push(env);
    } else if let Some(i) = v.iter().position(|&e| e == env) {
        v.swap_remove(i);
    }
}

/// One raw monitor as MONITOR_DUMP writes it. The monitor is kept alive (and its name valid)
/// as long as this lives.
pub struct RawMonitorState {
    mon: Arc<RawMon>,
    pub handle: usize,
    pub owner: usize,
    pub enter: Vec<usize>,
    pub notify: Vec<usize>,
}

impl RawMonitorState {
    /// The name as the agent gave it (NUL-terminated, valid while `self` lives).
    pub fn name_ptr(&self) -> usize {
        self.mon.name.as_ptr() as usize
    }
}

/// Every live raw monitor of the agent's, by handle: owner, threads waiting to enter, threads
/// waiting to be notified (JNIEnvs).
pub fn snapshot() -> Vec<RawMonitorState> {
    let mut v: Vec<RawMonitorState> = MONITORS
        .iter()
        .map(|e| {
            let m = e.value().clone();
            let (enter, notify) = {
                let q = m.queues.lock().unwrap_or_else(|p| p.into_inner());
                (q.enter.clone(), q.notify.clone())
            };
            let owner = if m.owner.load(SeqCst) != 0 { m.owner_env.load(SeqCst) } else { 0 };
            RawMonitorState { handle: *e.key(), owner, enter, notify, mon: m }
        })
        .collect();
    v.sort_unstable_by_key(|m| m.handle);
    v
}

static MONITORS: LazyLock<DashMap<usize, Arc<RawMon>>> = LazyLock::new(DashMap::new);
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static ME: u64 = NEXT_THREAD.fetch_add(1, Relaxed);
}

fn me() -> u64 {
    ME.with(|m| *m)
}

fn get(h: JVMPI_RawMonitor, what: &str) -> Option<Arc<RawMon>> {
    let m = MONITORS.get(&(h as usize)).map(|m| m.clone());
    if m.is_none() {
        crate::face::record::refused(what);
        log::warn!("{what}({h:p}): not a live raw monitor of this agent; ignored");
    }
    m
}

fn event(kind: i32, m: &RawMon, h: JVMPI_RawMonitor) {
    if m.quiet || !events::enabled(kind) {
        return;
    }
    let mut ev = JVMPI_Event::new(kind, jvm::current_jni().unwrap_or(std::ptr::null_mut()));
    ev.u.raw_monitor = RawMonitorInfo { name: m.name.as_ptr() as *mut _, id: h };
    events::send(&mut ev);
}

pub fn create(name: Option<String>) -> JVMPI_RawMonitor {
    let name = name.unwrap_or_default();
    let id = match jvm::raw_monitor_create(&name) {
        Ok(id) => id,
        Err(e) => {
            log::warn!("RawMonitorCreate({name}): {}; NULL", jvm::err_name(e));
            return std::ptr::null_mut();
        }
    };
    let m = Arc::new(RawMon {
        jvmti: id,
        quiet: name.starts_with('_'),
        name: jvm::cstring(&name),
        owner: AtomicU64::new(0),
        count: AtomicUsize::new(0),
        entering: AtomicUsize::new(0),
        owner_env: AtomicUsize::new(0),
        queues: Mutex::new(Queues::default()),
    });
    let h = Arc::as_ptr(&m) as usize;
    MONITORS.insert(h, m);
    h as JVMPI_RawMonitor
}

pub fn enter(h: JVMPI_RawMonitor) {
    let Some(m) = get(h, "RawMonitorEnter") else { return };
    let me = me();
    let owner = m.owner.load(SeqCst);
    if owner == me {
        let _ = jvm::raw_monitor_enter(m.jvmti);
        m.count.fetch_add(1, SeqCst);
        return;
    }
    let contended = owner != 0;
    if contended {
        event(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER, &m, h);
    }
    let env = env_now();
    m.entering.fetch_add(1, SeqCst);
    queue(&m, false, env, true);
    let r = jvm::raw_monitor_enter(m.jvmti);
    queue(&m, false, env, false);
    m.entering.fetch_sub(1, SeqCst);
    if let Err(e) = r {
        log::warn!("RawMonitorEnter: {}", jvm::err_name(e));
        return;
    }
    m.owner_env.store(env, SeqCst);
    m.owner.store(me, SeqCst);
    m.count.store(1, SeqCst);
    if contended {
        event(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED, &m, h);
    }
}

pub fn exit(h: JVMPI_RawMonitor) {
    let Some(m) = get(h, "RawMonitorExit") else { return };
    if m.owner.load(SeqCst) != me() {
        log::warn!("RawMonitorExit({h:p}): the calling thread does not own this monitor; ignored");
        return;
    }
    let last = m.count.load(SeqCst) == 1;
    if last && m.entering.load(SeqCst) > 0 {
        // Sent while still the owner, so it precedes the waiter's CONTENDED_ENTERED.
        event(JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT, &m, h);
    }
    if m.count.fetch_sub(1, SeqCst) == 1 {
        m.owner.store(0, SeqCst);
        m.owner_env.store(0, SeqCst);
    }
    let _ = jvm::raw_monitor_exit(m.jvmti);
}

/// `RawMonitorWait(m, ms)`. As in HotSpot 1.5 (`raw_wait`: `millis <= 0` parks until notified),
/// a zero or negative timeout waits until the monitor is notified.
pub fn wait(h: JVMPI_RawMonitor, ms: jlong) {
    let Some(m) = get(h, "RawMonitorWait") else { return };
    if jvm::current_jni().is_none() {
        // JVMTI's raw_wait needs a thread the JVM knows; on a native thread it crashes the JVM
        // (HotSpot 1.5 did not support it either). Enter and exit work from such a thread.
        log::warn!("RawMonitorWait({h:p}): the calling thread is not attached to the JVM; returned at once");
        return;
    }
    let me = me();
    if m.owner.load(SeqCst) != me {
        log::warn!("RawMonitorWait({h:p}): the calling thread does not own this monitor; ignored");
        return;
    }
    let count = m.count.swap(0, SeqCst);
    let env = m.owner_env.swap(0, SeqCst);
    m.owner.store(0, SeqCst);
    queue(&m, true, env, true);
    let r = jvm::raw_monitor_wait(m.jvmti, ms.max(0));
    queue(&m, true, env, false);
    m.owner_env.store(env, SeqCst);
    m.owner.store(me, SeqCst);
    m.count.store(count, SeqCst);
    if let Err(e) = r {
        log::debug!("RawMonitorWait: {}", jvm::err_name(e));
    }
}

pub fn notify_all(h: JVMPI_RawMonitor) {
    let Some(m) = get(h, "RawMonitorNotifyAll") else { return };
    if let Err(e) = jvm::raw_monitor_notify_all(m.jvmti) {
        log::warn!("RawMonitorNotifyAll({h:p}): {}", jvm::err_name(e));
    }
}

pub fn destroy(h: JVMPI_RawMonitor) {
    let Some((_, m)) = MONITORS.remove(&(h as usize)) else {
        crate::face::record::refused("RawMonitorDestroy");
        log::warn!("RawMonitorDestroy({h:p}): not a live raw monitor of this agent; ignored");
        return;
    };
    if let Err(e) = jvm::raw_monitor_destroy(m.jvmti) {
        log::warn!("RawMonitorDestroy({h:p}): {}", jvm::err_name(e));
    }
}
