//! Method events: METHOD_ENTRY, METHOD_ENTRY2, METHOD_EXIT and INSTRUCTION_START.
//!
//! **Bytecode instrumentation (the default).** While one of these events is enabled, every
//! class is rewritten (as it loads, and with `RetransformClasses` when the event is switched on
//! or off; see the `bci` room's method plan) to call a tracker class the shim generates and
//! defines in the boot loader, `JvmpiShimMethods`, whose methods are all `static native` and
//! bound here with `RegisterNatives`:
//!
//! * at entry, `enterThis(this, index)` for instance methods while METHOD_ENTRY2 is on, else
//!   `enter(index)` (static methods, constructors, and all methods while only METHOD_ENTRY is);
//! * before every return instruction, and in a catch-all handler that rethrows, `exit(index)`
//!   (`initThrow(index)` in a constructor's catch-all, which also ends the callers the
//!   exception leaves at their `super(…)`/`this(…)` call: [`exit_chaining_callers`]);
//! * each only while its events are on: the entry hook while METHOD_ENTRY or METHOD_ENTRY2 is,
//!   the exit hooks while METHOD_EXIT is (an agent that wants only entries, as coverage tools
//!   did, pays one native call per Java call, not two; switching the other one on
//!   retransforms);
//! * with INSTRUCTION_START, before every instruction `insn(index, offset)`, or for `if*` and
//!   the switches a variant that also passes the operands, so that the event carries the
//!   outcome (`is_true`, `key`/`low`/`hi`, `chosen_pair_index`/`pairs_total`) as HotSpot 1.5
//!   computed it. `offset` is the offset in the class file the agent saw.
//!
//! `index` is an `int` constant per instrumented method: a slot in a table that holds the
//! method's `jmethodID`, filled the first time the method runs (JVMTI `GetFrameLocation` of the
//! caller's frame, once per method). The events arrive on the executing thread, in call order;
//! no trace shows the tracker (its methods are hidden from GetCallTrace), so inside
//! METHOD_ENTRY the entered method is on top, at its first line.
//!
//! What instrumentation does not reach, and what happens there:
//! * constructors: METHOD_ENTRY2 carries a NULL receiver (the object cannot be passed to a
//!   method before `super(…)` has run); no handler may cover the `super(…)`/`this(…)` call, so
//!   an exception that leaves a constructor through it gets its METHOD_EXIT from the callee's
//!   exit hook ([`exit_chaining_callers`]), or none when the callee has no hooks (a class that
//!   cannot be rewritten) or the JVM throws at the call itself (a `StackOverflowError` or a
//!   linkage error before the callee runs);
//! * native methods have no code: those of a class defined while an entry/exit event is on, by
//!   any loader but the boot loader, are wrapped when it is defined (see [`transform`]); the
//!   others — the boot loader's, those of classes defined while the events were off — and the
//!   methods of classes that cannot be rewritten (the trackers; a class whose code would pass
//!   64 KiB — logged at info level) get no events on this path;
//! * activations that began before the events were switched on run their old code to the end.
//!
//! **JVMTI MethodEntry / MethodExit** (`methods=jvmti` in the shim's options): every method,
//! native ones and constructors (with their receiver) included, at the cost of running all
//! code in the interpreter (80–290× slower). INSTRUCTION_START always uses instrumentation.
//!
//! Disabling the last of these events retransforms every class back: nothing stays behind but
//! the wrappers of native methods, as plain forwarding calls.
//! Switches made inside the agent's `JVM_OnLoad` (the gate is not open yet, no event can be
//! sent) only change what classes get as they load; the classes already loaded are
//! retransformed once, when the gate opens, and not at all if the events are off again by then.
//!
//! **Per event** (the tracker's natives, many million times a second), with one agent and no
//! trace or report: one relaxed load of the events open to the hot path, the thread's flags —
//! inside the shim's own JNI call? announced to the agent? — and its in-flight counter, found
//! by the thread pointer (`jvm::here_and_counter`, no `__tls_get_addr`), two loads from the
//! method number to its `jmethodID`, and the gate's hottest path, `events::Hot` (a plain store to the thread's
//! counter, a compiler fence, the closed check, the call). No allocation, no map lookup, no
//! lock, no locked instruction, no `GetEnv`; about 40 instructions (the emulation floor of
//! `benches/fib_emul.c`, which only fills the event and calls the agent, 25). Otherwise the
//! general path (`events::send_tracked`), out of line. The rest of the cost is
//! the JNI call itself: two Java→native transitions per Java call. INSTRUCTION_START takes the
//! same hot path (one native call per instruction; `scripts/bench-instructions.sh` compares it
//! with the JNI floor).

