//! COMPILED_METHOD_LOAD / UNLOAD, the Java monitor events and the DATA_RESET_REQUEST trigger,
//! through `tests/agents/execmon.c` (a table-keeping agent that resolves every ID it is given).

mod harness;
use harness::*;
use std::collections::BTreeSet;

const THREAD_START: i32 = 33;
const CLASS_LOAD: i32 = 42;
const DATA_DUMP_REQUEST: i32 = 44;
const DATA_RESET_REQUEST: i32 = 45;
const JVM_SHUT_DOWN: i32 = 47;
const MONITOR_EVENTS: [i32; 5] = [54, 55, 56, 57, 58];

fn opts(events: &[i32]) -> String {
    let list: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    format!("agent={}:log={{log}},enable={}", agent("execmon").display(), list.join("+"))
}

fn no_violations(r: &Run) {
    let v = r.lines_with("VIOLATION");
    assert!(v.is_empty(), "broken JVMPI promises: {v:?}\n{}", r.describe());
    r.assert_ok();
    assert_eq!(r.count("SHUTDOWN"), 1, "{}", r.describe());
}

/// The source lines of `method` in a file of tests/java: from its declaration line to the line
/// of its closing brace at the same indentation.
fn source_lines(file: &str, method: &str) -> BTreeSet<i32> {
    let src = std::fs::read_to_string(repo_root().join("tests/java").join(file)).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let start = lines.iter().position(|l| l.contains(&format!(" {method}("))).unwrap();
    let indent = lines[start].len() - lines[start].trim_start().len();
    let end = (start + 1..lines.len()).find(|&i| lines[i].trim() == "}" && lines[i].len() - 1 == indent).unwrap();
    // Lines that can hold bytecode: not blank, not a lone brace.
    (start..=end).filter(|&i| !matches!(lines[i].trim(), "" | "}" | "} else {")).map(|i| i as i32 + 1).collect()
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace().find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('='))).unwrap_or("")
}

/// A hot method gets COMPILED_METHOD_LOAD with a line table whose lines are lines of its source;
/// a method compiled before the event was enabled is announced when it is enabled.
#[test]
fn compiled_methods_with_line_tables() {
    for_each_jdk(|jdk| {
        let r = run(jdk, &opts(&[THREAD_START, CLASS_LOAD, JVM_SHUT_DOWN]), "Compiled", &[], &["-Xbatch"]);
        no_violations(&r);
        assert!(r.stdout.contains("enable=0"), "{}", r.describe());
        assert!(r.lines_with("CMLBAD").is_empty(), "{}", r.describe());
        for (method, when) in [("early", "compiled before the event was enabled"), ("hot", "compiled while enabled")] {
            let loads = r.lines_with(&format!("CML m=Compiled.{method} "));
            assert!(!loads.is_empty(), "no COMPILED_METHOD_LOAD for Compiled.{method} ({when})\n{}", r.describe());
            let source = source_lines("Compiled.java", method);
            for l in &loads {
                let lines: BTreeSet<i32> =
                    field(l, "lines").split(',').filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
                assert!(!lines.is_empty(), "empty line table: {l}\n{}", r.describe());
                assert!(lines.is_subset(&source), "lines {lines:?} of {l} are not all lines of the source {source:?}");
                let (first, last): (i32, i32) = (field(l, "first").parse().unwrap(), field(l, "last").parse().unwrap());
                assert!(lines.iter().all(|&x| x >= first && x <= last), "{l}");
                assert!(field(l, "size").parse::<i32>().unwrap() > 0, "{l}");
            }
        }
    });
}

/// The monitor events of the program's own locks, per thread, as "EVENT obj" (WAITED without its
/// time).
fn monitor_script(r: &Run, thread: &str) -> Vec<String> {
    r.lines_with("MON ")
        .into_iter()
        .filter(|l| field(l, "thread") == thread && field(l, "obj").starts_with("JavaMonitors$"))
        .map(|l| {
            let ev = l.split_whitespace().nth(1).unwrap();
            let obj = field(l, "obj").trim_start_matches("JavaMonitors$");
            match ev {
                "WAIT" => format!("WAIT {obj} {}", field(l, "t")),
                _ => format!("{ev} {obj}"),
            }
        })
        .collect()
}

