//! `GetCallTrace`: the Java stack of any thread, callee first, each frame with its source line.
//!
//! The thread is named by its JNIEnv (looked up in the threads room by the door, never dereferenced); the
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
//!   constructor stopped at a `super(…)`/`this(…)` call (`lines::is_chaining_call`);
//! * the Java work the shim does itself in a thread of the program (`own_work`: linking a
//!   class it announces, through `Class.getDeclaredFields0`; making the allocation tracker's
//!   record of a class, a `JvmpiShimTracker$Shape`): while it runs, a trace of that
//!   thread, taken by any thread, shows the stack below the shim's outermost call, e.g.
//!   `ClassLoader.defineClass1` on top for a class being defined. The work the JVM does for
//!   that call (verification, and the classes it loads, through the program's loaders too) is
//!   the definition's, not a frame of its own.

use crate::face::abi::{JVMPI_CallFrame, JVMPI_CallTrace, JVMPI_EVENT_CLASS_LOAD, LINE_NATIVE};
use crate::rooms::{classes, lines};
use crate::vm::idhash::{IdMap, IdSet};
use crate::vm::{bci, jvm};
use jvmti_bindings::sys::jni::{jint, jlong, jmethodID, jthread, JNIEnv};
use jvmti_bindings::sys::jvmti::jvmtiFrameInfo;
use std::cell::{Cell, RefCell};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};
use std::sync::LazyLock;

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

/// The call-trace room's state, shared by every thread: one `static`, each field what it holds
/// and who writes it (a field costs what a separate `static` cost: GetCallTrace reads them
/// directly).
struct CalltraceState {
    /// Methods whose frames no trace shows (the allocation tracker's and the method hooks'),
    /// added by [`hide`] as each tracker class is defined.
    hidden: LazyLock<IdSet<usize>>,
    /// `java.lang.Object.<init>` (0: not known yet), set by [`set_object_init`] when the
    /// allocation tracker is defined.
    object_init: AtomicUsize,
    /// The allocation tracker's hook at the start of `Object.<init>` (0: not known yet), set by
    /// [`set_init_hook`] when the allocation tracker is defined.
    init_hook: AtomicUsize,
    /// Some class has native methods wrapped (set once, by [`natives_wrapped`]): traces look
    /// for renamed natives and wrappers.
    wrapping: AtomicBool,
    /// What each method met since `wrapping` was set is to traces, entered by [`kind`] for all
    /// the methods of a class at once.
    kinds: LazyLock<IdMap<usize, Kind>>,
    /// Method → whether it is the JDK's virtual-thread machinery ([`machinery`]).
    machinery: LazyLock<IdMap<usize, bool>>,
    /// Method → whether it switches virtual threads on and off carriers ([`switching`]).
    switching: LazyLock<IdMap<usize, bool>>,
    /// Method → whether it is where a thread begins ([`bootstrap`]).
    bootstrap: LazyLock<IdMap<usize, bool>>,
    /// Changes of what traces hide (methods hidden, natives wrapped), counted by [`hide`] and
    /// [`natives_wrapped`]: part of [`generation`].
    hiding: AtomicU32,
}

static STATE: CalltraceState = CalltraceState {
    hidden: LazyLock::new(IdSet::default),
    object_init: AtomicUsize::new(0),
    init_hook: AtomicUsize::new(0),
    wrapping: AtomicBool::new(false),
    kinds: LazyLock::new(IdMap::default),
    machinery: LazyLock::new(IdMap::default),
    bootstrap: LazyLock::new(IdMap::default),
    switching: LazyLock::new(IdMap::default),
    hiding: AtomicU32::new(0),
};

/// Some class has native methods wrapped: traces look for renamed natives and wrappers.
pub fn natives_wrapped() {
    STATE.wrapping.store(true, Relaxed);
    STATE.hiding.fetch_add(1, Release);
}

/// What `m` is, looked up once per class (all its methods at once) and kept.
fn kind(m: jmethodID) -> Kind {
    if !STATE.wrapping.load(Relaxed) {
        return Kind::Plain;
    }
    if let Some(k) = STATE.kinds.get(&(m as usize)) {
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
        STATE.kinds.insert(*x as usize, k);
        if *x == m {
            mine = k;
        }
    }
    mine
}

