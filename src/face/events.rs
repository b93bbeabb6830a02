//! The event gate: which events each agent has enabled, and the one path by which every event
//! reaches an agent's `NotifyEvent`.
//!
//! Several agents: each has its own mask. An event goes to every agent whose mask has it, one
//! after the other in load order, in the sending thread (each gets its own copy of the event);
//! a requested event only to the agent whose `RequestEvent` is running in this thread
//! ([`as_requester`]); while [`only`] runs (the catch-up of one agent), only to that agent.
//! Rooms ask [`enabled`] (does any agent want it?) before building an event.
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
use crate::face::table::{self, MAX_AGENTS};
use crate::face::record;
use crate::jvm;
use jvmti_bindings::sys::jni::{jint, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::cell::Cell;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Which JVMPI events each agent has enabled (bit n = event n), and their union.
static ENABLED: [AtomicU64; MAX_AGENTS] = [const { AtomicU64::new(0) }; MAX_AGENTS];
static ANY: AtomicU64 = AtomicU64::new(0);
static UNION: Mutex<()> = Mutex::new(());

/// Whether any agent has enabled `event`.
pub fn enabled(event: jint) -> bool {
    (0..64).contains(&event) && ANY.load(Relaxed) & (1 << event) != 0
}

/// Whether agent `a` has enabled `event`.
pub fn enabled_for(a: usize, event: jint) -> bool {
    (0..64).contains(&event) && a < MAX_AGENTS && ENABLED[a].load(Relaxed) & (1 << event) != 0
}

/// Sets or clears agent `a`'s bit for an event (the control room does, on EnableEvent/DisableEvent).
pub fn set_enabled(a: usize, event: jint, on: bool) {
    if (0..64).contains(&event) && a < MAX_AGENTS {
        let _g = UNION.lock().unwrap_or_else(|p| p.into_inner());
        if on {
            ENABLED[a].fetch_or(1 << event, SeqCst);
        } else {
            ENABLED[a].fetch_and(!(1 << event), SeqCst);
        }
        ANY.store(ENABLED.iter().fold(0, |m, e| m | e.load(SeqCst)), SeqCst);
        refresh_fast();
    }
}

/// The events whose hot path ([`send_fast`]) is open: those enabled while exactly one agent
/// runs, the gate is open and no trace or report records deliveries. Zero otherwise.
static FAST: AtomicU64 = AtomicU64::new(0);

/// Recomputes [`FAST`] (after a switch, when the gate opens or closes).
fn refresh_fast() {
    let on = READY.load(SeqCst) && !DEAD.load(SeqCst) && table::count() == 1 && !record::on();
    FAST.store(if on { ANY.load(SeqCst) } else { 0 }, SeqCst);
}

/// Whether `event` (0..64) may take [`send_fast`]: one relaxed load.
#[inline(always)]
pub fn fast(event: jint) -> bool {
    FAST.load(Relaxed) & (1u64 << (event & 63)) != 0
}

thread_local! {
    /// The agents a non-requested event may go to from this thread (all, unless [`only`] runs).
    static ONLY: Cell<u32> = const { Cell::new(!0) };
    /// The agent whose RequestEvent runs in this thread.
    static REQUESTER: Cell<usize> = const { Cell::new(0) };
}

/// The agents (bit a = agent a) that receive `event` if it is sent from this thread now.
pub fn listeners(event: jint) -> u32 {
    if !enabled(event) {
        return 0;
    }
    let mut m = 0;
    for (a, e) in ENABLED.iter().enumerate() {
        if e.load(Relaxed) & (1 << event) != 0 {
            m |= 1 << a;
        }
    }
    m & ONLY.with(|o| o.get())
}

/// The agents (bit a = agent a) that enabled `event`, wherever it is sent from.
pub fn listeners_of(event: jint) -> u32 {
    if !enabled(event) {
        return 0;
    }
    ENABLED.iter().enumerate().filter(|(_, e)| e.load(Relaxed) & (1 << event) != 0).fold(0, |m, (a, _)| m | 1 << a)
}

/// The agent (bit a = agent a) a requested event sent from this thread now goes to.
pub fn requester_mask() -> u32 {
    1 << REQUESTER.with(|r| r.get())
}

/// Runs `f` with events from this thread going to agent `a` only (its catch-up).
pub fn only<R>(a: usize, f: impl FnOnce() -> R) -> R {
    let saved = ONLY.with(|o| o.replace(1 << a));
    let r = f();
    ONLY.with(|o| o.set(saved));
    r
}

/// Runs `f` (agent `a`'s RequestEvent): the requested event goes to `a`.
pub fn as_requester<R>(a: usize, f: impl FnOnce() -> R) -> R {
    let saved = REQUESTER.with(|o| o.replace(a));
    let r = f();
    REQUESTER.with(|o| o.set(saved));
    r
}

/// The JVMPI name of an event number, for log lines (the table is `abi::event_name`'s: the
/// record names events too, and the record is below the gate).
pub use crate::abi::event_name as name;

// ---- delivery --------------------------------------------------------------------------------

static READY: AtomicBool = AtomicBool::new(false);
static DEAD: AtomicBool = AtomicBool::new(false);
/// VM death has begun (the shim's shutdown runs); `OVER` once JVM_SHUT_DOWN has been delivered.
static SHUTTING: AtomicBool = AtomicBool::new(false);
static OVER: AtomicBool = AtomicBool::new(false);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Events whose handler has returned (and other steps of the shim's own work, see
/// [`progressed`]): what VM death's patience measures.
static PROGRESS: AtomicU64 = AtomicU64::new(0);
/// Events in flight in threads that are leaving the JVM from inside a handler (ProfilerExit):
/// they never return, so VM death does not wait for them.
static PARKED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Events being delivered in this thread (nested when a handler causes another event).
    static IN_FLIGHT_HERE: Cell<usize> = const { Cell::new(0) };
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

pub fn is_ready() -> bool {
    READY.load(SeqCst) && !DEAD.load(SeqCst)
}

/// Marks the start of VM death; false if it had begun already (a nested or second VMDeath).
pub fn begin_shutdown() -> bool {
    !SHUTTING.swap(true, SeqCst)
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
    let mine = mine();
    PARKED.fetch_add(mine, SeqCst);
    let was = LEAVING_HERE.with(|l| l.replace(mine));
    let r = f();
    LEAVING_HERE.with(|l| l.set(was));
    PARKED.fetch_sub(mine, SeqCst);
    r
}

thread_local! {
    /// This thread's events counted in [`PARKED`] (it is leaving the JVM from a handler).
    static LEAVING_HERE: Cell<usize> = const { Cell::new(0) };
}

fn deliver(a: usize, ev: &mut JVMPI_Event, needs_ready: bool) -> bool {
    if jvm::temporarily_attached() && jvm::current_jni() == Some(ev.env_id) {
        // Caused by a call from an agent's thread the JVM does not know (attached for that
        // call only): it is no JVMPI thread, so the event names none.
        ev.env_id = std::ptr::null_mut();
    }
    IN_FLIGHT.fetch_add(1, SeqCst);
    IN_FLIGHT_HERE.with(|n| n.set(n.get() + 1));
    // Inside JVM_SHUT_DOWN's handler the gate is closed, but what that handler requests (a
    // last heap dump, as hprof asked for) is still delivered to it, as HotSpot 1.5 did.
    let in_last = !needs_ready && IN_LAST.with(|l| l.get());
    let open = (in_last || !DEAD.load(SeqCst)) && (!needs_ready || READY.load(SeqCst));
    let sent = match (open, table::notify_event(a)) {
        (true, Some(f)) => {
            // The caller owns every buffer `ev` points into, for the duration of the call.
            if record::on() {
                let t = Instant::now();
                // SAFETY: `ev` is a fully initialised JVMPI_Event (see above); `f` is the agent's NotifyEvent.
                table::within(a, || jvm::as_agent(|| unsafe { f(ev) }));
                record::event(ev, t.elapsed().as_nanos() as u64);
            } else {
                // SAFETY: as above.
                table::within(a, || jvm::as_agent(|| unsafe { f(ev) }));
            }
            true
        }
        _ => false,
    };
    IN_FLIGHT_HERE.with(|n| n.set(n.get() - 1));
    IN_FLIGHT.fetch_sub(1, SeqCst);
    PROGRESS.fetch_add(1, Relaxed);
    sent
}

/// Sends an event in the current thread to every agent that enabled it. The thread itself is
/// announced first to each agent that has not heard of it.
pub fn send(ev: &mut JVMPI_Event) -> bool {
    send_to(listeners(ev.event_type), ev)
}

/// Sends an event to the agents of `mask` (bit a = agent a), in load order; with more than one,
/// each gets its own copy, so that what one agent writes into it does not reach the next.
pub fn send_to(mask: u32, ev: &mut JVMPI_Event) -> bool {
    if !is_ready() || mask == 0 {
        return false;
    }
    if let Some(announce) = ANNOUNCER.get() {
        if !announce(&mut ev.env_id) {
            return false;
        }
    }
    deliver_to(mask, ev, true)
}

fn deliver_to(mask: u32, ev: &mut JVMPI_Event, needs_ready: bool) -> bool {
    if mask.is_power_of_two() {
        return deliver(mask.trailing_zeros() as usize, ev, needs_ready);
    }
    let mut sent = false;
    for a in (0..MAX_AGENTS).filter(|a| mask & (1 << a) != 0) {
        let mut copy = JVMPI_Event { event_type: ev.event_type, env_id: ev.env_id, u: ev.u };
        sent |= deliver(a, &mut copy, needs_ready);
    }
    sent
}

/// Inside JVM_SHUT_DOWN's handler, where the gate is closed: an event that what the handler
/// requested depends on (the CLASS_LOAD of a class that its last heap dump names) is still
/// delivered, in this thread, before the request's answer. Elsewhere nothing is sent.
pub fn send_within_last(mask: u32, ev: &mut JVMPI_Event) -> bool {
    if !in_last() || mask == 0 {
        return false;
    }
    deliver_to(mask, ev, false)
}

/// The hot path of [`send`], for events sent from Java code many times a second (method
/// events): the caller has read the current thread's flags with [`jvm::here`] and found it
/// announced and not inside the shim's own JNI call, so nothing is left to do but the gate's
/// checks and the call. With more than one agent listening, the general path.
#[inline]
pub fn send_here(ev: &mut JVMPI_Event) -> bool {
    let mask = listeners(ev.event_type);
    if !mask.is_power_of_two() {
        return send_to(mask, ev);
    }
    let a = mask.trailing_zeros() as usize;
    IN_FLIGHT.fetch_add(1, SeqCst);
    let sent = match (!DEAD.load(SeqCst) && READY.load(SeqCst), table::notify_event(a)) {
        (true, Some(f)) => {
            if record::on() {
                let t = Instant::now();
                // SAFETY: as in `deliver`; the thread is not inside the shim's JNI call.
                table::within(a, || unsafe { f(ev) });
                record::event(ev, t.elapsed().as_nanos() as u64);
            } else {
                // SAFETY: as above.
                table::within(a, || unsafe { f(ev) });
            }
            true
        }
        _ => false,
    };
    IN_FLIGHT.fetch_sub(1, SeqCst);
    sent
}

/// The hottest path, for method events: [`fast`] said yes for the event (one agent listens, the
/// gate is open, nothing records), and the caller has read the current thread's flags and
/// found it announced and not inside the shim's own JNI call. With one agent there is no
/// restriction ([`only`]) and no agent switch ([`table::within`]) to make: what is left is the
/// in-flight count that VM death waits for, the gate's last check and the call.
#[inline]
pub fn send_fast(ev: &mut JVMPI_Event, counter: &AtomicUsize) -> bool {
    // The thread's own counter, written with plain stores: VM death ([`close`]) first closes
    // the gate and then makes every thread pass a full barrier (`membarrier`), so either this
    // thread sees DEAD below or `close` sees the count. Without `membarrier`, a fence here.
    let n = counter.load(Relaxed);
    counter.store(n + 1, Relaxed);
    if ASYMMETRIC.load(Relaxed) {
        compiler_fence(SeqCst);
    } else {
        fence(SeqCst);
    }
    let sent = match (DEAD.load(Relaxed), table::notify_first()) {
        (false, Some(f)) => {
            // The thread is not inside the shim's JNI call, and with one agent it already runs on
            // that agent's behalf.
            // SAFETY: as in `deliver`.
            unsafe { f(ev) };
            true
        }
        _ => false,
    };
    counter.store(n, Release);
    sent
}

/// In-flight counters of [`send_fast`], one per thread that sends there (leaked, one cache
/// line each, handed to the next thread when their thread ends): VM death sums them.
#[repr(align(64))]
struct Counter(AtomicUsize);

/// (every counter, the free ones).
static COUNTERS: Mutex<(Vec<&'static Counter>, Vec<&'static Counter>)> = Mutex::new((Vec::new(), Vec::new()));
/// `membarrier` is registered: the hot path needs only a compiler fence.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);

/// Gives a thread's counter back when the thread ends.
struct Owner(Cell<Option<&'static Counter>>);
impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            jvm::set_counter_here(None);
            COUNTERS.lock().unwrap_or_else(|p| p.into_inner()).1.push(c);
        }
    }
}

