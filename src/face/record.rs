//! What crosses the face, recorded for the migration report and the event trace: how often the
//! agent called each JVMPI function and with what result, which IDs were refused, how many
//! events of each kind were delivered and how long the agent spent in `NotifyEvent` for them,
//! and — with `trace=<file>` — every event and every call as one JSON line.
//!
//! Off (no `report=`, no `trace=`), every hook is one relaxed atomic load. In a trace, IDs are
//! given as small numbers in order of first appearance, per kind (thread, object, method, raw
//! monitor), so that two runs of the same program can be compared line by line.

use crate::face::abi::*;
use crate::face::error::FaceError;
use crate::face::event_table::{self, cstr};
use jvmti_bindings::sys::jni::jint;
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

/// The 28 JVMPI functions, in table order.
pub const FUNCTIONS: [&str; 28] = [
    "EnableEvent",
    "DisableEvent",
    "RequestEvent",
    "GetCallTrace",
    "ProfilerExit",
    "RawMonitorCreate",
    "RawMonitorEnter",
    "RawMonitorExit",
    "RawMonitorWait",
    "RawMonitorNotifyAll",
    "RawMonitorDestroy",
    "GetCurrentThreadCpuTime",
    "SuspendThread",
    "ResumeThread",
    "GetThreadStatus",
    "ThreadHasRun",
    "CreateSystemThread",
    "SetThreadLocalStorage",
    "GetThreadLocalStorage",
    "DisableGC",
    "EnableGC",
    "RunGC",
    "GetThreadObject",
    "GetMethodClass",
    "jobjectID2jobject",
    "jobject2jobjectID",
    "SuspendThreadList",
    "ResumeThreadList",
];

fn func_index(name: &str) -> Option<usize> {
    FUNCTIONS.iter().position(|f| *f == name)
}

/// The record's state, shared by every thread. The counters are written by the hooks below
/// (the doors' calls, the gate's deliveries, the control room's switches) while `on` is set,
/// and read by the report ([`snapshot`]).
struct RecordState {
    /// Whether anything is recorded (report or trace on): set once by [`start`].
    on: AtomicBool,
    /// When recording started (forced by [`start`]): the report's seconds.
    started: LazyLock<Instant>,
    /// Calls of each JVMPI function, in [`FUNCTIONS`] order ([`call`]).
    calls: [AtomicU64; 28],
    /// Calls of each function refused for a bad ID ([`refused`]).
    refused: [AtomicU64; 28],
    /// (function, error value) → count ([`call`]).
    errors: LazyLock<Mutex<HashMap<(usize, i64), u64>>>,
    /// Events delivered, by event number ([`event`]).
    delivered: [AtomicU64; 64],
    /// Of those, the requested ones ([`event`]).
    requested: [AtomicU64; 64],
    /// Nanoseconds spent in the agent's `NotifyEvent`, by event number ([`event`]).
    nanos: [AtomicU64; 64],
    /// Events the agent enabled at any time (bit n = event n; [`enabled_event`]).
    ever_enabled: AtomicU64,
    /// Events the agent requested at any time (bit n = event n; [`requested_event`]).
    ever_requested: AtomicU64,
    /// The trace, with `trace=` (opened by [`start`]; written by [`event`] and [`call`]).
    trace: Mutex<Option<Trace>>,
    /// Whether `trace` is open: one relaxed load before taking its lock.
    tracing: AtomicBool,
}

static STATE: RecordState = RecordState {
    on: AtomicBool::new(false),
    started: LazyLock::new(Instant::now),
    calls: [const { AtomicU64::new(0) }; 28],
    refused: [const { AtomicU64::new(0) }; 28],
    errors: LazyLock::new(|| Mutex::new(HashMap::new())),
    delivered: [const { AtomicU64::new(0) }; 64],
    requested: [const { AtomicU64::new(0) }; 64],
    nanos: [const { AtomicU64::new(0) }; 64],
    ever_enabled: AtomicU64::new(0),
    ever_requested: AtomicU64::new(0),
    trace: Mutex::new(None),
    tracing: AtomicBool::new(false),
};

#[inline]
pub fn on() -> bool {
    STATE.on.load(Relaxed)
}

pub use crate::face::event_table::Val;

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

