//! Several legacy agents in one JVM: `-agentpath:<shim>=agent=a.so:… -agentpath:<shim>=agent=b.so:…`.
//! Two instances of the recorder (the second a copy of the library under another name, since
//! `dlopen` gives one instance per file) run side by side with different event masks: each gets
//! complete, independent event streams (its own interface table, mask, thread-local storage and
//! catch-up), a requested event only reaches the agent that asked, object IDs mean the same
//! objects to both, and CLASS_LOAD_HOOK is chained in load order. Every JVM test runs on JDK 11,
//! 17, 21 and 25.

mod harness;

use harness::*;
use std::collections::HashSet;
use std::path::PathBuf;

/// A copy of the recorder library under another file name (a second agent instance).
fn recorder_copy() -> PathBuf {
    // Test threads of one process share its id: the copy is made by one of them at a time, and
    // each temporary file has its own name.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let src = agent("recorder");
    let dst = src.with_file_name("librecorder_second.so");
    let fresh = std::fs::metadata(&dst)
        .and_then(|d| Ok(d.modified()? >= std::fs::metadata(&src)?.modified()?))
        .unwrap_or(false);
    if !fresh {
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dst.with_extension(format!("so.{}.{n}.tmp", std::process::id()));
        std::fs::copy(&src, &tmp).expect("copy the recorder library");
        std::fs::rename(&tmp, &dst).expect("rename the recorder copy");
    }
    dst
}

/// Runs `Main` with two agents: the recorder (log `{log}`) with `opts_a` and its copy (log
/// returned) with `opts_b`.
fn two(jdk: &Jdk, opts_a: &str, opts_b: &str, main: &str) -> (Run, String) {
    let a = agent("recorder");
    let b = recorder_copy();
    let log_b = fresh_log_path(&format!("jdk{}-second-{main}", jdk.feature));
    let r = run_raw(
        jdk,
        &[
            format!("-agentpath:{{shim}}=agent={}:log={{log}},{opts_a}", a.display()),
            format!("-agentpath:{{shim}}=agent={}:log={},{opts_b}", b.display(), log_b.display()),
            format!("-Dprobe.lib={}", a.display()),
            "-cp".into(),
            "{classes}".into(),
            main.into(),
        ],
    );
    let text_b = std::fs::read_to_string(&log_b).unwrap_or_default();
    (r, text_b)
}

fn lines_with<'a>(log: &'a str, prefix: &str) -> Vec<&'a str> {
    log.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// The value of `key=` in a log line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let pat = format!(" {key}=");
    let i = line.find(&pat).unwrap_or_else(|| panic!("no {key}= in {line:?}")) + pat.len();
    line[i..].split(' ').next().unwrap()
}

#[track_caller]
fn clean(r: &Run, log_b: &str) {
    r.assert_ok();
    // JDK 24+ warns about Probe's System.load (a restricted method); nothing else may be said.
    let native_access = |l: &&str| {
        l.starts_with("WARNING:")
            && ["restricted method", "System::load", "enable-native-access", "Restricted methods"]
                .iter()
                .any(|w| l.contains(w))
    };
    let said: Vec<&str> = r.significant_stderr().into_iter().filter(|l| !native_access(l)).collect();
    assert!(said.is_empty(), "stderr: {said:#?}\n{}", r.describe());
    for (who, log) in [("first", r.log.as_str()), ("second", log_b)] {
        let bad = lines_with(log, "VIOLATION");
        assert!(bad.is_empty(), "{who} agent: {bad:#?}\n{log}");
        assert_eq!(lines_with(log, "GETENV rc=0").len(), 1, "{who} agent:\n{log}");
        assert_eq!(log.lines().last(), Some("SHUT_DOWN"), "{who} agent: JVM_SHUT_DOWN is the last event\n{log}");
    }
}

