//! Raw monitors: `RawMonitorCreate/Enter/Exit/Wait/NotifyAll/Destroy` and the
//! `RAW_MONITOR_CONTENDED_ENTER/ENTERED/EXIT` events.
//!
//! A JVMPI raw monitor is the shim's own lock (below) plus what the contention events need: who
//! owns it, how often it is entered, and how many threads are waiting to enter. Not a JVMTI
//! raw monitor: JVMTI's crash in a thread the JVM does not know (Enter on JDK 11, Destroy on
//! 21 and 25, Wait on all), and agents' own pthreads use JVMPI raw monitors to share tables
//! with their event handlers. The shim's lock works in any thread, attached or not, before
//! JVM_INIT_DONE and after JVM_SHUT_DOWN; a Java thread blocked on it is in native code, where
//! it never holds up a safepoint. The events are those JVMTI lacks: a thread that finds the monitor owned by another sends
//! CONTENDED_ENTER, blocks, then sends CONTENDED_ENTERED; an owner that leaves while others wait
//! sends CONTENDED_EXIT just before it lets go. Monitors whose name starts with `_` send no events (JVMPI spec).
//! The handle given to the agent is a key into this room's table, so a stale or garbage handle
//! is refused with a log line instead of reaching JVMTI.

use crate::face::abi::*;
use crate::face::events;
use crate::vm::idhash::IdMap;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::jlong;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Condvar, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct RawMon {
    lock: Lock,
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

/// The current thread's env_id for the agent (in the shim's own threads, the stand-in's).
fn env_now() -> usize {
    jvm::current_jni().map_or(0, |e| crate::rooms::threads::event_env(e) as usize)
}

fn queue(m: &RawMon, notify: bool, env: usize, add: bool) {
    let mut q = crate::vm::logger::lock(&m.queues);
    let v = if notify { &mut q.notify } else { &mut q.enter };
    if add {
        v.push(env);
    } else if let Some(i) = v.iter().position(|&e| e == env) {
        v.swap_remove(i);
    }
}

/// One raw monitor as MONITOR_DUMP writes it (the monitor, and its name, are never freed).
pub struct RawMonitorState {
    mon: &'static RawMon,
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
    let mut v: Vec<RawMonitorState> = STATE
        .monitors
        .iter()
        .map(|e| {
            let m: &'static RawMon = e.value();
            let (enter, notify) = {
                let q = crate::vm::logger::lock(&m.queues);
                (q.enter.clone(), q.notify.clone())
            };
            let owner = if m.owner.load(SeqCst) != 0 { m.owner_env.load(SeqCst) } else { 0 };
            RawMonitorState { handle: *e.key(), owner, enter, notify, mon: m }
        })
        .collect();
    v.sort_unstable_by_key(|m| m.handle);
    v
}

/// A monitor's memory is never freed (RawMonitorDestroy only forgets the handle): a thread still
/// inside a destroyed monitor leaves it normally, no handle is ever reused, and a lookup needs no
/// reference count.
type Handles = IdMap<usize, &'static RawMon>;

/// The raw monitors room's state, shared by every thread.
struct MonitorsState {
    /// Handle → monitor: entered by RawMonitorCreate, taken out by RawMonitorDestroy.
    monitors: LazyLock<Handles>,
    /// The live handles again, each in its entry of a small direct-mapped table when that was
    /// free at its creation (0: free): agents enter and leave their locks around every event,
    /// and a load and a comparison cost less than the map's shard lock.
    live: [AtomicUsize; LIVE],
    /// The next thread identity as a raw-monitor owner (taken by each thread's first use, [`ME`]).
    next_thread: AtomicU64,
}

/// The size of [`MonitorsState::live`].
const LIVE: usize = 64;

/// The entry of handle `h` in [`MonitorsState::live`].
fn live_slot(h: usize) -> usize {
    (h >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - LIVE.trailing_zeros())
}

static STATE: MonitorsState = MonitorsState {
    monitors: LazyLock::new(Handles::default),
    live: [const { AtomicUsize::new(0) }; LIVE],
    next_thread: AtomicU64::new(1),
};

thread_local! {
    /// This thread's identity as a raw-monitor owner (its own, or the thread's it acts for).
    static ME: std::cell::Cell<u64> = std::cell::Cell::new(STATE.next_thread.fetch_add(1, Relaxed));
}

fn me() -> u64 {
    ME.with(|m| m.get())
}

/// The current thread's identity as a raw-monitor owner.
pub fn identity() -> u64 {
    me()
}

/// The current thread acts, for raw monitors, as the thread of `id` (taken with [`identity`]):
/// ProfilerExit's watchdog delivers JVM_SHUT_DOWN on behalf of an exiting thread stuck in the
/// JVM, whose handlers may hold the monitors the agent's JVM_SHUT_DOWN handler enters.
pub fn assume_identity(id: u64) {
    ME.with(|m| m.set(id));
}

#[inline]
fn get(h: JVMPI_RawMonitor, what: &str) -> Option<&'static RawMon> {
    let k = h as usize;
    if k != 0 && STATE.live[live_slot(k)].load(Acquire) == k {
        // A handle is the address of the monitor it names, leaked at its creation and never
        // freed (see `Handles`), and only `create` enters one in `live`.
        // SAFETY: `k` is such an address.
        return Some(unsafe { &*(k as *const RawMon) });
    }
    get_listed(h, what)
}

