//! The face's error: why an object's tag, ID or reference could not be had, or the event trace
//! could not be opened. One type for the layer; the doors act on its kind.

use crate::face::abi::jobjectID;
use crate::vm::jvm;

/// What went wrong below the rooms. The doors act on the kind: a JVMTI refusal while the VM
/// goes away is logged quietly ([`FaceError::jvmti`]); an ID the shim never gave out, or whose
/// object died, is the agent's mistake and a refused ID in the report.
#[derive(Debug)]
pub enum FaceError {
    /// A NULL reference where an object was needed.
    Null,
    /// Not a jobjectID this shim gave out.
    NotGiven(jobjectID),
    /// The object the ID named is no longer alive.
    Dead(jobjectID),
    /// The calling thread is not attached to the JVM.
    NotAttached,
    /// The tag assignment is held by a thread that is suspended (a dump's walk).
    Held,
    /// JVMTI refused (GetTag, SetTag, the tagged-object search).
    Jvmti(jvm::Error),
    /// The event trace's file (`trace=`) could not be created.
    TraceFile(String, std::io::Error),
}

impl FaceError {
    /// The JVMTI error behind it, if JVMTI refused.
    pub fn jvmti(&self) -> Option<jvm::Error> {
        match *self {
            FaceError::Jvmti(e) => Some(e),
            _ => None,
        }
    }
}

impl std::fmt::Display for FaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FaceError::Null => f.write_str("NULL object"),
            FaceError::NotGiven(id) => write!(f, "{id:p} is not a jobjectID this shim gave out"),
            FaceError::Dead(id) => write!(f, "object {id:p} is no longer alive"),
            FaceError::NotAttached => f.write_str("the calling thread is not attached to the JVM"),
            FaceError::Held => f.write_str("the tag assignment is held by a suspended thread"),
            FaceError::Jvmti(e) => f.write_str(&jvm::err_name(*e)),
            FaceError::TraceFile(path, e) => write!(f, "trace file {path}: {e}"),
        }
    }
}
