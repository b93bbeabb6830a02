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
//! agent to return, and [`send_last`] then delivers `JVM_SHUT_DOWN`, the last event. Where the
//! gate is in that life is one [`Phase`], changed only by [`step`]; the gate's shared state is
//! one struct ([`Gate`]), its per-thread state another ([`Here`]).
//!
//! The gate calls no room. The one thing it needs from one — that the sending thread has been
//! announced to the agent before its first event — is a function the threads room registers
//! with [`set_announcer`].

use crate::face::abi::*;
use crate::face::record;
use crate::face::table::{self, Agent, MAX_AGENTS};
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jint, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::cell::Cell;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The gate's state, shared by every thread.
struct Gate {
    /// Which JVMPI events each agent has enabled (bit n = event n).
    enabled: [AtomicU64; MAX_AGENTS],
    /// Their union: the events some agent wants.
    any: AtomicU64,
    /// The events some agent has ever enabled (never cleared).
    ever: AtomicU64,
    /// Held by whoever writes `enabled`, `any` or `fast`.
    union: Mutex<()>,
    /// The events whose hot path ([`send_fast`]) is open: those enabled while exactly one agent
    /// runs, the gate is open and no trace or report records deliveries. Zero otherwise.
    fast: AtomicU64,
    /// Where the gate is in its life: a [`Phase`], with [`OPENED`] once it has been open.
    phase: AtomicU8,
    /// Events inside an agent's `NotifyEvent` on the general paths (the hot path counts in
    /// `counters`): what VM death waits for.
    in_flight: AtomicUsize,
    /// Events whose handler has returned (and other steps of the shim's own work, see
    /// [`progressed`]): what VM death's patience measures.
    progress: AtomicU64,
    /// Events in flight in threads that are leaving the JVM from inside a handler
    /// (ProfilerExit): they never return, so VM death does not wait for them.
    parked: AtomicUsize,
    /// The in-flight counters of [`send_fast`], one per thread that sends there: (every
    /// counter, the free ones). VM death sums them.
    counters: Mutex<(Vec<&'static Counter>, Vec<&'static Counter>)>,
    /// Where the registration of `membarrier` is ([`UNREGISTERED`], [`REGISTERED`], [`NEVER`]):
    /// once registered, the hot path needs only a compiler fence.
    barrier: AtomicU8,
    /// The function that announces the sending thread to the agents (the threads room's, see
    /// [`set_announcer`]).
    announcer: OnceLock<fn(&mut *mut JNIEnv) -> bool>,
    /// The function that says whether an agent's suspension of a thread is under way (the
    /// threads room's, see [`set_holder`]): VM death's [`Patience`] holds its idle clock meanwhile.
    holder: OnceLock<fn() -> bool>,
    /// Set while [`close`] waits for the handlers in flight (see [`draining`]).
    draining: AtomicBool,
    /// The agents (bit a = agent a) told once in the log that an event they enabled found no
    /// `NotifyEvent` in their interface (set by [`no_handler`]).
    unhandled_said: AtomicU32,
}

static GATE: Gate = Gate {
    enabled: [const { AtomicU64::new(0) }; MAX_AGENTS],
    any: AtomicU64::new(0),
    ever: AtomicU64::new(0),
    union: Mutex::new(()),
    fast: AtomicU64::new(0),
    phase: AtomicU8::new(Phase::Loading as u8),
    in_flight: AtomicUsize::new(0),
    progress: AtomicU64::new(0),
    parked: AtomicUsize::new(0),
    counters: Mutex::new((Vec::new(), Vec::new())),
    barrier: AtomicU8::new(UNREGISTERED),
    announcer: OnceLock::new(),
    holder: OnceLock::new(),
    draining: AtomicBool::new(false),
    unhandled_said: AtomicU32::new(0),
};

/// This thread's side of the gate. (The hot path's counter is apart, in [`OWNER`]: it has a
/// destructor, and these are read while the thread ends.)
struct Here {
    /// The agents a non-requested event may go to from this thread (all, unless [`only`] runs).
    only: Cell<u32>,
    /// The agent whose RequestEvent runs in this thread.
    requester: Cell<usize>,
    /// Events being delivered in this thread on the general paths (nested when a handler
    /// causes another event).
    in_flight: Cell<usize>,
    /// This thread's events counted in `parked` (it is leaving the JVM from a handler).
    leaving: Cell<usize>,
    /// Set while this thread delivers JVM_SHUT_DOWN.
    in_last: Cell<bool>,
    /// RequestEvents of the agent's running in this thread (nested when a handler requests).
    requesting: Cell<usize>,
}

