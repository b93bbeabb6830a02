//! JNI natives that live in the legacy agent's library: HotSpot searched agent libraries for a
//! native method's `Java_…` function after the class loader's own libraries, and old tools
//! relied on it (a Java helper class with `native` methods, implemented by the agent, no
//! `System.loadLibrary`). Through the shim the JVM searches only the shim's library, so the shim
//! binds them. Every test runs on JDK 11, 17, 21 and 25.

mod harness;

use harness::*;
use std::path::PathBuf;
use std::process::Command;

/// What tests/java/NativeHelper.java prints when every native the agent exports is bound.
const BOUND: [&str; 11] = [
    "cpuTime=positive",
    "twice(int)=42",
    "twice(String)=abab",
    "sum(int[])=6",
    "sum(long[])=6000",
    "agent_name=nativeagent(init done)",
    // The agent exports both `Java_NativeHelper_which` (returns 1) and `…which__I` (returns 2):
    // the short name is looked for first.
    "which=1",
    "plus=42",
    "Inner.nine=9",
    // No library exports it: the JVM's own lookup still fails as it should.
    "missing=UnsatisfiedLinkError",
    "done",
];

fn native_agent() -> String {
    agent("nativeagent").display().to_string()
}

/// The program's result lines (those of the form `name=value`, and `done`).
fn results(r: &Run) -> Vec<&str> {
    r.stdout.lines().filter(|l| l.contains('=') || *l == "done").collect()
}

/// The program ran and every native was bound and called; the shim said so at info level and
/// warned about nothing.
#[track_caller]
fn all_bound(r: &Run) {
    r.assert_ok();
    assert_eq!(results(r), BOUND, "{}", r.describe());
    let bound = r.stderr_lines_with("jvmpi-shim: bound ");
    let of = |class: &str| bound.iter().filter(|l| l.contains(&format!(" of {class} "))).count();
    assert_eq!(of("NativeHelper"), 1, "one info line for NativeHelper\n{}", r.describe());
    assert_eq!(of("NativeHelper$Inner"), 1, "one info line for NativeHelper$Inner\n{}", r.describe());
    let helper = bound.iter().find(|l| l.contains(" of NativeHelper ")).unwrap();
    for sym in [
        "Java_NativeHelper_cpuTime",
        "Java_NativeHelper_twice__I",
        "Java_NativeHelper_twice__Ljava_lang_String_2",
        "Java_NativeHelper_sum___3I",
        "Java_NativeHelper_sum___3J",
        "Java_NativeHelper_agent_1name",
        "Java_NativeHelper_which",
        "Java_NativeHelper_plus",
    ] {
        assert!(helper.contains(&format!("→ {sym}")), "{sym} not named in {helper:?}\n{}", r.describe());
    }
    assert!(!helper.contains("which__I"), "the long name of which(int) was bound: {helper:?}");
    assert!(!helper.contains("missing"), "{helper:?}");
    assert!(!r.stderr.contains("jvmpi-shim: warning") && !r.stderr.contains("jvmpi-shim: error"), "{}", r.describe());
}

#[test]
fn agent_natives_are_bound_and_called() {
    let lib = native_agent();
    for_each_jdk(|jdk| {
        let r = run(jdk, &format!("log=info,agent={lib}"), "NativeHelper", &[], &[]);
        all_bound(&r);
        assert!(r.stderr.contains("exports 10 JNI native functions"), "{}", r.describe());
    });
}

/// A class prepared before the legacy `JVM_OnLoad` ran (here: loaded by the agent itself inside
/// `JVM_OnLoad`) is bound when the shim's event gate opens.
#[test]
fn classes_prepared_before_the_agent_ran_are_bound_too() {
    let lib = native_agent();
    for_each_jdk(|jdk| {
        let r = run(jdk, &format!("log=info,agent={lib}:preload"), "NativeHelper", &[], &[]);
        assert!(r.stdout.starts_with("nativeagent: NativeHelper loaded in JVM_OnLoad\n"), "{}", r.describe());
        all_bound(&r);
        let early = r.stderr_lines_with("jvmpi-shim: bound ");
        assert!(
            early.iter().any(|l| l.contains(" of NativeHelper ") && l.contains("already prepared when")),
            "NativeHelper should have been bound by the catch-up\n{}",
            r.describe()
        );
    });
}

/// `-Xrunjvmpi_shim:agent=…` (the deferred start) binds them the same way.
#[test]
fn agent_natives_are_bound_under_xrun() {
    let lib = native_agent();
    let shim_dir = shim().parent().unwrap().display().to_string();
    for_each_jdk(|jdk| {
        let args = vec![
            format!("-Xrunjvmpi_shim:log=info,agent={lib}"),
            "-cp".into(),
            "{classes}".into(),
            "NativeHelper".into(),
        ];
        let r = run_raw_env(jdk, &args, &[("LD_LIBRARY_PATH", shim_dir.clone())]);
        all_bound(&r);
    });
}

/// Builds examples/legacy_hprof_lite.c, a legacy agent with no `Java_…` functions (once per
/// process; built under a temporary name and renamed, so parallel test processes never see a
/// half-written library).
fn example_agent() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = repo_root();
            let dir = target_dir().join("test-agents");
            std::fs::create_dir_all(&dir).unwrap();
            let out = dir.join("liblegacy_hprof_lite.so");
            let tmp = dir.join(format!(".liblegacy_hprof_lite.so.{}.tmp", std::process::id()));
            let inc = jdk_include();
            let res = Command::new("gcc")
                .args(["-shared", "-fPIC", "-O1", "-I"])
                .arg(root.join("shim"))
                .arg("-I")
                .arg(&inc)
                .arg("-I")
                .arg(inc.join("linux"))
                .arg("-o")
                .arg(&tmp)
                .arg(root.join("examples/legacy_hprof_lite.c"))
                .output()
                .expect("running gcc");
            assert!(
                res.status.success(),
                "gcc failed on legacy_hprof_lite.c:\n{}{}",
                String::from_utf8_lossy(&res.stdout),
                String::from_utf8_lossy(&res.stderr)
            );
            std::fs::rename(&tmp, &out).expect("rename the built agent into place");
            out
        })
        .clone()
}

/// An agent that exports no JNI natives: the shim notes it once (debug) and does nothing more.
#[test]
fn an_agent_without_natives_loads_as_before() {
    let lib = example_agent().display().to_string();
    for_each_jdk(|jdk| {
        let r = run(jdk, &format!("log=debug,agent={lib}:file={{log}}"), "Hello", &[], &[]);
        r.assert_ok();
        assert!(r.stdout.contains("hello"), "{}", r.describe());
        assert_eq!(
            r.stderr_lines_with("jvmpi-shim: ").iter().filter(|l| l.contains("exports no JNI native")).count(),
            1,
            "{}",
            r.describe()
        );
        assert!(r.stderr_lines_with("jvmpi-shim: bound ").is_empty(), "{}", r.describe());
        assert!(
            !r.stderr.contains("jvmpi-shim: warning") && !r.stderr.contains("jvmpi-shim: error"),
            "{}",
            r.describe()
        );
        assert!(!r.log.is_empty(), "the agent wrote no report\n{}", r.describe());
    });
}