use crate::face::abi::*;
use crate::face::{events, ids};
use crate::rooms::error::RoomError;
use crate::rooms::{alloc, calltrace, classes, lines};
use crate::vm::idhash::IdMap;
use crate::vm::{bci, jvm, rewrites};
use jvmti_bindings::sys::jni::{jboolean, jclass, jint, jmethodID, jobject, jthread, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{LazyLock, Mutex};

pub const TRACKER: &str = "JvmpiShimMethods";

/// Entry hooks (METHOD_ENTRY or METHOD_ENTRY2 is on).
const ENTRY: u8 = 1;
/// Exit hooks (METHOD_EXIT is on): an agent that wants only entries (coverage tools) gets one
/// native call per Java call, not two.
const EXIT: u8 = 4;
/// Entry hooks of instance methods pass the receiver (METHOD_ENTRY2 is on): otherwise they
/// make the cheaper call of static methods, with no object to hand to JNI.
const RECEIVER: u8 = 8;
const INSTRUCTIONS: u8 = 2;

// ---- method numbers → jmethodID ---------------------------------------------------------------

const CHUNK_BITS: usize = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
type Chunk = [AtomicUsize; CHUNK];

/// The methods room's state: one `static`, each field what it holds and who writes it (a field costs
/// what a separate `static` cost: the natives' hot path reads `slots` directly).
struct MethodsState {
    /// Which hooks classes get now (ENTRY | EXIT | INSTRUCTIONS | RECEIVER); written by `switch` under `switch`.
    plan: AtomicU8,
    /// The `JvmpiShimMethods` class (a global reference), once defined at start-up.
    tracker_class: AtomicUsize,
    /// Held while the plan changes and loaded classes are retransformed.
    switch: Mutex<()>,
    /// `methods=jvmti`: entry and exit come from JVMTI MethodEntry/MethodExit (set from the options).
    jvmti_path: AtomicBool,
    /// Whether JVMTI MethodEntry/MethodExit are on now (the `methods=jvmti` path).
    jvmti_on: AtomicBool,
    /// Method number → `jmethodID`, in chunks made as numbers are given out (read by the natives' hot path).
    slots: [AtomicPtr<Chunk>; CHUNK],
    /// The next method number to give out.
    next: AtomicUsize,
    /// Held while a chunk of `slots` is made.
    grow: Mutex<()>,
    /// Keys of each lookupswitch, by (method number, original offset), written as classes are rewritten.
    lookups: LazyLock<IdMap<(u32, u32), Vec<i32>>>,
    /// The JVM binds renamed natives (`SetNativeMethodPrefix` succeeded): native methods may be wrapped.
    prefixed: AtomicBool,
    /// Some class got wrappers: from then on the class-file hook stays on (every retransformation of such a class must add the same wrappers again: it cannot remove methods).
    wrapping: AtomicBool,
    /// A switch happened before the gate opened; its retransformation waits for `gate_opening`.
    deferred: AtomicBool,
    /// `jvm::retransforms().0` when that switch was deferred: a whole retransformation begun
    /// after it (OBJECT_ALLOC switched on later in `JVM_OnLoad`) applied the plan already.
    deferred_at: AtomicUsize,
    /// A class was rewritten with method hooks that retransformation has not undone since.
    dirty: AtomicBool,
    /// Classes rewritten (allocation and method plans): a figure of the migration report.
    rewritten: std::sync::atomic::AtomicU64,
    /// Nanoseconds spent rewriting them.
    rewrite_nanos: std::sync::atomic::AtomicU64,
}

static STATE: MethodsState = MethodsState {
    plan: AtomicU8::new(0),
    tracker_class: AtomicUsize::new(0),
    switch: Mutex::new(()),
    jvmti_path: AtomicBool::new(false),
    jvmti_on: AtomicBool::new(false),
    slots: [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNK],
    next: AtomicUsize::new(0),
    grow: Mutex::new(()),
    lookups: LazyLock::new(IdMap::default),
    prefixed: AtomicBool::new(false),
    wrapping: AtomicBool::new(false),
    deferred: AtomicBool::new(false),
    deferred_at: AtomicUsize::new(0),
    dirty: AtomicBool::new(false),
    rewritten: std::sync::atomic::AtomicU64::new(0),
    rewrite_nanos: std::sync::atomic::AtomicU64::new(0),
};

/// A method number: the `int` constant the rewritten code passes to every tracker native, the
/// slot of its method in the table ([`slot_of`]). Made only where the rewriter asks for one
/// ([`new_index`]) and where the natives receive it: `#[repr(transparent)]`, so the natives take
/// it in place of the `jint` the JVM passes, and it cannot be mistaken for a bytecode offset or
/// a branch operand beside it.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct MethodNo(jint);

/// A fresh method number (its slot exists when this returns); None when the table is full.
fn new_index() -> Option<i32> {
    let i = STATE.next.fetch_add(1, Relaxed);
    let c = i >> CHUNK_BITS;
    if c >= CHUNK || i > i32::MAX as usize {
        return None;
    }
    make_chunk(c);
    Some(i as i32)
}

/// Chunk `c` of the slots exists when this returns.
fn make_chunk(c: usize) {
    if STATE.slots[c].load(Acquire).is_null() {
        let _g = crate::vm::logger::lock(&STATE.grow);
        if STATE.slots[c].load(Acquire).is_null() {
            let chunk: Box<Chunk> = Box::new([const { AtomicUsize::new(0) }; CHUNK]);
            STATE.slots[c].store(Box::into_raw(chunk), Release);
        }
    }
}

/// The slot of method number `index`.
#[inline(always)]
fn slot_of(MethodNo(index): MethodNo) -> Option<&'static AtomicUsize> {
    let i = usize::try_from(index).ok()?;
    let chunk = STATE.slots.get(i >> CHUNK_BITS)?.load(Acquire);
    if chunk.is_null() {
        return None;
    }
    // SAFETY: chunks are allocated once and never freed.
    Some(unsafe { &(*chunk)[i & (CHUNK - 1)] })
}

