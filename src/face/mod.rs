//! The JVMPI face: what a legacy agent sees. The ABI (every type and constant of Sun's
//! `jvmpi.h`), the `JVMPI_Interface` tables (their doors are `doors::jvmpi`), the event gate
//! through which every event reaches the agent's `NotifyEvent`, the ID tables (object IDs are
//! JVMTI tags), and the record of what crossed (for the report and the trace).
//!
//! Arrows: rooms call the gate and the ID tables; the gate and the IDs call only the JVM facade
//! (`vm::jvm`) — and, for the one thing the gate needs from a room (announcing the sending
//! thread), a function the start-up hands down (`events::set_announcer(threads::before_send)`).

pub mod abi;
pub mod error;
pub mod event_table;
pub mod events;
pub mod ids;
pub mod own_work;
pub mod record;
pub mod table;
