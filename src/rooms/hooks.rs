//! The agent's `CLASS_LOAD_HOOK`: the class file of every class, offered to the agent before the
//! JVM uses it, with whatever the agent hands back put in its place.
//!
//! Two paths, one per kind of class:
//!
//! * **Classes loaded once the agent runs** reach the hook through JVMTI ClassFileLoadHook in the
//!   class-hook environment, which is not retransformation-capable. JVMTI calls such
//!   environments before every retransformation-capable one, and what they produce is what the
//!   JVM keeps for later retransformations: the agent's change comes before the shim's
//!   allocation instrumentation and is never lost when the shim retransforms.
//! * **Classes loaded before the agent started.** The legacy `JVM_OnLoad` runs at JVMTI VMInit,
//!   after `java.lang.Object`, `String`, `Thread` and most of `java.base` were loaded; under
//!   `-Xrun` on JDK 1.2–1.5 the hook saw them all. If the hook is on when the event gate opens
//!   (the agent enabled it in `JVM_OnLoad`), [`offer_early`] retransforms every modifiable class
//!   loaded so far, once, before JVM_INIT_DONE, through the early environment. That environment
//!   is retransformation-capable and was created before the shim's main one; JVMTI calls
//!   retransformation-capable environments in the order they were created, so its hook runs
//!   first and is given the class's own bytes (those the JVM keeps from before any
//!   retransformation-capable environment changed the class), never the shim's instrumentation,
//!   which is then applied to the agent's version.
//!
//!   A retransformation-capable environment's change is undone by the next retransformation
//!   unless the environment makes it again. So the agent's output for each early class it
//!   changed is kept, and handed back on every later retransformation (allocation tracking
//!   switched on or off) without sending the event again: the agent sees each class once. The
//!   early environment marks the classes with its own tags (the main environment's tags are
//!   object IDs), and keeps its hook switched on only if the agent changed a class.
//!
//! Not offered: classes `IsModifiableClass` refuses (primitive classes, arrays, hidden classes
//! such as lambda proxies and LambdaForms — they never reach a class-file hook on load either —
//! and on JDK 21+ `jdk.internal.vm.Continuation`), the shim's own tracker class, and nothing
//! loaded earlier when the agent enables the hook only after its `JVM_OnLoad` returned (under
//! `-Xrun` such a hook missed the classes loaded while it was off, too). A change that
//! retransformation refuses (a field or method added, removed or renamed; a class file the JVM
//! cannot parse or verify) is one warning, and that class keeps its own bytes.

use crate::face::abi::*;
use crate::face::events;
use crate::face::table::Agent;
use crate::rooms::{alloc, classes};
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jclass, jint, jlong, JNIEnv};
use std::collections::HashSet;
use std::ffi::{c_uchar, c_uint, c_void, CStr};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Instant;

// ---- offering a class file --------------------------------------------------------------------

/// The `malloc_f` handed to the agent: its buffer is copied into JVMTI memory and freed.
unsafe extern "C" fn hook_malloc(size: c_uint) -> *mut c_void {
    // SAFETY: plain C allocation; freed with libc::free (AgentBytes) after the hook returns.
    unsafe { libc::malloc(size as usize) }
}

/// A class file the agent handed back, in a `malloc_f` buffer that is freed on drop.
struct AgentBytes {
    ptr: *mut c_uchar,
    len: usize,
}

