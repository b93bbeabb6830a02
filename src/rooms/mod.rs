//! The rooms: one per JVMPI concept. Event control (`control`: EnableEvent, DisableEvent,
//! RequestEvent), the life of the emulation (`lifecycle`, `loader`, `options`), the event
//! families (`threads`; `classes` and `hooks`; `gc` and `deaths`; `objects` and `alloc`;
//! `monitors`), and the services the functions need (`calltrace`, `lines`, `natives`).
//!
//! A room is called by the doors (the interface table, the JVMTI callbacks, the JNI hooks) and
//! by other rooms; it sends events through the gate (`face::events`) and talks to the JVM only
//! through the facade (`vm::jvm`).

pub mod alloc;
pub mod calltrace;
pub mod classes;
pub mod compiled;
pub mod control;
pub mod deaths;
pub mod dumps;
pub mod error;
pub mod gc;
pub mod hooks;
pub mod javamonitors;
pub mod lifecycle;
pub mod lines;
pub mod loader;
pub mod methods;
pub mod monitors;
pub mod natives;
pub mod objects;
pub mod options;
pub mod report;
pub mod reset;
pub mod threads;
