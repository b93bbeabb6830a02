//! Every JVMPI function called from inside every kind of event handler, while the handler is
//! still open (tests/agents/callall.c), on the stress program: no lock of the shim may be held
//! across a call into the agent unless it is re-entrant for that thread, so nothing deadlocks,
//! nothing crashes, and the program ends as asked. The agent logs "CALL <event> <function>"
//! before each call: on a hang, the last such line of each thread says where.

mod harness;

use harness::*;
use std::time::Duration;

fn callall(jdk: &Jdk, first: u32) -> Run {
    let args = vec![
        format!("-agentpath:{{shim}}=agent={}:log={{log}},first={first}", agent("callall").display()),
        "-cp".to_string(),
        "{classes}".to_string(),
        "Stress".to_string(),
        "ms=1500".to_string(),
        "workers=3".to_string(),
        "short=20".to_string(),
        "inflight=3".to_string(),
        "churn=1".to_string(),
        "gc=300".to_string(),
        // Contentions that no spinning resolves: without them, on a loaded machine with JDK 11's
        // biased locking, the workers' short `synchronized` blocks may never block at all.
        "blocks=3".to_string(),
        "end=normal".to_string(),
    ];
    run_raw_timeout(jdk, &args, Duration::from_secs(240))
}

/// The event types whose handlers made their calls.
fn done(r: &Run) -> Vec<String> {
    let mut v: Vec<String> =
        r.lines_with("DONE ").iter().filter_map(|l| l.split_whitespace().nth(1)).map(str::to_string).collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn every_function_from_every_handler() {
    for_each_jdk(|jdk| {
        let r = callall(jdk, 1);
        let last_calls: Vec<&str> = r.lines_with("CALL ").into_iter().rev().take(8).collect();
        r.assert_ok();
        assert!(r.log.contains("SHUT_DOWN"), "JVM_SHUT_DOWN handled\nlast calls: {last_calls:?}\n{}", r.describe());
        let d = done(&r);
        for ev in [
            "JVM_INIT_DONE",
            "THREAD_START",
            "THREAD_END",
            "CLASS_LOAD",
            "OBJECT_ALLOC",
            "OBJECT_FREE",
            "GC_START",
            "GC_FINISH",
            "MONITOR_CONTENDED_ENTER",
            "MONITOR_CONTENDED_ENTERED",
            "MONITOR_WAIT",
            "MONITOR_WAITED",
            "METHOD_ENTRY",
            "METHOD_EXIT",
            "HEAP_DUMP",
            "MONITOR_DUMP",
            "OBJECT_DUMP",
            "JVM_SHUT_DOWN",
        ] {
            assert!(
                d.iter().any(|x| x == ev),
                "no handler of {ev} finished its calls (finished: {d:?})\n{}",
                r.describe()
            );
        }
        // The requests made from inside handlers were answered, not refused.
        for l in r.lines_with("DONE ") {
            let refused: u32 = l
                .split("refused=")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.parse().ok())
                .unwrap_or(99);
            // Refusals are expected where the thread is ending: THREAD_END, JVM_SHUT_DOWN, and a
            // MONITOR_CONTENDED_EXIT that an owner sends itself just before its THREAD_END (it
            // owed it to a thread still waiting to enter).
            if !l.contains("JVM_SHUT_DOWN") && !l.contains("THREAD_END") && !l.contains("MONITOR_CONTENDED_EXIT") {
                assert_eq!(refused, 0, "refusals in {l}\n{}", r.describe());
            }
        }
    });
}