/// Registers methods of the shim's own (e.g. the allocation tracker's) that traces never show.
pub fn hide(methods: &[jmethodID]) {
    for &m in methods {
        STATE.hidden.insert(m as usize);
    }
    // After the inserts: a thread that sees the new count looks the methods up again.
    STATE.hiding.fetch_add(1, Release);
}

/// Registers `java.lang.Object.<init>`.
pub fn set_object_init(m: jmethodID) {
    STATE.object_init.store(m as usize, Relaxed);
}

/// Registers the allocation tracker's hook called first thing in `Object.<init>`: a stack
/// stopped inside it (any thread's) shows the method that ran `new` on top, as if the thread
/// were still at the allocation, since the shim's work there belongs to the allocation.
pub fn set_init_hook(m: jmethodID) {
    STATE.init_hook.store(m as usize, Relaxed);
}

/// Runs `f` (the delivery of an allocation seen in `Object.<init>`) with traces of this thread
/// beginning at the allocating method.
pub fn at_object_init<R>(f: impl FnOnce() -> R) -> R {
    let saved = HERE.with(|h| h.at_object_init.replace(true));
    let r = f();
    HERE.with(|h| h.at_object_init.set(saved));
    r
}

/// Whether `m` is a method of the JDK's virtual-thread machinery (`bci::is_vt_machinery`):
/// left out of traces, as it is of method events (the top of a parked virtual thread's trace
/// is then the program's call that parked it, `Thread.sleep`, `LockSupport.park`, …, not
/// `Continuation.yield0`). Found out once per method.
fn machinery(m: jmethodID) -> bool {
    if let Some(x) = STATE.machinery.get(&(m as usize)) {
        return *x;
    }
    let found = jvm::method_class(m).ok().is_some_and(|k| {
        let sig = jvm::class_signature(k).unwrap_or_default();
        if let Some(jni) = jvm::Jni::current() {
            jni.delete_local_ref(k);
        }
        sig.strip_prefix('L').and_then(|s| s.strip_suffix(';')).is_some_and(bci::is_vt_machinery)
    });
    STATE.machinery.insert(m as usize, found);
    found
}

/// Whether `m` is the JDK's code that mounts or unmounts a virtual thread (`Continuation`'s,
/// and `VirtualThread`'s `mount`, `unmount`, `yieldContinuation`, `runContinuation`, the
/// `notifyJvmti…` natives, …): not what starting, parking or unparking one costs, which is the
/// program's call. Found out once per method.
fn switching(m: jmethodID) -> bool {
    if let Some(x) = STATE.switching.get(&(m as usize)) {
        return *x;
    }
    let name = jvm::method_name(m).map(|(n, _)| n).unwrap_or_default();
    let found = jvm::method_class(m).ok().is_some_and(|k| {
        let sig = jvm::class_signature(k).unwrap_or_default();
        if let Some(jni) = jvm::Jni::current() {
            jni.delete_local_ref(k);
        }
        sig == "Ljdk/internal/vm/Continuation;"
            || sig.starts_with("Ljdk/internal/vm/Continuation$")
            || (sig.starts_with("Ljava/lang/VirtualThread")
                && (name.starts_with("notifyJvmti")
                    || matches!(
                        name.as_str(),
                        "mount"
                            | "unmount"
                            | "yieldContinuation"
                            | "runContinuation"
                            | "switchToCarrierThread"
                            | "switchToVirtualThread"
                            | "afterYield"
                            | "afterDone"
                            | "afterTerminate"
                            | "run"
                    )))
    });
    STATE.switching.insert(m as usize, found);
    found
}

/// Whether the (suspended) thread `t` is inside the JDK's code that mounts or unmounts a
/// virtual thread ([`switching`]): its top frame, below the shim's own, is of it.
pub fn switching_now(t: jthread) -> bool {
    let Ok(frames) = jvm::stack_trace(t, 4) else { return false };
    frames.iter().find(|(m, _)| !STATE.hidden.contains(&(*m as usize))).is_some_and(|&(m, _)| switching(m))
}