/// Method numbers below `end` (those the rewrite cache's class files use) are not given out from
/// now on, and each has its slot; returns the first number not given out before.
fn reserve_numbers(end: u32) -> u32 {
    if end as usize > CHUNK * CHUNK {
        // More than the table holds: nothing is reserved, and no cached class is used.
        return u32::MAX;
    }
    let before = STATE.next.fetch_max(end as usize, SeqCst);
    (0..(end as usize).div_ceil(CHUNK)).for_each(make_chunk);
    u32::try_from(before).unwrap_or(u32::MAX)
}

/// The method of number `index` if it has been resolved already (loads only).
#[inline(always)]
fn method_known(index: MethodNo) -> Option<jmethodID> {
    let m = slot_of(index)?.load(Relaxed);
    (m != 0).then_some(m as jmethodID)
}

/// The method of number `index`, resolved from the calling frame the first time.
#[inline]
fn method_of(index: MethodNo) -> Option<jmethodID> {
    let slot = slot_of(index)?;
    let m = slot.load(Relaxed);
    if m != 0 {
        return Some(m as jmethodID);
    }
    // Depth 0 is the tracker's native method, depth 1 the instrumented method.
    let m = jvm::frame_method(1).ok()?;
    classes::note_method(m);
    slot.store(m as usize, Relaxed);
    Some(m)
}

// ---- switching -----------------------------------------------------------------------------

/// Called at start-up with the shim's `methods=` option.
pub fn set_up(jvmti_path: bool) -> Result<(), RoomError> {
    if jvmti_path {
        jvm::add_method_event_capabilities().map_err(|e| format!("methods=jvmti: {}", jvm::err_name(e)))?;
        STATE.jvmti_path.store(true, SeqCst);
    } else {
        match jvm::set_native_method_prefix(bci::NATIVE_PREFIX) {
            Ok(()) => STATE.prefixed.store(true, SeqCst),
            Err(e) => log::info!("SetNativeMethodPrefix: {}; native methods get no method events", jvm::err_name(e)),
        }
    }
    Ok(())
}

/// The native methods of a loaded class that the shim wrapped when the class was defined
/// (name, descriptor), from the renamed natives it has; None if none.
fn wrapped_natives_of(k: jclass) -> Option<Vec<(String, String)>> {
    let v: Vec<(String, String)> = jvm::class_methods(k)
        .ok()?
        .into_iter()
        .filter_map(|m| jvm::method_name(m).ok())
        .filter_map(|(n, d)| n.strip_prefix(bci::NATIVE_PREFIX).map(|n| (n.to_string(), d)))
        .collect();
    (!v.is_empty()).then_some(v)
}

/// EnableEvent / DisableEvent of METHOD_ENTRY, METHOD_ENTRY2, METHOD_EXIT, INSTRUCTION_START
/// (the event's bit is already set or cleared).
pub fn switch(_event: jint, _on: bool) -> Result<(), RoomError> {
    let _g = crate::vm::logger::lock(&STATE.switch);
    let calls =
        [JVMPI_EVENT_METHOD_ENTRY, JVMPI_EVENT_METHOD_ENTRY2, JVMPI_EVENT_METHOD_EXIT].into_iter().any(events::enabled);
    let jvmti_path = STATE.jvmti_path.load(SeqCst);
    if jvmti_path && calls != STATE.jvmti_on.load(SeqCst) {
        for ev in [jvmti::JVMTI_EVENT_METHOD_ENTRY, jvmti::JVMTI_EVENT_METHOD_EXIT] {
            if calls {
                jvm::want(ev).map_err(jvm::err_name)?;
            } else {
                jvm::unwant(ev);
            }
        }
        STATE.jvmti_on.store(calls, SeqCst);
    }
    let mut plan = 0;
    if !jvmti_path {
        if events::enabled(JVMPI_EVENT_METHOD_ENTRY) || events::enabled(JVMPI_EVENT_METHOD_ENTRY2) {
            plan |= ENTRY;
        }
        if events::enabled(JVMPI_EVENT_METHOD_ENTRY2) {
            plan |= RECEIVER;
        }
        if events::enabled(JVMPI_EVENT_METHOD_EXIT) {
            plan |= EXIT;
        }
    }
    if events::enabled(JVMPI_EVENT_INSTRUCTION_START) {
        plan |= INSTRUCTIONS;
    }
    let old = STATE.plan.load(SeqCst);
    if plan == old {
        return Ok(());
    }
    if plan != 0 && STATE.tracker_class.load(Acquire) == 0 {
        define_tracker()?;
    }
    if old == 0 {
        jvm::want(jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK).map_err(jvm::err_name)?;
    }
    STATE.plan.store(plan, SeqCst);
    if !events::is_ready() && !events::is_dead() {
        // Inside the agent's JVM_OnLoad: no event can be sent before it returns, so the classes
        // already loaded are retransformed once, when the gate opens ([`gate_opening`]), and
        // not at all if the events are off again by then. Classes loading meanwhile get the
        // plan as they load.
        STATE.deferred_at.store(jvm::retransforms().0, SeqCst);
        STATE.deferred.store(true, SeqCst);
        if plan == 0 {
            jvm::unwant(jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK);
        }
        log::debug!(
            "method hooks {:?} for classes loading from now on; loaded classes wait for the gate",
            describe(plan)
        );
        return Ok(());
    }
    if events::is_dead() {
        // Switched at VM death (inside JVM_SHUT_DOWN): the gate is closed, no hook can deliver
        // anything, and retransforming would load classes no CLASS_LOAD can announce any more
        // (see `alloc::disable`), which a last heap dump would then name.
        log::debug!("method hooks {:?} at VM death: classes left as they are", describe(plan));
        return Ok(());
    }
    retransform(plan);
    Ok(())
}

