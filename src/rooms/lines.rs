//! Line numbers: from a bytecode index to the source line, and each method's first and last
//! line for `CLASS_LOAD`.
//!
//! Line tables are read once per method with JVMTI `GetLineNumberTable` and kept in a table
//! keyed by `jmethodID`. An entry is dropped when its class is redefined or retransformed (the
//! shim's class-file hook, switched on with the cache, sees it) or unloaded (when the GC room
//! watches deaths; otherwise the entry is only dead weight: HotSpot never reuses the jmethodIDs
//! of an unloaded class).
//!
//! The same cache keeps the one other fact about a method's bytecode that call traces need: for
//! a constructor, the offsets of its chaining `super(…)`/`this(…)` calls (see
//! `bci::chaining_init_calls`), so that a trace taken at an allocation can begin at the method
//! that ran `new` rather than inside the new object's constructors.
//!
//! Conventions of the original implementations: -1 when the method has no line table,
//! -3 for a native method; -2 ("compiled") is never needed because JVMTI always knows the
//! bytecode index.

use crate::face::abi::{LINE_NATIVE, LINE_UNKNOWN};
use crate::vm::idhash::IdMap;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jint, jlong, jmethodID};
use jvmti_bindings::sys::jvmti::{self, jvmtiError};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Acquire, Ordering::Release, Ordering::SeqCst};
use std::sync::{Arc, LazyLock};

/// A method's line table, sorted by bytecode index; `None` for native methods.
pub type Table = Option<Arc<[(jlong, jint)]>>;

/// Chaining-call offsets of a constructor; `None` for any other method.
type Chain = Option<Arc<[u32]>>;

/// The lines room's state.
struct LinesState {
    /// Line tables by `jmethodID`: entered by [`table`] on first need, taken out by
    /// [`invalidate`] (class unloaded or redefined).
    cache: LazyLock<IdMap<usize, Table>>,
    /// Constructors' chaining-call offsets by `jmethodID`: entered by [`chain`] on first need,
    /// taken out by [`invalidate`].
    chains: LazyLock<IdMap<usize, Chain>>,
    /// Redefinitions are seen through the shim's class-file hook, switched on with the cache
    /// (by the first [`table`] or [`chain`] to miss). A flag, not a `Once`: the thread that
    /// switches the hook on makes a JVMTI call, where it may be stopped by an agent's
    /// SuspendThread, and no other thread may wait for it there (the agent's sampler, taking
    /// that very thread's trace, would never resume it).
    watch: AtomicBool,
    /// Counts invalidations, advanced by [`invalidate`]: a table a caller keeps (see [`table`])
    /// is current while this has not changed since it was taken.
    generation: AtomicU32,
}

static STATE: LinesState = LinesState {
    cache: LazyLock::new(IdMap::default),
    chains: LazyLock::new(IdMap::default),
    watch: AtomicBool::new(false),
    generation: AtomicU32::new(0),
};

/// The number of invalidations so far: a caller that keeps tables drops them when it changes.
pub fn generation() -> u32 {
    STATE.generation.load(Acquire)
}

/// Switches the shim's class-file hook on for the cache, once: the first caller does it, the
/// others go on without waiting. What they cache meanwhile is dropped once the hook is on (a
/// redefinition before that would not have invalidated it).
fn watch_redefinitions() {
    if STATE.watch.load(Acquire) || STATE.watch.swap(true, SeqCst) {
        return;
    }
    if let Err(e) = jvm::want(jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK) {
        log::info!("class redefinitions will not refresh cached line tables: {}", jvm::err_name(e));
        return;
    }
    STATE.cache.clear();
    STATE.chains.clear();
    // After the removals, as in [`invalidate`].
    STATE.generation.fetch_add(1, Release);
}

/// A method's line table, read once and kept (callers may keep it too, see [`generation`]).
pub fn table(m: jmethodID) -> Table {
    if let Some(t) = STATE.cache.get(&(m as usize)) {
        return t.clone();
    }
    watch_redefinitions();
    let t: Table = match jvm::line_table(m) {
        Ok(mut v) => {
            v.sort_unstable();
            Some(v.into())
        }
        Err(e) if e == jvmtiError::NATIVE_METHOD => None,
        Err(_) => Some(Arc::from([])),
    };
    STATE.cache.insert(m as usize, t.clone());
    t
}

/// The source line of bytecode index `location` in `m` (location -1: a native frame).
pub fn line_of(m: jmethodID, location: jlong) -> jint {
    if location < 0 {
        return LINE_NATIVE;
    }
    line_in(&table(m), location)
}

/// The source line of bytecode index `location` by line table `t` (of [`table`]).
pub fn line_in(t: &Table, location: jlong) -> jint {
    match t {
        _ if location < 0 => LINE_NATIVE,
        None => LINE_NATIVE,
        Some(t) => match t.partition_point(|&(start, _)| start <= location) {
            0 => t.first().map_or(LINE_UNKNOWN, |e| e.1),
            i => t[i - 1].1,
        },
    }
}

/// (first, last) source line of a method, as HotSpot 1.5 gave them in CLASS_LOAD: the lines of
/// its first and of its last bytecode; (-1, -1) without a line table (native and abstract
/// methods, classes compiled without line numbers).
pub fn range_of(m: jmethodID) -> (jint, jint) {
    match table(m) {
        Some(t) if !t.is_empty() => {
            let last = jvm::method_location(m).map_or(0, |(_, end)| end.max(0));
            (line_of(m, 0), line_of(m, last))
        }
        _ => (LINE_UNKNOWN, LINE_UNKNOWN),
    }
}

fn chain(m: jmethodID) -> Chain {
    if let Some(c) = STATE.chains.get(&(m as usize)) {
        return c.clone();
    }
    watch_redefinitions();
    let c: Chain = match jvm::method_name(m) {
        Ok((name, _)) if name == "<init>" => {
            let calls = jvm::bytecodes(m).map_err(jvm::err_name).and_then(|code| {
                let k = jvm::method_class(m).map_err(jvm::err_name)?;
                let pool = jvm::constant_pool(k).map_err(jvm::err_name);
                if let Some(jni) = jvm::Jni::current() {
                    jni.delete_local_ref(k);
                }
                crate::vm::bci::chaining_init_calls(&code, &pool?).map_err(|e| e.to_string())
            });
            match calls {
                Ok(v) => Some(v.into()),
                Err(e) => {
                    log::debug!("constructor chain of a method not readable: {e}");
                    Some(Arc::from([]))
                }
            }
        }
        _ => None,
    };
    STATE.chains.insert(m as usize, c.clone());
    c
}

/// Whether frame (`m`, `location`) is a constructor stopped at its `super(…)`/`this(…)` call:
/// the frame is then part of the construction of the same object as the frame it called.
pub fn is_chaining_call(m: jmethodID, location: jlong) -> bool {
    location >= 0 && chain(m).is_some_and(|c| c.contains(&(location as u32)))
}

/// Whether no table is kept (none was ever read, as through the start-up retransformation, or
/// all were dropped): a redefinition then has nothing to drop.
pub fn nothing_kept() -> bool {
    !STATE.watch.load(Acquire) || (STATE.cache.is_empty() && STATE.chains.is_empty())
}

/// Forgets the tables of these methods (class unloaded or redefined).
pub fn invalidate(methods: &[usize]) {
    for m in methods {
        STATE.cache.remove(m);
        STATE.chains.remove(m);
    }
    // After the removals: a caller that sees the new generation reads the tables afresh.
    STATE.generation.fetch_add(1, Release);
}
