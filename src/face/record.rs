//! What crosses the face, recorded for the migration report and the event trace: how often the
//! agent called each JVMPI function and with what result, which IDs were refused, how many
//! events of each kind were delivered and how long the agent spent in `NotifyEvent` for them,
//! and — with `trace=<file>` — every event and every call as one JSON line.
//!
//! Off (no `report=`, no `trace=`), every hook is one relaxed atomic load. In a trace, IDs are
//! given as small numbers in order of first appearance, per kind (thread, object, method, raw
//! monitor), so that two runs of the same program can be compared line by line.

use crate::abi::*;
use jvmti_bindings::sys::jni::jint;
use std::collections::HashMap;
use std::ffi::CStr;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

/// The 28 JVMPI functions, in table order.
pub const FUNCTIONS: [&str; 28] = [
    "EnableEvent", "DisableEvent", "RequestEvent", "GetCallTrace", "ProfilerExit", "RawMonitorCreate",
    "RawMonitorEnter", "RawMonitorExit", "RawMonitorWait", "RawMonitorNotifyAll", "RawMonitorDestroy",
    "GetCurrentThreadCpuTime", "SuspendThread", "ResumeThread", "GetThreadStatus", "ThreadHasRun",
    "CreateSystemThread", "SetThreadLocalStorage", "GetThreadLocalStorage", "DisableGC", "EnableGC", "RunGC",
    "GetThreadObject", "GetMethodClass", "jobjectID2jobject", "jobject2jobjectID", "SuspendThreadList",
    "ResumeThreadList",
];

fn func_index(name: &str) -> Option<usize> {
    FUNCTIONS.iter().position(|f| *f == name)
}

/// Whether anything is recorded (report or trace on).
static ON: AtomicBool = AtomicBool::new(false);
static STARTED: LazyLock<Instant> = LazyLock::new(Instant::now);

static CALLS: [AtomicU64; 28] = [const { AtomicU64::new(0) }; 28];
static REFUSED: [AtomicU64; 28] = [const { AtomicU64::new(0) }; 28];
/// (function, error value) → count.
static ERRORS: LazyLock<Mutex<HashMap<(usize, i64), u64>>> = LazyLock::new(|| Mutex::new(HashMap::new()));
static DELIVERED: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
static REQUESTED: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
static NANOS: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
/// Events the agent enabled (at any time) or requested (bit n = event n).
static EVER_ENABLED: AtomicU64 = AtomicU64::new(0);
static EVER_REQUESTED: AtomicU64 = AtomicU64::new(0);

#[inline]
pub fn on() -> bool {
    ON.load(Relaxed)
}

/// A value in a trace line.
#[derive(Clone, Copy, Debug)]
pub enum Val {
    Int(i64),
    /// A thread (`JNIEnv*`).
    Env(usize),
    /// An object or class ID.
    Obj(usize),
    Method(usize),
    Monitor(usize),
    /// A pointer shown only as NULL / non-NULL.
    Ptr(usize),
    None,
}

/// What a trace keeps: event families, and a bound on its lines.
pub struct TraceConfig {
    pub path: String,
    /// Families to keep (`thread`, `class`, `object`, `gc`, `monitor`, `method`, `jni`, `vm`,
    /// `call`); empty = all.
    pub families: Vec<String>,
    pub max_lines: u64,
}

struct Trace {
    out: std::io::BufWriter<std::fs::File>,
    families: Vec<String>,
    max_lines: u64,
    lines: u64,
    dropped: u64,
    ids: HashMap<(u8, usize), u64>,
    next: [u64; 5],
    /// Class names from the CLASS_LOAD events traced so far (class ID → name).
    class_names: HashMap<usize, String>,
}

static TRACE: Mutex<Option<Trace>> = Mutex::new(None);
static TRACING: AtomicBool = AtomicBool::new(false);

/// Switches recording on (for the report) and, with a config, the trace.
pub fn start(report: bool, trace: Option<TraceConfig>) -> Result<(), String> {
    LazyLock::force(&STARTED);
    if let Some(t) = trace {
        let f = std::fs::File::create(&t.path).map_err(|e| format!("trace file {}: {e}", t.path))?;
        *TRACE.lock().unwrap_or_else(|p| p.into_inner()) = Some(Trace {
            out: std::io::BufWriter::new(f),
            families: t.families,
            max_lines: t.max_lines,
            lines: 0,
            dropped: 0,
            ids: HashMap::new(),
            next: [0; 5],
            class_names: HashMap::new(),
        });
        TRACING.store(true, Relaxed);
    }
    if report || TRACING.load(Relaxed) {
        ON.store(true, Relaxed);
    }
    Ok(())
}