fn retransform(plan: u8) {
    let t = std::time::Instant::now();
    let (_, before) = rewrite_figures();
    let n = rewrites::retransform_all(events::before_gate());
    if plan == 0 {
        jvm::unwant(jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK);
    }
    STATE.dirty.store(false, SeqCst);
    let rewriting = std::time::Duration::from_nanos(rewrite_figures().1 - before);
    log::info!(
        "method hooks {:?}: {n} loaded classes retransformed in {:?} ({rewriting:?} rewriting them, in all threads)",
        describe(plan),
        t.elapsed()
    );
}

/// Just before the gate opens (the agent's JVM_OnLoad has returned): the retransformation the
/// switches inside JVM_OnLoad deferred, once, with the plan in force now. Nothing happens when
/// the events were switched on and off again and no class was rewritten meanwhile.
pub fn gate_opening() {
    if !STATE.deferred.swap(false, SeqCst) {
        return;
    }
    let _g = crate::vm::logger::lock(&STATE.switch);
    let plan = STATE.plan.load(SeqCst);
    let (begun, ended) = jvm::retransforms();
    if begun > STATE.deferred_at.load(SeqCst) && begun == ended {
        // Every class was retransformed after the last switch (OBJECT_ALLOC switched on in
        // JVM_OnLoad after the method events), with the plan in force now: nothing is left.
        log::debug!("method hooks {:?}: the classes were retransformed with them already", describe(plan));
        STATE.dirty.store(false, SeqCst);
        return;
    }
    if plan != 0 || STATE.dirty.load(SeqCst) {
        if plan == 0 {
            // Undo the classes rewritten meanwhile (`retransform` gives the hook back).
            let _ = jvm::want(jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK);
        }
        retransform(plan);
    }
}

fn describe(plan: u8) -> &'static str {
    match plan & !RECEIVER {
        0 => "off",
        ENTRY => "entry",
        EXIT => "exit",
        x if x == ENTRY | EXIT => "entry/exit",
        INSTRUCTIONS => "instructions",
        x if x == ENTRY | INSTRUCTIONS => "entry + instructions",
        x if x == EXIT | INSTRUCTIONS => "exit + instructions",
        _ => "entry/exit + instructions",
    }
}

fn define_tracker() -> Result<(), RoomError> {
    let env = jvm::attach_current().ok_or("the calling thread cannot be attached to the JVM")?;
    let jni = jvm::Jni::of(env);
    let k = jni
        .define_boot_class(TRACKER, &bci::methods_tracker_class(TRACKER))
        .ok_or("cannot define the method tracker class in the boot class loader")?;
    let natives = [
        jvm::Native { name: c"enter", signature: c"(I)V", f: enter as *mut c_void },
        jvm::Native { name: c"enterThis", signature: c"(Ljava/lang/Object;I)V", f: enter_this as *mut c_void },
        jvm::Native { name: c"exit", signature: c"(I)V", f: exit as *mut c_void },
        jvm::Native { name: c"initThrow", signature: c"(I)V", f: init_throw as *mut c_void },
        jvm::Native { name: c"insn", signature: c"(II)V", f: insn as *mut c_void },
        jvm::Native { name: c"ifInt", signature: c"(IIII)V", f: if_int as *mut c_void },
        jvm::Native { name: c"ifCmp", signature: c"(IIIII)V", f: if_cmp as *mut c_void },
        jvm::Native { name: c"ifRef", signature: c"(Ljava/lang/Object;III)V", f: if_ref as *mut c_void },
        jvm::Native {
            name: c"ifAcmp",
            signature: c"(Ljava/lang/Object;Ljava/lang/Object;III)V",
            f: if_acmp as *mut c_void,
        },
        jvm::Native { name: c"tableSwitch", signature: c"(IIIII)V", f: table_switch as *mut c_void },
        jvm::Native { name: c"lookupSwitch", signature: c"(III)V", f: lookup_switch as *mut c_void },
        jvm::Native { name: c"transit", signature: c"(Z)V", f: transit as *mut c_void },
    ];
    if !jni.register_natives(k, &natives) {
        return Err("cannot bind the method tracker's native methods".into());
    }
    if let Err(e) = jni.java_base_reads_module_of(k) {
        log::debug!("AddModuleReads(java.base → method tracker): {}", jvm::err_name(e));
    }
    let own: Vec<_> = bci::TRACKER_METHODS.iter().filter_map(|(n, sig)| jni.method_id_in(k, n, sig, true)).collect();
    calltrace::hide(&own);
    STATE.tracker_class.store(k as usize, Release);
    Ok(())
}

/// A class file the shim hands the JVM: rewritten now, or the rewrite cache's (not copied).
pub enum Output {
    New(Vec<u8>),
    Cached(rewrites::Cached),
}

impl std::ops::Deref for Output {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Output::New(v) => v,
            Output::Cached(c) => c,
        }
    }
}