thread_local! {
    static HERE: Here = const {
        Here {
            only: Cell::new(!0),
            requester: Cell::new(0),
            in_flight: Cell::new(0),
            leaving: Cell::new(0),
            in_last: Cell::new(false),
            requesting: Cell::new(0),
        }
    };
}

/// Where the gate is in its life. The legal moves are those of [`step`], the one place the
/// phase changes: Loading → Open → Dying → Closed → Over, where VM death may also begin before
/// the gate ever opened (Loading → Dying; nothing is sent then, not even JVM_SHUT_DOWN).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// The legacy `JVM_OnLoad` has not returned: no event flows yet.
    Loading = 0,
    /// Events flow.
    Open = 1,
    /// VM death has begun: what is still owed (classes, a last GC bracket) is sent, if the
    /// gate was ever open.
    Dying = 2,
    /// Closed for good: only JVM_SHUT_DOWN, and what its handler requests.
    Closed = 3,
    /// JVM_SHUT_DOWN has been delivered (or would have been): the emulation is over.
    Over = 4,
}

/// Bit of [`Gate::phase`]: the gate has been open (JVM_SHUT_DOWN is only sent if it was).
const OPENED: u8 = 0x80;

impl Phase {
    fn of(byte: u8) -> Phase {
        match byte & !OPENED {
            0 => Phase::Loading,
            1 => Phase::Open,
            2 => Phase::Dying,
            3 => Phase::Closed,
            _ => Phase::Over,
        }
    }
}

/// A move of the gate: [`open`], [`begin_shutdown`], [`close`], [`finish`].
#[derive(Clone, Copy)]
enum Move {
    Open,
    BeginShutdown,
    Close,
    Finish,
}

/// The phase byte after `m` from `byte`; None when the move changes nothing (made already, or
/// too late).
fn step(byte: u8, m: Move) -> Option<u8> {
    let opened = byte & OPENED;
    match (Phase::of(byte), m) {
        (Phase::Loading, Move::Open) => Some(OPENED | Phase::Open as u8),
        // VM death began first (ProfilerExit inside JVM_OnLoad): the phase stays, and what is
        // left of VM death sends as to an opened gate.
        (p, Move::Open) if opened == 0 => Some(OPENED | p as u8),
        (_, Move::Open) => None,
        (Phase::Loading | Phase::Open, Move::BeginShutdown) => Some(opened | Phase::Dying as u8),
        (_, Move::BeginShutdown) => None,
        (Phase::Closed | Phase::Over, Move::Close) => None,
        (_, Move::Close) => Some(opened | Phase::Closed as u8),
        (Phase::Over, Move::Finish) => None,
        (_, Move::Finish) => Some(opened | Phase::Over as u8),
    }
}

/// Makes a move; false if it changed nothing.
fn make(m: Move) -> bool {
    GATE.phase.fetch_update(SeqCst, SeqCst, |b| step(b, m)).is_ok()
}

/// Where the gate is now.
pub fn phase() -> Phase {
    Phase::of(GATE.phase.load(SeqCst))
}

/// Whether a phase byte says the gate is closed for good (one relaxed load on the hot path).
#[inline(always)]
fn closed(byte: u8) -> bool {
    byte & !OPENED >= Phase::Closed as u8
}

/// Whether any agent has enabled `event`.
pub fn enabled(event: jint) -> bool {
    (0..64).contains(&event) && GATE.any.load(Relaxed) & (1 << event) != 0
}

/// Whether some agent has ever enabled `event` (it keeps what that event told it, e.g. a table
/// of classes, even after disabling it).
pub fn ever_enabled(event: jint) -> bool {
    (0..64).contains(&event) && GATE.ever.load(Relaxed) & (1 << event) != 0
}

/// Whether agent `a` has enabled `event`.
pub fn enabled_for(Agent(a): Agent, event: jint) -> bool {
    (0..64).contains(&event) && a < MAX_AGENTS && GATE.enabled[a].load(Relaxed) & (1 << event) != 0
}

