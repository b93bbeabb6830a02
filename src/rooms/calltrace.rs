//! `GetCallTrace`: the Java stack of any thread, callee first, each frame with its source line.
//!
//! The thread is named by its JNIEnv (looked up in the threads room, never dereferenced); the
//! frames come from JVMTI `GetStackTrace`, which works for the current thread and, through a
//! handshake, for a running or suspended other thread. Lines come from the line-numbers room.
//!
//! What a trace never shows, as HotSpot 1.5 never had it:
//!
//! * the shim's own frames: methods registered with [`hide`] (the allocation tracker's), in any
//!   trace of any thread;
//! * inside an OBJECT_ALLOC that the instrumented `java.lang.Object.<init>` reported (marked
//!   with [`at_object_init`]), `Object.<init>` and the constructor chain of the new object:
//!   HotSpot posted the event at the allocating bytecode, so the trace begins at the method
//!   that ran `new` (at the line of its constructor call, which is the line of the `new` in
//!   code as compilers emit it). A constructor frame belongs to the chain when its caller is a
//!   constructor stopped at a `super(…)`/`this(…)` call (`lines::is_chaining_call`).

use crate::abi::{JVMPI_CallFrame, JVMPI_CallTrace, JVMPI_EVENT_CLASS_LOAD, LINE_NATIVE};
use crate::{bci, jvm};
use crate::{classes, lines, threads};
use dashmap::{DashMap, DashSet};
use jvmti_bindings::sys::jni::{jint, jlong, jmethodID};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::LazyLock;

/// Methods whose frames no trace shows.
static HIDDEN: LazyLock<DashSet<usize>> = LazyLock::new(DashSet::new);
/// `java.lang.Object.<init>` (0: not known yet).
static OBJECT_INIT: AtomicUsize = AtomicUsize::new(0);
/// The allocation tracker's hook at the start of `Object.<init>` (0: not known yet).
static INIT_HOOK: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set while this thread reports an allocation seen in `Object.<init>`.
    static AT_OBJECT_INIT: Cell<bool> = const { Cell::new(false) };
}

/// What a method is to traces, once the shim wraps native methods ([`natives_wrapped`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    /// A native renamed with `bci::NATIVE_PREFIX`: never shown.
    Renamed,
    /// The Java wrapper the shim put in place of a native method: shown as that native method
    /// (line -3, as native frames are).
    Wrapper,
}

static WRAPPING: AtomicBool = AtomicBool::new(false);
static KINDS: LazyLock<DashMap<usize, Kind>> = LazyLock::new(DashMap::new);

/// Some class has native methods wrapped: traces look for renamed natives and wrappers.
pub fn natives_wrapped() {
    WRAPPING.store(true, Relaxed);
}

/// What `m` is, looked up once per class (all its methods at once) and kept.
fn kind(m: jmethodID) -> Kind {
    if !WRAPPING.load(Relaxed) {
        return Kind::Plain;
    }
    if let Some(k) = KINDS.get(&(m as usize)) {
        return *k;
    }
    let Ok(class) = jvm::method_class(m) else { return Kind::Plain };
    let methods: Vec<(jmethodID, String, String)> = jvm::class_methods(class)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|x| jvm::method_name(x).ok().map(|(n, d)| (x, n, d)))
        .collect();
    if let Some(jni) = jvm::Jni::current() {
        jni.delete_local_ref(class);
    }
    let mut mine = Kind::Plain;
    for (x, n, d) in &methods {
        let k = if n.starts_with(bci::NATIVE_PREFIX) {
            Kind::Renamed
        } else if methods.iter().any(|(_, n2, d2)| d2 == d && n2.strip_prefix(bci::NATIVE_PREFIX) == Some(n.as_str())) {
            Kind::Wrapper
        } else {
            Kind::Plain
        };
        KINDS.insert(*x as usize, k);
        if *x == m {
            mine = k;
        }
    }
    mine
}

/// Registers methods of the shim's own (e.g. the allocation tracker's) that traces never show.
pub fn hide(methods: &[jmethodID]) {
    for &m in methods {
        HIDDEN.insert(m as usize);
    }
}

/// Registers `java.lang.Object.<init>`.
pub fn set_object_init(m: jmethodID) {
    OBJECT_INIT.store(m as usize, Relaxed);
}

/// Registers the allocation tracker's hook called first thing in `Object.<init>`: a stack
/// stopped inside it (any thread's) shows the method that ran `new` on top, as if the thread
/// were still at the allocation, since the shim's work there belongs to the allocation.
pub fn set_init_hook(m: jmethodID) {
    INIT_HOOK.store(m as usize, Relaxed);
}

/// Runs `f` (the delivery of an allocation seen in `Object.<init>`) with traces of this thread
/// beginning at the allocating method.
pub fn at_object_init<R>(f: impl FnOnce() -> R) -> R {
    let saved = AT_OBJECT_INIT.with(|a| a.replace(true));
    let r = f();
    AT_OBJECT_INIT.with(|a| a.set(saved));
    r
}

