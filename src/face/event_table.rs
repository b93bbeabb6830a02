//! The event table: one row per JVMPI event, and everything the shim knows about that event in
//! one place — its name, its trace family, whether and why the shim supports it, the JVMTI
//! events enabling it needs, what switching it on does in its room, what already existing
//! things it announces when switched on (catch-up), what `RequestEvent` does for it, which
//! fields its trace line shows, and what a port to JVMTI should use instead.
//!
//! Not here: the code that produces an event (its room) and the code that acts on a row (the
//! control room dispatches the [`Switch`], [`CatchUp`] and [`Request`] columns; the gate and the
//! record read the name, family and fields). The room columns are typed values rather than
//! function pointers because this table sits in the face, below the rooms: it names what to do,
//! the control room does it. Adding an event family: docs/design.md, "How to add an event
//! family".
//!
//! Nowhere else does the shim `match` on event numbers (`tests/event_table.rs` checks).

use crate::face::abi::*;
use jvmti_bindings::sys::jni::jint;
use jvmti_bindings::sys::jvmti::{self, jvmtiEvent};
use std::ffi::CStr;

/// What the shim does for one JVMPI event number (`EnableEvent`'s answer).
#[derive(Clone, Copy, Debug)]
pub enum Support {
    /// Emulated; enabling it switches on these JVMTI events.
    Emulated(&'static [jvmtiEvent]),
    /// On HotSpot 1.5's list of supported events, so `EnableEvent` succeeds as it did there,
    /// but the event is never sent: in the shim's model it cannot happen, or the shim has no
    /// source for it yet (the reason is logged once, at info level).
    Never(&'static str),
    /// `EnableEvent` answers `JVMPI_NOT_AVAILABLE`, as HotSpot 1.5 did: the dump events (they
    /// are only ever requested) and numbers that are no JVMPI event.
    NotAvailable(&'static str),
}

/// The family an event belongs to, as the trace's `families=` option names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// THREAD_START / THREAD_END.
    Thread,
    /// CLASS_LOAD, CLASS_UNLOAD, CLASS_LOAD_HOOK.
    Class,
    /// OBJECT_ALLOC / FREE / MOVE, arenas, dumps.
    Object,
    /// GC_START / GC_FINISH.
    Gc,
    /// JNI global and weak global references.
    Jni,
    /// Method and instruction events, compiled methods.
    Method,
    /// Raw and Java monitors.
    Monitor,
    /// The VM's life: init, shutdown, data dump and reset requests.
    Vm,
}

impl Family {
    /// The word `trace=…:families=` uses.
    pub fn word(self) -> &'static str {
        match self {
            Family::Thread => "thread",
            Family::Class => "class",
            Family::Object => "object",
            Family::Gc => "gc",
            Family::Jni => "jni",
            Family::Method => "method",
            Family::Monitor => "monitor",
            Family::Vm => "vm",
        }
    }
}

/// What switching an emulated event on (first agent) or off (last agent) does in its room,
/// beyond the JVMTI events of its [`Support`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    /// Nothing beyond the JVMTI events.
    Nothing,
    /// The agent's ClassFileLoadHook environment (`jvm::set_agent_hook`), on and off.
    AgentHook,
    /// Allocation tracking (`alloc::enable` / `alloc::disable`).
    Alloc,
    /// The JNI function hooks (`jvm::install_jni_hooks`); installed once, never removed.
    JniHooks,
    /// The SIGUSR1 handler of DATA_RESET_REQUEST (`reset::arm`), armed once.
    ResetSignal,
    /// The method plans (`methods::switch`): recomputed from every method event's state.
    Methods,
}

/// What already exists that switching the event on announces to the agent that switched it on
/// (and, for the agents that enabled it before the gate opened, the gate's opening), so that
/// nothing is named before it was defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatchUp {
    /// Nothing to announce.
    Nothing,
    /// THREAD_START for every live thread (`threads::announce_all`).
    Threads,
    /// CLASS_LOAD for every loaded class (`classes::announce_all`).
    Classes,
    /// COMPILED_METHOD_LOAD for code compiled earlier (`compiled::catch_up`).
    Compiled,
}