/// Two agents with disjoint masks each get their own complete stream: the first OBJECT_ALLOC and
/// CLASS_LOAD, the second THREAD_START/END and the GC brackets; each keeps its own thread-local
/// storage in every thread; the second resolves every thread ID it is told with
/// RequestEvent(OBJECT_ALLOC), which only it receives, and the IDs are the first agent's.
#[test]
fn two_agents_independent_streams() {
    for_each_jdk(|jdk| {
        let (r, b) = two(
            jdk,
            "enable=shutdown+class_load+object_alloc,tls-mark=1",
            "enable=shutdown+thread_start+thread_end+gc_start+gc_finish,tls-mark=2,resolve-threads",
            "Basic",
        );
        clean(&r, &b);
        let (a, b) = (r.log.as_str(), b.as_str());
        assert!(r.stdout.contains("done"), "{}", r.describe());

        // Each agent sees its own events, and only those.
        for p in ["THREAD_START", "THREAD_END", "GC_START", "GC_FINISH", "RESOLVE"] {
            assert!(lines_with(a, p).is_empty(), "first agent got {p}:\n{a}");
        }
        assert!(lines_with(b, "CLASS_LOAD ").is_empty(), "second agent got CLASS_LOAD:\n{b}");
        assert!(
            lines_with(b, "OBJECT_ALLOC").iter().all(|l| l.ends_with("req=1")),
            "second agent got an OBJECT_ALLOC it did not request:\n{b}"
        );
        assert!(
            lines_with(a, "OBJECT_ALLOC").iter().all(|l| l.ends_with("req=0")),
            "a requested event reached the first agent:\n{a}"
        );

        // The first agent: every class once, every Circle allocation.
        assert_eq!(lines_with(a, "CLASS_LOAD name=Circle ").len(), 1, "{a}");
        assert_eq!(lines_with(a, "OBJECT_ALLOC").iter().filter(|l| field(l, "class") == "Circle").count(), 20, "{a}");
        // The second agent: both workers start and end once, at least one GC bracket.
        for w in ["worker-1", "worker-2"] {
            assert_eq!(lines_with(b, &format!("THREAD_START name={w} ")).len(), 1, "{w}\n{b}");
            assert_eq!(
                lines_with(b, "THREAD_END env=").iter().filter(|l| l.ends_with(&format!("name={w}"))).count(),
                1,
                "{w}\n{b}"
            );
        }
        let (gs, gf) = (lines_with(b, "GC_START").len(), lines_with(b, "GC_FINISH").len());
        assert!(gs >= 1 && gs == gf, "GC brackets {gs}/{gf}\n{b}");

        // Thread IDs: every one the second agent was told resolves (RequestEvent succeeds), and a
        // worker's ID is the ID the first agent got in the OBJECT_ALLOC of that Thread object.
        let starts = lines_with(b, "THREAD_START");
        let resolved = lines_with(b, "RESOLVE");
        assert_eq!(resolved.len(), starts.len(), "{b}");
        assert!(resolved.iter().all(|l| l.ends_with("rc=0")), "{b}");
        let first_ids: HashSet<&str> = lines_with(a, "OBJECT_ALLOC").iter().map(|l| field(l, "id")).collect();
        for w in ["worker-1", "worker-2"] {
            let tid = field(lines_with(b, &format!("THREAD_START name={w} "))[0], "tid");
            assert!(first_ids.contains(tid), "{w}'s thread ID {tid} is not an object the first agent was told of\n{a}");
            assert!(
                lines_with(b, &format!("OBJECT_ALLOC id={tid} ")).iter().any(|l| l.ends_with("req=1")),
                "{w}'s thread ID was not resolved for the second agent\n{b}"
            );
        }

        // Thread-local storage: both checked it in many events and never saw the other's.
        for (who, log) in [("first", a), ("second", b)] {
            let n: u64 = field(&format!(" {}", lines_with(log, "TLS checked=")[0]), "checked").parse().unwrap();
            assert!(n > 20, "{who} agent checked its TLS only {n} times\n{log}");
        }
    });
}

