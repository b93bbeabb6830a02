//! The facade's error beyond a plain JVMTI error code ([`Error`](super::Error)): what the
//! start-up and the binding of natives can meet. One type for the layer, with its text.

use super::{err_name, Error};
use jvmti_bindings::sys::jni::jint;

/// What the JVM underneath refused, beyond a single JVMTI call's error code.
#[derive(Debug)]
pub enum VmError {
    /// A JVMTI call refused.
    Jvmti(Error),
    /// The JVM passed a NULL `JavaVM`.
    NoVm,
    /// `GetEnv` gave no JVMTI environment (its return code).
    NoJvmti(jint),
    /// `RegisterNatives` failed: its return code and the exception it threw, if any.
    RegisterNatives(jint, Option<String>),
    /// The JNI function hooks were not registered by the start-up (the doors' refusal to
    /// install them is JVMTI's: `Jvmti`).
    JniHooks(String),
}

impl std::fmt::Display for VmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VmError::Jvmti(e) => f.write_str(&err_name(*e)),
            VmError::NoVm => f.write_str("the JVM passed a NULL JavaVM"),
            VmError::NoJvmti(rc) => write!(f, "the JVM did not give a JVMTI environment (GetEnv returned {rc})"),
            VmError::RegisterNatives(rc, thrown) => {
                write!(f, "RegisterNatives returned {rc}")?;
                match thrown {
                    Some(t) => write!(f, " and threw {t}"),
                    None => Ok(()),
                }
            }
            VmError::JniHooks(why) => f.write_str(why),
        }
    }
}
