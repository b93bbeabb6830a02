//! Compiled code: `COMPILED_METHOD_LOAD` and `COMPILED_METHOD_UNLOAD`, from JVMTI
//! CompiledMethodLoad / CompiledMethodUnload.
//!
//! A load names the method (its class is announced first, if the agent wants CLASS_LOAD), the
//! code's address and size, and a line table: for each place in the native code that JVMTI maps
//! to a bytecode index of the method itself (JVMTI's address→location map already resolves
//! inlined code to the compiled method's own call site), the offset from `code_addr` and the
//! source line of that bytecode. This is HotSpot 1.5's convention (`build_jvmpi_line_number_mapping`):
//! offsets are relative to the start of the code, entries come in address order, a bytecode
//! maps to the line of the last line-table entry at or before it, and places before the
//! method's first line entry are left out. HotSpot 1.5 counted the left-out places in
//! `lineno_table_size` anyway (the table's tail was then uninitialised); here the size is the
//! number of entries given. Methods without a line table (native wrappers, classes compiled
//! without `-g:lines`) get an empty table, as there.
//!
//! Methods already compiled when the event is enabled are announced too (JVMTI
//! `GenerateEvents`). The room remembers every piece of code it announced, by address, so that
//! a method reported twice while enabling (by the live event and by `GenerateEvents`) is sent
//! once, and so that an unload goes only to code the agent heard of.

use crate::face::abi::*;
use crate::face::events;
use crate::rooms::classes;
use crate::vm::idhash::IdMap;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jint, jlong, jmethodID};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::LazyLock;

/// The compiled room's state: the code announced to the agent, code address → method (entered
/// by [`on_load`], taken out by [`on_unload`]).
static CODE: LazyLock<IdMap<usize, usize>> = LazyLock::new(IdMap::default);

thread_local! {
    /// This thread is inside `GenerateEvents`: code already announced is not announced again.
    static REPLAYING: Cell<bool> = const { Cell::new(false) };
}

fn wanted() -> bool {
    events::enabled(JVMPI_EVENT_COMPILED_METHOD_LOAD) || events::enabled(JVMPI_EVENT_COMPILED_METHOD_UNLOAD)
}

/// JVMTI CompiledMethodLoad: `map` is JVMTI's (address, bytecode index) map.
pub fn on_load(m: jmethodID, code_size: jint, code_addr: *const c_void, map: &[(usize, jlong)]) {
    if m.is_null() || !events::is_ready() || !wanted() {
        return;
    }
    // The ID CLASS_LOAD lists: code of an obsolete version (compiled before its class was
    // retransformed) or of a renamed native is reported as the method the agent knows. The
    // line table is the code's own method's.
    let code_method = m;
    let m = classes::listed(m);
    let previous = CODE.insert(code_addr as usize, m as usize);
    if REPLAYING.with(|r| r.get()) && previous == Some(m as usize) {
        return;
    }
    if !events::enabled(JVMPI_EVENT_COMPILED_METHOD_LOAD) {
        return;
    }
    classes::note_method(m);
    let env = jvm::current_jni();
    if let (Some(env), Ok(k)) = (env, jvm::method_class(m)) {
        if let Err(e) = classes::ensure_announced(env, k) {
            log::debug!("COMPILED_METHOD_LOAD: class of the method: {e}");
        }
        jvm::Jni::of(env).delete_local_ref(k);
    }
    let mut table = lineno_table(code_method, code_addr as usize, map);
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_COMPILED_METHOD_LOAD, env.unwrap_or(std::ptr::null_mut()));
    ev.u.compiled_method_load = CompiledMethodLoad {
        method_id: m,
        code_addr: code_addr as *mut c_void,
        code_size,
        lineno_table_size: table.len() as jint,
        lineno_table: if table.is_empty() { std::ptr::null_mut() } else { table.as_mut_ptr() },
    };
    events::send(&mut ev);
}

/// JVMTI CompiledMethodUnload.
pub fn on_unload(m: jmethodID, code_addr: *const c_void) {
    if CODE.remove(&(code_addr as usize)).is_none() || !events::enabled(JVMPI_EVENT_COMPILED_METHOD_UNLOAD) {
        return;
    }
    let env = jvm::current_jni().unwrap_or(std::ptr::null_mut());
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_COMPILED_METHOD_UNLOAD, env);
    ev.u.compiled_method_unload = CompiledMethodUnload { method_id: classes::listed(m) };
    events::send(&mut ev);
}

/// Announces the code that is already there (the event was just enabled, or the gate opened).
pub fn catch_up() {
    REPLAYING.with(|r| r.set(true));
    if let Err(e) = jvm::generate_compiled_method_loads() {
        log::info!("methods compiled before COMPILED_METHOD_LOAD was enabled are not announced: {}", jvm::err_name(e));
    }
    REPLAYING.with(|r| r.set(false));
}

/// The JVMPI line table of a piece of code (see the module comment).
fn lineno_table(m: jmethodID, code_addr: usize, map: &[(usize, jlong)]) -> Vec<JVMPI_Lineno> {
    let Ok(mut lines) = jvm::line_table(m) else { return Vec::new() };
    // Stable: of several entries for one bytecode index the last one wins, as in HotSpot 1.5.
    lines.sort_by_key(|&(start, _)| start);
    let mut out: Vec<JVMPI_Lineno> = map
        .iter()
        .filter(|&&(_, bci)| bci >= 0)
        .filter_map(|&(addr, bci)| {
            let i = lines.partition_point(|&(start, _)| start <= bci);
            (i > 0).then(|| JVMPI_Lineno { offset: addr.wrapping_sub(code_addr) as jint, lineno: lines[i - 1].1 })
        })
        .collect();
    out.sort_by_key(|l| l.offset);
    out
}
