//! The Java work the shim does itself in a thread of the program (linking a class it announces,
//! through `Class.getDeclaredFields0`; making the allocation tracker's record of a class), kept
//! per thread so that call traces leave it out: [`own_work`] marks it, [`own_of`] tells the
//! call-trace room where it begins. Not here: cutting the frames (the call-trace room). It sits
//! below the rooms because both the rooms that do such work (classes, dumps, alloc) and the one
//! that hides it (calltrace) use it.

use crate::vm::idhash::IdMap;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jclass, jmethodID, JNIEnv};
use std::sync::atomic::{AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};
use std::sync::LazyLock;

/// The state of the shim's own work, shared by every thread.
struct OwnState {
    /// Threads inside Java work of the shim's own ([`own_work`]), by JNIEnv: the method the
    /// shim called (the work's first frame) and how many of its frames the work has put on the
    /// thread's stack (nested calls), so that traces begin below the outermost. Written by
    /// [`own_work`].
    own: LazyLock<IdMap<usize, (usize, u32)>>,
    /// How many threads are in `own` (read first: 0 costs traces nothing more).
    owners: AtomicUsize,
    /// The method `jvm::Jni::link_class` calls (`Class.getDeclaredFields0`), found by the first
    /// [`link_unseen`] (0: not yet).
    linker: AtomicUsize,
}

static STATE: OwnState =
    OwnState { own: LazyLock::new(IdMap::default), owners: AtomicUsize::new(0), linker: AtomicUsize::new(0) };

/// Runs `f`, Java work of the shim's own in the current thread (`env`) that begins with a call
/// of `first` (a method only the shim calls on the program's threads while this runs, or whose
/// calls nest in it), hidden from traces: while it runs, a trace of this thread shows its stack
/// as it was before, from below the outermost frame of `first` that this work put there (see
/// the module's documentation). No JVM call: only the traces taken meanwhile pay.
pub fn own_work<R>(env: *mut JNIEnv, first: jmethodID, f: impl FnOnce() -> R) -> R {
    let key = env as usize;
    let nested = STATE.owners.load(Acquire) != 0 && STATE.own.contains_key(&key);
    if nested {
        // Only nested calls of the same method count (the work of another is not cut apart).
        let same = STATE.own.get_mut(&key).map(|mut e| {
            let same = e.0 == first as usize;
            if same {
                e.1 += 1;
            }
            same
        });
        let r = f();
        if same == Some(true) {
            if let Some(mut e) = STATE.own.get_mut(&key) {
                e.1 -= 1;
            }
        }
        return r;
    }
    struct Done(usize);
    impl Drop for Done {
        fn drop(&mut self) {
            STATE.own.remove(&self.0);
            STATE.owners.fetch_sub(1, Release);
        }
    }
    STATE.own.insert(key, (first as usize, 1));
    STATE.owners.fetch_add(1, Release);
    let _done = Done(key);
    f()
}

/// Links `k` (JNI `Class.getDeclaredFields0`, see `jvm::Jni::link_class`) as work of the shim's
/// own, unseen by traces ([`own_work`]).
pub fn link_unseen(jni: &jvm::Jni, k: jclass) {
    let mut m = STATE.linker.load(Relaxed);
    if m == 0 {
        m = jni
            .method_id("java/lang/Class", "getDeclaredFields0", "(Z)[Ljava/lang/reflect/Field;", false)
            .or_else(|| jni.method_id("java/lang/Class", "getDeclaredFields", "()[Ljava/lang/reflect/Field;", false))
            .map_or(0, |m| m as usize);
        STATE.linker.store(m, Relaxed);
    }
    if m == 0 {
        return jni.link_class(k);
    }
    own_work(jni.raw(), m as jmethodID, || jni.link_class(k))
}

/// Inside [`own_work`], its first method and how many frames of it the work has put on the
/// stack of the thread of `env`.
#[inline]
pub fn own_of(env: *mut JNIEnv) -> Option<(usize, u32)> {
    if STATE.owners.load(Acquire) == 0 {
        return None;
    }
    STATE.own.get(&(env as usize)).map(|e| *e)
}

/// Whether some thread is inside work of the shim's own (the call-trace room's quick path then
/// steps aside).
#[inline]
pub fn any() -> bool {
    STATE.owners.load(Relaxed) != 0
}