/// The frames a trace shows, from the JVM's frames (callee first).
fn visible(frames: &[(jmethodID, jlong)], at_object_init: bool) -> Vec<(jmethodID, jlong)> {
    let hook = INIT_HOOK.load(Relaxed);
    let at_object_init = at_object_init || (hook != 0 && frames.iter().take(3).any(|(m, _)| *m as usize == hook));
    let wrapping = WRAPPING.load(Relaxed);
    let mut v: Vec<_> = if HIDDEN.is_empty() && !wrapping {
        frames.to_vec()
    } else {
        frames
            .iter()
            .copied()
            .filter(|(m, _)| !HIDDEN.contains(&(*m as usize)) && (!wrapping || kind(*m) != Kind::Renamed))
            .collect()
    };
    let init = OBJECT_INIT.load(Relaxed);
    if at_object_init && init != 0 && v.first().is_some_and(|(m, _)| *m as usize == init) {
        // v[0] is Object.<init>; v[i + 1] called v[i]: while it did so at a chaining call it
        // is a constructor of the same object.
        let mut i = 0;
        while i + 1 < v.len() && lines::is_chaining_call(v[i + 1].0, v[i + 1].1) {
            i += 1;
        }
        v.drain(..=i);
    }
    v
}

/// The frames of a JVMTI stack trace as traces show them — without the shim's own frames and
/// the renamed natives, a wrapped native at line -3 — and the (top-based) indices of the frames
/// left out. For the per-thread traces of dumps, whose roots name frames by depth.
pub fn shown_frames(frames: &[(jmethodID, jlong)]) -> (Vec<JVMPI_CallFrame>, Vec<usize>) {
    let wrapping = WRAPPING.load(Relaxed);
    let mut shown = Vec::with_capacity(frames.len());
    let mut left_out = Vec::new();
    for (i, &(m, loc)) in frames.iter().enumerate() {
        let k = if wrapping { kind(m) } else { Kind::Plain };
        if k == Kind::Renamed || HIDDEN.contains(&(m as usize)) {
            left_out.push(i);
            continue;
        }
        let lineno = if k == Kind::Wrapper { LINE_NATIVE } else { lines::line_of(m, loc) };
        shown.push(JVMPI_CallFrame { lineno, method_id: classes::listed(m) });
    }
    (shown, left_out)
}

/// Fills `frames` (at most its length) and returns how many were written.
pub fn fill(trace: &mut JVMPI_CallTrace, frames: &mut [JVMPI_CallFrame]) -> jint {
    // The current thread is named NULL: inside a virtual thread that is the virtual thread,
    // whose frames are the ones running (its carrier's JNIEnv is the env_id).
    let current = jvm::current_jni() == Some(trace.env_id);
    let thread = if current {
        std::ptr::null_mut()
    } else {
        match threads::jthread_of(trace.env_id, "GetCallTrace") {
            Some(t) => t,
            None => return 0,
        }
    };
    let at_object_init = current && AT_OBJECT_INIT.with(|a| a.get());
    let depth = frames.len();
    // Some frames may be left out: ask for more than the depth, and again for more if needed.
    let mut fetch = depth + if at_object_init { 8 } else { 3 };
    loop {
        let st = match jvm::stack_trace(thread, fetch.min(i32::MAX as usize) as jint) {
            Ok(st) => st,
            Err(e) => {
                let quiet = e == jvmti_bindings::sys::jvmti::jvmtiError::THREAD_NOT_ALIVE;
                let level = if quiet { log::Level::Debug } else { crate::events::edge_level(Some(e)) };
                log::log!(level, "GetCallTrace({:p}): {}", trace.env_id, jvm::err_name(e));
                return 0;
            }
        };
        let complete = st.len() < fetch;
        let shown = visible(&st, at_object_init);
        if shown.len() >= depth || complete || fetch >= 1 << 16 {
            // Once VM death has closed the gate no class can be announced any more: a trace
            // then ends before the first frame whose class the agent has not been told about.
            let closed = crate::events::is_dead() && crate::events::enabled(JVMPI_EVENT_CLASS_LOAD);
            let mut n = 0;
            for (slot, (m, loc)) in frames.iter_mut().zip(shown.iter()) {
                // An obsolete version's frame (its class was retransformed while it ran) is
                // named by the current method, the one CLASS_LOAD lists; its line is its own.
                let listed = classes::listed(*m);
                if closed && !classes::described(listed) {
                    break;
                }
                classes::note_method(listed);
                let lineno = if kind(*m) == Kind::Wrapper { LINE_NATIVE } else { lines::line_of(*m, *loc) };
                *slot = JVMPI_CallFrame { lineno, method_id: listed };
                n += 1;
            }
            return n;
        }
        fetch *= 2;
    }
}