thread_local! {
    static OWNER: Owner = const { Owner(Cell::new(None)) };
}

/// The current thread's counter for [`send_fast`], given to it now (once per thread; the
/// caller found none in [`jvm::here_and_counter`]). None while the thread is ending.
pub fn take_counter() -> Option<&'static AtomicUsize> {
    OWNER
        .try_with(|o| {
            let c = match o.0.get() {
                Some(c) => c,
                None => {
                    let mut g = COUNTERS.lock().unwrap_or_else(|p| p.into_inner());
                    let c = g.1.pop().unwrap_or_else(|| {
                        let c: &'static Counter = Box::leak(Box::new(Counter(AtomicUsize::new(0))));
                        g.0.push(c);
                        c
                    });
                    o.0.set(Some(c));
                    c
                }
            };
            jvm::set_counter_here(Some(&c.0));
            &c.0
        })
        .ok()
}

/// Events being delivered by this thread, on every path.
fn mine() -> usize {
    IN_FLIGHT_HERE.with(|n| n.get()) + jvm::here_and_counter().1.map_or(0, |c| c.load(Relaxed))
}

/// Events being delivered by every thread, on every path.
fn in_flight() -> usize {
    let g = COUNTERS.lock().unwrap_or_else(|p| p.into_inner());
    IN_FLIGHT.load(SeqCst) + g.0.iter().map(|c| c.0.load(SeqCst)).sum::<usize>()
}

