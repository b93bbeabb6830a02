//! The JVM underneath: the JVMTI/JNI facade (`jvm`: every call the shim makes into the JVM),
//! class-file rewriting (`bci`), JNI function interception (`jnihooks`), the JVMTI callbacks
//! (`callbacks`: the doors through which the JVM calls the rooms), the one-line logger, and
//! non-faulting copies of memory agents hand in (`safemem`).

pub mod bci;
pub mod jvm;
pub mod logger;
pub mod safemem;