/// Whether `m` is one of the methods a platform thread begins in before its task
/// (`Thread.run`, `Thread.runWith`, `InnocuousThread.run`). Found out once per method.
fn bootstrap(m: jmethodID) -> bool {
    if let Some(x) = STATE.bootstrap.get(&(m as usize)) {
        return *x;
    }
    let named = jvm::method_name(m).is_ok_and(|(n, _)| n == "run" || n == "runWith");
    let found = named
        && jvm::method_class(m).ok().is_some_and(|k| {
            let sig = jvm::class_signature(k).unwrap_or_default();
            if let Some(jni) = jvm::Jni::current() {
                jni.delete_local_ref(k);
            }
            sig == "Ljava/lang/Thread;" || sig == "Ljdk/internal/misc/InnocuousThread;"
        });
    STATE.bootstrap.insert(m as usize, found);
    found
}

/// The frames of a JVMTI stack trace as traces show them — without the shim's own frames and
/// the renamed natives, a wrapped native at line -3 — and the (top-based) indices of the frames
/// left out. For the per-thread traces of dumps, whose roots name frames by depth.
pub fn shown_frames(frames: &[(jmethodID, jlong)]) -> (Vec<JVMPI_CallFrame>, Vec<usize>) {
    let wrapping = STATE.wrapping.load(Relaxed);
    let mut shown = Vec::with_capacity(frames.len());
    let mut left_out = Vec::new();
    for (i, &(m, loc)) in frames.iter().enumerate() {
        let k = if wrapping { kind(m) } else { Kind::Plain };
        if k == Kind::Renamed || STATE.hidden.contains(&(m as usize)) || machinery(m) {
            left_out.push(i);
            continue;
        }
        let lineno = if k == Kind::Wrapper { LINE_NATIVE } else { lines::line_of(m, loc) };
        shown.push(JVMPI_CallFrame { lineno, method_id: classes::listed(m) });
    }
    (shown, left_out)
}

/// What a trace needs to know of a method, kept per thread (see [`Here`]).
#[derive(Clone)]
struct Frame {
    /// The method's `jmethodID` (0: an empty slot).
    m: usize,
    /// [`generation`] when this was found out.
    generation: u32,
    /// The method ID the agent is handed ([`classes::listed`]).
    listed: jmethodID,
    /// Never shown: the shim's own, or a renamed native.
    left_out: bool,
    /// The Java wrapper of a native method: shown at line -3.
    wrapper: bool,
    /// Its line table (`None`: native).
    lines: lines::Table,
}

/// A thread's part of this room, one thread-local (each costs a call in a shared library).
struct Here {
    /// Set while this thread reports an allocation seen in `Object.<init>`.
    at_object_init: Cell<bool>,
    /// How many frames the last trace of this thread left out above its deepest shown frame:
    /// the next one fetches that many more than its depth.
    extra: Cell<usize>,
    /// The same for traces taken inside `Object.<init>` (see [`at_object_init`]).
    extra_at_init: Cell<usize>,
    /// Methods this thread's traces met, in a small direct-mapped table: a trace's frames cost
    /// no lock and no hashing once their methods are known. What an entry says can only change
    /// when a method is hidden, natives are wrapped or a line table is dropped: [`generation`]
    /// counts those.
    seen: RefCell<Vec<Frame>>,
    /// What the agent gets of each (method, bytecode index) this thread's traces met, in a
    /// direct-mapped table: a frame seen before costs one entry read — no line search, no
    /// method table. Current while [`generation`] has not changed, as `seen`.
    spots: RefCell<Vec<Spot>>,
}

const SEEN: usize = 256;

/// What a trace shows of a frame at one place in one method (see [`Here::spots`]).
#[derive(Clone, Copy)]
struct Spot {
    /// The frame's `jmethodID` (0: an empty entry).
    m: usize,
    /// The frame's bytecode index.
    location: jlong,
    /// [`generation`] when this was found out.
    generation: u32,
    /// Its line (-3 for a native method or a wrapper).
    lineno: jint,
    /// The method ID the agent is handed; NULL: a frame never shown.
    listed: jmethodID,
}

const SPOTS: usize = 512;

fn spot_slot(m: usize, location: jlong) -> usize {
    let h = (m >> 3) ^ (location as usize).wrapping_mul(0x2545_F491_4F6C_DD1D);
    h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - SPOTS.trailing_zeros())
}