/// An agent that enables CLASS_LOAD and THREAD_START later than the other (at JVM_INIT_DONE)
/// gets its own catch-up: the classes and threads the other agent heard of already are announced
/// to it, once, and the other agent hears nothing twice.
#[test]
fn late_enable_gets_own_catch_up() {
    for_each_jdk(|jdk| {
        let (r, b) = two(
            jdk,
            "enable=shutdown+class_load+thread_start",
            "enable=init+shutdown,enable-late=class_load+thread_start",
            "Basic",
        );
        clean(&r, &b);
        let a = r.log.as_str();
        assert_eq!(lines_with(&b, "ENABLE class_load rc=0").len(), 1, "{b}");
        for log in [a, &b] {
            for name in ["java.lang.Object", "java.lang.Thread", "Basic", "Circle"] {
                assert_eq!(lines_with(log, &format!("CLASS_LOAD name={name} ")).len(), 1, "{name}\n{log}");
            }
            for t in ["main", "worker-1", "worker-2"] {
                assert_eq!(lines_with(log, &format!("THREAD_START name={t} ")).len(), 1, "{t}\n{log}");
            }
        }
        // The catch-up reached the late agent inside its EnableEvent, before the program's classes.
        let b_lines: Vec<&str> = b.lines().collect();
        let enabled_at = b_lines.iter().position(|l| l.starts_with("ENABLE class_load")).unwrap();
        let object_at = b_lines.iter().position(|l| l.starts_with("CLASS_LOAD name=java.lang.Object ")).unwrap();
        assert!(object_at < enabled_at, "java.lang.Object was not announced by the catch-up\n{b}");
        let classes = |log: &str| lines_with(log, "CLASS_LOAD").len();
        assert!(
            classes(&b) * 10 >= classes(a) * 9,
            "the late agent heard of {} classes, the other {}",
            classes(&b),
            classes(a)
        );
    });
}

/// CLASS_LOAD_HOOK is chained in load order: the second agent is offered the first one's output.
#[test]
fn class_load_hook_chained_in_load_order() {
    for_each_jdk(|jdk| {
        let (r, b) = two(
            jdk,
            "enable=shutdown+class_load_hook,hook-edit=HookTarget:ORIGINAL:FIRST",
            "enable=shutdown+class_load_hook,hook-edit=HookTarget:FIRST:SECOND",
            "Hook",
        );
        clean(&r, &b);
        assert!(r.stdout.contains("message=SECOND"), "{}", r.describe());
        assert_eq!(lines_with(&r.log, "HOOK edited class=HookTarget").len(), 1, "{}", r.log);
        assert_eq!(lines_with(&b, "HOOK edited class=HookTarget").len(), 1, "{b}");
    });
}

/// The same library twice, and options that belong to the whole JVM given again, are refused
/// with one error line.
#[test]
fn refusals() {
    for_each_jdk(|jdk| {
        let a = agent("recorder");
        let same = run_raw(
            jdk,
            &[
                format!("-agentpath:{{shim}}=agent={}:log={{log}}", a.display()),
                format!("-agentpath:{{shim}}=agent={}:x", a.display()),
                "-cp".into(),
                "{classes}".into(),
                "Hello".into(),
            ],
        );
        assert_ne!(same.code, Some(0), "{}", same.describe());
        let err: Vec<_> =
            same.stderr.lines().chain(same.stdout.lines()).filter(|l| l.starts_with("jvmpi-shim: error:")).collect();
        assert_eq!(err.len(), 1, "{}", same.describe());
        assert!(err[0].contains("loaded already") && err[0].contains("copy"), "{}", err[0]);

        let b = recorder_copy();
        let report = run_raw(
            jdk,
            &[
                format!("-agentpath:{{shim}}=agent={}:log={{log}}", a.display()),
                format!("-agentpath:{{shim}}=report=-,agent={}:x", b.display()),
                "-cp".into(),
                "{classes}".into(),
                "Hello".into(),
            ],
        );
        assert_ne!(report.code, Some(0), "{}", report.describe());
        let err: Vec<_> = report
            .stderr
            .lines()
            .chain(report.stdout.lines())
            .filter(|l| l.starts_with("jvmpi-shim: error:"))
            .collect();
        assert_eq!(err.len(), 1, "{}", report.describe());
        assert!(err[0].contains("first"), "{}", err[0]);
    });
}