/// What `RequestEvent` does for the event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// Not requestable: `JVMPI_NOT_AVAILABLE`.
    No,
    /// CLASS_LOAD of a class ID (`classes::request`).
    Class,
    /// THREAD_START of a thread object ID (`threads::request`).
    Thread,
    /// OBJECT_ALLOC of an object ID (`objects::request`).
    Object,
    /// HEAP_DUMP; the argument is a `JVMPI_HeapDumpArg*` (`dumps::request_heap_dump`).
    HeapDump,
    /// OBJECT_DUMP of an object ID (`dumps::request_object_dump`).
    ObjectDump,
    /// MONITOR_DUMP (`dumps::request_monitor_dump`).
    MonitorDump,
}

/// A value in a trace line (of an event or of a call).
#[derive(Clone, Copy, Debug)]
pub enum Val {
    /// A number.
    Int(i64),
    /// A thread (`JNIEnv*`).
    Env(usize),
    /// An object or class ID.
    Obj(usize),
    /// A method ID.
    Method(usize),
    /// A raw monitor.
    Monitor(usize),
    /// A pointer shown only as NULL / non-NULL.
    Ptr(usize),
    /// No value.
    None,
}

/// One field of an event's trace line: its key, and its value (a string when the third is set).
pub type Field = (&'static str, Val, Option<String>);

/// One JVMPI event.
pub struct Row {
    /// The `JVMPI_EVENT_*` number.
    pub event: jint,
    /// The name after `JVMPI_EVENT_`, for log lines, the trace and the report.
    pub name: &'static str,
    /// Its trace family.
    pub family: Family,
    /// Whether and how the shim sends it.
    pub support: Support,
    /// What switching it on or off does in its room.
    pub switch: Switch,
    /// What switching it on announces first.
    pub catch_up: CatchUp,
    /// What `RequestEvent` of it does.
    pub request: Request,
    /// The fields of its trace line (the union member the event uses).
    pub fields: fn(&JVMPI_Event) -> Vec<Field>,
    /// For the migration report: (the JVMTI replacement, the gap when there is no direct
    /// one), after the JVMPI→JVMTI transition notes.
    pub instead: (&'static str, &'static str),
}

const GC: &[jvmtiEvent] = &[jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_START, jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH];
const UNLOAD: &[jvmtiEvent] = &[
    jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_START,
    jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
    jvmti::JVMTI_EVENT_OBJECT_FREE,
];
const COMPILED: &[jvmtiEvent] = &[jvmti::JVMTI_EVENT_COMPILED_METHOD_LOAD, jvmti::JVMTI_EVENT_COMPILED_METHOD_UNLOAD];
const CONTENDED: &[jvmtiEvent] =
    &[jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTER, jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTERED];
const WAITS: &[jvmtiEvent] = &[jvmti::JVMTI_EVENT_MONITOR_WAIT, jvmti::JVMTI_EVENT_MONITOR_WAITED];
const DUMP: Support =
    Support::NotAvailable("dump events are only sent on RequestEvent (JVMPI spec; HotSpot 1.5 answered the same)");
/// What an unknown number gets.
const NO_SUCH: Support = Support::NotAvailable("no such JVMPI event");

/// A row with the common columns: emulated with no JVMTI event, no switch, no catch-up, not
/// requestable, no fields, no JVMTI replacement.
const fn row(event: jint, name: &'static str, family: Family) -> Row {
    Row {
        event,
        name,
        family,
        support: Support::Emulated(&[]),
        switch: Switch::Nothing,
        catch_up: CatchUp::Nothing,
        request: Request::No,
        fields: no_fields,
        instead: ("", ""),
    }
}

use CatchUp as C;
use Family as F;
use Request as R;
use Support::*;
use Switch as S;

/// Every JVMPI event, in number order.
pub static ROWS: [Row; 37] = TABLE;

const TABLE: [Row; 37] = [
    Row {
        switch: S::Methods,
        fields: method,
        instead: ("MethodEntry", "slow (forces the interpreter): use bytecode instrumentation"),
        ..row(JVMPI_EVENT_METHOD_ENTRY, "METHOD_ENTRY", F::Method)
    },
    Row {
        switch: S::Methods,
        fields: method_entry2,
        instead: ("", "no direct equivalent: MethodEntry plus GetLocalInstance, or bytecode instrumentation"),
        ..row(JVMPI_EVENT_METHOD_ENTRY2, "METHOD_ENTRY2", F::Method)
    },
    Row {
        switch: S::Methods,
        fields: method,
        instead: ("MethodExit", "slow (forces the interpreter): use bytecode instrumentation"),
        ..row(JVMPI_EVENT_METHOD_EXIT, "METHOD_EXIT", F::Method)
    },
    Row {
        switch: S::Alloc,
        request: R::Object,
        fields: obj_alloc,
        instead: (
            "",
            "no direct equivalent: bytecode instrumentation (VMObjectAlloc and SampledObjectAlloc cover part)",
        ),
        ..row(JVMPI_EVENT_OBJECT_ALLOC, "OBJECT_ALLOC", F::Object)
    },
    Row {
        support: Emulated(UNLOAD),
        fields: obj_free,
        instead: ("ObjectFree", "only for tagged objects"),
        ..row(JVMPI_EVENT_OBJECT_FREE, "OBJECT_FREE", F::Object)
    },
    Row {
        support: Never("object IDs are JVMTI tags, which never change while the object lives"),
        instead: ("", "no equivalent, not needed: jobject does not move"),
        ..row(JVMPI_EVENT_OBJECT_MOVE, "OBJECT_MOVE", F::Object)
    },
    Row {
        // An unload goes only to code whose load the room saw: both need both JVMTI events.
        support: Emulated(COMPILED),
        catch_up: C::Compiled,
        fields: compiled_method_load,
        instead: ("CompiledMethodLoad", ""),
        ..row(JVMPI_EVENT_COMPILED_METHOD_LOAD, "COMPILED_METHOD_LOAD", F::Method)
    },
    Row {
        support: Emulated(COMPILED),
        catch_up: C::Compiled,
        fields: compiled_method_unload,
        instead: ("CompiledMethodUnload", ""),
        ..row(JVMPI_EVENT_COMPILED_METHOD_UNLOAD, "COMPILED_METHOD_UNLOAD", F::Method)
    },
    Row {
        switch: S::Methods,
        instead: ("", "no equivalent: bytecode instrumentation (or SingleStep, slowly)"),
        ..row(JVMPI_EVENT_INSTRUCTION_START, "INSTRUCTION_START", F::Method)
    },
    Row {
        catch_up: C::Threads,
        request: R::Thread,
        fields: thread_start,
        instead: ("ThreadStart", ""),
        ..row(JVMPI_EVENT_THREAD_START, "THREAD_START", F::Thread)
    },
    Row { instead: ("ThreadEnd", ""), ..row(JVMPI_EVENT_THREAD_END, "THREAD_END", F::Thread) },
    Row {
        switch: S::AgentHook,
        fields: class_load_hook,
        instead: ("ClassFileLoadHook", ""),
        ..row(JVMPI_EVENT_CLASS_LOAD_HOOK, "CLASS_LOAD_HOOK", F::Class)
    },
    Row {
        support: DUMP,
        request: R::HeapDump,
        instead: ("", "no direct equivalent: FollowReferences / IterateThroughHeap"),
        ..row(JVMPI_EVENT_HEAP_DUMP, "HEAP_DUMP", F::Object)
    },
    Row {
        switch: S::JniHooks,
        fields: jni_globalref_alloc,
        instead: ("", "no direct equivalent: SetJNIFunctionTable"),
        ..row(JVMPI_EVENT_JNI_GLOBALREF_ALLOC, "JNI_GLOBALREF_ALLOC", F::Jni)
    },
    Row {
        switch: S::JniHooks,
        instead: ("", "no direct equivalent: SetJNIFunctionTable"),
        ..row(JVMPI_EVENT_JNI_GLOBALREF_FREE, "JNI_GLOBALREF_FREE", F::Jni)
    },
    Row {
        switch: S::JniHooks,
        fields: jni_globalref_alloc,
        instead: ("", "no direct equivalent: SetJNIFunctionTable"),
        ..row(JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC, "JNI_WEAK_GLOBALREF_ALLOC", F::Jni)
    },
    Row {
        switch: S::JniHooks,
        instead: ("", "no direct equivalent: SetJNIFunctionTable"),
        ..row(JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE, "JNI_WEAK_GLOBALREF_FREE", F::Jni)
    },
    Row {
        support: Emulated(&[jvmti::JVMTI_EVENT_CLASS_PREPARE, jvmti::JVMTI_EVENT_CLASS_LOAD]),
        catch_up: C::Classes,
        request: R::Class,
        fields: class_load,
        instead: ("ClassLoad / ClassPrepare", "methods and fields can be listed only once the class is prepared"),
        ..row(JVMPI_EVENT_CLASS_LOAD, "CLASS_LOAD", F::Class)
    },
    Row {
        support: Emulated(UNLOAD),
        fields: class_unload,
        instead: ("", "no direct equivalent: tag the Class objects and watch ObjectFree"),
        ..row(JVMPI_EVENT_CLASS_UNLOAD, "CLASS_UNLOAD", F::Class)
    },
    Row {
        support: Emulated(&[jvmti::JVMTI_EVENT_DATA_DUMP_REQUEST]),
        instead: ("DataDumpRequest", ""),
        ..row(JVMPI_EVENT_DATA_DUMP_REQUEST, "DATA_DUMP_REQUEST", F::Vm)
    },
    Row {
        // HotSpot sent DATA_RESET_REQUEST right after DATA_DUMP_REQUEST, on the same signal.
        support: Emulated(&[jvmti::JVMTI_EVENT_DATA_DUMP_REQUEST]),
        switch: S::ResetSignal,
        instead: ("", "no equivalent (redundant with DataDumpRequest)"),
        ..row(JVMPI_EVENT_DATA_RESET_REQUEST, "DATA_RESET_REQUEST", F::Vm)
    },
    Row { instead: ("VMInit", ""), ..row(JVMPI_EVENT_JVM_INIT_DONE, "JVM_INIT_DONE", F::Vm) },
    Row { instead: ("VMDeath", ""), ..row(JVMPI_EVENT_JVM_SHUT_DOWN, "JVM_SHUT_DOWN", F::Vm) },
    Row { fields: arena_new, instead: ("", "no equivalent"), ..row(JVMPI_EVENT_ARENA_NEW, "ARENA_NEW", F::Object) },
    Row {
        support: Never("the shim's one arena (the Java heap) lives as long as the JVM"),
        instead: ("", "no equivalent"),
        ..row(JVMPI_EVENT_ARENA_DELETE, "ARENA_DELETE", F::Object)
    },
    Row {
        support: DUMP,
        request: R::ObjectDump,
        instead: ("", "no direct equivalent: FollowReferences / IterateThroughHeap"),
        ..row(JVMPI_EVENT_OBJECT_DUMP, "OBJECT_DUMP", F::Object)
    },
    Row {
        fields: raw_monitor,
        instead: ("", "no equivalent"),
        ..row(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER, "RAW_MONITOR_CONTENDED_ENTER", F::Monitor)
    },
    Row {
        fields: raw_monitor,
        instead: ("", "no equivalent"),
        ..row(JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED, "RAW_MONITOR_CONTENDED_ENTERED", F::Monitor)
    },
    Row {
        fields: raw_monitor,
        instead: ("", "no equivalent"),
        ..row(JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT, "RAW_MONITOR_CONTENDED_EXIT", F::Monitor)
    },
    Row {
        support: Emulated(&[jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTER]),
        fields: monitor,
        instead: ("MonitorContendedEnter", ""),
        ..row(JVMPI_EVENT_MONITOR_CONTENDED_ENTER, "MONITOR_CONTENDED_ENTER", F::Monitor)
    },
    Row {
        support: Emulated(&[jvmti::JVMTI_EVENT_MONITOR_CONTENDED_ENTERED]),
        fields: monitor,
        instead: ("MonitorContendedEntered", ""),
        ..row(JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, "MONITOR_CONTENDED_ENTERED", F::Monitor)
    },
    Row {
        // Emulated: the owner seen when a thread blocks, sent when that thread gets in.
        support: Emulated(CONTENDED),
        fields: monitor,
        instead: ("", "no equivalent"),
        ..row(JVMPI_EVENT_MONITOR_CONTENDED_EXIT, "MONITOR_CONTENDED_EXIT", F::Monitor)
    },
    Row {
        support: Emulated(&[jvmti::JVMTI_EVENT_MONITOR_WAIT]),
        fields: monitor_wait,
        instead: ("MonitorWait", ""),
        ..row(JVMPI_EVENT_MONITOR_WAIT, "MONITOR_WAIT", F::Monitor)
    },
    Row {
        // WAITED carries the time waited, measured from the wait's start.
        support: Emulated(WAITS),
        fields: monitor_wait,
        instead: ("MonitorWaited", ""),
        ..row(JVMPI_EVENT_MONITOR_WAITED, "MONITOR_WAITED", F::Monitor)
    },
    Row {
        support: DUMP,
        request: R::MonitorDump,
        instead: ("", "no direct equivalent: GetOwnedMonitorInfo, GetObjectMonitorUsage, GetAllStackTraces"),
        ..row(JVMPI_EVENT_MONITOR_DUMP, "MONITOR_DUMP", F::Monitor)
    },
    Row {
        support: Emulated(GC),
        instead: ("GarbageCollectionStart", "raw monitors only inside the callback"),
        ..row(JVMPI_EVENT_GC_START, "GC_START", F::Gc)
    },
    Row {
        support: Emulated(GC),
        instead: ("GarbageCollectionFinish", "raw monitors only inside the callback"),
        ..row(JVMPI_EVENT_GC_FINISH, "GC_FINISH", F::Gc)
    },
];

/// Row index by event number (`u8::MAX`: no such event); checks at compile time that every
/// number is below 64 (the gate's masks) and appears once.
static INDEX: [u8; 64] = {
    let mut ix = [u8::MAX; 64];
    let mut i = 0;
    while i < TABLE.len() {
        let e = TABLE[i].event;
        assert!(e >= 0 && e < 64, "event numbers are bits of a u64 mask");
        assert!(ix[e as usize] == u8::MAX, "an event has two rows");
        ix[e as usize] = i as u8;
        i += 1;
    }
    ix
};

/// The row of an event number; None for a number that is no JVMPI event.
#[inline]
pub fn get(event: jint) -> Option<&'static Row> {
    let i = *INDEX.get(usize::try_from(event).ok()?)?;
    ROWS.get(i as usize)
}

