//! The JVM underneath, the lowest layer: the JVMTI/JNI facade (`jvm`: every call the shim makes
//! into the JVM, one file per JVMTI chapter), class-file rewriting (`bci`, the workspace's crate
//! `jvmpi_shim_rewriter`) and the start-up rewrite cache (`rewrites`), the one-line logger and
//! `guard`, and non-faulting copies of memory agents hand in (`safemem`). Nothing here calls up:
//! the JNI hooks (a door) are handed down at start-up (`jvm::set_jni_hooks`).

pub mod cputime;
pub mod idhash;
pub mod jvm;
pub mod logger;
pub mod rewrites;
pub mod safemem;

/// Class-file rewriting: the workspace's own crate (`crates/rewriter/`), under its old name.
pub use jvmpi_shim_rewriter as bci;