/// Sets or clears agent `a`'s bit for an event (the control room does, on EnableEvent/DisableEvent).
pub fn set_enabled(Agent(a): Agent, event: jint, on: bool) {
    if (0..64).contains(&event) && a < MAX_AGENTS {
        let _g = crate::vm::logger::lock(&GATE.union);
        if on {
            GATE.enabled[a].fetch_or(1 << event, SeqCst);
            GATE.ever.fetch_or(1 << event, SeqCst);
        } else {
            GATE.enabled[a].fetch_and(!(1 << event), SeqCst);
        }
        GATE.any.store(GATE.enabled.iter().fold(0, |m, e| m | e.load(SeqCst)), SeqCst);
        refresh_fast();
    }
}

/// Recomputes [`Gate::fast`] (after a switch, when the gate opens or closes).
fn refresh_fast() {
    let on = is_ready() && table::count() == 1 && !record::on();
    GATE.fast.store(if on { GATE.any.load(SeqCst) } else { 0 }, SeqCst);
}

/// Whether `event` (0..64) may take [`send_fast`]: one relaxed load.
#[inline(always)]
pub fn fast(event: jint) -> bool {
    fast_events() & (1u64 << (event & 63)) != 0
}

/// The events (bit e = event e) that may take [`send_fast`] now: one relaxed load. Not zero,
/// it is the set of events some agent enabled (so a caller choosing among several events reads
/// them all at once).
#[inline(always)]
pub fn fast_events() -> u64 {
    GATE.fast.load(Relaxed)
}

/// The agents (bit a = agent a) that receive `event` if it is sent from this thread now.
pub fn listeners(event: jint) -> u32 {
    if !enabled(event) {
        return 0;
    }
    let mut m = 0;
    for (a, e) in GATE.enabled.iter().enumerate() {
        if e.load(Relaxed) & (1 << event) != 0 {
            m |= 1 << a;
        }
    }
    m & HERE.with(|h| h.only.get())
}

/// The agents (bit a = agent a) that enabled `event`, wherever it is sent from.
pub fn listeners_of(event: jint) -> u32 {
    if !enabled(event) {
        return 0;
    }
    GATE.enabled.iter().enumerate().filter(|(_, e)| e.load(Relaxed) & (1 << event) != 0).fold(0, |m, (a, _)| m | 1 << a)
}

/// The agent (bit a = agent a) a requested event sent from this thread now goes to.
pub fn requester_mask() -> u32 {
    1 << HERE.with(|h| h.requester.get())
}

/// Runs `f` with events from this thread going to agent `a` only (its catch-up).
pub fn only<R>(Agent(a): Agent, f: impl FnOnce() -> R) -> R {
    let saved = HERE.with(|h| h.only.replace(1 << a));
    let r = f();
    HERE.with(|h| h.only.set(saved));
    r
}

/// Runs `f` (agent `a`'s RequestEvent): the requested event goes to `a`.
pub fn as_requester<R>(Agent(a): Agent, f: impl FnOnce() -> R) -> R {
    let saved = HERE.with(|h| {
        h.requesting.set(h.requesting.get() + 1);
        h.requester.replace(a)
    });
    let r = f();
    HERE.with(|h| {
        h.requesting.set(h.requesting.get() - 1);
        h.requester.set(saved)
    });
    r
}

/// Whether this thread is inside the agent's code: in one of its handlers, or in a
/// RequestEvent it made. The agent may hold its own locks there, so the shim must not wait
/// here for another thread's handler (which may be waiting for those locks).
pub fn in_agent_call() -> bool {
    HERE.with(|h| h.requesting.get() > 0 || h.in_flight.get() > 0)
}
/// The JVMPI name of an event number, for log lines (the event table's name column).
pub use crate::face::event_table::name;

// ---- delivery --------------------------------------------------------------------------------

/// The level of a line about a refused call: a warning when the agent made a mistake, debug
/// when the refusal comes from the shim's or the JVM's own state (the VM is going away, JVMTI
/// answers WRONG_PHASE), where HotSpot answered quietly.
pub fn edge_level(e: Option<jvm::Error>) -> log::Level {
    if is_dead()
        || e == Some(jvmti::jvmtiError::WRONG_PHASE)
        || jvm::phase().is_ok_and(|p| p != jvmti::JVMTI_PHASE_LIVE)
    {
        log::Level::Debug
    } else {
        log::Level::Warn
    }
}

/// Whether the gate is closed for good ([`Phase::Closed`] or later).
pub fn is_dead() -> bool {
    phase() >= Phase::Closed
}

/// Whether events flow: the gate is open, and not closed yet (VM death may have begun).
pub fn is_ready() -> bool {
    let b = GATE.phase.load(SeqCst);
    b & OPENED != 0 && !closed(b)
}