/// The JVMPI name of an event number, for log lines (`event <n>` for an unknown number).
pub fn name(event: jint) -> String {
    match get(event) {
        Some(r) => r.name.to_string(),
        None => format!("event {event}"),
    }
}

/// Whether the shim supports an event number (`NotAvailable` for an unknown one).
pub fn support(event: jint) -> Support {
    get(event).map_or(NO_SUCH, |r| r.support)
}

/// The trace family of an event number (`vm` for an unknown one).
pub fn family(event: jint) -> Family {
    get(event).map_or(Family::Vm, |r| r.family)
}

/// The main fields of an event, for its trace line.
pub fn fields(ev: &JVMPI_Event) -> Vec<Field> {
    get(ev.event_type & !JVMPI_REQUESTED_EVENT).map_or_else(Vec::new, |r| (r.fields)(ev))
}

/// The argument of `RequestEvent(event, arg)`, as the trace shows it.
pub fn request_arg(event: jint, arg: *mut std::ffi::c_void) -> Val {
    match get(event).map(|r| r.request) {
        Some(Request::HeapDump) => Val::Ptr(arg as usize),
        _ => Val::Obj(arg as usize),
    }
}

// ---- the record formatters: one per union member -----------------------------------------
// SAFETY (every formatter): the gate calls a row's formatter only for an event of that row's
// number, whose active union member is the one read; the shim built the event.

