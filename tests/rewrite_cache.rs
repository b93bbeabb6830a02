//! The start-up rewrite cache (`vm::rewrites`): the classes loaded before the legacy agent's
//! `JVM_OnLoad` switched its events on are rewritten in the first run and taken from the cache
//! in the next, and the agent sees the same events either way.
//!
//! * `method_events_are_the_same_from_the_cache`: methodagent counting the entries of every
//!   `java.lang.String…` method (classes loaded long before `JVM_OnLoad`, so instrumented by the
//!   start-up retransformation) and of the program's own, MethodsProg's call tree; a cold run,
//!   a warm one (every class of the start-up retransformation from the cache), a run with the
//!   cache file damaged (refused, everything rewritten) and one with `cache=off`: the same
//!   counts in all four, and the method names right (the cached class files name methods by
//!   numbers given out in the run that wrote them).
//! * `method_and_allocation_events_retransform_once_and_are_the_same_from_the_cache`: the same
//!   with OBJECT_ALLOC switched on after the method events, as a profiler taking times and
//!   allocation sites does: one start-up retransformation applies both plans (the one the
//!   method events deferred to the gate's opening is left out), and the allocations counted
//!   agree too.
//! * `allocation_events_are_the_same_from_the_cache`: the recorder counting OBJECT_ALLOC by
//!   class for the Allocs program, cold and warm: the same counts; in the warm run the classes
//!   loaded after the start-up retransformation (the program's own among them) come from the
//!   cache too.
//! * `the_file_used_last_is_read_ahead`: method events, then allocations, then method events
//!   twice, in one cache directory: the file read ahead while the JVM initialises is the one used
//!   last, the other plan's is read when its retransformation asks, and both give every class.

mod harness;
use harness::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn cache_dir(tag: &str, jdk: &Jdk) -> PathBuf {
    let d = fresh_log_path(&format!("rewrite-cache-{tag}-{}", jdk.feature)).with_extension("d");
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// "N classes from it, M rewritten" of the shim's start-up line.
fn cache_figures(r: &Run) -> (usize, usize) {
    let l = r.stderr_lines_with("jvmpi-shim: start-up rewrite cache ");
    assert_eq!(l.len(), 1, "one start-up retransformation\n{}", r.describe());
    let words: Vec<&str> = l[0].split_whitespace().collect();
    let at = |w: &str| words.iter().position(|x| *x == w).unwrap();
    let hits = words[at("classes") - 1].parse().unwrap();
    let misses = words[at("rewritten") - 1].parse().unwrap();
    (hits, misses)
}

/// The start-up figures of a cold and a warm run: the cold one rewrote every class (more than
/// 300), the warm one took nine in ten or more from the cache, its file read ahead while the JVM
/// initialised. Returns (classes, warm hits).
fn cold_then_warm(cold: &Run, warm: &Run) -> (usize, usize) {
    let (h0, m0) = cache_figures(cold);
    let (h1, m1) = cache_figures(warm);
    assert_eq!(h0, 0, "an empty cache gave classes\n{}", cold.describe());
    assert!(m0 > 300, "only {m0} classes rewritten at start-up\n{}", cold.describe());
    // A few class files the JDK hands the hook may differ from run to run (JDK 21: 4 of 429):
    // those are rewritten again.
    assert_eq!(h1 + m1, m0, "{}", warm.describe());
    assert!(m1 * 10 <= m0, "the warm run rewrote {m1} of {m0} classes\n{}", warm.describe());
    // The file is read while the JVM initialises, not when the retransformation asks for it.
    let line = warm.stderr_lines_with("jvmpi-shim: start-up rewrite cache ");
    assert!(line[0].ends_with("(the file read ahead)"), "{}", warm.describe());
    (m0, h1)
}

/// "N classes from it in this run, M rewritten" of the shim's line at VM death.
fn run_figures(r: &Run) -> (usize, usize) {
    let l: Vec<&str> = r
        .stderr_lines_with("jvmpi-shim: rewrite cache ")
        .into_iter()
        .filter(|l| l.contains(" in this run, "))
        .collect();
    assert_eq!(l.len(), 1, "one line at VM death\n{}", r.describe());
    let words: Vec<&str> = l[0].split_whitespace().collect();
    let at = |w: &str| words.iter().position(|x| *x == w).unwrap();
    (words[at("classes") - 1].parse().unwrap(), words[at("rewritten") - 1].parse().unwrap())
}

fn counts(r: &Run) -> BTreeMap<String, u64> {
    r.lines_with("COUNT ")
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1].to_string(), f[2].parse().unwrap())
        })
        .collect()
}

