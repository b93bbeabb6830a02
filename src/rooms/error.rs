//! The rooms' error: why a room could not do what a door or another room asked. One type for
//! the layer, with its text (`Display`, the words the log line prints); the doors map it to a
//! JVMPI code and one log line, and act on the kind where it matters ([`RoomError::jvmti`]).

use crate::face::error::FaceError;
use crate::vm::jvm::{self, VmError};

/// What went wrong in a room. A lower layer's error is kept whole (`Face`, `Vm`, `Jvmti`), so
/// that a caller can still ask what JVMTI said; the rooms' own refusals that a caller tells
/// apart have their variant; the rest is a message.
#[derive(Debug)]
pub enum RoomError {
    /// The face refused (an ID, a tag, a reference; the trace file).
    Face(FaceError),
    /// The facade refused (the start-up, the binding of natives).
    Vm(VmError),
    /// A JVMTI call refused.
    Jvmti(jvm::Error),
    /// A dump requested before the agent's `JVM_OnLoad` returned.
    TooEarly,
    /// A dump taken but not delivered: the gate is closed (`closed`), or the agent has no
    /// NotifyEvent.
    NotDelivered { closed: bool },
    /// A thread whose `java.lang.Thread` is still being constructed: not announced yet (the
    /// caller tries again later).
    Unnamed,
    /// Anything else: its message.
    Msg(String),
}

impl RoomError {
    /// The JVMTI error behind it, if JVMTI refused (directly or below the face or facade).
    pub fn jvmti(&self) -> Option<jvm::Error> {
        match self {
            RoomError::Jvmti(e) | RoomError::Vm(VmError::Jvmti(e)) => Some(*e),
            RoomError::Face(e) => e.jvmti(),
            _ => None,
        }
    }
}

impl std::fmt::Display for RoomError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoomError::Face(e) => std::fmt::Display::fmt(e, f),
            RoomError::Vm(e) => std::fmt::Display::fmt(e, f),
            RoomError::Jvmti(e) => f.write_str(&jvm::err_name(*e)),
            RoomError::TooEarly => f.write_str(
                "too early: no dump can be taken before JVM_OnLoad has returned (request it from JVM_INIT_DONE on)",
            ),
            RoomError::NotDelivered { closed: true } => {
                f.write_str("the dump was taken but the event gate is closed (VM death): not delivered")
            }
            RoomError::NotDelivered { closed: false } => {
                f.write_str("the dump was taken but the agent has no NotifyEvent: not delivered")
            }
            RoomError::Unnamed => f.write_str("the thread's object is still being constructed"),
            RoomError::Msg(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RoomError {}

impl From<FaceError> for RoomError {
    fn from(e: FaceError) -> Self {
        RoomError::Face(e)
    }
}

impl From<VmError> for RoomError {
    fn from(e: VmError) -> Self {
        RoomError::Vm(e)
    }
}

impl From<jvm::Error> for RoomError {
    fn from(e: jvm::Error) -> Self {
        RoomError::Jvmti(e)
    }
}

impl From<String> for RoomError {
    fn from(m: String) -> Self {
        RoomError::Msg(m)
    }
}

impl From<&str> for RoomError {
    fn from(m: &str) -> Self {
        RoomError::Msg(m.to_owned())
    }
}