/// What the agent gets of a frame, `(listed method, line)` (None: never shown), from this
/// thread's `spots` or found out through [`with_frame`] and kept.
#[inline]
fn spot(here: &Here, m: jmethodID, location: jlong, generation: u32) -> Option<(jmethodID, jint)> {
    let i = spot_slot(m as usize, location);
    if let Ok(s) = here.spots.try_borrow() {
        if let Some(x) = s.get(i).filter(|x| x.m == m as usize && x.location == location && x.generation == generation)
        {
            return (!x.listed.is_null()).then_some((x.listed, x.lineno));
        }
    }
    new_spot(here, m, location, generation, i)
}

/// [`spot`] for a frame not in the table: found out and kept (off the hot path's code).
#[cold]
#[inline(never)]
fn new_spot(here: &Here, m: jmethodID, location: jlong, generation: u32, i: usize) -> Option<(jmethodID, jint)> {
    let found = with_frame(&here.seen, m, generation, |f| {
        (!f.left_out).then(|| (f.listed, if f.wrapper { LINE_NATIVE } else { lines::line_in(&f.lines, location) }))
    });
    if let Ok(mut s) = here.spots.try_borrow_mut() {
        if s.is_empty() {
            *s = vec![Spot { m: 0, location: 0, generation: 0, lineno: 0, listed: std::ptr::null_mut() }; SPOTS];
        }
        let (listed, lineno) = found.unwrap_or((std::ptr::null_mut(), 0));
        s[i] = Spot { m: m as usize, location, generation, lineno, listed };
    }
    found
}

thread_local! {
    static HERE: Here = const {
        Here {
            at_object_init: Cell::new(false),
            extra: Cell::new(0),
            extra_at_init: Cell::new(0),
            seen: RefCell::new(Vec::new()),
            spots: RefCell::new(Vec::new()),
        }
    };
}

/// The state of everything a [`Frame`] records: it is current while this has not changed.
fn generation() -> u32 {
    STATE.hiding.load(Acquire).wrapping_add(lines::generation())
}

fn slot(m: usize) -> usize {
    (m >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - SEEN.trailing_zeros())
}

/// `f` of what traces need of `m`, from this thread's table (`seen`) or found out and kept.
fn with_frame<R>(seen: &RefCell<Vec<Frame>>, m: jmethodID, generation: u32, f: impl Fn(&Frame) -> R) -> R {
    let key = m as usize;
    let i = slot(key);
    if let Ok(s) = seen.try_borrow() {
        if let Some(x) = s.get(i).filter(|x| x.m == key && x.generation == generation) {
            return f(x);
        }
    }
    // Found out outside the table's borrow: these calls go to the JVM.
    let k = kind(m);
    let left_out = k == Kind::Renamed || STATE.hidden.contains(&key) || machinery(m);
    let listed = classes::listed(m);
    if !left_out {
        classes::note_method(listed);
    }
    let lines = if left_out || k == Kind::Wrapper { None } else { lines::table(m) };
    let x = Frame { m: key, generation, listed, left_out, wrapper: k == Kind::Wrapper, lines };
    let r = f(&x);
    if let Ok(mut s) = seen.try_borrow_mut() {
        if s.is_empty() {
            *s = vec![
                Frame {
                    m: 0,
                    generation: 0,
                    listed: std::ptr::null_mut(),
                    left_out: false,
                    wrapper: false,
                    lines: None
                };
                SEEN
            ];
        }
        s[i] = x;
    }
    r
}

/// Frames fetched into a buffer on the stack; deeper fetches allocate.
const ON_STACK: usize = 16;

/// The deepest trace [`quick`] takes.
pub const QUICK: usize = ON_STACK;