#[cold]
#[inline(never)]
fn get_listed(h: JVMPI_RawMonitor, what: &str) -> Option<&'static RawMon> {
    let m = STATE.monitors.get(&(h as usize)).map(|m| *m);
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
    let m: &'static RawMon = Box::leak(Box::new(RawMon {
        lock: Lock::default(),
        quiet: name.starts_with('_'),
        name: jvm::cstring(&name),
        owner: AtomicU64::new(0),
        count: AtomicUsize::new(0),
        entering: AtomicUsize::new(0),
        owner_env: AtomicUsize::new(0),
        queues: Mutex::new(Queues::default()),
    }));
    let h = m as *const RawMon as usize;
    STATE.monitors.insert(h, m);
    // After the map: a handle found in `live` is in the map too.
    let _ = STATE.live[live_slot(h)].compare_exchange(0, h, Release, Relaxed);
    h as JVMPI_RawMonitor
}

pub fn enter(h: JVMPI_RawMonitor) {
    let Some(m) = get(h, "RawMonitorEnter") else { return };
    let me = me();
    let owner = m.owner.load(SeqCst);
    if owner == me {
        m.lock.enter(me);
        // Only the owner writes `count` (and `owner_env`); others read them as hints.
        m.count.store(m.count.load(Relaxed) + 1, Relaxed);
        return;
    }
    let contended = owner != 0;
    let env = env_now();
    // Uncontended (agents take their locks around every event, millions of times a second):
    // no thread is queued, nothing to list for MONITOR_DUMP, no event; plain stores.
    if !contended && m.lock.try_enter(me) {
        m.owner_env.store(env, Relaxed);
        m.count.store(1, Relaxed);
        m.owner.store(me, Release);
        return;
    }
    if contended {
        event(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER, m, h);
    }
    m.entering.fetch_add(1, SeqCst);
    queue(m, false, env, true);
    m.lock.enter(me);
    queue(m, false, env, false);
    m.entering.fetch_sub(1, SeqCst);
    m.owner_env.store(env, SeqCst);
    m.owner.store(me, SeqCst);
    m.count.store(1, SeqCst);
    if contended {
        event(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED, m, h);
    }
}

pub fn exit(h: JVMPI_RawMonitor) {
    let Some(m) = get(h, "RawMonitorExit") else { return };
    let me = me();
    if m.owner.load(SeqCst) != me {
        log::warn!("RawMonitorExit({h:p}): the calling thread does not own this monitor; ignored");
        return;
    }
    let count = m.count.load(Relaxed);
    if count == 1 && m.entering.load(SeqCst) > 0 {
        // Sent while still the owner, so it precedes the waiter's CONTENDED_ENTERED.
        event(JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT, m, h);
    }
    m.count.store(count.saturating_sub(1), Relaxed);
    if count == 1 {
        m.owner.store(0, Release);
        m.owner_env.store(0, Relaxed);
    }
    m.lock.exit(me);
}

/// `RawMonitorWait(m, ms)`. As in HotSpot 1.5 (`raw_wait`: `millis <= 0` parks until notified),
/// a zero or negative timeout waits until the monitor is notified; so it does in a thread the
/// JVM does not know.
pub fn wait(h: JVMPI_RawMonitor, ms: jlong) {
    let Some(m) = get(h, "RawMonitorWait") else { return };
    let me = me();
    if m.owner.load(SeqCst) != me {
        log::warn!("RawMonitorWait({h:p}): the calling thread does not own this monitor; ignored");
        return;
    }
    let count = m.count.swap(0, SeqCst);
    let env = m.owner_env.swap(0, SeqCst);
    m.owner.store(0, SeqCst);
    queue(m, true, env, true);
    m.lock.wait(me, ms);
    queue(m, true, env, false);
    m.owner_env.store(env, SeqCst);
    m.owner.store(me, SeqCst);
    m.count.store(count, SeqCst);
}

pub fn notify_all(h: JVMPI_RawMonitor) {
    let Some(m) = get(h, "RawMonitorNotifyAll") else { return };
    if !m.lock.notify_all(me()) {
        log::warn!("RawMonitorNotifyAll({h:p}): the calling thread does not own this monitor; ignored");
    }
}

pub fn destroy(h: JVMPI_RawMonitor) {
    // Out of `live` before the map: a handle not in the map is in neither.
    let _ = STATE.live[live_slot(h as usize)].compare_exchange(h as usize, 0, Release, Relaxed);
    let Some((_, m)) = STATE.monitors.remove(&(h as usize)) else {
        crate::face::record::refused("RawMonitorDestroy");
        log::warn!("RawMonitorDestroy({h:p}): not a live raw monitor of this agent; ignored");
        return;
    };
    // Threads still inside it leave it normally (its memory is kept, see `Handles`).
    let owner = m.owner.load(SeqCst);
    if owner != 0 && owner != me() {
        log::warn!("RawMonitorDestroy({h:p}): destroyed while another thread owns it");
    }
}

