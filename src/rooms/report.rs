//! The migration report (`report=<file>`, `report=-` for stderr, a `.json` name for JSON),
//! written at JVM exit and on demand (`jcmd <pid> JVMTI.agent_load …/libjvmpi_shim.so report`).
//!
//! For every JVMPI function the agent called: how often, the failure values it got, and the
//! stale or garbage IDs that were refused. For every event it enabled or requested: how many
//! were delivered and the time spent inside its `NotifyEvent` (the agent's own cost). For each,
//! how the shim emulates it and what differs from JDK 1.2–1.5 — the words of compat-matrix.md,
//! built into the shim — and what a port to JVMTI should use instead, after the official
//! JVMPI→JVMTI transition notes, with the gaps named. Then the shim's own overhead: classes
//! rewritten, time spent rewriting, memory.
//!
//! The JSON form is stable: its top-level keys are `version` (1), `seconds`, `functions`,
//! `events` and `shim`; see docs/report-and-trace.md ("Migration report") for every field.

use crate::face::{event_table, record};
use crate::rooms::{gc, methods};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::sync::{LazyLock, Mutex, OnceLock};

/// compat-matrix.md, built in: the "how" and "differs" columns of the report.
const MATRIX: &str = include_str!("../../compat-matrix.md");

/// The report room's state, shared by every thread.
struct ReportState {
    /// Where the report goes (set once at start-up from `report=`).
    dest: OnceLock<String>,
    /// Held while a report is written (at VM death, or by `jcmd … report`): one at a time.
    writing: Mutex<()>,
    /// (how, differs) per function or event name, read from [`MATRIX`] the first time a report
    /// needs it.
    rows: LazyLock<HashMap<String, (String, String)>>,
}

static STATE: ReportState =
    ReportState { dest: OnceLock::new(), writing: Mutex::new(()), rows: LazyLock::new(matrix_rows) };

/// Where the report goes (set at start-up from `report=`).
pub fn set_destination(dest: &str) {
    let _ = STATE.dest.set(dest.to_string());
}

pub fn destination() -> Option<&'static str> {
    STATE.dest.get().map(String::as_str)
}

/// (how, differs) per function or event name, from compat-matrix.md.
fn matrix_rows() -> HashMap<String, (String, String)> {
    let mut m = HashMap::new();
    for line in MATRIX.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").map(str::trim).collect();
        if cells.len() == 8 && !cells[0].starts_with("---") && cells[0] != "function" && cells[0] != "event" {
            m.insert(cells[0].to_string(), (cells[5].to_string(), cells[6].to_string()));
        }
    }
    m
}

/// The JVMTI replacement of a JVMPI function (an event's is in its row of the event table), after the JVMPI→JVMTI transition notes:
/// (what to use, the gap when there is no direct equivalent).
fn jvmti_instead(name: &str) -> (&'static str, &'static str) {
    match name {
        "EnableEvent" | "DisableEvent" => ("SetEventNotificationMode", ""),
        "RequestEvent" => ("", "no equivalent: use GetClassMethods/GetThreadInfo/GetObjectSize and the heap functions (GenerateEvents is not the same)"),
        "GetCallTrace" => ("GetStackTrace", "JVMTI gives bytecode offsets; lines come from GetLineNumberTable"),
        "ProfilerExit" => ("", "no equivalent: exit() or JNI FatalError"),
        "RawMonitorCreate" => ("CreateRawMonitor", ""),
        "RawMonitorDestroy" => ("DestroyRawMonitor", ""),
        "RawMonitorEnter" | "RawMonitorExit" | "RawMonitorWait" | "RawMonitorNotifyAll" => ("the JVMTI function of the same name", ""),
        "GetCurrentThreadCpuTime" => ("GetCurrentThreadCpuTime", ""),
        "SuspendThread" | "ResumeThread" | "SuspendThreadList" | "ResumeThreadList" => {
            ("the JVMTI function of the same name", "JVMTI names threads by jthread, not JNIEnv*")
        }
        "GetThreadStatus" => ("GetThreadState", ""),
        "ThreadHasRun" => ("", "no equivalent: compare GetThreadCpuTime between samples"),
        "CreateSystemThread" => ("RunAgentThread", "the caller makes the java.lang.Thread"),
        "SetThreadLocalStorage" | "GetThreadLocalStorage" => ("the JVMTI function of the same name", "keyed by jthread"),
        "DisableGC" | "EnableGC" => ("", "no equivalent: a JNI critical section (GetPrimitiveArrayCritical) held for the agent holds collections off where the collector honours it (Serial, Parallel, ZGC; G1 before JDK 22)"),
        "RunGC" => ("ForceGarbageCollection", ""),
        "GetThreadObject" | "jobjectID2jobject" | "jobject2jobjectID" => ("", "no equivalent, not needed: JVMTI uses jobject, and tags (SetTag) for identity"),
        "GetMethodClass" => ("GetMethodDeclaringClass", ""),
        _ => ("", ""),
    }
}

fn matrix(name: &str) -> (String, String) {
    let (how, mut differs) = STATE.rows.get(name).cloned().unwrap_or_default();
    // What this run's DisableGC could not do (its collector, the time limit), said here too.
    if let Some(note) = gc::locker_note().filter(|_| name == "DisableGC") {
        differs =
            if differs.is_empty() { note } else { format!("{}. In this run: {note}", differs.trim_end_matches('.')) };
    }
    (how, differs)
}