impl AgentBytes {
    fn bytes(&self) -> &[u8] {
        // SAFETY: the agent returned a buffer of `len` bytes allocated by malloc_f, owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for AgentBytes {
    fn drop(&mut self) {
        // SAFETY: the buffer came from hook_malloc (libc::malloc) and is freed exactly once.
        unsafe { libc::free(self.ptr as *mut c_void) };
    }
}

/// Sends CLASS_LOAD_HOOK for `data` in the current thread to every agent that enabled it, in
/// load order, each given the previous one's output. Returns the last new class file, if any
/// agent handed one back.
fn offer(env: *mut JNIEnv, data: &[u8]) -> Option<AgentBytes> {
    if !events::is_ready() || !events::enabled(JVMPI_EVENT_CLASS_LOAD_HOOK) {
        return None;
    }
    let to = events::listeners(JVMPI_EVENT_CLASS_LOAD_HOOK);
    let mut out: Option<AgentBytes> = None;
    for a in Agent::of_mask(to) {
        let next = offer_to(a, env, out.as_ref().map_or(data, AgentBytes::bytes));
        if next.is_some() {
            out = next;
        }
    }
    out
}

/// Sends CLASS_LOAD_HOOK for `data` to agent `a`. Returns its new class file, if it handed one back.
fn offer_to(a: Agent, env: *mut JNIEnv, data: &[u8]) -> Option<AgentBytes> {
    let old = data.as_ptr() as *mut c_uchar;
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_CLASS_LOAD_HOOK, env);
    ev.u.class_load_hook = ClassLoadHook {
        class_data: old,
        class_data_len: data.len() as jint,
        new_class_data: old,
        new_class_data_len: data.len() as jint,
        malloc_f: Some(hook_malloc),
    };
    if !events::send_to(a.bit(), &mut ev) {
        return None;
    }
    // SAFETY: reading back the union member the agent was given.
    let h = unsafe { ev.u.class_load_hook };
    if h.new_class_data.is_null() || h.new_class_data == old {
        return None;
    }
    let out = AgentBytes { ptr: h.new_class_data, len: h.new_class_data_len.max(0) as usize };
    if h.new_class_data_len <= 0 {
        log::warn!(
            "CLASS_LOAD_HOOK: the agent returned new class data of length {}; kept the original",
            h.new_class_data_len
        );
        return None;
    }
    Some(out)
}

/// A copy in JVMTI memory, as a ClassFileLoadHook's new class data.
fn to_jvm(bytes: &[u8]) -> Option<(*mut u8, jint)> {
    jvm::jvmti_copy(bytes).ok().map(|p| (p, bytes.len() as jint))
}

// ---- classes loaded once the agent runs -------------------------------------------------------

/// The agent's hook for a class being loaded or redefined (the class-hook environment, called
/// before every retransformation-capable environment and not again on retransformation).
/// `name` is the class's internal name (NULL for some classes). Returns the agent's replacement
/// (pointer, length), in JVMTI memory.
pub fn on_agent_class_hook(env: *mut JNIEnv, name: Option<&CStr>, data: &[u8]) -> Option<(*mut u8, jint)> {
    if !events::is_ready() || !events::enabled(JVMPI_EVENT_CLASS_LOAD_HOOK) {
        return None;
    }
    let name = name.map(CStr::to_bytes);
    if name
        .and_then(|n| std::str::from_utf8(n).ok())
        .is_some_and(|n| crate::vm::bci::is_tracker_class(alloc::TRACKER, n))
    {
        // The shim's own classes (defined when OBJECT_ALLOC is first enabled): not the program's.
        return None;
    }
    if !STATE.early_done.load(SeqCst) {
        if let Some(n) = name {
            // Offered here while the early classes are being listed: not to be offered again.
            crate::vm::logger::lock(&STATE.recent).push(n.to_vec());
        }
    }
    let out = offer(env, data)?;
    to_jvm(out.bytes())
}

// ---- classes loaded before the agent started --------------------------------------------------

/// What the early environment knows about a class it offers; its tag there is the slot + 1.
enum State {
    /// Not offered yet.
    Waiting,
    /// Offered (or passed while the hook was off): the class has its own bytes.
    Own,
    /// The agent's class file, handed back on every retransformation; `input` identifies the
    /// bytes it was made from.
    Changed { input: (usize, u64), output: Vec<u8> },
}