/// Rewrites a class file with every active plan (allocation and methods) in one pass. None:
/// unchanged. Called from the shim's class-file hook, with the class being redefined or
/// retransformed (None: a class being defined) and whether the boot loader defines it.
///
/// Native methods: a class defined (not redefined) while METHOD_ENTRY, METHOD_ENTRY2 or
/// METHOD_EXIT is on, by a loader other than the boot loader, gets a Java wrapper for each of
/// its native methods (the native itself renamed with [`bci::NATIVE_PREFIX`]), hooked like any
/// method. Methods cannot be added or removed later, so every retransformation of that class
/// wraps the same natives again — with hooks while the events are on, as plain forwarding calls
/// while they are off — and no other class ever gets wrappers.
pub fn transform(class_file: &[u8], redefined: Option<jclass>, boot: bool) -> Option<Output> {
    let alloc = alloc::plan();
    let plan = STATE.plan.load(SeqCst);
    let rewrap = match redefined {
        Some(k) if STATE.wrapping.load(SeqCst) => wrapped_natives_of(k),
        _ => None,
    };
    let wrap_new = redefined.is_none() && !boot && plan & (ENTRY | EXIT) != 0 && STATE.prefixed.load(Relaxed);
    if alloc.is_none() && plan == 0 && rewrap.is_none() {
        return None;
    }
    let hooks = bci::MethodHooks {
        tracker: TRACKER,
        also_skip: alloc::TRACKER,
        entry: plan & ENTRY != 0,
        receiver: plan & RECEIVER != 0,
        exit: plan & EXIT != 0,
        instructions: plan & INSTRUCTIONS != 0,
    };
    // Once the start-up retransformation has opened the rewrite cache, classes may come from it:
    // the same bytes and plan give the same output (switch keys and native wrappers are not kept
    // there).
    let cacheable = rewrap.is_none() && !wrap_new && plan & INSTRUCTIONS == 0;
    // The allocation plan's `keep_new` changes its output: a plan of its own (bit 40).
    let cache_plan =
        u64::from(alloc.is_some()) | u64::from(plan) << 1 | u64::from(alloc.is_some_and(|a| a.keep_new)) << 40;
    let probe =
        if cacheable { rewrites::lookup(class_file, cache_plan, &reserve_numbers) } else { rewrites::Probe::Off };
    // Empty until a method number is reserved: (lowest, one past the highest) as they come.
    #[allow(clippy::reversed_empty_ranges)]
    let mut numbers = u32::MAX..0;
    let mut next = |_: &str, _: &str, lookups: &[bci::Lookup]| -> i32 {
        let Some(i) = new_index() else { return -1 };
        for l in lookups {
            STATE.lookups.insert((i as u32, l.offset), l.keys.clone());
        }
        numbers = numbers.start.min(i as u32)..numbers.end.max(i as u32 + 1);
        i
    };
    let methods = (plan != 0).then_some((&hooks, &mut next as &mut dyn FnMut(&str, &str, &[bci::Lookup]) -> i32));
    let all = |_: &str, _: &str| true;
    let listed = |n: &str, d: &str| rewrap.as_ref().is_some_and(|v| v.iter().any(|(a, b)| a == n && b == d));
    let wrap = if rewrap.is_some() {
        Some(bci::NativeWrap { prefix: bci::NATIVE_PREFIX, choose: &listed })
    } else if wrap_new {
        Some(bci::NativeWrap { prefix: bci::NATIVE_PREFIX, choose: &all })
    } else {
        None
    };
    let r = match probe {
        rewrites::Probe::Hit(out) => Ok((out.map(Output::Cached), 0)),
        probe => {
            let t = std::time::Instant::now();
            let r = bci::instrument_class_wrapping(class_file, alloc.as_ref(), methods, wrap.as_ref())
                .map(|(out, wrapped)| (out.map(Output::New), wrapped));
            STATE.rewrite_nanos.fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
            if let (rewrites::Probe::Miss(keys), Ok((out, _))) = (probe, &r) {
                let numbers = if numbers.is_empty() { 0..0 } else { numbers.clone() };
                rewrites::record(keys, cache_plan, out.as_deref(), numbers);
            }
            r
        }
    };
    match r {
        Ok((out, wrapped)) => {
            if wrapped > 0 && !STATE.wrapping.swap(true, SeqCst) {
                // Kept for good (see above); traces start hiding the renamed natives.
                let _ = jvm::want(jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK);
                calltrace::natives_wrapped();
            }
            if out.is_some() {
                STATE.rewritten.fetch_add(1, Relaxed);
                if plan != 0 && !STATE.dirty.load(Relaxed) {
                    STATE.dirty.store(true, SeqCst);
                }
            }
            out
        }
        Err(e) => {
            log::info!("a class left uninstrumented: {e}");
            None
        }
    }
}

/// (classes rewritten, nanoseconds spent rewriting) so far.
pub fn rewrite_figures() -> (u64, u64) {
    (STATE.rewritten.load(Relaxed), STATE.rewrite_nanos.load(Relaxed))
}

// ---- the tracker's natives ----------------------------------------------------------------------

#[inline]
fn live() -> bool {
    events::is_ready() && !jvm::shim_internal()
}

/// Sends an event from the current thread on the gate's path for the trackers' events: a
/// thread the agent knows takes its hot path; the first event of a thread goes the full way
/// (the thread is announced first) and gives the thread its in-flight counter, so that its
/// next events take the hottest path ([`fast`]).
#[inline]
fn post(ev: &mut JVMPI_Event) {
    events::send_tracked(ev);
}

/// The current thread's flags if method events may be sent in it now: the gate is open and
/// the thread is not inside the shim's own JNI call.
#[inline]
fn here_if_live() -> Option<u8> {
    let h = jvm::here();
    (h & jvm::QUIET == 0 && events::is_ready()).then_some(h)
}