/// Resident memory of the process, from /proc (kB).
fn rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The report as JSON.
pub fn json() -> Value {
    let snap = record::snapshot();
    let functions: Vec<Value> = snap
        .functions
        .iter()
        .filter(|(_, calls, refused, _)| *calls > 0 || *refused > 0)
        .map(|(name, calls, refused, errors)| {
            let (how, differs) = matrix(name);
            let (instead, gap) = jvmti_instead(name);
            json!({
                "name": name, "calls": calls, "refused_ids": refused,
                "errors": errors.iter().map(|(v, n)| json!({"value": v, "count": n})).collect::<Vec<_>>(),
                "emulation": how, "differs": differs, "jvmti": instead, "gap": gap,
            })
        })
        .collect();
    let events: Vec<Value> = snap
        .events
        .iter()
        .map(|&(ev, delivered, requested, nanos, enabled, asked)| {
            let name = event_table::name(ev);
            let (how, differs) = matrix(&name);
            let (instead, gap) = event_table::get(ev).map_or(("", ""), |r| r.instead);
            json!({
                "name": name, "number": ev, "enabled": enabled, "requested": asked,
                "delivered": delivered, "delivered_on_request": requested,
                "agent_ns_total": nanos, "agent_ns_per_event": nanos.checked_div(delivered).unwrap_or(0),
                "emulation": how, "differs": differs, "jvmti": instead, "gap": gap,
            })
        })
        .collect();
    let (rewritten, rewrite_ns) = methods::rewrite_figures();
    let (queued, queue_bytes) = gc::queue_peak();
    json!({
        "version": 1,
        "seconds": snap.seconds,
        "functions": functions,
        "events": events,
        "shim": {
            "classes_rewritten": rewritten,
            "rewrite_ms": rewrite_ns as f64 / 1e6,
            "deaths_queue_peak": queued,
            "deaths_queue_peak_bytes": queue_bytes,
            "process_rss_kb": rss_kb(),
        },
    })
}

/// The report as text for a terminal.
pub fn text() -> String {
    let j = json();
    let mut o = String::new();
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    o.push_str(&format!("jvmpi-shim migration report ({:.1} s of JVM life)\n\n", j["seconds"].as_f64().unwrap_or(0.0)));
    o.push_str("JVMPI functions the agent called\n");
    o.push_str(&format!("  {:<24} {:>10} {:>8} {:>8}  JVMTI instead\n", "function", "calls", "errors", "refused"));
    for f in j["functions"].as_array().into_iter().flatten() {
        let errs: u64 = f["errors"].as_array().into_iter().flatten().map(|e| e["count"].as_u64().unwrap_or(0)).sum();
        let instead = if s(&f["jvmti"]).is_empty() { format!("— {}", s(&f["gap"])) } else { s(&f["jvmti"]) };
        o.push_str(&format!(
            "  {:<24} {:>10} {:>8} {:>8}  {}\n",
            s(&f["name"]),
            f["calls"].as_u64().unwrap_or(0),
            errs,
            f["refused_ids"].as_u64().unwrap_or(0),
            instead
        ));
    }
    o.push_str("\nEvents the agent enabled or requested\n");
    o.push_str(&format!(
        "  {:<30} {:>10} {:>12} {:>10}  JVMTI instead\n",
        "event", "delivered", "agent ms", "ns/event"
    ));
    for e in j["events"].as_array().into_iter().flatten() {
        let instead = if s(&e["jvmti"]).is_empty() { format!("— {}", s(&e["gap"])) } else { s(&e["jvmti"]) };
        o.push_str(&format!(
            "  {:<30} {:>10} {:>12.1} {:>10}  {}\n",
            s(&e["name"]),
            e["delivered"].as_u64().unwrap_or(0),
            e["agent_ns_total"].as_u64().unwrap_or(0) as f64 / 1e6,
            e["agent_ns_per_event"].as_u64().unwrap_or(0),
            instead
        ));
    }
    o.push_str("\nHow each is emulated, and what differs from JDK 1.2–1.5\n");
    for x in j["functions"].as_array().into_iter().flatten().chain(j["events"].as_array().into_iter().flatten()) {
        o.push_str(&format!("  {}: {}", s(&x["name"]), s(&x["emulation"])));
        let d = s(&x["differs"]);
        if !d.is_empty() && d != "—" {
            o.push_str(&format!("\n      differs: {d}"));
        }
        o.push('\n');
    }
    let sh = &j["shim"];
    o.push_str(&format!(
        "\nThe shim's own overhead\n  classes rewritten: {} in {:.1} ms; deaths waiting for a GC bracket at most: {} ({} bytes); process RSS: {} kB\n",
        sh["classes_rewritten"], sh["rewrite_ms"].as_f64().unwrap_or(0.0), sh["deaths_queue_peak"], sh["deaths_queue_peak_bytes"],
        sh["process_rss_kb"]
    ));
    o
}

/// Writes the report where `report=` said (or to `dest`). Errors are one log line.
pub fn write(dest: Option<&str>) {
    let Some(dest) = dest.or(destination()) else { return };
    let _one = crate::vm::logger::lock(&STATE.writing);
    let body =
        if dest.ends_with(".json") { serde_json::to_string_pretty(&json()).unwrap_or_default() + "\n" } else { text() };
    let r = if dest == "-" { std::io::stderr().write_all(body.as_bytes()) } else { std::fs::write(dest, body) };
    if let Err(e) = r {
        log::error!("the migration report could not be written to {dest}: {e}");
    }
}
