//! CLASS_LOAD_HOOK for the classes that were loaded before the agent started (java.lang.Object,
//! String, Thread, most of java.base): offered to the agent's hook once, before JVM_INIT_DONE;
//! the agent's change takes effect, is made to the class's own bytes (before the shim's
//! allocation instrumentation) and survives the retransformations that switch allocation
//! tracking on and off; a change retransformation rejects is one log line. On every JDK.
//!
//! The recorder's `hook-edit` replaces a CONSTANT_Utf8 entry of a named class: java.lang.Thread's
//! "Thread-" shows in the default name of every new thread, so a Java program sees the patch of
//! a JDK class that was loaded long before the agent; java.lang.Boolean's field "value" renamed
//! is a schema change, which retransformation refuses.

mod harness;

use harness::*;
use std::collections::BTreeMap;

fn rec(jdk: &Jdk, agent_opts: &str, main: &str, args: &[&str]) -> Run {
    let lib = agent("recorder");
    let opts = format!("agent={}:log={{log}},{agent_opts}", lib.display());
    let probe = format!("-Dprobe.lib={}", lib.display());
    run(jdk, &opts, main, args, &[&probe])
}

fn clean(r: &Run) -> &Run {
    let v: Vec<_> = r.log_lines.iter().filter(|l| l.starts_with("VIOLATION")).take(10).collect();
    assert!(v.is_empty(), "JVMPI promises broken: {v:#?}\n{}", r.describe());
    assert!(!r.stdout.contains("SIGSEGV") && !r.stderr.contains("hs_err"), "JVM crashed\n{}", r.describe());
    let fails: Vec<_> = r.stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "checks failed: {fails:#?}\n{}", r.describe());
    r
}

/// Class name → the log-line indices of its `HOOK class=` lines.
fn offers(r: &Run) -> BTreeMap<&str, Vec<usize>> {
    let mut m: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, l) in r.log_lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("HOOK class=") {
            m.entry(rest.split(' ').next().unwrap()).or_default().push(i);
        }
    }
    m
}

/// No class was offered twice.
fn each_once(r: &Run, offers: &BTreeMap<&str, Vec<usize>>) {
    let twice: Vec<_> = offers.iter().filter(|(_, v)| v.len() > 1).map(|(k, v)| (*k, v.len())).collect();
    assert!(twice.is_empty(), "classes offered more than once: {twice:?}\n{}", r.describe());
}

fn stdout_line<'a>(r: &'a Run, prefix: &str) -> &'a str {
    r.stdout.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix:?} line\n{}", r.describe()))
}

/// (allocs, frees) of the recorder's ACOUNT line for a class of normal objects.
fn allocs(r: &Run, class: &str) -> usize {
    let prefix = format!("ACOUNT class={class} kind=0 size=-1 ");
    let line = r
        .log_lines
        .iter()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {prefix:?}\n{}", r.describe()));
    line.split(" allocs=").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap()
}

const THREAD_PATCH: &str = "java/lang/Thread:Thread-:PATCHD-";

#[test]
fn hook_sees_classes_loaded_before_the_agent_started() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=init+class_load_hook,hook-log", "Early", &[]);
        r.assert_ok();
        clean(&r);
        let offers = offers(&r);
        each_once(&r, &offers);
        let init =
            r.log_lines.iter().position(|l| l.starts_with("INIT_DONE")).unwrap_or_else(|| panic!("{}", r.describe()));
        for c in ["java/lang/Object", "java/lang/String", "java/lang/Class", "java/lang/Thread", "java/lang/System"] {
            let at = offers.get(c).unwrap_or_else(|| panic!("{c} was not offered to the hook\n{}", r.describe()));
            assert!(at[0] < init, "{c} offered after JVM_INIT_DONE\n{}", r.describe());
        }
        let early = offers.values().filter(|v| v[0] < init).count();
        assert!(early >= 200, "only {early} classes offered before JVM_INIT_DONE\n{}", r.describe());
        // The program's own class comes later, through the ordinary path.
        assert!(offers.get("Early").is_some_and(|v| v[0] > init), "{}", r.describe());
        assert!(stdout_line(&r, "name ").starts_with("name Thread-"), "{}", r.describe());
    });
}

#[test]
fn early_class_patch_takes_effect_and_survives_allocation_tracking_on_and_off() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, &format!("enable=class_load_hook,hook-log,hook-edit={THREAD_PATCH}"), "Early", &["toggle"]);
        r.assert_ok();
        clean(&r);
        for prefix in ["name ", "name-on ", "name-off "] {
            let l = stdout_line(&r, prefix);
            assert!(
                l.starts_with(&format!("{prefix}PATCHD-")),
                "{l:?}: the agent's change to java.lang.Thread is missing\n{}",
                r.describe()
            );
        }
        let offers = offers(&r);
        each_once(&r, &offers);
        assert_eq!(r.count("HOOK edited class=java/lang/Thread "), 1, "{}", r.describe());
        assert!(r.stderr_lines_with("jvmpi-shim:").is_empty(), "{}", r.describe());
    });
}

#[test]
fn agent_sees_own_bytes_and_instrumentation_comes_after_its_change() {
    for_each_jdk(|jdk| {
        // OBJECT_ALLOC is enabled in JVM_OnLoad: every loaded class is instrumented before the
        // gate opens. The agent must still see the classes' own bytes (no JvmpiShimTracker: the
        // recorder logs a VIOLATION), and its copy of java.lang.Object must be instrumented
        // (the Counted allocations are reported) through every switch.
        let opts = format!(
            "enable=shutdown+class_load+object_alloc+class_load_hook,hook-log,hook-edit=java/lang/Object::+{THREAD_PATCH},alloc-filter=Counted"
        );
        let r = rec(jdk, &opts, "Early", &["tracked"]);
        r.assert_ok();
        clean(&r);
        let offers = offers(&r);
        each_once(&r, &offers);
        assert_eq!(r.count("HOOK edited class=java/lang/Object "), 1, "{}", r.describe());
        assert_eq!(allocs(&r, "Counted"), 15, "{}", r.describe());
        assert!(stdout_line(&r, "name ").starts_with("name PATCHD-"), "{}", r.describe());
        assert!(stdout_line(&r, "name-off ").starts_with("name-off PATCHD-"), "{}", r.describe());
        assert!(stdout_line(&r, "name-on ").starts_with("name-on PATCHD-"), "{}", r.describe());
    });
}

#[test]
fn change_that_retransformation_rejects_is_one_log_line_and_the_class_keeps_its_bytes() {
    for_each_jdk(|jdk| {
        let opts = format!("enable=class_load_hook,hook-log,hook-edit=java/lang/Boolean:value:VALUE+{THREAD_PATCH}");
        let r = rec(jdk, &opts, "Early", &["toggle"]);
        r.assert_ok();
        clean(&r);
        assert_eq!(r.count("HOOK edited class=java/lang/Boolean "), 1, "{}", r.describe());
        let errs = r.stderr_lines_with("jvmpi-shim:");
        assert!(
            errs.len() == 1 && errs[0].starts_with("jvmpi-shim: ") && errs[0].contains("java.lang.Boolean"),
            "expected one line about java.lang.Boolean: {errs:#?}\n{}",
            r.describe()
        );
        assert_eq!(stdout_line(&r, "boolean "), "boolean true false true", "{}", r.describe());
        // The other classes got their changes.
        for prefix in ["name ", "name-on ", "name-off "] {
            assert!(stdout_line(&r, prefix).starts_with(&format!("{prefix}PATCHD-")), "{}", r.describe());
        }
        each_once(&r, &offers(&r));
    });
}
