//! jvmpi-shim: legacy JVMPI profiler agents, unchanged, on JDK 11–25.
//!
//! The shim is a JVMTI agent (`-agentpath:libjvmpi_shim.so=agent=<lib>[:<options>]`) that loads
//! a JVMPI agent, answers its `GetEnv(JVMPI_VERSION_1…)` with a complete `JVMPI_Interface`, and
//! turns JVMTI callbacks into the JVMPI event stream. One room per JVMPI concept:
//!
//! | room          | what lives there                                                          |
//! |---------------|---------------------------------------------------------------------------|
//! | [`abi`]       | every JVMPI type and constant, with compile-time layout checks           |
//! | [`options`]   | the shim's option string                                                  |
//! | [`loader`]    | finding and `dlopen`ing the agent, its `JVM_OnLoad`, the hooked `GetEnv` |
//! | [`lifecycle`] | start-up, JVM_INIT_DONE, JVM_SHUT_DOWN, DATA_DUMP_REQUEST, ProfilerExit  |
//! | [`interface`] | the `JVMPI_Interface` table and its 28 doors (function → room index)      |
//! | [`access`]    | who may call each function when: unattached threads, after JVM_SHUT_DOWN |
//! | [`events`]    | EnableEvent / DisableEvent / RequestEvent, delivery and its gate         |
//! | [`ids`]       | jobjectIDs as JVMTI tags; jobjectID2jobject, jobject2jobjectID          |
//! | [`objects`]   | OBJECT_ALLOC descriptions (RequestEvent), the arena                       |
//! | [`alloc`]     | allocation tracking: OBJECT_ALLOC for every allocation, ARENA_NEW        |
//! | [`bci`]       | the class-file rewriting layer (bytecode instrumentation)                 |
//! | [`jnihooks`]  | JNI function interception: JNI allocations, JNI_(WEAK_)GLOBALREF_*        |
//! | [`threads`]   | thread IDs (JNIEnv*), THREAD_START/END, suspend/resume/status/TLS/…       |
//! | [`classes`]   | CLASS_LOAD, CLASS_UNLOAD, GetMethodClass, the shim's class-file hook     |
//! | [`hooks`]     | the agent's CLASS_LOAD_HOOK, for classes loaded before and after it ran  |
//! | [`lines`]     | bytecode index → source line, method line ranges, the line-table cache   |
//! | [`calltrace`] | GetCallTrace                                                              |
//! | [`monitors`]  | raw monitors and RAW_MONITOR_CONTENDED_* events                           |
//! | [`natives`]   | JNI natives implemented by the agent library, bound as classes prepare    |
//! | [`gc`]        | GC brackets, OBJECT_FREE, CLASS_UNLOAD, RunGC, Disable/EnableGC          |
//! | [`deaths`]    | the compact queue of deaths waiting for a GC bracket                      |
//! | [`callbacks`] | the JVMTI callbacks (doors into the rooms)                                |
//! | [`jvm`]       | the JVMTI environment, capabilities, event switching, JVMTI/JNI facade   |
//! | [`logger`]    | one-line messages on stderr                                               |

pub mod abi;
pub mod access;
pub mod alloc;
pub mod bci;
pub mod callbacks;
pub mod calltrace;
pub mod classes;
pub mod deaths;
pub mod events;
pub mod gc;
pub mod hooks;
pub mod ids;
pub mod interface;
pub mod jnihooks;
pub mod jvm;
pub mod lifecycle;
pub mod lines;
pub mod loader;
pub mod logger;
pub mod monitors;
pub mod natives;
pub mod objects;
pub mod options;
pub mod threads;

use jvmti_bindings::sys::jni::{jint, JavaVM, JNI_ERR};
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`; a panic inside the shim is logged and turned into `fallback`, never unwound into
/// the JVM or the agent.
pub(crate) fn guard<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log::error!("internal error in {what}: {msg}; the call was abandoned");
            fallback
        }
    }
}

/// JVMTI entry point: `-agentpath:` / `-agentlib:`.
///
/// # Safety
/// Called by the JVM with its `JavaVM` and a NULL or NUL-terminated option string.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnLoad(vm: *mut JavaVM, options: *mut c_char, _reserved: *mut c_void) -> jint {
    guard("Agent_OnLoad", JNI_ERR, || lifecycle::agent_onload(vm, loader::option_bytes(options)))
}

/// JVMTI entry point: the library is being unloaded (after VM death); nothing to release.
///
/// # Safety
/// Called by the JVM.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnUnload(_vm: *mut JavaVM) {}

/// The legacy entry point, called for `-Xrun` (see `lifecycle::double_agent`).
///
/// # Safety
/// Called by the JVM (or a test) with a `JavaVM` and a NULL or NUL-terminated option string.
#[no_mangle]
pub unsafe extern "system" fn JVM_OnLoad(vm: *mut JavaVM, options: *mut c_char, reserved: *mut c_void) -> jint {
    guard("JVM_OnLoad", JNI_ERR, || lifecycle::double_agent(vm, loader::option_bytes(options), reserved))
}