/// Sends an event an agent requested with `RequestEvent` (flag set here), to that agent only.
pub fn send_requested(ev: &mut JVMPI_Event) -> bool {
    ev.event_type |= JVMPI_REQUESTED_EVENT;
    // The requesting thread, announced (in the shim's own threads: the thread they stand in for).
    if let Some(announce) = ANNOUNCER.get() {
        announce(&mut ev.env_id);
    }
    deliver(REQUESTER.with(|r| r.get()), ev, false)
}

/// Registers the function that announces the current thread to the agent before an event
/// (threads room). It may put another env_id in the event (the shim's own threads send with
/// that of a thread the agent knows), and it says false for an event no agent may get (sent
/// by a thread after its THREAD_END).
pub fn set_announcer(f: fn(&mut *mut JNIEnv) -> bool) {
    let _ = ANNOUNCER.set(f);
}
static ANNOUNCER: OnceLock<fn(&mut *mut JNIEnv) -> bool> = OnceLock::new();

/// Opens the gate: the legacy `JVM_OnLoad` has returned.
pub fn open() {
    if !ASYMMETRIC.load(SeqCst) && jvm::register_heavy_barrier() {
        ASYMMETRIC.store(true, SeqCst);
    }
    READY.store(true, SeqCst);
    let _g = UNION.lock().unwrap_or_else(|p| p.into_inner());
    refresh_fast();
}