/// The usual trace on a short path: the current thread's top `frames.len()` frames (at most
/// [`QUICK`]) while no frame can be left out — no method hidden, no native wrapped, no
/// allocation being reported — and the gate is not closed, each frame's place found in this
/// thread's table ([`spot`]). Returns how many frames it wrote; None when [`fill`] must take
/// the call. The same frames as [`fill`]'s, with less code run: the JVM's stack walk leaves
/// little of the shim's code and data in the processor's caches, so each line of either costs.
#[inline]
pub fn quick(frames: &mut [MaybeUninit<JVMPI_CallFrame>]) -> Option<usize> {
    if frames.len() > QUICK
        || STATE.hiding.load(Relaxed) != 0
        || STATE.init_hook.load(Relaxed) != 0
        || crate::face::own_work::any()
    {
        return None;
    }
    HERE.with(|here| {
        if here.at_object_init.get() {
            return None;
        }
        let mut buf = [const { MaybeUninit::<jvmtiFrameInfo>::uninit() }; QUICK];
        let buf = jvm::stack_trace_into(std::ptr::null_mut(), &mut buf[..frames.len()]).ok()?;
        let generation = generation();
        for (slot, v) in frames.iter_mut().zip(buf.iter()) {
            let (method_id, lineno) = spot(here, v.method, v.location, generation)?;
            slot.write(JVMPI_CallFrame { lineno, method_id });
        }
        // Read after the walk: a trace taken once the gate closed takes the long way.
        (!crate::face::events::is_dead()).then_some(buf.len())
    })
}

/// Fills `frames` (at most its length) and returns how many were written.
/// `env` is the calling thread's JNIEnv. The first frames returned are written. `thread_of`
/// names the thread of another `env_id` (the caller's thread table: the threads room, which
/// asks this room whether a suspended thread is switching, so this room cannot ask it).
pub fn fill(
    env: *mut JNIEnv,
    trace: &mut JVMPI_CallTrace,
    frames: &mut [MaybeUninit<JVMPI_CallFrame>],
    thread_of: impl FnOnce(*mut JNIEnv) -> Option<jthread>,
) -> jint {
    HERE.with(|here| fill_here(here, env, trace, frames, thread_of))
}

