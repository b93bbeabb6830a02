//! `GetCallTrace`: the Java stack of any thread, callee first, each frame with its source line.
//!
//! The thread is named by its JNIEnv (looked up in the threads room, never dereferenced); the
//! frames come from JVMTI `GetStackTrace`, which works for the current thread and, through a
//! handshake, for a running or suspended other thread. Lines come from the line-numbers room.

use crate::abi::{JVMPI_CallFrame, JVMPI_CallTrace};
use crate::{classes, lines, threads};
use crate::jvm;
use jvmti_bindings::sys::jni::jint;

/// Fills `frames` (at most its length) and returns how many were written.
pub fn fill(trace: &mut JVMPI_CallTrace, frames: &mut [JVMPI_CallFrame]) -> jint {
    // The current thread is named NULL: inside a virtual thread that is the virtual thread,
    // whose frames are the ones running (its carrier's JNIEnv is the env_id).
    let thread = if jvm::current_jni() == Some(trace.env_id) {
        std::ptr::null_mut()
    } else {
        match threads::jthread_of(trace.env_id, "GetCallTrace") {
            Some(t) => t,
            None => return 0,
        }
    };
    match jvm::stack_trace(thread, frames.len() as jint) {
        Ok(st) => {
            for (slot, (m, loc)) in frames.iter_mut().zip(st.iter()) {
                classes::note_method(*m);
                *slot = JVMPI_CallFrame { lineno: lines::line_of(*m, *loc), method_id: *m };
            }
            st.len().min(frames.len()) as jint
        }
        Err(e) => {
            log::warn!("GetCallTrace({:p}): {}", trace.env_id, jvm::err_name(e));
            0
        }
    }
}