/// The hooks room's state (the classes loaded before the agent started): one `static`, each
/// field what it holds and who writes it.
struct HooksState {
    /// What the early environment knows about each class it offers, by slot (its tag there
    /// minus 1): made by [`waiting`] as [`offer_early`] lists the classes; the early hook
    /// ([`on_early_class_hook`]) and [`retransform`] record what became of each.
    slots: Mutex<Vec<State>>,
    /// The slot of the class the early hook saw last: the one a failed RetransformClasses
    /// stopped at (the JVM reads, hooks and checks the classes one after the other). Written by
    /// the early hook, reset and read by [`retransform`].
    last: AtomicUsize,
    /// The early classes have been offered (or will not be): set once by [`offer_early`].
    early_done: AtomicBool,
    /// Internal names of the classes the class-hook environment offered while the early
    /// classes were being listed (a class loaded on another thread as the gate opened): added
    /// by [`on_agent_class_hook`] until `early_done`, read by [`waiting`], emptied when the
    /// early classes are done.
    recent: Mutex<Vec<Vec<u8>>>,
}

static STATE: HooksState = HooksState {
    slots: Mutex::new(Vec::new()),
    last: AtomicUsize::new(usize::MAX),
    early_done: AtomicBool::new(false),
    recent: Mutex::new(Vec::new()),
};

fn fingerprint(data: &[u8]) -> (usize, u64) {
    let mut h = std::hash::DefaultHasher::new();
    data.hash(&mut h);
    (data.len(), h.finish())
}

/// The early environment's hook, for a class being retransformed (`k`) or redefined. Offers a
/// waiting class once; hands back the agent's version of a class it changed. Returns the new
/// class file (pointer, length), in JVMTI memory.
pub fn on_early_class_hook(env: *mut JNIEnv, k: jclass, name: Option<&CStr>, data: &[u8]) -> Option<(*mut u8, jint)> {
    let tag = jvm::early_tag(k).ok().filter(|&t| t > 0)?;
    let slot = (tag - 1) as usize;
    // HotSpot, retransforming the first class of a named module, first makes the module read
    // the unnamed modules; the classes that loads (java.lang.Module$ReflectionData) come here
    // as if they were `k` being retransformed, and never reach the class-hook environment. They
    // are offered like any early class once defined (the second listing in `offer_early`).
    let sig = jvm::class_signature(k).ok()?;
    if name.map(CStr::to_bytes) != sig.strip_prefix('L').and_then(|s| s.strip_suffix(';')).map(str::as_bytes) {
        log::debug!("CLASS_LOAD_HOOK: {:?} loaded while {sig} is retransformed: left for later", name);
        return None;
    }
    STATE.last.store(slot, SeqCst);
    {
        let mut slots = crate::vm::logger::lock(&STATE.slots);
        let state = slots.get_mut(slot)?;
        match state {
            State::Own => return None,
            State::Changed { input, output } => {
                if *input == fingerprint(data) {
                    return to_jvm(output);
                }
                // Redefined since (RedefineClasses by another agent, which the class-hook
                // environment offered to the agent): the change was made to bytes the class no
                // longer has.
                log::info!(
                    "CLASS_LOAD_HOOK: {} was redefined; the change the agent made to it at start-up is dropped",
                    classes::jvmpi_name(&sig)
                );
                *state = State::Own;
                return None;
            }
            State::Waiting => *state = State::Own,
        }
    }
    // Without the lock: the agent's hook may take locks of its own.
    let out = offer(env, data)?;
    let output = out.bytes().to_vec();
    drop(out);
    let r = to_jvm(&output);
    crate::vm::logger::lock(&STATE.slots)[slot] = State::Changed { input: fingerprint(data), output };
    r
}