/// The gate has not opened yet (the legacy agents' `JVM_OnLoad` runs): no event is sent, what
/// happens meanwhile is announced by the catch-up when it opens.
pub fn before_gate() -> bool {
    GATE.phase.load(SeqCst) & OPENED == 0
}

/// Marks the start of VM death; false if it had begun already (a nested or second VMDeath).
pub fn begin_shutdown() -> bool {
    make(Move::BeginShutdown)
}

/// Whether VM death has begun: the shim is shutting down, or has (JVM_SHUT_DOWN delivered).
pub fn shutting_down() -> bool {
    phase() >= Phase::Dying
}

/// Whether JVM_SHUT_DOWN has been delivered (or would have been): the emulation is over.
pub fn is_over() -> bool {
    phase() == Phase::Over
}

/// Runs `f`, which leaves the JVM from the current thread (System.exit for ProfilerExit) and
/// may never return: meanwhile VM death does not wait for the events this thread is
/// delivering (one of their handlers is the caller).
pub fn leaving<R>(f: impl FnOnce() -> R) -> R {
    let mine = mine();
    GATE.parked.fetch_add(mine, SeqCst);
    let was = HERE.with(|h| h.leaving.replace(mine));
    let r = f();
    HERE.with(|h| h.leaving.set(was));
    GATE.parked.fetch_sub(mine, SeqCst);
    r
}

/// The one call into an agent's `NotifyEvent`: every path of the gate ends here. The caller
/// owns every buffer `ev` points into, for the duration of the call.
#[inline(always)]
fn notify(f: NotifyEventFn, ev: &mut JVMPI_Event) {
    // `ev` was built by a room (`JVMPI_Event::new` and its union's fields); `f` is the agent's
    // NotifyEvent, read from its interface table just before.
    // SAFETY: `ev` is fully initialised and its pointers stay valid during the call (above).
    unsafe { f(ev) }
}

/// `call` (a delivery, ending in [`notify`]) with the event trace's recording around it
/// (`trace=`, the report): the time spent in the agent and what it was given.
#[inline(always)]
fn recorded(ev: &mut JVMPI_Event, call: impl FnOnce(&mut JVMPI_Event)) {
    if record::on() {
        let t = Instant::now();
        call(ev);
        record::event(ev, t.elapsed().as_nanos() as u64);
    } else {
        call(ev);
    }
}

/// The general delivery to agent `a` (every path but the trackers' hot ones).
fn deliver(a: Agent, ev: &mut JVMPI_Event, needs_ready: bool) -> bool {
    if jvm::temporarily_attached() && jvm::current_jni() == Some(ev.env_id) {
        // Caused by a call from an agent's thread the JVM does not know (attached for that
        // call only): it is no JVMPI thread, so the event names none.
        ev.env_id = std::ptr::null_mut();
    }
    GATE.in_flight.fetch_add(1, SeqCst);
    HERE.with(|h| h.in_flight.set(h.in_flight.get() + 1));
    // Inside JVM_SHUT_DOWN's handler the gate is closed, but what that handler requests (a
    // last heap dump, as hprof asked for) is still delivered to it, as HotSpot 1.5 did.
    let in_last = !needs_ready && in_last();
    let b = GATE.phase.load(SeqCst);
    let open = (in_last || !closed(b)) && (!needs_ready || b & OPENED != 0);
    let sent = match (open, table::notify_event(a)) {
        (true, Some(f)) => {
            recorded(ev, |ev| table::within(a, || jvm::as_agent(|| notify(f, ev))));
            true
        }
        (true, None) => no_handler(a, ev.event_type),
        _ => false,
    };
    HERE.with(|h| h.in_flight.set(h.in_flight.get() - 1));
    GATE.in_flight.fetch_sub(1, SeqCst);
    GATE.progress.fetch_add(1, Relaxed);
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
    if let Some(announce) = GATE.announcer.get() {
        if !announce(&mut ev.env_id) {
            return false;
        }
    }
    deliver_to(mask, ev, true)
}

