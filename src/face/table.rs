//! The `JVMPI_Interface` an agent is handed by `GetEnv(JVMPI_VERSION_1…)`: one table in memory
//! that lives as long as the process, filled with the doors of `face::interface` when the shim
//! starts. The agent writes its `NotifyEvent` into it; the gate reads it from here afresh for
//! every event.

use crate::abi::*;
use jvmti_bindings::sys::jni::jint;
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::OnceLock;

struct Table(UnsafeCell<JVMPI_Interface>);
// SAFETY: the agent writes `NotifyEvent` (and may read anything); the shim writes `version`
// before handing the table out and reads `NotifyEvent` with volatile loads. Pointer-sized
// stores are atomic on the supported targets.
unsafe impl Sync for Table {}
// SAFETY: as above; the table is never moved or freed.
unsafe impl Send for Table {}

static TABLE: OnceLock<Box<Table>> = OnceLock::new();

/// Installs the doors (once; later calls keep the first table, which agents may hold).
pub fn install(doors: JVMPI_Interface) {
    let _ = TABLE.set(Box::new(Table(UnsafeCell::new(doors))));
}

pub fn is_jvmpi_version(v: jint) -> bool {
    matches!(v, JVMPI_VERSION_1 | JVMPI_VERSION_1_1 | JVMPI_VERSION_1_2)
}

/// The table for `GetEnv(version)`; its `version` field says which version was asked for.
/// NULL before the doors are installed.
pub fn for_version(version: jint) -> *mut c_void {
    let Some(t) = TABLE.get() else { return std::ptr::null_mut() };
    let t = t.0.get();
    // SAFETY: `t` points to the installed table; `version` is a plain jint field.
    unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!((*t).version), version) };
    t as *mut c_void
}

/// The agent's NotifyEvent, as it is set right now.
pub fn notify_event() -> Option<NotifyEventFn> {
    let t = TABLE.get()?.0.get();
    // SAFETY: reading a pointer-sized field of the installed table that the agent may write.
    unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*t).NotifyEvent)) }
}
