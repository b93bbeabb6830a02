//! jvmpi-shim: legacy JVMPI profiler agents, unchanged, on JDK 11–25.
//!
//! The shim is a JVMTI agent (`-agentpath:libjvmpi_shim.so=agent=<lib>[:<options>]`) that loads
//! a JVMPI agent, answers its `GetEnv(JVMPI_VERSION_1…)` with a complete `JVMPI_Interface`, and
//! turns JVMTI callbacks into the JVMPI event stream. Several `-agentpath` options load several
//! agents (at most `table::MAX_AGENTS`), each with its own table, event mask and thread-local
//! storage (see docs/several-agents.md). One room per JVMPI concept, in three layers (the folders
//! `face/`, `rooms/`, `vm/`; the module map of every file is in docs/design.md):
//!
//! | room             | what lives there                                                          |
//! |------------------|---------------------------------------------------------------------------|
//! | [`abi`]          | every JVMPI type and constant, with compile-time layout checks           |
//! | [`entry`]        | the entry points the JVM calls and the start-up: the one wiring place     |
//! | [`jvmpi`]        | the 28 doors of the `JVMPI_Interface` (function → room index); [`access`]: who may call each when |
//! | [`table`]        | the `JVMPI_Interface` tables, one per agent; `GetEnv`'s answer            |
//! | [`events`]       | the gate: the enabled set, delivery to `NotifyEvent`, closing at VM death |
//! | [`ids`]          | jobjectIDs as JVMTI tags (slots reused), the ID → object index           |
//! | [`record`](face::record) | calls, refused IDs and deliveries, for the report and the trace   |
//! | [`control`]      | EnableEvent / DisableEvent / RequestEvent, what each event needs         |
//! | [`options`]      | the shim's option string                                                  |
//! | [`loader`]       | finding and `dlopen`ing the agent, its `JVM_OnLoad`, the hooked `GetEnv` |
//! | [`lifecycle`]    | JVM_OnLoad at VMInit, JVM_INIT_DONE, JVM_SHUT_DOWN, DATA_DUMP_REQUEST, ProfilerExit |
//! | [`threads`]      | thread IDs (JNIEnv*), THREAD_START/END, suspend/resume/status/TLS/…       |
//! | [`classes`]      | CLASS_LOAD, CLASS_UNLOAD, GetMethodClass, the shim's class-file hook     |
//! | [`hooks`]        | the agent's CLASS_LOAD_HOOK, for classes loaded before and after it ran  |
//! | [`objects`]      | OBJECT_ALLOC descriptions (RequestEvent), the arena                       |
//! | [`alloc`]        | allocation tracking: OBJECT_ALLOC for every allocation, ARENA_NEW        |
//! | [`gc`]           | GC brackets, OBJECT_FREE, CLASS_UNLOAD, RunGC, Disable/EnableGC          |
//! | [`deaths`]       | the compact queue of deaths waiting for a GC bracket                      |
//! | [`methods`]      | METHOD_ENTRY/ENTRY2/EXIT and INSTRUCTION_START (bytecode or JVMTI)       |
//! | [`monitors`]     | raw monitors and RAW_MONITOR_CONTENDED_* events                           |
//! | [`calltrace`]    | GetCallTrace                                                              |
//! | [`lines`]        | bytecode index → source line, method line ranges, the line-table cache   |
//! | [`javamonitors`] | Java monitors: MONITOR_CONTENDED_ENTER/ENTERED/EXIT, MONITOR_WAIT/WAITED |
//! | [`compiled`]     | COMPILED_METHOD_LOAD/UNLOAD with line tables, and their catch-up         |
//! | [`reset`]        | DATA_RESET_REQUEST on SIGUSR1                                             |
//! | [`natives`]      | JNI natives implemented by the agent library, bound as classes prepare    |
//! | [`dumps`]        | HEAP_DUMP, OBJECT_DUMP and MONITOR_DUMP in the JVMPI byte formats         |
//! | [`report`]       | the migration report (`report=`, `jcmd … report`), text or JSON           |
//! | [`jvm`]          | the JVMTI environments, capabilities, event switching, JVMTI/JNI facade  |
//! | [`bci`]          | the class-file rewriting layer (bytecode instrumentation)                 |
//! | [`jni`]          | JNI function interception: JNI allocations, JNI_(WEAK_)GLOBALREF_*        |
//! | [`jvmti`]        | the JVMTI callbacks (doors into the rooms)                                |
//! | [`logger`]       | one-line messages on stderr                                               |
//! | [`safemem`]      | agent pointers read and written without faulting (garbage → JVMPI_FAIL)   |

pub mod doors;
pub mod face;
pub mod rooms;
pub mod vm;

// The one-hop index: every room by its own name.
pub use doors::jvmpi::access;
pub use doors::{entry, jni, jvmpi, jvmti};
pub use face::{abi, events, ids, table};
pub use rooms::{
    alloc, calltrace, classes, compiled, control, deaths, dumps, gc, hooks, javamonitors, lifecycle, lines, loader, methods, monitors, natives, objects, options, report, reset, threads,
};
pub use vm::{bci, jvm, logger, safemem};

pub(crate) use vm::logger::guard;