/// Flushes the trace (at VM death, after the last event).
pub fn finish_trace() {
    if let Some(t) = TRACE.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        if t.dropped > 0 {
            let _ = writeln!(t.out, "{{\"truncated\":true,\"dropped_lines\":{}}}", t.dropped);
            t.dropped = 0;
        }
        let _ = t.out.flush();
    }
}

fn family_of_event(ev: jint) -> &'static str {
    match ev {
        JVMPI_EVENT_THREAD_START | JVMPI_EVENT_THREAD_END => "thread",
        JVMPI_EVENT_CLASS_LOAD | JVMPI_EVENT_CLASS_UNLOAD | JVMPI_EVENT_CLASS_LOAD_HOOK => "class",
        JVMPI_EVENT_OBJECT_ALLOC | JVMPI_EVENT_OBJECT_FREE | JVMPI_EVENT_OBJECT_MOVE | JVMPI_EVENT_ARENA_NEW
        | JVMPI_EVENT_ARENA_DELETE | JVMPI_EVENT_HEAP_DUMP | JVMPI_EVENT_OBJECT_DUMP => "object",
        JVMPI_EVENT_GC_START | JVMPI_EVENT_GC_FINISH => "gc",
        JVMPI_EVENT_JNI_GLOBALREF_ALLOC
        | JVMPI_EVENT_JNI_GLOBALREF_FREE
        | JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC
        | JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE => "jni",
        JVMPI_EVENT_METHOD_ENTRY
        | JVMPI_EVENT_METHOD_ENTRY2
        | JVMPI_EVENT_METHOD_EXIT
        | JVMPI_EVENT_COMPILED_METHOD_LOAD
        | JVMPI_EVENT_COMPILED_METHOD_UNLOAD
        | JVMPI_EVENT_INSTRUCTION_START => "method",
        JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER
        | JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED
        | JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT
        | JVMPI_EVENT_MONITOR_CONTENDED_ENTER
        | JVMPI_EVENT_MONITOR_CONTENDED_ENTERED
        | JVMPI_EVENT_MONITOR_CONTENDED_EXIT
        | JVMPI_EVENT_MONITOR_WAIT
        | JVMPI_EVENT_MONITOR_WAITED
        | JVMPI_EVENT_MONITOR_DUMP => "monitor",
        _ => "vm",
    }
}