/// A scripted contention: the blocker enters and gets in, the holder's exit comes first; a timed
/// wait and a notified wait give WAIT with the timeout and WAITED with the time waited.
#[test]
fn java_monitor_contention_and_waits() {
    for_each_jdk(|jdk| {
        let mut ev = vec![THREAD_START, CLASS_LOAD, JVM_SHUT_DOWN];
        ev.extend(MONITOR_EVENTS);
        let r = run(jdk, &opts(&ev), "JavaMonitors", &[], &[]);
        no_violations(&r);
        assert_eq!(monitor_script(&r, "blocker"), ["ENTER ContendedLock", "ENTERED ContendedLock"], "{}", r.describe());
        assert_eq!(monitor_script(&r, "holder"), ["EXIT ContendedLock"], "{}", r.describe());
        assert_eq!(monitor_script(&r, "waiter"), ["WAIT TimedLock 150", "WAITED TimedLock"], "{}", r.describe());
        assert_eq!(monitor_script(&r, "notified"), ["WAIT NotifyLock 0", "WAITED NotifyLock"], "{}", r.describe());
        assert!(monitor_script(&r, "main").is_empty(), "{}", r.describe());
        let waited = |t: &str| -> i64 {
            let l = r.lines_with("MON WAITED").into_iter().find(|l| field(l, "thread") == t).unwrap();
            field(l, "t").parse().unwrap()
        };
        assert!((140..5000).contains(&waited("waiter")), "timed wait lasted {} ms", waited("waiter"));
        assert!((90..5000).contains(&waited("notified")), "notified wait lasted {} ms", waited("notified"));
        // The exit is sent, in the entering thread, just before its CONTENDED_ENTERED.
        let order: Vec<&str> = r.lines_with("MON ").into_iter().filter(|l| l.contains("ContendedLock")).collect();
        assert!(
            order.len() == 3 && order[1].starts_with("MON EXIT") && order[2].starts_with("MON ENTERED"),
            "{order:#?}"
        );
    });
}

/// `kill -USR1 <pid>` sends DATA_RESET_REQUEST alone (no dump), from the shim's own thread with
/// the env_id of a thread the agent knows; the JVM survives the signal.
#[test]
fn data_reset_request_on_sigusr1() {
    for_each_jdk(|jdk| {
        let r = run(
            jdk,
            &opts(&[THREAD_START, DATA_DUMP_REQUEST, DATA_RESET_REQUEST, JVM_SHUT_DOWN]),
            "ResetSignal",
            &[],
            &[],
        );
        no_violations(&r);
        assert!(r.stdout.contains("done"), "{}", r.describe());
        // From the shim's thread, named by a thread the agent knows (the shim's is never announced).
        assert!(r.lines_with("RESET thread=JVMPI").is_empty(), "{}", r.describe());
        assert!(
            r.lines_with("RESET thread=").iter().all(|l| !l.contains("thread=?") && !l.contains("thread=(")),
            "{}",
            r.describe()
        );
        assert_eq!(r.count("RESET"), 2, "{}", r.describe());
        assert_eq!(r.count("DUMP"), 0, "{}", r.describe());
    });
}

/// A thread that ends is not announced again when it contends for its own Thread object's lock
/// after its THREAD_END, and a new thread given an ended thread's JNIEnv is a new thread: each
/// thread's events carry its own name.
#[test]
fn reused_jnienv_is_a_new_thread() {
    for_each_jdk(|jdk| {
        let mut ev = vec![THREAD_START, CLASS_LOAD, JVM_SHUT_DOWN];
        ev.extend(MONITOR_EVENTS);
        let r = run(jdk, &opts(&ev), "ThreadChurn", &["150"], &[]);
        no_violations(&r);
        let waits: Vec<&str> = r.lines_with("MON WAIT ").into_iter().filter(|l| l.contains("ChurnLock")).collect();
        assert_eq!(waits.len(), 150, "{}", r.describe());
        for l in waits {
            let t: i64 = field(l, "t").parse().unwrap();
            assert_eq!(field(l, "thread"), format!("w{}", t - 100000), "{l}\n{}", r.describe());
        }
        // Contention on an ended thread's own Thread object comes from that thread, by its name.
        for l in r.lines_with("MON ENTER ").into_iter().filter(|l| l.contains("obj=java.lang.Thread")) {
            assert!(field(l, "thread").starts_with('w') || field(l, "thread") == "main", "{l}\n{}", r.describe());
        }
    });
}
