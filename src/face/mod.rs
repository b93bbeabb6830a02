//! The JVMPI face: what a legacy agent sees. The ABI (every type and constant of Sun's
//! `jvmpi.h`), the `JVMPI_Interface` table and its doors, the event gate through which every
//! event reaches the agent's `NotifyEvent`, and the ID tables (object IDs are JVMTI tags).
//!
//! Arrows: the doors of the table call into the rooms; rooms call the gate and the ID tables;
//! the gate and the IDs call only the JVM facade (`vm::jvm`) — and, for the one thing the gate
//! needs from a room (announcing the sending thread), a function that room registered.

pub mod abi;
pub mod events;
pub mod ids;
pub mod record;
pub mod table;
