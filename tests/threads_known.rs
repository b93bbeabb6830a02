//! Every env_id an agent is handed names a thread it was told about with THREAD_START and has
//! not had the THREAD_END of: in every event (MONITOR_CONTENDED_EXIT, which the shim sends for
//! the owner from another thread; GC and class events, which it sends from its own threads) and
//! in the traces and monitor lists of MONITOR_DUMP and HEAP_DUMP. The shim's own threads are
//! never announced, and no thread is announced without its name. Through
//! `tests/agents/threadwatch.c`, which keeps per-thread records in thread-local storage as HPROF
//! did and logs every env_id it has no live record for.

mod harness;
use harness::*;

fn opts(dumps: u32) -> String {
    format!("agent={}:log={{log}},dumps={dumps}", agent("threadwatch").display())
}

fn check(r: &Run) {
    r.assert_ok();
    assert_eq!(r.count("SHUTDOWN"), 1, "{}", r.describe());
    let unknown: Vec<&str> = r.lines_with("UNKNOWN").into_iter().chain(r.lines_with("TLS ")).collect();
    assert!(unknown.is_empty(), "env_ids of threads the agent does not know: {unknown:?}\n{}", r.describe());
    assert!(r.lines_with("TWICE").is_empty(), "{}", r.describe());
    let starts = r.lines_with("TSTART ");
    for l in &starts {
        assert!(!l.contains("name=JVMPI "), "the shim's own thread was announced: {l}\n{}", r.describe());
        assert!(
            !l.contains("name= ") && !l.contains("name=(null)"),
            "a thread announced with no name: {l}\n{}",
            r.describe()
        );
    }
    assert!(starts.iter().any(|l| l.contains("name=main ")), "{}", r.describe());
    assert!(starts.iter().filter(|l| l.contains("name=mix-")).count() >= 6 * 20, "{}", r.describe());
}

fn count(r: &Run, ev: &str) -> usize {
    r.lines_with(&format!("COUNT ev={ev} "))
        .first()
        .and_then(|l| l.rsplit('=').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Contended monitors whose owners end at once, waits, joins and short-lived threads: every
/// event names a live thread the agent knows; the contended exits and GC brackets still come.
#[test]
fn every_event_names_a_known_live_thread() {
    for_each_jdk(|jdk| {
        let r = run(jdk, &opts(0), "ThreadMix", &["40"], &[]);
        check(&r);
        assert!(count(&r, "MONITOR_CONTENDED_EXIT") > 0, "{}", r.describe());
        assert!(count(&r, "MONITOR_CONTENDED_ENTERED") > 0, "{}", r.describe());
        assert!(count(&r, "GC_START") > 0 && count(&r, "GC_FINISH") > 0, "{}", r.describe());
    });
}

/// The same with MONITOR_DUMP requested from inside MONITOR_CONTENDED_ENTERED and GC_FINISH
/// handlers and at JVM_SHUT_DOWN (with a HEAP_DUMP): every trace's env_id and every owner and
/// waiter of every monitor is a thread the agent knows, also as threads end during the dump.
#[test]
fn dumps_name_only_known_live_threads() {
    for_each_jdk(|jdk| {
        let r = run(jdk, &opts(5), "ThreadMix", &["30"], &[]);
        check(&r);
        assert!(r.count("MDUMP ") > 3, "{}", r.describe());
        assert!(r.count("HDUMP ") == 1, "{}", r.describe());
    });
}

/// The launcher's `DestroyJavaVM` thread: announced once, with its name (not the empty name of
/// its half-built `Thread` on JDK 19+, where the group is set first), and still the agent's
/// known thread when JVM_SHUT_DOWN, which comes from it, is the last event (HotSpot 1.5 sent its
/// THREAD_END just before; agents that look the thread up then, as HPROF did, find it). With
/// and without method events (which make the attaching thread send events while its
/// constructor runs).
#[test]
fn destroy_java_vm_is_announced_once_with_its_name() {
    let rec = agent("recorder").display().to_string();
    for_each_jdk(|jdk| {
        for extra in ["", "+method_entry+method_exit"] {
            let r = run(
                jdk,
                &format!("agent={rec}:log={{log}},enable=thread_start+thread_end+shutdown{extra}"),
                "Hello",
                &[],
                &[],
            );
            r.assert_ok();
            let starts = r.lines_with("THREAD_START ");
            assert_eq!(
                starts.iter().filter(|l| l.starts_with("THREAD_START name=DestroyJavaVM ")).count(),
                1,
                "{extra}\n{}",
                r.describe()
            );
            assert!(!starts.iter().any(|l| l.starts_with("THREAD_START name= ")), "an empty name\n{}", r.describe());
            let ends = r.lines_with("THREAD_END ");
            assert_eq!(ends.iter().filter(|l| l.ends_with(" name=DestroyJavaVM")).count(), 0, "{}", r.describe());
            assert_eq!(r.log_lines.last().map(String::as_str), Some("SHUT_DOWN"), "{}", r.describe());
            assert_eq!(r.count("VIOLATION"), 0, "{}", r.describe());
            // Every thread is announced once.
            let mut envs: Vec<&str> =
                starts.iter().filter_map(|l| l.split(" tenv=").nth(1)?.split(' ').next()).collect();
            let all = envs.len();
            envs.sort();
            envs.dedup();
            assert!(envs.len() >= all - 1, "a JNIEnv announced twice beyond main's reuse\n{}", r.describe());
        }
    });
}