/// Switches recording on (for the report) and, with a config, the trace.
pub fn start(report: bool, trace: Option<TraceConfig>) -> Result<(), FaceError> {
    LazyLock::force(&STATE.started);
    if let Some(t) = trace {
        let f = std::fs::File::create(&t.path).map_err(|e| FaceError::TraceFile(t.path.clone(), e))?;
        *crate::vm::logger::lock(&STATE.trace) = Some(Trace {
            out: std::io::BufWriter::new(f),
            families: t.families,
            max_lines: t.max_lines,
            lines: 0,
            dropped: 0,
            ids: HashMap::new(),
            next: [0; 5],
            class_names: HashMap::new(),
        });
        STATE.tracing.store(true, Relaxed);
    }
    if report || STATE.tracing.load(Relaxed) {
        STATE.on.store(true, Relaxed);
    }
    Ok(())
}

/// Flushes the trace (at VM death, after the last event).
pub fn finish_trace() {
    if let Some(t) = crate::vm::logger::lock(&STATE.trace).as_mut() {
        if t.dropped > 0 {
            let _ = writeln!(t.out, "{{\"truncated\":true,\"dropped_lines\":{}}}", t.dropped);
            t.dropped = 0;
        }
        let _ = t.out.flush();
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

/// An event was delivered to the agent (`nanos` spent in its NotifyEvent).
pub fn event(ev: &JVMPI_Event, nanos: u64) {
    let requested = ev.event_type & JVMPI_REQUESTED_EVENT != 0;
    let t = ev.event_type & !JVMPI_REQUESTED_EVENT;
    if (0..64).contains(&t) {
        let i = t as usize;
        STATE.delivered[i].fetch_add(1, Relaxed);
        STATE.nanos[i].fetch_add(nanos, Relaxed);
        if requested {
            STATE.requested[i].fetch_add(1, Relaxed);
        }
    }
    if !STATE.tracing.load(Relaxed) {
        return;
    }
    let fields = event_table::fields(ev);
    let mut g = crate::vm::logger::lock(&STATE.trace);
    let Some(tr) = g.as_mut() else { return };
    // SAFETY: the active member of the union is the one of `t`; the shim built the event.
    unsafe {
        if t == JVMPI_EVENT_CLASS_LOAD {
            if let Some(n) = cstr(ev.u.class_load.class_name) {
                tr.class_names.insert(ev.u.class_load.class_id as usize, n);
            }
        }
    }
    if !tr.wants(event_table::family(t).word()) {
        return;
    }
    let mut body =
        format!("{{\"ev\":{},\"thread\":{}", json_str(&event_table::name(t)), tr.norm(Val::Env(ev.env_id as usize)));
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
        STATE.ever_enabled.fetch_or(1 << ev, Relaxed);
    }
}

/// The agent requested an event.
pub fn requested_event(ev: jint) {
    if (0..64).contains(&ev) {
        STATE.ever_requested.fetch_or(1 << ev, Relaxed);
    }
}

/// An interface call: `result` is what the agent got; `error` is Some(value) when that was a
/// refusal or failure value.
pub fn call(func: &str, thread: usize, args: &[(&str, Val)], result: Val, error: Option<i64>) {
    let Some(i) = func_index(func) else { return };
    STATE.calls[i].fetch_add(1, Relaxed);
    if let Some(e) = error {
        *crate::vm::logger::lock(&STATE.errors).entry((i, e)).or_insert(0) += 1;
    }
    if !STATE.tracing.load(Relaxed) {
        return;
    }
    let mut g = crate::vm::logger::lock(&STATE.trace);
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
            STATE.refused[i].fetch_add(1, Relaxed);
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
    let errors = crate::vm::logger::lock(&STATE.errors).clone();
    let functions = FUNCTIONS
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut errs: Vec<(i64, u64)> =
                errors.iter().filter(|((fi, _), _)| *fi == i).map(|((_, e), n)| (*e, *n)).collect();
            errs.sort();
            (*f, STATE.calls[i].load(Relaxed), STATE.refused[i].load(Relaxed), errs)
        })
        .collect();
    let (en, rq) = (STATE.ever_enabled.load(Relaxed), STATE.ever_requested.load(Relaxed));
    let events = (0..64)
        .filter_map(|i| {
            let d = STATE.delivered[i].load(Relaxed);
            let (e, r) = (en & (1 << i) != 0, rq & (1 << i) != 0);
            (d > 0 || e || r)
                .then(|| (i as jint, d, STATE.requested[i].load(Relaxed), STATE.nanos[i].load(Relaxed), e, r))
        })
        .collect();
    Snapshot { functions, events, seconds: STATE.started.elapsed().as_secs_f64() }
}
