//! jvmpi-shim: legacy JVMPI profiler agents, unchanged, on JDK 11–25.
//!
//! The shim is a JVMTI agent (`-agentpath:libjvmpi_shim.so=agent=<lib>[:<options>]`) that loads
//! a JVMPI agent, answers its `GetEnv(JVMPI_VERSION_1…)` with a complete `JVMPI_Interface`, and
//! turns JVMTI callbacks into the JVMPI event stream. Several `-agentpath` options load several
//! agents (at most `table::MAX_AGENTS`), each with its own table, event mask and thread-local
//! storage (see docs/several-agents.md). One room per JVMPI concept, in four layers that are the
//! four folders of `src/` (the module map of every file is in docs/design.md):
//!
//! ```text
//!   doors/   the JVM and the agent come in here: entry points and start-up, JVMTI callbacks,
//!     │      the JVMPI interface, JNI hooks (raw pointers converted once, panics caught)
//!     ▼
//!   rooms/   one per JVMPI concept: threads, classes, alloc, gc, methods, monitors, dumps, …
//!     │
//!     ▼
//!   face/    what the agent sees: the ABI, the interface tables, the event gate, the IDs,
//!     │      the record of what crossed
//!     ▼
//!   vm/      the JVM underneath: the JVMTI/JNI facade (every raw call), class-file rewriting,
//!            the logger, non-faulting reads of agent memory
//! ```
//!
//! Every way in is a door, with three kinds of exception that stay in their room, each an
//! `extern "system"` function the room registers with the JVM itself: the bytecode trackers'
//! natives (`rooms::methods`' `enter`/`exit`/`insn`/…, `rooms::alloc`'s `on_new`/`on_init`/…,
//! the hottest entries: their room's per-event code inlines into each native, one function
//! per call from Java, which a door calling into the room would cost a call and make that
//! code public), the heap walk's JVMTI callbacks (`rooms::dumps`), and the main functions of
//! the shim's own agent threads (`rooms::gc`, `rooms::threads`, `rooms::reset`). They do what
//! a door does: no pointer from the agent, and everything but the trackers' hot path (which
//! cannot panic) inside `guard`.
//!
//! Class-file rewriting (bytecode instrumentation) is a crate of its own in the workspace,
//! `jvmpi_shim_rewriter` (`crates/rewriter/`), re-exported here as [`bci`]: it knows nothing of
//! the shim.
//!
//! Arrows run down only, and no two modules reach each other (tests/layers.rs). Every path
//! inside the crate names its layer (`use crate::vm::jvm`, `crate::rooms::gc::…`); the
//! re-exports below are for the crate's users only. Two functions
//! are handed down at start-up where a direct call would run up a layer: the gate's announcing
//! of a sending thread (`threads::before_send`, registered with `events::set_announcer`) and the
//! JNI hooks the facade installs on demand (`jvm::set_jni_hooks`).
//!
//! | module                                       | what lives there |
//! |----------------------------------------------|---|
//! | [`entry`](doors::entry)                      | the entry points the JVM calls and the start-up: the one wiring place |
//! | [`jvmti`](doors::jvmti)                      | the JVMTI callbacks (doors into the rooms) |
//! | [`jvmpi`](doors::jvmpi)                      | the 28 doors of the `JVMPI_Interface` (function → room index); `jvmpi::access`: who may call each when |
//! | [`jni`](doors::jni)                          | JNI function interception: JNI allocations, JNI_(WEAK_)GLOBALREF_* |
//! | [`control`](rooms::control)                  | EnableEvent / DisableEvent / RequestEvent, what each event needs |
//! | [`options`](rooms::options)                  | the shim's option string |
//! | [`loader`](rooms::loader)                    | finding and `dlopen`ing the agent, its `JVM_OnLoad`, the hooked `GetEnv` |
//! | [`lifecycle`](rooms::lifecycle)              | JVM_OnLoad at VMInit, JVM_INIT_DONE, JVM_SHUT_DOWN, DATA_DUMP_REQUEST, ProfilerExit |
//! | [`threads`](rooms::threads)                  | thread IDs (JNIEnv*), THREAD_START/END, suspend/resume/status/TLS/… |
//! | [`classes`](rooms::classes)                  | CLASS_LOAD, CLASS_UNLOAD, GetMethodClass, the shim's class-file hook |
//! | [`hooks`](rooms::hooks)                      | the agent's CLASS_LOAD_HOOK, for classes loaded before and after it ran |
//! | [`objects`](rooms::objects)                  | OBJECT_ALLOC descriptions (RequestEvent), the arena |
//! | [`alloc`](rooms::alloc)                      | allocation tracking: OBJECT_ALLOC for every allocation, ARENA_NEW |
//! | [`gc`](rooms::gc)                            | GC brackets, OBJECT_FREE, CLASS_UNLOAD, RunGC, Disable/EnableGC |
//! | [`deaths`](rooms::deaths)                    | the compact queue of deaths waiting for a GC bracket |
//! | [`methods`](rooms::methods)                  | METHOD_ENTRY/ENTRY2/EXIT and INSTRUCTION_START (bytecode or JVMTI) |
//! | [`monitors`](rooms::monitors)                | raw monitors and RAW_MONITOR_CONTENDED_* events |
//! | [`calltrace`](rooms::calltrace)              | GetCallTrace |
//! | [`lines`](rooms::lines)                      | bytecode index → source line, method line ranges, the line-table cache |
//! | [`javamonitors`](rooms::javamonitors)        | Java monitors: MONITOR_CONTENDED_ENTER/ENTERED/EXIT, MONITOR_WAIT/WAITED |
//! | [`compiled`](rooms::compiled)                | COMPILED_METHOD_LOAD/UNLOAD with line tables, and their catch-up |
//! | [`reset`](rooms::reset)                      | DATA_RESET_REQUEST on SIGUSR1 |
//! | [`natives`](rooms::natives)                  | JNI natives implemented by the agent library, bound as classes prepare |
//! | [`dumps`](rooms::dumps)                      | HEAP_DUMP, OBJECT_DUMP and MONITOR_DUMP in the JVMPI byte formats |
//! | [`report`](rooms::report)                    | the migration report (`report=`, `jcmd … report`), text or JSON |
//! | [`abi`](face::abi)                           | every JVMPI type and constant, with compile-time layout checks |
//! | [`table`](face::table)                       | the `JVMPI_Interface` tables, one per agent; `GetEnv`'s answer |
//! | [`event_table`](face::event_table)           | one row per JVMPI event: name, family, support, JVMTI needs, room columns |
//! | [`events`](face::events)                     | the gate: the enabled set, delivery to `NotifyEvent`, closing at VM death |
//! | [`ids`](face::ids)                           | jobjectIDs as JVMTI tags (slots reused), the ID → object index |
//! | [`error`](face::error)                     | the face's error: IDs refused, the trace file not opened; the doors act on its kind |
//! | [`own_work`](face::own_work)                 | the shim's own Java work in a program's thread, left out of call traces |
//! | [`record`](face::record)                     | calls, refused IDs and deliveries, for the report and the trace |
//! | [`jvm`](vm::jvm)                             | the JVMTI environments, capabilities, event switching, JVMTI/JNI facade |
//! | [`rewrites`](vm::rewrites)                   | the start-up rewrite cache: the start-up retransformation's outputs kept on disk |
//! | [`logger`](vm::logger)                       | one-line messages on stderr; `guard`: no panic unwinds into the JVM or the agent |
//! | [`cputime`](vm::cputime)                     | the calling thread's CPU time, mostly without a system call |
//! | [`idhash`](vm::idhash)                       | concurrent maps keyed by the shim's own integers (tags, addresses), hashed cheaply |
//! | [`safemem`](vm::safemem)                     | agent pointers read and written without faulting (garbage → JVMPI_FAIL) |

pub(crate) mod doors;
pub(crate) mod face;
pub(crate) mod rooms;
pub(crate) mod vm;

// What the crate exports besides the entry points (`doors::entry`): the JVMPI ABI, the
// class-file rewriter (the workspace's crate `jvmpi_shim_rewriter`, under its old name), what tests/matrix.rs holds compat-matrix.md to (each event's
// support, who may call each function when), and the ELF check of the front end.
pub use doors::jvmpi::access::{policy, Afterwards, Caller, Policy};
pub use face::abi;
pub use face::event_table::{self, support, Support};
pub use rooms::loader::check_elf;
pub use vm::bci;