/// A NUL-terminated string of an event, or None for NULL (the shim's own event strings only).
pub(crate) fn cstr(p: *const std::ffi::c_char) -> Option<String> {
    // SAFETY: event strings are NUL-terminated buffers the shim owns while the event is delivered.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn no_fields(_: &JVMPI_Event) -> Vec<Field> {
    Vec::new()
}

fn thread_start(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    let u = unsafe { ev.u.thread_start };
    vec![
        ("name", Val::None, cstr(u.thread_name)),
        ("thread", Val::Env(u.thread_env_id as usize), None),
        ("thread_obj", Val::Obj(u.thread_id as usize), None),
    ]
}

fn class_load(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    let u = unsafe { ev.u.class_load };
    vec![
        ("name", Val::None, cstr(u.class_name)),
        ("class", Val::Obj(u.class_id as usize), None),
        ("methods", Val::Int(u.num_methods as i64), None),
    ]
}

fn class_unload(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("class", Val::Obj(unsafe { ev.u.class_unload.class_id } as usize), None)]
}

fn class_load_hook(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("bytes", Val::Int(unsafe { ev.u.class_load_hook.class_data_len } as i64), None)]
}

fn obj_alloc(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    let u = unsafe { ev.u.obj_alloc };
    vec![
        ("obj", Val::Obj(u.obj_id as usize), None),
        ("class", Val::Obj(u.class_id as usize), None),
        ("is_array", Val::Int(u.is_array as i64), None),
        ("size", Val::Int(u.size as i64), None),
    ]
}