impl Trace {
    fn wants(&self, family: &str) -> bool {
        self.families.is_empty() || self.families.iter().any(|f| f == family)
    }
    fn norm(&mut self, v: Val) -> String {
        let (kind, p, prefix) = match v {
            Val::Int(i) => return i.to_string(),
            Val::None => return "null".into(),
            Val::Ptr(p) => return if p == 0 { "null".into() } else { "\"set\"".into() },
            Val::Env(p) => (0u8, p, "t"),
            Val::Obj(p) => (1, p, "o"),
            Val::Method(p) => (2, p, "m"),
            Val::Monitor(p) => (3, p, "r"),
        };
        if p == 0 {
            return "null".into();
        }
        let next = &mut self.next[kind as usize];
        let n = *self.ids.entry((kind, p)).or_insert_with(|| {
            *next += 1;
            *next
        });
        format!("\"{prefix}{n}\"")
    }
    fn line(&mut self, body: String) {
        if self.lines >= self.max_lines {
            self.dropped += 1;
            return;
        }
        self.lines += 1;
        let _ = writeln!(self.out, "{body}");
    }
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn cstr(p: *const std::ffi::c_char) -> Option<String> {
    // SAFETY: event strings are NUL-terminated buffers the shim owns while the event is delivered.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The main fields of an event, for its trace line.
fn event_fields(ev: &JVMPI_Event) -> Vec<(&'static str, Val, Option<String>)> {
    let t = ev.event_type & !JVMPI_REQUESTED_EVENT;
    let mut f: Vec<(&'static str, Val, Option<String>)> = Vec::new();
    // SAFETY: the active member of the union is the one of `t`; the shim built the event.
    unsafe {
        match t {
            JVMPI_EVENT_THREAD_START => {
                let u = ev.u.thread_start;
                f.push(("name", Val::None, cstr(u.thread_name)));
                f.push(("thread", Val::Env(u.thread_env_id as usize), None));
                f.push(("thread_obj", Val::Obj(u.thread_id as usize), None));
            }
            JVMPI_EVENT_CLASS_LOAD => {
                let u = ev.u.class_load;
                f.push(("name", Val::None, cstr(u.class_name)));
                f.push(("class", Val::Obj(u.class_id as usize), None));
                f.push(("methods", Val::Int(u.num_methods as i64), None));
            }
            JVMPI_EVENT_CLASS_UNLOAD => f.push(("class", Val::Obj(ev.u.class_unload.class_id as usize), None)),
            JVMPI_EVENT_CLASS_LOAD_HOOK => f.push(("bytes", Val::Int(ev.u.class_load_hook.class_data_len as i64), None)),
            JVMPI_EVENT_OBJECT_ALLOC => {
                let u = ev.u.obj_alloc;
                f.push(("obj", Val::Obj(u.obj_id as usize), None));
                f.push(("class", Val::Obj(u.class_id as usize), None));
                f.push(("is_array", Val::Int(u.is_array as i64), None));
                f.push(("size", Val::Int(u.size as i64), None));
            }
            JVMPI_EVENT_OBJECT_FREE => f.push(("obj", Val::Obj(ev.u.obj_free.obj_id as usize), None)),
            JVMPI_EVENT_ARENA_NEW => f.push(("arena", Val::Int(ev.u.new_arena.arena_id as i64), None)),
            JVMPI_EVENT_JNI_GLOBALREF_ALLOC | JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC => {
                f.push(("obj", Val::Obj(ev.u.jni_globalref_alloc.obj_id as usize), None));
            }
            JVMPI_EVENT_METHOD_ENTRY | JVMPI_EVENT_METHOD_EXIT => f.push(("method", Val::Method(ev.u.method.method_id as usize), None)),
            JVMPI_EVENT_METHOD_ENTRY2 => {
                f.push(("method", Val::Method(ev.u.method_entry2.method_id as usize), None));
                f.push(("obj", Val::Obj(ev.u.method_entry2.obj_id as usize), None));
            }
            JVMPI_EVENT_COMPILED_METHOD_LOAD => f.push(("method", Val::Method(ev.u.compiled_method_load.method_id as usize), None)),
            JVMPI_EVENT_COMPILED_METHOD_UNLOAD => f.push(("method", Val::Method(ev.u.compiled_method_unload.method_id as usize), None)),
            JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER | JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED | JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT => {
                f.push(("name", Val::None, cstr(ev.u.raw_monitor.name)));
                f.push(("monitor", Val::Monitor(ev.u.raw_monitor.id as usize), None));
            }
            JVMPI_EVENT_MONITOR_CONTENDED_ENTER | JVMPI_EVENT_MONITOR_CONTENDED_ENTERED | JVMPI_EVENT_MONITOR_CONTENDED_EXIT => {
                f.push(("obj", Val::Obj(ev.u.monitor.object as usize), None));
            }
            JVMPI_EVENT_MONITOR_WAIT | JVMPI_EVENT_MONITOR_WAITED => {
                f.push(("obj", Val::Obj(ev.u.monitor_wait.object as usize), None));
                f.push(("timeout", Val::Int(ev.u.monitor_wait.timeout), None));
            }
            _ => {}
        }
    }
    f
}

/// An event was delivered to the agent (`nanos` spent in its NotifyEvent).
pub fn event(ev: &JVMPI_Event, nanos: u64) {
    let requested = ev.event_type & JVMPI_REQUESTED_EVENT != 0;
    let t = ev.event_type & !JVMPI_REQUESTED_EVENT;
    if (0..64).contains(&t) {
        let i = t as usize;
        DELIVERED[i].fetch_add(1, Relaxed);
        NANOS[i].fetch_add(nanos, Relaxed);
        if requested {
            REQUESTED[i].fetch_add(1, Relaxed);
        }
    }
    if !TRACING.load(Relaxed) {
        return;
    }
    let fields = event_fields(ev);
    let mut g = TRACE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tr) = g.as_mut() else { return };
    // SAFETY: the active member of the union is the one of `t`; the shim built the event.
    unsafe {
        if t == JVMPI_EVENT_CLASS_LOAD {
            if let Some(n) = cstr(ev.u.class_load.class_name) {
                tr.class_names.insert(ev.u.class_load.class_id as usize, n);
            }
        }
    }
    if !tr.wants(family_of_event(t)) {
        return;
    }
    let mut body = format!(
        "{{\"ev\":{},\"thread\":{}",
        json_str(&crate::abi::event_name(t)),
        tr.norm(Val::Env(ev.env_id as usize))
    );
    if requested {
        body.push_str(",\"requested\":true");
    }
    for (k, v, s) in fields {
        let val = match s {
            Some(s) => json_str(&s),
            None => tr.norm(v),
        };
        body.push_str(&format!(",\"{k}\":{val}"));
        if let (true, Val::Obj(c)) = (k == "class" && t != JVMPI_EVENT_CLASS_LOAD, v) {
            if let Some(n) = tr.class_names.get(&c) {
                body.push_str(&format!(",\"class_name\":{}", json_str(n)));
            }
        }
    }
    body.push('}');
    tr.line(body);
}

/// The agent enabled an event (for the report: events used).
pub fn enabled_event(ev: jint) {
    if (0..64).contains(&ev) {
        EVER_ENABLED.fetch_or(1 << ev, Relaxed);
    }
}

/// The agent requested an event.
pub fn requested_event(ev: jint) {
    if (0..64).contains(&ev) {
        EVER_REQUESTED.fetch_or(1 << ev, Relaxed);
    }
}

/// An interface call: `result` is what the agent got; `error` is Some(value) when that was a
/// refusal or failure value.
pub fn call(func: &str, thread: usize, args: &[(&str, Val)], result: Val, error: Option<i64>) {
    let Some(i) = func_index(func) else { return };
    CALLS[i].fetch_add(1, Relaxed);
    if let Some(e) = error {
        *ERRORS.lock().unwrap_or_else(|p| p.into_inner()).entry((i, e)).or_insert(0) += 1;
    }
    if !TRACING.load(Relaxed) {
        return;
    }
    let mut g = TRACE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tr) = g.as_mut() else { return };
    if !tr.wants("call") {
        return;
    }
    let mut body = format!("{{\"call\":{},\"thread\":{}", json_str(func), tr.norm(Val::Env(thread)));
    for (k, v) in args {
        let val = tr.norm(*v);
        body.push_str(&format!(",\"{k}\":{val}"));
    }
    let r = tr.norm(result);
    body.push_str(&format!(",\"result\":{r}}}"));
    tr.line(body);
}

/// An ID the agent passed was refused (stale or garbage) by `func`.
pub fn refused(func: &str) {
    if on() {
        if let Some(i) = func_index(func) {
            REFUSED[i].fetch_add(1, Relaxed);
        }
    }
}

/// A snapshot of the counters, for the report.
pub struct Snapshot {
    /// (function, calls, refused IDs, [(error value, count)])
    pub functions: Vec<(&'static str, u64, u64, Vec<(i64, u64)>)>,
    /// (event number, delivered, of which requested, nanoseconds in NotifyEvent, enabled, requested by the agent)
    pub events: Vec<(jint, u64, u64, u64, bool, bool)>,
    pub seconds: f64,
}

pub fn snapshot() -> Snapshot {
    let errors = ERRORS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let functions = FUNCTIONS
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut errs: Vec<(i64, u64)> = errors.iter().filter(|((fi, _), _)| *fi == i).map(|((_, e), n)| (*e, *n)).collect();
            errs.sort();
            (*f, CALLS[i].load(Relaxed), REFUSED[i].load(Relaxed), errs)
        })
        .collect();
    let (en, rq) = (EVER_ENABLED.load(Relaxed), EVER_REQUESTED.load(Relaxed));
    let events = (0..64)
        .filter_map(|i| {
            let d = DELIVERED[i].load(Relaxed);
            let (e, r) = (en & (1 << i) != 0, rq & (1 << i) != 0);
            (d > 0 || e || r).then(|| (i as jint, d, REQUESTED[i].load(Relaxed), NANOS[i].load(Relaxed), e, r))
        })
        .collect();
    Snapshot { functions, events, seconds: STARTED.elapsed().as_secs_f64() }
}
