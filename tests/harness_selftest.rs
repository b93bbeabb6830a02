//! Self-test of the test harness (tests/harness/mod.rs), independent of the shim's features:
//! a plain JVMTI agent and a trivial Java program run on every JDK.

mod harness;

use harness::*;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn jdks_are_what_they_claim() {
    let all = jdks();
    eprintln!("JDKs: {:?}", all.iter().map(|j| j.feature).collect::<Vec<_>>());
    assert!(all.iter().any(|j| j.feature == 17) || std::env::var("JVMPI_SHIM_JDKS").is_ok());
    for_each_jdk(|jdk| {
        let r = run_raw(jdk, &s(&["-version"]));
        r.assert_ok();
        let first = r.stderr.lines().next().unwrap_or("");
        let want = format!("version \"{}", jdk.feature);
        assert!(first.contains(&want), "expected {want:?} in the first line of -version:\n{}", r.describe());
        eprintln!("  {} ({:.0?})", first, r.elapsed);
    });
}

#[test]
fn noop_jvmti_agent_loads_on_every_jdk() {
    let agent = agent("noop_jvmti");
    assert!(agent.is_file());
    for_each_jdk(|jdk| {
        let r = run_raw(
            jdk,
            &[format!("-agentpath:{}={{log}}", agent.display()), "-cp".into(), "{classes}".into(), "Hello".into()],
        );
        r.assert_ok();
        assert_eq!(r.stdout.trim(), "hello", "{}", r.describe());
        let expected = vec![format!("loaded {}", r.log_path.display()), "vminit".to_string()];
        assert_eq!(r.log_lines, expected, "{}", r.describe());
        assert_eq!(r.count("loaded "), 1);
        assert_eq!(r.lines_with("vminit"), vec!["vminit"]);
        assert!(r.significant_stderr().is_empty(), "unexpected stderr:\n{}", r.describe());
        eprintln!("  run took {:.0?}", r.elapsed);
    });
}

#[test]
fn agent_returning_error_stops_the_jvm() {
    // No options: the agent refuses to load, and the JVM must fail.
    let agent = agent("noop_jvmti");
    for_each_jdk(|jdk| {
        let r = run_raw(
            jdk,
            &[format!("-agentpath:{}", agent.display()), "-cp".into(), "{classes}".into(), "Hello".into()],
        );
        assert_ne!(r.code, Some(0), "{}", r.describe());
        assert!(r.stderr.contains("noop_jvmti: options must be a log file path"), "{}", r.describe());
        // HotSpot prints "Error occurred during initialization of VM" and "agent library failed
        // ..." on *stdout*, not stderr.
        assert!(r.stdout.contains("Error occurred during initialization of VM"), "{}", r.describe());
        assert!(!r.stdout.contains("hello"), "{}", r.describe());
        assert_eq!(r.log, "");
        assert!(r.log_lines.is_empty());
    });
}

#[test]
fn exit_code_stderr_and_log_placeholder() {
    for_each_jdk(|jdk| {
        let r = run_raw(
            jdk,
            &s(&[
                "-cp",
                "{classes}",
                "Hello",
                "write",
                "{log}",
                "first",
                "write",
                "{log}",
                "second",
                "err",
                "oops",
                "exit",
                "3",
            ]),
        );
        r.assert_code(3);
        assert_eq!(r.stdout.trim(), "hello");
        assert_eq!(r.stderr_lines_with("oops"), vec!["oops"], "{}", r.describe());
        assert_eq!(r.log_lines, vec!["first", "second"]);
        assert_eq!(r.lines_with("s"), vec!["second"]);
        assert_eq!(r.count("f"), 1);
        assert!(r.log_path.starts_with(target_dir().join("test-logs")));
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            r.assert_ok();
        }));
        let msg = panic_message(&*caught.expect_err("assert_ok must panic on exit code 3"));
        assert!(msg.contains("oops") && msg.contains("second") && msg.contains("Some(3)"), "{msg}");
    });
}

#[test]
fn log_paths_are_unique() {
    let a = fresh_log_path("x");
    let b = fresh_log_path("x");
    assert_ne!(a, b);
}

#[test]
fn timeout_kills_and_panics() {
    let jdk = jdks().into_iter().next().unwrap();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        run_raw_timeout(&jdk, &s(&["-cp", "{classes}", "Hello", "sleep", "60000"]), Duration::from_secs(3))
    }));
    let msg = panic_message(&*caught.expect_err("a 60 s sleep must time out after 3 s"));
    assert!(msg.contains("timed out"), "{msg}");
}

#[test]
fn for_each_jdk_names_the_failing_jdk() {
    let all = jdks();
    let last = all.last().unwrap().feature;
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        for_each_jdk(|jdk| {
            if jdk.feature == last {
                panic!("boom");
            }
        })
    }));
    let msg = panic_message(&*caught.expect_err("for_each_jdk must re-panic"));
    assert_eq!(msg, format!("on JDK {last}: boom"));
}

#[test]
fn shim_builds() {
    let so = shim();
    assert!(so.is_file(), "{}", so.display());
    assert_eq!(so.file_name().unwrap(), "libjvmpi_shim.so");
    assert_eq!(so.parent().unwrap(), profile_dir());
}
