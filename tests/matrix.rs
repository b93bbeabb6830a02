//! compat-matrix.md is checked against the code and the tests: every JVMPI function and event has
//! a row; every test a row names exists; each event row says what the support column of the
//! event table (`event_table::support`) says; and each row of "From any thread, at any time"
//! says what `access::policy` does.
//! (The named tests themselves run on all four JDKs in the same `cargo test`, so a row that says
//! "yes" is only as true as those tests.)

use jvmpi_shim::{policy, support, Afterwards, Caller, Support};
use std::collections::BTreeMap;
use std::path::Path;

const FUNCTIONS: [&str; 28] = [
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

struct Row {
    cells: Vec<String>,
}

/// Rows of the table under `## <section>`, keyed by their first cell.
fn table(md: &str, section: &str) -> BTreeMap<String, Row> {
    let mut rows = BTreeMap::new();
    let mut inside = false;
    for line in md.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            inside = title.trim() == section;
            continue;
        }
        if !inside || !line.starts_with('|') || line.starts_with("|---") {
            continue;
        }
        let cells: Vec<String> = line.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
        if cells[0] == "function" || cells[0] == "event" || cells[0] == "what" {
            continue;
        }
        rows.insert(cells[0].clone(), Row { cells });
    }
    rows
}

/// Event names and numbers from the original header's constants (aliases skipped).
fn events() -> Vec<(String, i32)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/abi/expected-constants.txt"))
        .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((name, v)) = line.split_once('=') else { continue };
        let Some(ev) = name.strip_prefix("JVMPI_EVENT_") else { continue };
        let v: i32 = v.trim().parse().unwrap();
        if seen.insert(v) {
            out.push((ev.to_string(), v));
        }
    }
    out
}

fn check_tests(what: &str, row: &Row) {
    let tests = row.cells.last().unwrap();
    let claims = row.cells[1..5].iter().any(|c| c == "yes");
    let named: Vec<&str> = tests.split('`').skip(1).step_by(2).collect();
    assert!(!claims || !named.is_empty(), "{what}: says yes but names no test");
    check_named(what, named);
}

/// Every `file::function` named exists as a test.
fn check_named(what: &str, named: Vec<&str>) {
    for t in named {
        let (file, func) = t.split_once("::").unwrap_or_else(|| panic!("{what}: test {t:?} is not file::function"));
        let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(file))
            .unwrap_or_else(|_| panic!("{what}: no tests/{file}"));
        assert!(src.contains(&format!("fn {func}()")), "{what}: tests/{file} has no test {func}");
    }
}

#[test]
fn every_function_has_a_true_row() {
    let md = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("compat-matrix.md")).unwrap();
    let rows = table(&md, "Functions");
    for f in FUNCTIONS {
        let row = rows.get(f).unwrap_or_else(|| panic!("compat-matrix.md has no row for {f}"));
        check_tests(f, row);
    }
    assert_eq!(rows.len(), FUNCTIONS.len(), "rows for things that are not JVMPI functions: {:?}", rows.keys());
}

#[test]
fn every_event_has_a_row_that_matches_the_code() {
    let md = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("compat-matrix.md")).unwrap();
    let rows = table(&md, "Events");
    let evs = events();
    assert_eq!(evs.len(), 37);
    for (name, num) in &evs {
        let row = rows.get(name.as_str()).unwrap_or_else(|| panic!("compat-matrix.md has no row for {name}"));
        let want = match support(*num) {
            Support::Emulated(_) => "yes",
            Support::Never(_) => "never",
            Support::NotAvailable(_) => "n/a",
        };
        for (i, jdk) in ["11", "17", "21", "25"].iter().enumerate() {
            assert_eq!(
                row.cells[1 + i],
                want,
                "{name} on JDK {jdk}: the matrix says {:?}, the code says {want}",
                row.cells[1 + i]
            );
        }
        check_tests(name, row);
    }
    assert_eq!(rows.len(), evs.len(), "rows for things that are not JVMPI events: {:?}", rows.keys());
}

#[test]
fn loading_rows_name_real_tests() {
    let md = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("compat-matrix.md")).unwrap();
    for (what, row) in table(&md, "Loading") {
        check_tests(&what, &row);
    }
}

/// The bold keyword a cell starts with (`**works**: …` → "works").
fn keyword(cell: &str) -> &str {
    cell.strip_prefix("**").and_then(|c| c.split("**").next()).unwrap_or("")
}

#[test]
fn every_function_says_what_it_does_from_any_thread_at_any_time() {
    let md = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("compat-matrix.md")).unwrap();
    let rows = table(&md, "From any thread, at any time");
    for f in FUNCTIONS {
        let row =
            rows.get(f).unwrap_or_else(|| panic!("compat-matrix.md, From any thread, at any time: no row for {f}"));
        let p = policy(f).unwrap_or_else(|| panic!("access::policy has nothing for {f}"));
        let caller = match p.caller {
            Caller::Any => "works",
            Caller::Attached => "attached",
            Caller::JavaThread => "refused",
        };
        let after = match p.after {
            Afterwards::Works => "works",
            Afterwards::Quietly => "quiet",
            Afterwards::Refused => "refused",
        };
        assert_eq!(
            keyword(&row.cells[1]),
            caller,
            "{f}, from a thread the JVM does not know: the matrix says {:?}",
            row.cells[1]
        );
        assert_eq!(keyword(&row.cells[2]), after, "{f}, after JVM_SHUT_DOWN: the matrix says {:?}", row.cells[2]);
        let named: Vec<&str> = row.cells[3].split('`').skip(1).step_by(2).collect();
        assert!(!named.is_empty(), "{f}: no test named");
        check_named(f, named);
    }
    assert_eq!(rows.len(), FUNCTIONS.len(), "rows for things that are not JVMPI functions: {:?}", rows.keys());
}
