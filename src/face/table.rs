//! The `JVMPI_Interface` tables agents are handed by `GetEnv(JVMPI_VERSION_1…)`: one per legacy
//! agent (at most [`MAX_AGENTS`]), each in memory that lives as long as the process, filled with
//! that agent's own instantiation of the doors of `doors::jvmpi` when the shim loads it. Each
//! agent writes its `NotifyEvent` into its own table; the gate reads it from here afresh for
//! every event.
//!
//! JVMPI functions receive no interface pointer, and neither does `GetEnv`: which agent is
//! asking is the agent the current thread is running on behalf of ([`within`]: its
//! `JVM_OnLoad`, its `NotifyEvent`, a thread it made with `CreateSystemThread`), else the first.

use crate::face::abi::*;
use jvmti_bindings::sys::jni::jint;
use std::cell::{Cell, UnsafeCell};
use std::ffi::c_void;
use std::sync::OnceLock;

/// The most legacy agents one JVM can run (one per `-agentpath:…/libjvmpi_shim.so=agent=…`).
pub const MAX_AGENTS: usize = 4;

/// An agent: its place in load order (0 = the first `-agentpath` of the shim), below
/// [`MAX_AGENTS`]; bit `n` of the gate's agent masks is agent `n`. Made only by the doors (each
/// agent's doors know theirs) and the start-up; `#[repr(transparent)]`, zero cost.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Agent(pub usize);

impl Agent {
    /// Its bit in an agent mask.
    pub fn bit(self) -> u32 {
        1 << self.0
    }

    /// The agents of `mask`, in load order.
    pub fn of_mask(mask: u32) -> impl Iterator<Item = Agent> {
        (0..MAX_AGENTS).filter(move |a| mask & (1 << a) != 0).map(Agent)
    }
}

struct Table(UnsafeCell<JVMPI_Interface>);
// SAFETY: the agent writes `NotifyEvent` (and may read anything); the shim writes `version`
// before handing the table out and reads `NotifyEvent` with volatile loads. Pointer-sized
// stores are atomic on the supported targets.
unsafe impl Sync for Table {}
// SAFETY: as above; the table is never moved or freed.
unsafe impl Send for Table {}

/// The tables' state, shared by every thread.
struct TablesState {
    /// Each agent's table, in load order (set once by [`install`] as the agent is loaded; never
    /// moved or freed: the agent keeps the pointer).
    tables: [OnceLock<Box<Table>>; MAX_AGENTS],
    /// The first agent's table once installed (set by [`install`]; the method events' hot path
    /// reads its `NotifyEvent` through this, one load fewer than through the `OnceLock`).
    first: std::sync::atomic::AtomicPtr<JVMPI_Interface>,
}

static STATE: TablesState = TablesState {
    tables: [const { OnceLock::new() }; MAX_AGENTS],
    first: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
};

thread_local! {
    /// The agent the current thread runs for (see the module comment).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// Installs agent `a`'s doors (once; later calls keep the first table, which the agent may hold).
pub fn install(Agent(a): Agent, doors: JVMPI_Interface) {
    if let Some(t) = STATE.tables.get(a) {
        let _ = t.set(Box::new(Table(UnsafeCell::new(doors))));
        if a == 0 {
            if let Some(t) = t.get() {
                STATE.first.store(t.0.get(), std::sync::atomic::Ordering::Release);
            }
        }
    }
}

/// How many agents have a table (they are numbered 0.. in load order).
pub fn count() -> usize {
    STATE.tables.iter().take_while(|t| t.get().is_some()).count()
}

/// Runs `f` on behalf of agent `a` (so that `GetEnv(JVMPI…)` answers its table).
pub fn within<R>(Agent(a): Agent, f: impl FnOnce() -> R) -> R {
    let saved = CURRENT.with(|c| c.replace(a));
    let r = f();
    CURRENT.with(|c| c.set(saved));
    r
}

/// The agent the current thread runs for.
pub fn current() -> Agent {
    Agent(CURRENT.with(|c| c.get()))
}

pub fn is_jvmpi_version(v: jint) -> bool {
    matches!(v, JVMPI_VERSION_1 | JVMPI_VERSION_1_1 | JVMPI_VERSION_1_2)
}

/// The current agent's table for `GetEnv(version)`; its `version` field says which version was
/// asked for. NULL before the doors are installed.
pub fn for_version(version: jint) -> *mut c_void {
    let Some(t) = STATE.tables[current().0.min(MAX_AGENTS - 1)].get().or_else(|| STATE.tables[0].get()) else {
        return std::ptr::null_mut();
    };
    let t = t.0.get();
    // SAFETY: `t` points to the installed table; `version` is a plain jint field.
    unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!((*t).version), version) };
    t as *mut c_void
}

/// The first agent's NotifyEvent, as it is set right now (the hot path of [`notify_event`]`(0)`).
#[inline]
pub fn notify_first() -> Option<NotifyEventFn> {
    let t = STATE.first.load(std::sync::atomic::Ordering::Acquire);
    if t.is_null() {
        return None;
    }
    // Reading a pointer-sized field that the agent may write.
    // SAFETY: `t` is the installed table of agent 0, never moved or freed.
    unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*t).NotifyEvent)) }
}

/// Agent `a`'s NotifyEvent, as it is set right now.
pub fn notify_event(Agent(a): Agent) -> Option<NotifyEventFn> {
    let t = STATE.tables.get(a)?.get()?.0.get();
    // SAFETY: reading a pointer-sized field of the installed table that the agent may write.
    unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*t).NotifyEvent)) }
}