fn damage(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let mut d = std::fs::read(e.path()).unwrap();
        let n = d.len();
        d[n / 2] ^= 0x40;
        std::fs::write(e.path(), d).unwrap();
    }
}

#[test]
fn method_events_are_the_same_from_the_cache() {
    method_events_from_the_cache("methods", "");
}

/// As a profiler taking times and allocation sites at once (HPROF `cpu=times,heap=sites`):
/// method events switched on in `JVM_OnLoad`, then OBJECT_ALLOC, whose retransformation applies
/// both plans — the one the method events deferred to the gate's opening is left out.
#[test]
fn method_and_allocation_events_retransform_once_and_are_the_same_from_the_cache() {
    method_events_from_the_cache("both", ",alloc");
}

fn method_events_from_the_cache(tag: &str, extra: &str) {
    for_each_jdk(|jdk| {
        let dir = cache_dir(tag, jdk);
        let run_with = |cache: &str| {
            let opts = format!(
                "log=info,cache={cache},agent={}:log={{log}},only=java.lang.String,enable=entry+exit,count{extra}",
                agent("methodagent").display()
            );
            let r = run(jdk, &opts, "MethodsProg", &["calls"], &[]);
            r.assert_ok();
            assert!(!r.log.contains("VIOLATION"), "{}", r.describe());
            r
        };
        let d = dir.display().to_string();
        let cold = run_with(&d);
        let warm = run_with(&d);
        let (m0, _) = cold_then_warm(&cold, &warm);
        damage(&dir);
        let damaged = run_with(&d);
        assert_eq!(cache_figures(&damaged), (0, m0), "a damaged file was read\n{}", damaged.describe());
        let off = run_with("off");
        assert!(off.stderr_lines_with("jvmpi-shim: start-up rewrite cache ").is_empty(), "{}", off.describe());
        let c = counts(&cold);
        for m in ["java.lang.String.hashCode()I", "java.lang.String.length()I", "java.lang.String.charAt(I)C"] {
            assert!(c.get(m).is_some_and(|&n| n > 0), "no entry of {m} counted\n{}", cold.describe());
        }
        for (name, other) in [("warm", &warm), ("damaged", &damaged), ("off", &off)] {
            let o = counts(other);
            let differ: Vec<String> = c
                .keys()
                .chain(o.keys())
                .filter(|k| c.get(*k) != o.get(*k))
                .map(|k| format!("{k}: {:?} / {:?}", c.get(k), o.get(k)))
                .collect();
            assert!(
                differ.is_empty(),
                "JDK {}: the {name} run counted differently: {differ:?}\n{}",
                jdk.feature,
                other.describe()
            );
            // All entries, the JDK's other threads' included (a few more or less from run to run).
            let total = |r: &Run| -> f64 {
                let l = r.lines_with("TOTAL entries=");
                l.first()
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|w| w.trim_start_matches("entries=").parse().ok())
                    .unwrap()
            };
            let (a, b) = (total(&cold), total(other));
            assert!((a - b).abs() <= a / 100.0, "JDK {}: {name} run: {b} entries against {a}", jdk.feature);
            if !extra.is_empty() {
                let allocs = |r: &Run| -> f64 {
                    let l = r.lines_with("TOTAL entries=");
                    l.first()
                        .and_then(|l| l.split_whitespace().last())
                        .and_then(|w| w.trim_start_matches("allocs=").parse().ok())
                        .unwrap()
                };
                let (a, b) = (allocs(&cold), allocs(other));
                assert!(
                    a > 0.0 && (a - b).abs() <= a / 100.0,
                    "JDK {}: {name} run: {b} allocations against {a}",
                    jdk.feature
                );
                // One retransformation with both plans: no "method hooks" retransformation after it.
                assert!(other.stderr_lines_with("jvmpi-shim: method hooks ").is_empty(), "{}", other.describe());
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn allocation_events_are_the_same_from_the_cache() {
    for_each_jdk(|jdk| {
        let dir = cache_dir("alloc", jdk);
        let run_with = |cache: &str| {
            let opts = format!(
                "log=info,cache={cache},agent={}:log={{log}},enable=init+shutdown+class_load+object_alloc,alloc-filter=java.lang.String",
                agent("recorder").display()
            );
            let probe = format!("-Dprobe.lib={}", agent("recorder").display());
            let r = run(jdk, &opts, "Allocs", &["10"], &[&probe]);
            r.assert_ok();
            assert!(!r.log.contains("VIOLATION"), "{}", r.describe());
            r
        };
        let d = dir.display().to_string();
        let cold = run_with(&d);
        let warm = run_with(&d);
        let (m0, h1) = cold_then_warm(&cold, &warm);
        // The classes loaded after the start-up retransformation (the program's own among them)
        // come from the cache too.
        let (rh0, rm0) = run_figures(&cold);
        let (rh1, rm1) = run_figures(&warm);
        assert!(rh0 == 0 && rm0 > m0, "cold run: {rh0} from the cache, {rm0} rewritten\n{}", cold.describe());
        assert!(rh1 > h1 && rm1 * 10 <= rm0, "warm run: {rh1} from the cache, {rm1} rewritten\n{}", warm.describe());
        // Strings and string builders the program's and the JDK's code (the cached classes)
        // allocate: the same classes, kinds and counts.
        let groups = |r: &Run| -> Vec<String> {
            r.lines_with("ACOUNT class=java.lang.String")
                .iter()
                .map(|l| l.split(" frees=").next().unwrap().to_string())
                .collect()
        };
        assert!(
            groups(&cold).iter().any(|l| l.starts_with("ACOUNT class=java.lang.String kind=0 ")),
            "{}",
            cold.describe()
        );
        assert_eq!(groups(&cold), groups(&warm), "JDK {}\n{}", jdk.feature, warm.describe());
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Two plans in one directory (a profiler started once with method events, once with
/// allocations): the file read ahead at start-up is the one used last, so a start with the other
/// plan reads its own file when its retransformation asks for it; every class comes from the
/// cache either way.
#[test]
fn the_file_used_last_is_read_ahead() {
    for_each_jdk(|jdk| {
        let dir = cache_dir("two-plans", jdk);
        let d = dir.display().to_string();
        let methods = || {
            let opts = format!(
                "log=info,cache={d},agent={}:log={{log}},only=java.lang.String,enable=entry+exit,count",
                agent("methodagent").display()
            );
            let r = run(jdk, &opts, "MethodsProg", &["calls"], &[]);
            r.assert_ok();
            r
        };
        let allocs = || {
            let opts = format!(
                "log=info,cache={d},agent={}:log={{log}},enable=init+shutdown+object_alloc",
                agent("recorder").display()
            );
            let probe = format!("-Dprobe.lib={}", agent("recorder").display());
            let r = run(jdk, &opts, "Allocs", &["10"], &[&probe]);
            r.assert_ok();
            r
        };
        let how = |r: &Run| {
            r.stderr_lines_with("jvmpi-shim: start-up rewrite cache ")
                .first()
                .map(|l| l.to_string())
                .unwrap_or_default()
        };
        let cold = methods();
        let _ = allocs(); // its file is now the one written last
        let other = methods();
        let again = methods();
        let (_, classes) = cache_figures(&cold);
        for (r, ahead) in [(&other, false), (&again, true)] {
            let (hits, misses) = cache_figures(r);
            assert_eq!(hits + misses, classes, "{}", r.describe());
            assert!(misses * 10 <= classes, "{misses} of {classes} classes rewritten\n{}", r.describe());
            let end = if ahead { "(the file read ahead)" } else { "(the file not read ahead)" };
            assert!(how(r).ends_with(end), "JDK {}: want {end}\n{}", jdk.feature, r.describe());
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