fn obj_free(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("obj", Val::Obj(unsafe { ev.u.obj_free.obj_id } as usize), None)]
}

fn arena_new(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("arena", Val::Int(unsafe { ev.u.new_arena.arena_id } as i64), None)]
}

fn jni_globalref_alloc(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("obj", Val::Obj(unsafe { ev.u.jni_globalref_alloc.obj_id } as usize), None)]
}

fn method(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("method", Val::Method(unsafe { ev.u.method.method_id } as usize), None)]
}

fn method_entry2(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    let u = unsafe { ev.u.method_entry2 };
    vec![("method", Val::Method(u.method_id as usize), None), ("obj", Val::Obj(u.obj_id as usize), None)]
}

fn compiled_method_load(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("method", Val::Method(unsafe { ev.u.compiled_method_load.method_id } as usize), None)]
}

fn compiled_method_unload(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("method", Val::Method(unsafe { ev.u.compiled_method_unload.method_id } as usize), None)]
}

fn raw_monitor(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    let u = unsafe { ev.u.raw_monitor };
    vec![("name", Val::None, cstr(u.name)), ("monitor", Val::Monitor(u.id as usize), None)]
}

fn monitor(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    vec![("obj", Val::Obj(unsafe { ev.u.monitor.object } as usize), None)]
}

fn monitor_wait(ev: &JVMPI_Event) -> Vec<Field> {
    // SAFETY: see above.
    let u = unsafe { ev.u.monitor_wait };
    vec![("obj", Val::Obj(u.object as usize), None), ("timeout", Val::Int(u.timeout), None)]
}