fn deliver_to(mask: u32, ev: &mut JVMPI_Event, needs_ready: bool) -> bool {
    if mask.is_power_of_two() {
        return deliver(Agent(mask.trailing_zeros() as usize), ev, needs_ready);
    }
    let mut sent = false;
    for a in (0..MAX_AGENTS).filter(|a| mask & (1 << a) != 0) {
        let mut copy = JVMPI_Event { event_type: ev.event_type, env_id: ev.env_id, u: ev.u };
        sent |= deliver(Agent(a), &mut copy, needs_ready);
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

/// The trackers' path when the hot one is not open to the event ([`send_tracked`]): the
/// caller has read the current thread's flags and found it announced and not inside the shim's
/// own JNI call, and `ev.env_id` is the one the thread's events carry, so nothing is left to do
/// but the gate's checks and the call. With more than one agent listening, the general path.
#[inline]
fn send_here(ev: &mut JVMPI_Event) -> bool {
    let mask = listeners(ev.event_type);
    if !mask.is_power_of_two() {
        return send_to(mask, ev);
    }
    let a = Agent(mask.trailing_zeros() as usize);
    GATE.in_flight.fetch_add(1, SeqCst);
    let sent = match (is_ready(), table::notify_event(a)) {
        (true, Some(f)) => {
            // The thread is not inside the shim's JNI call: no `as_agent`.
            recorded(ev, |ev| table::within(a, || notify(f, ev)));
            true
        }
        (true, None) => no_handler(a, ev.event_type),
        _ => false,
    };
    GATE.in_flight.fetch_sub(1, SeqCst);
    sent
}

/// An event agent `a` enabled (or requested) while its interface has no `NotifyEvent`: it is
/// not delivered, and the first such event of each agent is logged (HotSpot 1.5 would have
/// called through the NULL pointer). Returns false (nothing was sent).
#[cold]
fn no_handler(Agent(a): Agent, event_type: jint) -> bool {
    if GATE.unhandled_said.fetch_or(1 << a, Relaxed) & (1 << a) == 0 {
        log::warn!(
            "{} not delivered: the agent enabled or requested it but its JVMPI interface has no NotifyEvent; \
             no event reaches it until it sets one (this is said once)",
            name(event_type & !JVMPI_REQUESTED_EVENT)
        );
    }
    false
}

/// The send path of the trackers' events (OBJECT_ALLOC, METHOD_ENTRY/ENTRY2/EXIT,
/// INSTRUCTION_START: the bytecode trackers' natives, JVMTI VMObjectAlloc and the JNI hooks,
/// many times a second), made in the current thread, `ev.env_id` its JNIEnv. A mounted virtual
/// thread's events get its env_id. A thread the agent knows, not inside the shim's own JNI call
/// and with no entry held back, takes the hot path ([`send_fast`]) when [`fast`] says yes for
/// the event (its first such event gives it its in-flight counter); an announced thread
/// otherwise [`send_here`]; any other goes the full way ([`send`]: announced first).
#[inline]
pub fn send_tracked(ev: &mut JVMPI_Event) -> bool {
    let (h, counter, env) = jvm::here_counter_env(ev.env_id);
    ev.env_id = env;
    if h & (jvm::QUIET | jvm::ANNOUNCED) != jvm::ANNOUNCED {
        return send(ev);
    }
    if h & jvm::UNSENT == 0 && fast(ev.event_type) {
        if let Some(counter) = counter.or_else(take_counter) {
            return send_fast(ev, counter);
        }
    }
    send_here(ev)
}

/// A thread fit for the trackers' hottest path, [`Hot::send`]: announced, not inside the shim's
/// own JNI call, no entry held back, with its in-flight counter. The method natives ask for it
/// before they build their event (a method's first event takes [`send_tracked`], which
/// resolves it).
pub struct Hot {
    /// The `env_id` the thread's events carry (a mounted virtual thread's own).
    pub env: *mut JNIEnv,
    counter: &'static AtomicUsize,
}

impl Hot {
    /// The current thread, `env` its JNIEnv, if it is fit for the hottest path (else None: its
    /// event takes [`send_tracked`]). The caller has found the event in [`fast_events`].
    #[inline(always)]
    pub fn here(env: *mut JNIEnv) -> Option<Hot> {
        let (h, counter, env) = jvm::here_counter_env(env);
        if h & (jvm::QUIET | jvm::ANNOUNCED | jvm::UNSENT) != jvm::ANNOUNCED {
            return None;
        }
        // A thread's first event takes the general path, which gives it its counter.
        Some(Hot { env, counter: counter? })
    }

    /// Sends `ev` (built with [`Hot::env`]) on the hottest path.
    #[inline(always)]
    pub fn send(self, ev: &mut JVMPI_Event) -> bool {
        send_fast(ev, self.counter)
    }
}

/// The hottest path, for the trackers' events: [`fast`] said yes for the event (one agent
/// listens, the gate is open, nothing records), and the thread is announced and not inside the
/// shim's own JNI call ([`Hot`]). With one agent there is no restriction ([`only`]) and no
/// agent switch ([`table::within`]) to make: what is left is the in-flight count that VM death
/// waits for, the gate's last check and the call.
#[inline]
fn send_fast(ev: &mut JVMPI_Event, counter: &AtomicUsize) -> bool {
    // The thread's own counter, written with plain stores: VM death ([`close`]) first closes
    // the gate and then makes every thread pass a full barrier (`membarrier`), so either this
    // thread sees the gate closed below or `close` sees the count. Without `membarrier`, a fence here.
    let n = counter.load(Relaxed);
    counter.store(n + 1, Relaxed);
    if GATE.barrier.load(Relaxed) == REGISTERED {
        compiler_fence(SeqCst);
    } else {
        fence(SeqCst);
    }
    let sent = if closed(GATE.phase.load(Relaxed)) {
        false
    } else if let Some(f) = table::notify_first() {
        // The thread is not inside the shim's JNI call, and with one agent it already runs on
        // that agent's behalf: no `as_agent`, no `within`, and nothing records.
        notify(f, ev);
        true
    } else {
        no_handler(Agent(0), ev.event_type)
    };
    counter.store(n, Release);
    sent
}

/// An in-flight counter of [`send_fast`], one per thread that sends there (leaked, one cache
/// line each, handed to the next thread when their thread ends): VM death sums them.
#[repr(align(64))]
struct Counter(AtomicUsize);

/// Gives a thread's counter back when the thread ends.
struct Owner(Cell<Option<&'static Counter>>);
impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            jvm::set_counter_here(None);
            crate::vm::logger::lock(&GATE.counters).1.push(c);
        }
    }
}