#[inline]
fn send_entry(env: *mut JNIEnv, m: jmethodID, receiver: Option<jobject>) {
    if events::enabled(JVMPI_EVENT_METHOD_ENTRY) {
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_METHOD_ENTRY, env);
        ev.u.method = Method { method_id: m };
        post(&mut ev);
    }
    if events::enabled(JVMPI_EVENT_METHOD_ENTRY2) {
        let obj_id = match receiver {
            Some(o) if !o.is_null() => ids::id_of(o).unwrap_or(std::ptr::null_mut()),
            _ => std::ptr::null_mut(),
        };
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_METHOD_ENTRY2, env);
        ev.u.method_entry2 = MethodEntry2 { method_id: m, obj_id };
        post(&mut ev);
    }
}

#[inline]
fn send_exit(env: *mut JNIEnv, m: jmethodID) {
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_METHOD_EXIT, env);
    ev.u.method = Method { method_id: m };
    post(&mut ev);
}

/// The natives `enter`, `enterThis`: one relaxed load when neither entry event is on; else
/// one thread-local read, an array index (the method's `jmethodID`) and the gate's hot path.
#[inline]
fn on_enter(env: *mut JNIEnv, index: MethodNo, receiver: Option<jobject>) {
    if !events::enabled(JVMPI_EVENT_METHOD_ENTRY) && !events::enabled(JVMPI_EVENT_METHOD_ENTRY2) {
        return;
    }
    let Some(h) = here_if_live() else { return };
    if let Some(m) = method_of(index) {
        send_entry(env, m, receiver);
        held_back_entry(h);
    }
}

thread_local! {
    /// Activations of this thread whose METHOD_ENTRY was not sent because the thread could not
    /// be announced yet (an attaching thread still constructing its `Thread`), and those entered
    /// (and sent) since, which nest inside them: (not sent, sent since).
    static HELD_BACK: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
}

/// After an entry on the general path: counts it as held back if the thread is still not
/// announced (the gate dropped it), or as nested inside held-back ones.
fn held_back_entry(before: u8) {
    let announced = jvm::here() & jvm::ANNOUNCED != 0;
    HELD_BACK.with(|c| {
        let (unsent, since) = c.get();
        if before & jvm::ANNOUNCED == 0 && !announced {
            c.set((unsent + 1, since));
            jvm::set_unsent_here(true);
        } else if unsent > 0 {
            c.set((unsent, since + 1));
        }
    })
}

/// Whether this exit ends an activation whose METHOD_ENTRY was held back: then its METHOD_EXIT
/// is not sent either (an agent keeping its own call stack would find nothing to pop).
fn held_back_exit() -> bool {
    HELD_BACK.with(|c| match c.get() {
        (0, _) => false,
        (unsent, since) if since > 0 => {
            c.set((unsent, since - 1));
            false
        }
        (unsent, _) => {
            c.set((unsent - 1, 0));
            if unsent == 1 {
                jvm::set_unsent_here(false);
            }
            true
        }
    })
}

/// The hottest path of the natives: the event alone takes the gate's hottest path ([`events::Hot`]) and the thread
/// is announced and not inside the shim's JNI call. One relaxed load, one thread-local read,
/// the method's slot, the gate. False: take the general path.
#[inline(always)]
fn fast(env: *mut JNIEnv, event: jint, index: MethodNo) -> bool {
    fast_with(env, event, index, |ev, m| ev.u.method = Method { method_id: m })
}

/// [`fast`] for any method event: `fill` writes the event's body from the method.
#[inline(always)]
fn fast_with(env: *mut JNIEnv, event: jint, index: MethodNo, fill: impl FnOnce(&mut JVMPI_Event, jmethodID)) -> bool {
    events::fast(event) && fast_known(env, event, index, fill)
}

/// [`fast_with`] once the caller has found `event` in [`events::fast_events`].
#[inline(always)]
fn fast_known(env: *mut JNIEnv, event: jint, index: MethodNo, fill: impl FnOnce(&mut JVMPI_Event, jmethodID)) -> bool {
    // A thread fit for the gate's hottest path (its events carry a mounted virtual thread's
    // own env_id); a thread's first event takes the general path, which gives it its counter.
    let Some(hot) = events::Hot::here(env) else { return false };
    // A method's first event takes the general path, which resolves it.
    let Some(m) = method_known(index) else { return false };
    let mut ev = Aligned(std::mem::MaybeUninit::uninit(), JVMPI_Event::new(event, hot.env));
    fill(&mut ev.1, m);
    hot.send(&mut ev.1);
    true
}

/// An event on the stack at 8 bytes past a multiple of 16: its zeroed part (from byte 24, past
/// the method) is then written with aligned 16-byte stores, none across a cache line, whatever
/// the frame's layout.
#[repr(C, align(16))]
struct Aligned(std::mem::MaybeUninit<u64>, JVMPI_Event);

/// INSTRUCTION_START on the hot path ([`fast`]): same conditions, same cost as a method event.
#[inline(always)]
fn fast_insn(env: *mut JNIEnv, index: MethodNo, offset: jint, u: InstructionInfo) -> bool {
    fast_with(env, JVMPI_EVENT_INSTRUCTION_START, index, |ev, m| {
        ev.u.instruction = Instruction { method_id: m, offset, u }
    })
}

// The natives run the hot path ([`fast`]) unguarded: it cannot panic (no allocation, no lock,
// no unwrap, no indexing that can fail); everything else runs inside `guard`.

/// The entry events' bits in [`events::fast_events`].
const ENTRY_BITS: u64 = (1 << JVMPI_EVENT_METHOD_ENTRY) + (1 << JVMPI_EVENT_METHOD_ENTRY2);

