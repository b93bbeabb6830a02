//! Who may call each JVMPI function, and when: from a thread the JVM does not know (an agent's
//! own pthread, never attached), and after `JVM_SHUT_DOWN`.
//!
//! HotSpot 1.5 ran most JVMPI functions only in threads it knew (`JavaThread::current()`), and
//! after `JVM_SHUT_DOWN` it replaced the table's functions with stubs that blocked the caller
//! forever. The shim never crashes and never blocks: [`policy`] says, per function, what it does
//! in either case, and [`call`] applies it at the function's door. compat-matrix.md lists the
//! same table, and tests/matrix.rs checks the two agree.
//!
//! * From a thread the JVM does not know: [`Caller::Any`] functions need nothing of the JVM for
//!   the caller (raw monitors are the shim's own locks; thread-local storage, thread objects and
//!   method classes are answered from the shim's tables; the CPU time is the OS clock's).
//!   [`Caller::Attached`] functions — those HotSpot served from any thread because they set
//!   flags or started work elsewhere — attach the caller for the call and detach it after,
//!   unseen by the agent (no THREAD_START; events it causes carry a NULL `env_id`).
//!   [`Caller::JavaThread`] functions act in or on the caller's JVM thread (events sent in it,
//!   local references, JVMTI thread operations): the JVMPI failure value and one log line.
//! * After JVM_SHUT_DOWN (the agent's handler has returned, or the JVMTI phase is dead): no
//!   call into the JVM may be made any more (a JNI call in a JVM that has exited never
//!   returns). [`Afterwards::Works`] functions go on working without the JVM;
//!   [`Afterwards::Quietly`] ones have nothing left to do and say so only at debug level;
//!   [`Afterwards::Refused`] ones answer the JVMPI failure value with one log line (info).
//!
//! Each kind of refusal is logged once per function: a warning from a thread the JVM does not
//! know (the agent's mistake: HotSpot crashed there), an info line after JVM_SHUT_DOWN (a
//! sampler racing the JVM's exit does it as a matter of course; HotSpot blocked it silently).

use crate::{events, jvm};
use jvmti_bindings::sys::jvmti;
use std::sync::Mutex;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Caller {
    /// Works in any thread.
    Any,
    /// A thread the JVM does not know is attached for the call.
    Attached,
    /// Needs a thread the JVM knows: from any other, the failure value and one log line.
    JavaThread,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Afterwards {
    /// Works after JVM_SHUT_DOWN as before.
    Works,
    /// Nothing left to do: answers at once, logged at debug level only.
    Quietly,
    /// The failure value and one log line.
    Refused,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Policy {
    pub caller: Caller,
    pub after: Afterwards,
}

/// The policy of a JVMPI function, by name (None: not a JVMPI function).
pub fn policy(function: &str) -> Option<Policy> {
    use Afterwards::*;
    use Caller::*;
    let (caller, after) = match function {
        "EnableEvent" => (Attached, Refused),
        "DisableEvent" => (Attached, Quietly),
        "RequestEvent" => (JavaThread, Refused),
        "GetCallTrace" => (JavaThread, Refused),
        // Attaches the caller for good, as the process ends; during and after VM death it
        // returns at once (see lifecycle::profiler_exit).
        "ProfilerExit" => (Any, Works),
        "RawMonitorCreate" | "RawMonitorEnter" | "RawMonitorExit" | "RawMonitorWait" | "RawMonitorNotifyAll"
        | "RawMonitorDestroy" => (Any, Works),
        "GetCurrentThreadCpuTime" => (Any, Works),
        "SuspendThread" | "ResumeThread" | "SuspendThreadList" | "ResumeThreadList" => (JavaThread, Refused),
        "GetThreadStatus" => (JavaThread, Refused),
        "ThreadHasRun" => (Any, Works),
        "CreateSystemThread" => (Attached, Refused),
        "SetThreadLocalStorage" | "GetThreadLocalStorage" => (Any, Works),
        "DisableGC" | "EnableGC" => (Any, Works),
        "RunGC" => (Attached, Quietly),
        "GetThreadObject" => (Any, Works),
        "GetMethodClass" => (Any, Works),
        "jobjectID2jobject" | "jobject2jobjectID" => (JavaThread, Refused),
        _ => return None,
    };
    Some(Policy { caller, after })
}

/// Whether the emulation is over: JVM_SHUT_DOWN has been delivered, or the JVM is dead.
fn over() -> bool {
    events::is_over() || jvm::phase().is_ok_and(|p| p == jvmti::JVMTI_PHASE_DEAD)
}

/// Runs the body of JVMPI function `function` under its policy; `answer` is what it returns
/// when the policy refuses the call (or has nothing to do).
pub(crate) fn call<R>(function: &'static str, answer: R, body: impl FnOnce() -> R) -> R {
    let Some(p) = policy(function) else { return body() };
    if p.after != Afterwards::Works && over() {
        if p.after == Afterwards::Refused && first(function, true) {
            // A sampler racing the JVM's exit does this as a matter of course: info, not warn.
            log::info!("{function} called after JVM_SHUT_DOWN: the JVM is gone; the JVMPI failure value is returned");
        } else {
            log::debug!("{function} called after JVM_SHUT_DOWN: nothing to do");
        }
        return answer;
    }
    if p.caller == Caller::Any || jvm::current_jni().is_some() {
        return body();
    }
    match p.caller {
        Caller::Attached => jvm::attached(body).unwrap_or_else(|| {
            log::warn!("{function}: the calling thread could not be attached to the JVM; the JVMPI failure value is returned");
            answer
        }),
        _ => {
            log::warn!(
                "{function} called from a thread the JVM does not know (HotSpot needed a Java thread for it too); \
                 the JVMPI failure value is returned"
            );
            answer
        }
    }
}

/// Whether this is the first refusal of `function` of this kind (after shutdown or not).
fn first(function: &'static str, after: bool) -> bool {
    static SAID: Mutex<Vec<(&'static str, bool)>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    if said.contains(&(function, after)) {
        return false;
    }
    said.push((function, after));
    true
}

/// [`call`] for functions that report through out-parameters: whether the body may run.
pub(crate) fn permitted(function: &'static str) -> bool {
    call(function, false, || true)
}