fn fill_here(
    here: &Here,
    env: *mut JNIEnv,
    trace: &mut JVMPI_CallTrace,
    frames: &mut [MaybeUninit<JVMPI_CallFrame>],
    thread_of: impl FnOnce(*mut JNIEnv) -> Option<jthread>,
) -> jint {
    // The current thread is named NULL: inside a virtual thread that is the virtual thread,
    // whose frames are the ones running (its carrier's JNIEnv is the env_id).
    // A mounted virtual thread's own env_id names the current thread too.
    let current = env == trace.env_id || (!env.is_null() && jvm::event_env_here(env) == trace.env_id);
    let thread = if current {
        std::ptr::null_mut()
    } else {
        match thread_of(trace.env_id) {
            Some(t) => t,
            None => return 0,
        }
    };
    let at_object_init = current && here.at_object_init.get();
    let depth = frames.len();
    // Some frames may be left out: ask for as many more as the last trace of this thread left
    // out (at first a few, none while nothing can be), and again for more if needed.
    let hiding = STATE.hiding.load(Relaxed) != 0 || STATE.init_hook.load(Relaxed) != 0;
    let extra = if at_object_init { &here.extra_at_init } else { &here.extra };
    let more = match extra.get() {
        _ if !hiding && !at_object_init => 0,
        0 if at_object_init => 8,
        0 => 3,
        e => e,
    };
    let mut fetch = depth.saturating_add(more).min(MAX_FETCH);
    // Inside work of the shim's own: the trace begins below its outermost frame.
    let own = crate::face::own_work::own_of(trace.env_id);
    // Buffers on the stack for the usual depths, not cleared: only what is written is read.
    let mut small = [const { MaybeUninit::<jvmtiFrameInfo>::uninit() }; ON_STACK];
    let mut large = Vec::new();
    let mut small_out = [const { MaybeUninit::<JVMPI_CallFrame>::uninit() }; ON_STACK];
    let mut large_out = Vec::new();
    loop {
        let buf = if fetch <= ON_STACK {
            &mut small[..fetch]
        } else {
            large.resize(fetch, MaybeUninit::uninit());
            &mut large[..]
        };
        let buf = match jvm::stack_trace_into(thread, buf) {
            Ok(b) => b,
            Err(e) => {
                let quiet = e == jvmti_bindings::sys::jvmti::jvmtiError::THREAD_NOT_ALIVE;
                let level = if quiet { log::Level::Debug } else { crate::face::events::edge_level(Some(e)) };
                log::log!(level, "GetCallTrace({:p}): {}", trace.env_id, jvm::err_name(e));
                return 0;
            }
        };
        let got = buf.len();
        let complete = got < fetch;
        // The frames of the shim's own work, from the top down to its outermost call of its
        // first method: left out. Not all fetched yet: fetch more (all of them were, once the
        // stack is complete: the work may have ended meanwhile).
        let skip = match own {
            None => 0,
            Some((first, n)) => {
                let mut seen = 0;
                match buf.iter().position(|f| {
                    seen += u32::from(f.method as usize == first);
                    seen == n
                }) {
                    Some(c) => c + 1,
                    None if !complete && fetch < MAX_FETCH => {
                        fetch = fetch.saturating_mul(2).min(MAX_FETCH);
                        continue;
                    }
                    None => 0,
                }
            }
        };
        let init = STATE.object_init.load(Relaxed);
        let hook = STATE.init_hook.load(Relaxed);
        let inside_init = at_object_init || (hook != 0 && buf[..got].iter().take(3).any(|f| f.method as usize == hook));
        // The frames shown, moved to the front of the buffer, and what the agent gets of each
        // (method ID, line), found in the same lookup.
        let generation = generation();
        if got > ON_STACK {
            large_out.resize(got, MaybeUninit::uninit());
        }
        let out = if got <= ON_STACK { &mut small_out[..] } else { &mut large_out[..] };
        let mut shown = 0;
        let mut of_machinery = false;
        for i in skip..got {
            let v = buf[i];
            if let Some((method_id, lineno)) = spot(here, v.method, v.location, generation) {
                buf[shown] = v;
                out[shown].write(JVMPI_CallFrame { lineno, method_id });
                shown += 1;
            } else if !of_machinery && shown == 0 {
                of_machinery = machinery(v.method);
            }
        }
        // SAFETY: the first `shown` entries of `out` were written just above.
        let out = unsafe { std::slice::from_raw_parts(out.as_ptr() as *const JVMPI_CallFrame, shown) };
        let mut first = 0;
        if inside_init && init != 0 && shown > 0 && buf[0].method as usize == init {
            // buf[0] is Object.<init>; buf[i + 1] called buf[i]: while it did so at a chaining
            // call it is a constructor of the same object.
            while first + 1 < shown && lines::is_chaining_call(buf[first + 1].method, buf[first + 1].location) {
                first += 1;
            }
            first += 1;
        }
        // A platform thread of the JDK's that runs nothing but virtual-thread machinery (JDK
        // 24+'s `VirtualThread-unblocker`, which hands virtual threads blocked on monitors back
        // to their scheduler): its frames left out, what is left is where threads begin. Its
        // trace is empty, as HotSpot's were for threads without Java frames of the program: a
        // sampler counted `Thread.runWith` as the program's hottest method (74 % of HPROF's
        // samples of a program whose virtual threads contend on monitors, JDK 25).
        if of_machinery && complete && shown <= 3 && buf[..shown].iter().all(|f| bootstrap(f.method)) {
            return 0;
        }
        if shown - first >= depth || complete || fetch >= MAX_FETCH {
            // The next trace fetches as many frames more than its depth as this one left out.
            extra.set((got - shown + first).max(1));
            // Once VM death has closed the gate no class can be announced any more: a trace
            // then ends before the first frame whose class the agent has not been told about.
            // While it is open, so does a trace that meets a class the JVM loaded without
            // telling (JDK 21 posts no ClassLoad inside its virtual-thread code's hidden
            // frames: `ScheduledThreadPoolExecutor`'s classes, a lambda of `VirtualThread`):
            // the class is announced by the linker thread right after, and later traces
            // go on past it. (Not from here: the caller may be a sampler with threads
            // suspended.)
            let check = crate::face::events::enabled(JVMPI_EVENT_CLASS_LOAD);
            let closed = check && crate::face::events::is_dead();
            let mut n = 0;
            // An obsolete version's frame (its class was retransformed while it ran) is named
            // by the current method, the one CLASS_LOAD lists; its line is its own.
            for (slot, f) in frames.iter_mut().zip(out[first..shown].iter()) {
                if check && !classes::described(f.method_id) {
                    if !closed {
                        classes::announce_soon(f.method_id);
                    }
                    break;
                }
                slot.write(*f);
                n += 1;
            }
            return n;
        }
        fetch = fetch.saturating_mul(2).min(MAX_FETCH);
    }
}

/// The most frames one trace fetches.
const MAX_FETCH: usize = 1 << 16;