unsafe extern "system" fn enter(env: *mut JNIEnv, _k: jclass, index: MethodNo) {
    // A static method (or one whose receiver is not passed): METHOD_ENTRY2 alone, with no
    // object, takes the hot path too; both entry events at once take the general one. One
    // load tells which.
    let on = events::fast_events() & ENTRY_BITS;
    let sent = if on == 1 << JVMPI_EVENT_METHOD_ENTRY {
        fast_known(env, JVMPI_EVENT_METHOD_ENTRY, index, |ev, m| ev.u.method = Method { method_id: m })
    } else if on == 1 << JVMPI_EVENT_METHOD_ENTRY2 {
        // No object: `obj_id` stays NULL, as `JVMPI_Event::new` zeroed it.
        fast_known(env, JVMPI_EVENT_METHOD_ENTRY2, index, |ev, m| ev.u.method_entry2.method_id = m)
    } else {
        false
    };
    if !sent {
        enter_general(env, index, None)
    }
}

unsafe extern "system" fn enter_this(env: *mut JNIEnv, _k: jclass, this: jobject, index: MethodNo) {
    // METHOD_ENTRY2 passes the receiver: the general path.
    if events::fast_events() & ENTRY_BITS != 1 << JVMPI_EVENT_METHOD_ENTRY
        || !fast_known(env, JVMPI_EVENT_METHOD_ENTRY, index, |ev, m| ev.u.method = Method { method_id: m })
    {
        enter_general(env, index, Some(this))
    }
}

// The general paths are functions of their own, out of line: the natives' hot path then keeps
// its arguments in registers (a closure of `guard` inlined there made it store them on the
// stack at every call, before anything was checked).

/// `enter` and `enterThis` off the hot path.
#[cold]
#[inline(never)]
fn enter_general(env: *mut JNIEnv, index: MethodNo, receiver: Option<jobject>) {
    let what = if receiver.is_some() { "JvmpiShimMethods.enterThis" } else { "JvmpiShimMethods.enter" };
    crate::vm::logger::guard(what, (), || on_enter(env, index, receiver))
}

unsafe extern "system" fn exit(env: *mut JNIEnv, _k: jclass, index: MethodNo) {
    if !fast(env, JVMPI_EVENT_METHOD_EXIT, index) {
        exit_general(env, index)
    }
}

/// `exit` off the hot path.
#[cold]
#[inline(never)]
fn exit_general(env: *mut JNIEnv, index: MethodNo) {
    crate::vm::logger::guard("JvmpiShimMethods.exit", (), || {
        if !events::enabled(JVMPI_EVENT_METHOD_EXIT) {
            return;
        }
        let Some(h) = here_if_live() else { return };
        if h & jvm::UNSENT != 0 && held_back_exit() {
            return;
        }
        if let Some(m) = method_of(index) {
            send_exit(env, m)
        }
    })
}

/// The exit hook of a constructor's catch-all handler: METHOD_EXIT for the constructor, then
/// for each caller that the exception leaves too without running any code of its own (see
/// [`exit_chaining_callers`]).
unsafe extern "system" fn init_throw(env: *mut JNIEnv, _k: jclass, index: MethodNo) {
    if !fast(env, JVMPI_EVENT_METHOD_EXIT, index) {
        exit_general(env, index)
    }
    crate::vm::logger::guard("JvmpiShimMethods.initThrow", (), || exit_chaining_callers(env))
}

/// METHOD_EXIT for the callers of a constructor that an exception is leaving, innermost first,
/// as long as each is a constructor stopped at its `super(…)`/`this(…)` call: no handler covers
/// that call (the JVM's verifier accepts none there, see `bci::code::rewrite`), so the
/// exception leaves such a caller as soon as it leaves its callee. `FileInputStream(String)`
/// is `this(new File(name))`: a missing file throws from `FileInputStream(File)`, and this is
/// what ends `FileInputStream(String)`. Only on the exceptional exit of a constructor: one
/// `GetStackTrace` and, per constructor frame, its chaining calls (read once per method, see
/// `lines::is_chaining_call`). An obsolete frame (its class was retransformed since the frame
/// began, e.g. when the method events were switched on) ends the walk: it began without the
/// hooks of today, as any activation under way at a switch gets no event of the one switched on.
fn exit_chaining_callers(env: *mut JNIEnv) {
    if !events::enabled(JVMPI_EVENT_METHOD_EXIT) || here_if_live().is_none() {
        return;
    }
    // Depth 0 is the tracker's native, depth 1 the constructor that is left.
    let mut exited = 2;
    let mut want = 8;
    loop {
        let Ok(frames) = jvm::stack_trace(std::ptr::null_mut(), (exited + want) as jint) else { return };
        for &(m, location) in frames.iter().skip(exited) {
            if jvm::is_obsolete(m).unwrap_or(true) || !lines::is_chaining_call(m, location) {
                return;
            }
            let Some(h) = here_if_live() else { return };
            exited += 1;
            if h & jvm::UNSENT != 0 && held_back_exit() {
                continue;
            }
            send_exit(env, m);
        }
        if frames.len() < exited + want {
            return;
        }
        want *= 4;
    }
}

fn send_insn(env: *mut JNIEnv, index: MethodNo, offset: jint, u: InstructionInfo) {
    if !events::enabled(JVMPI_EVENT_INSTRUCTION_START) {
        return;
    }
    if here_if_live().is_none() {
        return;
    }
    let Some(m) = method_of(index) else { return };
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_INSTRUCTION_START, env);
    ev.u.instruction = Instruction { method_id: m, offset, u };
    post(&mut ev);
}