/// Marks a step of the shim's own work during which no event is delivered (a heap walk), so
/// that VM death's [`Patience`] does not take it for a handler that does not return.
pub fn progressed() {
    PROGRESS.fetch_add(1, Relaxed);
}

/// How long VM death waits for the agent: as long as events keep being delivered (a long last
/// GC bracket, handlers that finish one after the other), but never more than [`IDLE`] without
/// any progress nor [`CAP`] in all. A handler that does not return stops nothing for longer.
pub struct Patience {
    seen: u64,
    since: Instant,
    cap: Instant,
}

/// Time without any event delivered after which VM death stops waiting.
pub const IDLE: Duration = Duration::from_secs(2);
/// The most VM death waits in all.
pub const CAP: Duration = Duration::from_secs(30);

impl Patience {
    pub fn new() -> Patience {
        let now = Instant::now();
        Patience { seen: PROGRESS.load(Relaxed), since: now, cap: now + CAP }
    }
    /// Whether to stop waiting now.
    pub fn exhausted(&mut self) -> bool {
        let now = Instant::now();
        let p = PROGRESS.load(Relaxed);
        if p != self.seen {
            self.seen = p;
            self.since = now;
        }
        now >= self.cap || now.duration_since(self.since) >= IDLE
    }
}

impl Default for Patience {
    fn default() -> Self {
        Patience::new()
    }
}

