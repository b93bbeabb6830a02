//! A coverage agent of JCOV's `type=B` kind (tests/agents/covagent.c) on tests/java/CovProg.java:
//! CLASS_LOAD_HOOK, then CLASS_LOAD in the same thread (the agent pairs them per thread, as
//! JCOV does), and INSTRUCTION_START counted per method and offset with branch outcomes.
//! Every test runs on JDK 11, 17, 21 and 25.

mod harness;

use harness::*;

fn run_cov(jdk: &Jdk) -> Run {
    let opts = format!("agent={}:log={{log}}", agent("covagent").display());
    let r = run(jdk, &opts, "CovProg", &[], &[]);
    r.assert_ok();
    r
}

/// (count, true, false) at `offset` of `method`, from the agent's COUNT lines.
fn at(r: &Run, method: &str, offset: u32) -> (u64, u64, u64) {
    let prefix = format!("COUNT {method} {offset} ");
    let l = r.lines_with(&prefix);
    let Some(l) = l.first() else { return (0, 0, 0) };
    let f: Vec<u64> = l.split_whitespace().skip(3).map(|x| x.parse().unwrap()).collect();
    (f[0], f[1], f[2])
}

/// Exact counts: `loop(100)` three times (offsets of `javac --release 11`: 0 entry, 6
/// `if_icmpge` leaving the loop, 12 `ifne` skipping `k++`, 15 `k++`, 24 after the loop).
#[test]
fn instruction_counts_and_branch_outcomes() {
    for_each_jdk(|jdk| {
        let r = run_cov(jdk);
        assert!(r.stdout.contains("result 67"), "{}", r.describe());
        let m = "CovProg.loop(I)I";
        assert_eq!(at(&r, m, 0).0, 3, "calls\n{}", r.describe());
        assert_eq!(at(&r, m, 4).0, 303, "{}", r.describe());
        // if_icmpge: taken (loop left) once a call.
        assert_eq!(at(&r, m, 6), (303, 3, 300), "{}", r.describe());
        // ifne: taken when i % 5 != 0.
        assert_eq!(at(&r, m, 12), (300, 240, 60), "{}", r.describe());
        assert_eq!(at(&r, m, 15).0, 60, "{}", r.describe());
        assert_eq!(at(&r, m, 24).0, 3, "{}", r.describe());
        assert_eq!(at(&r, "CovProg$Late.f()I", 0).0, 1, "{}", r.describe());
    });
}

/// Every profiled class is recorded: its CLASS_LOAD arrives in the thread that got its
/// CLASS_LOAD_HOOK — also `CovProg$Late`, defined by the thread "Definer" and linked by main
/// after Definer ended (HotSpot sent CLASS_LOAD where the class was defined). Before, the shim
/// sent it from main's ClassPrepare: the agent found no hooked class there and skipped it, and
/// Definer ended with a hooked class never loaded — which JCOV frees at THREAD_END and frees
/// again when a later thread reuses the JNIEnv address (its `type=M` crash).
#[test]
fn class_load_in_the_hooking_thread() {
    for_each_jdk(|jdk| {
        let r = run_cov(jdk);
        assert!(r.lines_with("VIOLATION").is_empty(), "{}", r.describe());
        let mut classes: Vec<&str> = r.lines_with("CLASS ").iter().map(|l| l.trim_start_matches("CLASS ")).collect();
        classes.sort();
        assert_eq!(classes, ["CovProg", "CovProg$Definer", "CovProg$Late"], "{}", r.describe());
    });
}