// ---- the lock ----------------------------------------------------------------------------------

/// A re-entrant lock with wait and notify-all, in any thread. `me` is the caller's shim thread
/// number (never 0).
#[derive(Default)]
struct Lock {
    state: Mutex<LockState>,
    /// Signalled when the lock is left.
    free: Condvar,
    /// Signalled by notify-all.
    notified: Condvar,
}

#[derive(Default)]
struct LockState {
    /// 0 when free.
    owner: u64,
    count: usize,
    /// Notify-alls so far: a waiter wakes when this changes, not on a spurious wake-up.
    notifications: u64,
    /// Threads waiting on `free`: leaving the lock wakes one only when there is one (a
    /// condition variable's notify is a system call even when nobody waits).
    blocked: usize,
}

impl Lock {
    fn state(&self) -> MutexGuard<'_, LockState> {
        crate::vm::logger::lock(&self.state)
    }

    /// Waits on `cv` until `done` (the state lock is released while waiting).
    fn until<'a>(
        &self,
        cv: &Condvar,
        mut s: MutexGuard<'a, LockState>,
        done: impl Fn(&LockState) -> bool,
    ) -> MutexGuard<'a, LockState> {
        while !done(&s) {
            s = cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s
    }

    /// Waits until the lock is free (the state lock is released while waiting).
    fn until_free<'a>(&self, mut s: MutexGuard<'a, LockState>) -> MutexGuard<'a, LockState> {
        while s.owner != 0 {
            s.blocked += 1;
            s = self.free.wait(s).unwrap_or_else(|p| p.into_inner());
            s.blocked -= 1;
        }
        s
    }

    /// Wakes one thread waiting for the lock, if any (the state lock is held).
    fn wake_one(&self, s: &LockState) {
        if s.blocked > 0 {
            self.free.notify_one();
        }
    }

    fn enter(&self, me: u64) {
        let s = self.state();
        if s.owner == me {
            let mut s = s;
            s.count += 1;
            return;
        }
        let mut s = self.until_free(s);
        s.owner = me;
        s.count = 1;
    }

    /// Enters the lock if it is free, without waiting; false otherwise.
    fn try_enter(&self, me: u64) -> bool {
        let mut s = self.state();
        if s.owner != 0 {
            return false;
        }
        s.owner = me;
        s.count = 1;
        true
    }

    /// False when `me` does not own the lock.
    fn exit(&self, me: u64) -> bool {
        let mut s = self.state();
        if s.owner != me {
            return false;
        }
        s.count -= 1;
        if s.count == 0 {
            s.owner = 0;
            self.wake_one(&s);
        }
        true
    }

    /// Leaves the lock, waits for a notify-all (at most `ms` milliseconds when `ms > 0`), and
    /// enters it again with the same count. False when `me` does not own the lock.
    fn wait(&self, me: u64, ms: jlong) -> bool {
        let mut s = self.state();
        if s.owner != me {
            return false;
        }
        let count = std::mem::replace(&mut s.count, 0);
        s.owner = 0;
        self.wake_one(&s);
        let seen = s.notifications;
        if ms > 0 {
            let deadline = Instant::now() + Duration::from_millis(ms as u64);
            while s.notifications == seen {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                s = self.notified.wait_timeout(s, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
            }
        } else {
            s = self.until(&self.notified, s, |s| s.notifications != seen);
        }
        let mut s = self.until_free(s);
        s.owner = me;
        s.count = count;
        true
    }

    /// False when `me` does not own the lock.
    fn notify_all(&self, me: u64) -> bool {
        let mut s = self.state();
        if s.owner != me {
            return false;
        }
        s.notifications += 1;
        self.notified.notify_all();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Lock;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn reentrant_and_owned() {
        let l = Lock::default();
        l.enter(1);
        l.enter(1);
        assert!(!l.exit(2), "only the owner leaves");
        assert!(l.exit(1));
        assert!(!l.notify_all(2));
        assert!(l.exit(1));
        assert!(!l.exit(1), "left twice");
    }

    #[test]
    fn timed_wait_returns_and_keeps_the_count() {
        let l = Lock::default();
        l.enter(1);
        l.enter(1);
        let t = Instant::now();
        assert!(l.wait(1, 20));
        assert!(t.elapsed() >= Duration::from_millis(20));
        assert!(l.exit(1) && l.exit(1) && !l.exit(1));
    }

    #[test]
    fn untimed_wait_ends_at_notify_all_and_others_enter_meanwhile() {
        let l = Arc::new(Lock::default());
        let l2 = l.clone();
        let waiter = std::thread::spawn(move || {
            l2.enter(7);
            assert!(l2.wait(7, -1));
            assert!(l2.exit(7));
        });
        // The waiter left the lock while waiting: this thread gets in and notifies.
        loop {
            l.enter(8);
            if l.notify_all(8) {
                let done = waiter.is_finished();
                assert!(l.exit(8));
                if done {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        waiter.join().unwrap();
    }
}
