//! The doors: every way into the shim. The JVMTI callbacks (`jvmti`), the 28 functions of the
//! `JVMPI_Interface` and who may call them when (`jvmpi`, `access`), the JNI function hooks
//! (`jni`). A door converts raw pointers once, catches panics, and calls a room.

pub mod entry;
pub mod jni;
pub mod jvmpi;
pub mod jvmti;