/// Closes the gate for good and waits (with `patience`) for events inside the agent to
/// return. Returns false if it was closed already.
///
/// VM death may come from inside an event handler (ProfilerExit or System.exit called there):
/// then the events this thread is delivering cannot return before it does, so they are not
/// waited for, nor are those of threads stuck in an exit of their own ([`leaving`]).
pub fn close(patience: &mut Patience) -> bool {
    FAST.store(0, SeqCst);
    if DEAD.swap(true, SeqCst) {
        return false;
    }
    if ASYMMETRIC.load(SeqCst) && !jvm::heavy_barrier() {
        // Cannot happen once registered; the hot path's counts may then be seen late.
        log::debug!("membarrier failed at VM death");
    }
    // This thread's own events are not waited for; if it is leaving (ProfilerExit), they are
    // among the parked ones already and are not taken off twice.
    let mine = mine().saturating_sub(LEAVING_HERE.with(|l| l.get()));
    let others = || in_flight().saturating_sub(mine + PARKED.load(SeqCst));
    while others() > 0 && !patience.exhausted() {
        std::thread::sleep(Duration::from_millis(1));
    }
    if others() > 0 {
        log::warn!(
            "an event handler of the agent did not return within 2 s of the last event delivered during VM death; \
             sending JVM_SHUT_DOWN anyway"
        );
    }
    true
}

/// After [`send_last`]: the emulation is over (see [`is_over`]).
pub fn finish() {
    OVER.store(true, SeqCst);
}

thread_local! {
    /// Set while this thread delivers JVM_SHUT_DOWN.
    static IN_LAST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the current thread is delivering JVM_SHUT_DOWN (its handler may still request
/// events, which are delivered to it).
pub fn in_last() -> bool {
    IN_LAST.with(|l| l.get())
}

/// After [`close`]: delivers the last event (JVM_SHUT_DOWN) to each agent that enabled it, in
/// load order, if the gate was ever open.
pub fn send_last(ev: &mut JVMPI_Event) {
    if !READY.load(SeqCst) {
        return;
    }
    for a in (0..MAX_AGENTS).filter(|&a| enabled_for(a, ev.event_type)) {
        if let Some(f) = table::notify_event(a) {
            let mut copy = JVMPI_Event { event_type: ev.event_type, env_id: ev.env_id, u: ev.u };
            let t = Instant::now();
            IN_LAST.with(|l| l.set(true));
            // SAFETY: as in `deliver`; this is the last call the shim makes into the agent.
            table::within(a, || unsafe { f(&mut copy) });
            IN_LAST.with(|l| l.set(false));
            if record::on() {
                record::event(&copy, t.elapsed().as_nanos() as u64);
            }
        }
    }
}