/// A branch's outcome. The whole union is written (the other bytes zero): the event is copied
/// as a whole, and a wide read of bytes only partly written stalls the store buffer.
#[inline(always)]
fn if_info(taken: bool) -> InstructionInfo {
    let mut u = InstructionInfo { tableswitch_info: TableswitchInfo { key: 0, low: 0, hi: 0 } };
    u.if_info = IfInfo { is_true: taken as _ };
    u
}

/// An instruction's event: the hot path ([`fast_insn`]), else the general one under `guard`.
#[inline(always)]
fn on_insn(what: &'static str, env: *mut JNIEnv, index: MethodNo, offset: jint, u: InstructionInfo) {
    if !fast_insn(env, index, offset, u) {
        insn_general(what, env, index, offset, u)
    }
}

/// An instruction's event off the hot path (out of line, as `enter_general`).
#[cold]
#[inline(never)]
fn insn_general(what: &'static str, env: *mut JNIEnv, index: MethodNo, offset: jint, u: InstructionInfo) {
    crate::vm::logger::guard(what, (), || send_insn(env, index, offset, u))
}

unsafe extern "system" fn insn(env: *mut JNIEnv, _k: jclass, index: MethodNo, offset: jint) {
    on_insn("JvmpiShimMethods.insn", env, index, offset, if_info(false))
}

unsafe extern "system" fn if_int(env: *mut JNIEnv, _k: jclass, v: jint, index: MethodNo, offset: jint, op: jint) {
    on_insn("JvmpiShimMethods.ifInt", env, index, offset, if_info(bci::branch_taken(op, 0, v)))
}

unsafe extern "system" fn if_cmp(
    env: *mut JNIEnv,
    _k: jclass,
    a: jint,
    b: jint,
    index: MethodNo,
    offset: jint,
    op: jint,
) {
    on_insn("JvmpiShimMethods.ifCmp", env, index, offset, if_info(bci::branch_taken(op, a, b)))
}

unsafe extern "system" fn if_ref(env: *mut JNIEnv, _k: jclass, o: jobject, index: MethodNo, offset: jint, op: jint) {
    on_insn("JvmpiShimMethods.ifRef", env, index, offset, if_info(bci::branch_taken(op, 0, (!o.is_null()) as i32)))
}

unsafe extern "system" fn if_acmp(
    env: *mut JNIEnv,
    _k: jclass,
    a: jobject,
    b: jobject,
    index: MethodNo,
    offset: jint,
    op: jint,
) {
    crate::vm::logger::guard("JvmpiShimMethods.ifAcmp", (), || {
        let same = jvm::Jni::of(env).is_same(a, b);
        // Identity as 1 == 1 (same) or 0 != 1 (different).
        send_insn(env, index, offset, if_info(bci::branch_taken(op, same as i32, 1)))
    })
}

unsafe extern "system" fn table_switch(
    env: *mut JNIEnv,
    _k: jclass,
    key: jint,
    index: MethodNo,
    offset: jint,
    low: jint,
    hi: jint,
) {
    on_insn(
        "JvmpiShimMethods.tableSwitch",
        env,
        index,
        offset,
        InstructionInfo { tableswitch_info: TableswitchInfo { key, low, hi } },
    )
}

unsafe extern "system" fn lookup_switch(env: *mut JNIEnv, _k: jclass, key: jint, index: MethodNo, offset: jint) {
    crate::vm::logger::guard("JvmpiShimMethods.lookupSwitch", (), || {
        let (chosen, total) = match STATE.lookups.get(&(index.0 as u32, offset as u32)) {
            Some(keys) => {
                let total = keys.len() as jint;
                (keys.iter().position(|&k| k == key).map_or(total, |p| p as jint), total)
            }
            None => (0, 0),
        };
        send_insn(
            env,
            index,
            offset,
            InstructionInfo { lookupswitch_info: LookupswitchInfo { chosen_pair_index: chosen, pairs_total: total } },
        )
    })
}

/// `transit(on)`: the calling carrier thread begins (true) or ends (false) a virtual thread's
/// mount or unmount transition (the marks of `bci::is_transition_code`). No event is sent in
/// it meanwhile ([`jvm::TRANSIT`]). One thread-local write; nothing that can panic.
unsafe extern "system" fn transit(_env: *mut JNIEnv, _k: jclass, on: jboolean) {
    jvm::set_transit_here(on != 0);
}

// ---- the JVMTI path ----------------------------------------------------------------------------

/// JVMTI MethodEntry (`methods=jvmti`).
pub fn on_jvmti_entry(env: *mut JNIEnv, thread: jthread, m: jmethodID) {
    if !live() || !STATE.jvmti_on.load(Relaxed) {
        return;
    }
    classes::note_method(m);
    let receiver = if events::enabled(JVMPI_EVENT_METHOD_ENTRY2) { jvm::frame_receiver(thread, 0) } else { None };
    send_entry(env, m, receiver);
    if let Some(r) = receiver {
        jvm::Jni::of(env).delete_local_ref(r);
    }
}

/// JVMTI MethodExit (`methods=jvmti`).
pub fn on_jvmti_exit(env: *mut JNIEnv, m: jmethodID) {
    if !live() || !STATE.jvmti_on.load(Relaxed) || !events::enabled(JVMPI_EVENT_METHOD_EXIT) {
        return;
    }
    send_exit(env, m);
}