/// Where the event gate opens, before the catch-up and JVM_INIT_DONE: if the agent's hook is
/// on, offers every modifiable class loaded so far, once (see the module documentation).
pub fn offer_early() {
    let done = || {
        STATE.early_done.store(true, SeqCst);
        *crate::vm::logger::lock(&STATE.recent) = Vec::new();
    };
    if !events::enabled(JVMPI_EVENT_CLASS_LOAD_HOOK) {
        return done();
    }
    if !jvm::early_env_ready() {
        log::warn!("CLASS_LOAD_HOOK: the classes loaded before the agent started cannot be offered: this JVM cannot retransform classes");
        return done();
    }
    let Some(env) = jvm::current_jni() else { return done() };
    if let Err(e) = jvm::set_early_hook(true) {
        log::warn!(
            "CLASS_LOAD_HOOK: the classes loaded before the agent started cannot be offered: {}",
            jvm::err_name(e)
        );
        return done();
    }
    let jni = jvm::Jni::of(env);
    let t = Instant::now();
    let first = waiting(&jni);
    let mut offered = first.len();
    retransform(&jni, first);
    // A class whose loading on another thread straddled the gate's opening was offered neither
    // on load (the gate was closed) nor above (it was not defined yet).
    let late = waiting(&jni);
    offered += late.len();
    retransform(&jni, late);
    done();
    let changed = crate::vm::logger::lock(&STATE.slots).iter().filter(|s| matches!(s, State::Changed { .. })).count();
    if changed == 0 {
        // Nothing to hand back on later retransformations.
        let _ = jvm::set_early_hook(false);
    }
    log::info!(
        "CLASS_LOAD_HOOK: {offered} classes loaded before the agent started offered in {:.1?}; the agent changed {changed}",
        t.elapsed()
    );
}

/// The loaded classes to offer that have no slot yet, each given one (tagged), as local
/// references.
fn waiting(jni: &jvm::Jni) -> Vec<(usize, jclass)> {
    let Ok(all) = jvm::loaded_classes() else { return Vec::new() };
    let recent: HashSet<Vec<u8>> = crate::vm::logger::lock(&STATE.recent).iter().cloned().collect();
    let mut slots = crate::vm::logger::lock(&STATE.slots);
    let mut out = Vec::new();
    for k in all {
        let take = jvm::is_modifiable(k)
            && jvm::early_tag(k).is_ok_and(|t| t == 0)
            && jvm::class_signature(k).is_ok_and(|s| {
                let name = s.strip_prefix('L').and_then(|s| s.strip_suffix(';')).unwrap_or(&s);
                !crate::vm::bci::is_tracker_class(alloc::TRACKER, name) && !recent.contains(name.as_bytes())
            });
        if take && jvm::set_early_tag(k, slots.len() as jlong + 1).is_ok() {
            out.push((slots.len(), k));
            slots.push(State::Waiting);
        } else {
            jni.delete_local_ref(k);
        }
    }
    out
}

/// Retransforms `pending` in one call. The JVM applies all or nothing; when it refuses, the
/// class it stopped at keeps its own bytes (one warning) and the classes that still need it
/// (not offered yet, or changed by the agent) are retransformed again.
fn retransform(jni: &jvm::Jni, mut pending: Vec<(usize, jclass)>) {
    while !pending.is_empty() {
        STATE.last.store(usize::MAX, SeqCst);
        let ks: Vec<jclass> = pending.iter().map(|p| p.1).collect();
        let Err(e) = jvm::early_retransform(&ks) else { break };
        let last = STATE.last.load(SeqCst);
        let Some(i) = pending.iter().position(|p| p.0 == last) else {
            log::warn!(
                "CLASS_LOAD_HOOK: retransforming {} classes loaded before the agent started: {}; they were not offered",
                pending.len(),
                jvm::err_name(e)
            );
            break;
        };
        let (slot, k) = pending.remove(i);
        let name = classes::jvmpi_name(&jvm::class_signature(k).unwrap_or_default());
        jni.delete_local_ref(k);
        let was = std::mem::replace(&mut crate::vm::logger::lock(&STATE.slots)[slot], State::Own);
        if matches!(was, State::Changed { .. }) {
            log::warn!(
                "CLASS_LOAD_HOOK: {name}: the class file the agent made cannot replace the loaded class ({}; a class loaded \
                 before the agent started cannot gain, lose or rename fields or methods); it keeps its own bytes",
                jvm::err_name(e)
            );
        } else {
            log::warn!(
                "CLASS_LOAD_HOOK: {name}: cannot be retransformed ({}); it keeps its own bytes",
                jvm::err_name(e)
            );
        }
        let slots = crate::vm::logger::lock(&STATE.slots);
        pending.retain(|&(s, k)| {
            let again = !matches!(slots[s], State::Own);
            if !again {
                jni.delete_local_ref(k);
            }
            again
        });
    }
    pending.into_iter().for_each(|(_, k)| jni.delete_local_ref(k));
}