thread_local! {
    static OWNER: Owner = const { Owner(Cell::new(None)) };
}

/// The current thread's counter for [`send_fast`], given to it now (once per thread; the
/// caller found none in [`jvm::here_and_counter`]). None while the thread is ending.
fn take_counter() -> Option<&'static AtomicUsize> {
    OWNER
        .try_with(|o| {
            let c = match o.0.get() {
                Some(c) => c,
                None => {
                    let mut g = crate::vm::logger::lock(&GATE.counters);
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
    HERE.with(|h| h.in_flight.get()) + jvm::here_and_counter().1.map_or(0, |c| c.load(Relaxed))
}

/// Events being delivered by every thread, on every path.
fn in_flight() -> usize {
    let g = crate::vm::logger::lock(&GATE.counters);
    GATE.in_flight.load(SeqCst) + g.0.iter().map(|c| c.0.load(SeqCst)).sum::<usize>()
}

/// Sends an event an agent requested with `RequestEvent` (flag set here), to that agent only.
pub fn send_requested(ev: &mut JVMPI_Event) -> bool {
    ev.event_type |= JVMPI_REQUESTED_EVENT;
    // The requesting thread, announced (in the shim's own threads: the thread they stand in for).
    if let Some(announce) = GATE.announcer.get() {
        announce(&mut ev.env_id);
    }
    deliver(Agent(HERE.with(|h| h.requester.get())), ev, false)
}

/// Registers the function that announces the current thread to the agent before an event
/// (threads room). It may put another env_id in the event (the shim's own threads send with
/// that of a thread the agent knows), and it says false for an event no agent may get (sent
/// by a thread after its THREAD_END).
pub fn set_announcer(f: fn(&mut *mut JNIEnv) -> bool) {
    let _ = GATE.announcer.set(f);
}

/// Registers the function that says whether an agent's suspension of a thread is under way
/// (threads room). Meanwhile VM death's [`Patience`] counts no idle time: on JDK 11 a
/// SuspendThread that finds its target between native code and the VM (a handler calling
/// into JVMTI) waits up to 6.4 s for it with the target already stopped, so that handler
/// returns only once the agent's sampler has its answer and resumes it. [`CAP`] still bounds
/// the wait.
pub fn set_holder(f: fn() -> bool) {
    let _ = GATE.holder.set(f);
}

/// Opens the gate: the legacy `JVM_OnLoad` has returned.
pub fn open() {
    register_barrier();
    make(Move::Open);
    let _g = crate::vm::logger::lock(&GATE.union);
    refresh_fast();
}

/// `membarrier` not registered (yet): the hot path uses full fences.
const UNREGISTERED: u8 = 0;
/// `membarrier` registered: the hot path uses compiler fences, VM death the heavy barrier.
const REGISTERED: u8 = 1;
/// VM death came first: never registered for the hot path.
const NEVER: u8 = 2;

/// Starts registering the process for `membarrier` (once; called at `Agent_OnLoad` and when the
/// gate opens). The registration makes the kernel interrupt every CPU and wait for them: 7 to
/// 15 ms of waiting on this 2-CPU machine, which in the thread opening the gate added as much
/// to the JVM's start-up. A short-lived thread of its own does it; until it is done (or if it
/// cannot be made) the hot path keeps its full fence, and VM death ([`close`]) settles the
/// question for good: a registration finishing after it no longer counts.
pub fn register_barrier() {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if STARTED.swap(true, SeqCst) {
        return;
    }
    let register = || {
        if jvm::register_heavy_barrier() {
            let _ = GATE.barrier.compare_exchange(UNREGISTERED, REGISTERED, SeqCst, SeqCst);
        }
    };
    if let Err(e) = std::thread::Builder::new().name("JVMPI membarrier".into()).spawn(register) {
        log::debug!("membarrier is registered in this thread: no thread for it ({e})");
        register();
    }
}

/// Marks a step of the shim's own work during which no event is delivered (a heap walk), so
/// that VM death's [`Patience`] does not take it for a handler that does not return.
pub fn progressed() {
    GATE.progress.fetch_add(1, Relaxed);
}

/// How long VM death waits for the agent: as long as events keep being delivered (a long last
/// GC bracket, handlers that finish one after the other), but never more than [`IDLE`] without
/// any progress nor [`CAP`] in all. A handler that does not return stops nothing for longer.
/// A suspension of the agent's under way inside JVMTI counts as progress, for [`HOLD`] at most
/// (its target may be a thread whose handler the wait is for, see [`set_holder`]).
pub struct Patience {
    seen: u64,
    since: Instant,
    cap: Instant,
    /// When an agent's suspension under way was first seen holding the idle clock.
    held_from: Option<Instant>,
}

/// Time without any event delivered after which VM death stops waiting.
pub const IDLE: Duration = Duration::from_secs(2);
/// The most VM death waits in all.
pub const CAP: Duration = Duration::from_secs(30);
/// The most time an agent's suspensions under way keep the idle clock from running (JDK 11's
/// SuspendThread waits up to 6.4 s, see [`set_holder`]).
pub const HOLD: Duration = Duration::from_secs(8);

impl Patience {
    pub fn new() -> Patience {
        let now = Instant::now();
        Patience { seen: GATE.progress.load(Relaxed), since: now, cap: now + CAP, held_from: None }
    }
    /// Whether to stop waiting now.
    pub fn exhausted(&mut self) -> bool {
        let now = Instant::now();
        let p = GATE.progress.load(Relaxed);
        // An agent's suspension under way holds the idle clock, for [`HOLD`] at most in all.
        let held = GATE.holder.get().is_some_and(|held| held())
            && now.duration_since(*self.held_from.get_or_insert(now)) < HOLD;
        if p != self.seen || held {
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
    GATE.fast.store(0, SeqCst);
    if !make(Move::Close) {
        return false;
    }
    // A registration that has not finished by now never counts: the hot path keeps its fences.
    let barrier = GATE.barrier.compare_exchange(UNREGISTERED, NEVER, SeqCst, SeqCst).unwrap_or_else(|b| b);
    if barrier == REGISTERED && !jvm::heavy_barrier() {
        // Cannot happen once registered; the hot path's counts may then be seen late.
        log::debug!("membarrier failed at VM death");
    }
    // This thread's own events are not waited for; if it is leaving (ProfilerExit), they are
    // among the parked ones already and are not taken off twice.
    let mine = mine().saturating_sub(HERE.with(|h| h.leaving.get()));
    let others = || in_flight().saturating_sub(mine + GATE.parked.load(SeqCst));
    GATE.draining.store(true, SeqCst);
    while others() > 0 && !patience.exhausted() {
        std::thread::sleep(Duration::from_millis(1));
    }
    GATE.draining.store(false, SeqCst);
    if others() > 0 {
        log::warn!(
            "an event handler of the agent did not return within 2 s of the last event delivered during VM death; \
             sending JVM_SHUT_DOWN anyway"
        );
    }
    true
}

/// Whether VM death is waiting for the agent's handlers in flight to return (inside [`close`]).
/// An agent's sampler that went on suspending threads then would hold up the very handlers
/// the wait is for: the threads room refuses its suspensions meanwhile.
pub fn draining() -> bool {
    GATE.draining.load(SeqCst)
}

/// After [`send_last`]: the emulation is over (see [`is_over`]).
pub fn finish() {
    make(Move::Finish);
}

/// Whether the current thread is delivering JVM_SHUT_DOWN (its handler may still request
/// events, which are delivered to it).
pub fn in_last() -> bool {
    HERE.with(|h| h.in_last.get())
}

/// After [`close`]: delivers the last event (JVM_SHUT_DOWN) to each agent that enabled it, in
/// load order, if the gate was ever open.
pub fn send_last(ev: &mut JVMPI_Event) {
    if GATE.phase.load(SeqCst) & OPENED == 0 {
        return;
    }
    for a in (0..MAX_AGENTS).map(Agent).filter(|&a| enabled_for(a, ev.event_type)) {
        if let Some(f) = table::notify_event(a) {
            let mut copy = JVMPI_Event { event_type: ev.event_type, env_id: ev.env_id, u: ev.u };
            // The last call the shim makes into the agent.
            recorded(&mut copy, |ev| {
                HERE.with(|h| h.in_last.set(true));
                table::within(a, || notify(f, ev));
                HERE.with(|h| h.in_last.set(false));
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The phase after a sequence of moves from Loading, and whether each move changed it.
    fn run(moves: &[Move]) -> (Phase, bool, Vec<bool>) {
        let mut b = Phase::Loading as u8;
        let mut changed = Vec::new();
        for &m in moves {
            match step(b, m) {
                Some(n) => {
                    b = n;
                    changed.push(true);
                }
                None => changed.push(false),
            }
        }
        (Phase::of(b), b & OPENED != 0, changed)
    }

    #[test]
    fn the_gate_moves_one_way() {
        use Move::*;
        assert_eq!(run(&[Open]), (Phase::Open, true, vec![true]));
        assert_eq!(run(&[Open, BeginShutdown, Close, Finish]), (Phase::Over, true, vec![true; 4]));
        // A second VM death, a second close, a late open: nothing moves back.
        assert_eq!(
            run(&[Open, BeginShutdown, BeginShutdown, Close, Close, Open, Finish, Finish, BeginShutdown]),
            (Phase::Over, true, vec![true, true, false, true, false, false, true, false, false])
        );
        // VM death before the gate ever opened: nothing is sent, not even JVM_SHUT_DOWN.
        assert_eq!(run(&[BeginShutdown, Close, Finish]), (Phase::Over, false, vec![true; 3]));
        // ... unless the gate opens meanwhile: what is left of VM death is sent.
        assert_eq!(run(&[BeginShutdown, Open]), (Phase::Dying, true, vec![true, true]));
    }

    #[test]
    fn is_ready_and_closed_read_the_byte_as_the_four_flags_did() {
        let opened = |p: Phase| OPENED | p as u8;
        for (b, ready, dead) in [
            (Phase::Loading as u8, false, false),
            (opened(Phase::Open), true, false),
            (opened(Phase::Dying), true, false),
            (Phase::Dying as u8, false, false),
            (opened(Phase::Closed), false, true),
            (Phase::Closed as u8, false, true),
            (opened(Phase::Over), false, true),
        ] {
            assert_eq!((b & OPENED != 0 && !closed(b), closed(b)), (ready, dead), "{:?}", Phase::of(b));
        }
    }

    static HELD: AtomicBool = AtomicBool::new(false);

    /// An agent's suspension under way keeps VM death's wait going past [`IDLE`]; once it is
    /// over, the idle clock runs again and the wait ends [`IDLE`] later.
    #[test]
    fn a_suspension_under_way_holds_the_idle_clock() {
        set_holder(|| HELD.load(SeqCst));
        HELD.store(true, SeqCst);
        let mut p = Patience::new();
        let t = Instant::now();
        while t.elapsed() < IDLE + Duration::from_millis(300) {
            assert!(!p.exhausted(), "exhausted after {:?} while a suspension was under way", t.elapsed());
            std::thread::sleep(Duration::from_millis(10));
        }
        HELD.store(false, SeqCst);
        let t = Instant::now();
        while !p.exhausted() {
            std::thread::sleep(Duration::from_millis(10));
            assert!(t.elapsed() < IDLE + Duration::from_secs(1), "the wait did not end once the suspension was over");
        }
        assert!(t.elapsed() >= IDLE - Duration::from_millis(50));
    }
}
