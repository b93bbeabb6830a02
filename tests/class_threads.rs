//! CLASS_LOAD in the thread that defined the class (tests/agents/methodtable.c, an allocation
//! profiler written like NiagaraST's, on tests/java/ClassThreads.java). NiagaraST keeps its
//! method table without a lock and crashed on javac (a double free, a NULL `strcpy` in
//! `Method_List::addMethod`) when the shim announced a class from its linker thread, or from
//! the thread that linked it first, while main announced its own.
//! Every test runs on JDK 11, 17, 21 and 25.

mod harness;

use harness::*;

#[test]
fn class_load_in_the_defining_thread_never_two_at_once() {
    for_each_jdk(|jdk| {
        let opts = format!("agent={}:log={{log}}", agent("methodtable").display());
        let r = run(jdk, &opts, "ClassThreads", &[], &[]);
        r.assert_ok();
        assert!(r.stdout.contains("done "), "{}", r.describe());
        assert!(r.lines_with("VIOLATION").is_empty(), "{}", r.describe());
        let classes = r.lines_with("CLASS ClassThreads$A");
        assert_eq!(classes.len(), 24, "{}", r.describe());
        assert!(classes.iter().all(|l| l.ends_with(" main")), "{}", r.describe());
        let total = r.lines_with("TOTAL ");
        assert_eq!(total.len(), 1, "{}", r.describe());
        assert!(total[0].contains(" overlaps=0 "), "{}", r.describe());
        assert!(total[0].contains("unknown_frames=0"), "{}", r.describe());
    });
}

/// NiagaraST's option parser skips to the next `,` or blank without looking for the NUL: past
/// its last option it reads what follows the string, and refused its own options (a usage
/// line, exit 255) when that memory held a comma before any blank. The shim's options string
/// is followed by a blank.
#[test]
fn option_parsers_that_run_past_the_nul_meet_a_blank() {
    for_each_jdk(|jdk| {
        let opts = format!("agent={}:log={{log}},only=ClassThreads$A", agent("methodtable").display());
        let r = run(jdk, &opts, "ClassThreads", &[], &[]);
        r.assert_ok();
        assert_eq!(r.lines_with("OPTIONS_SCAN"), ["OPTIONS_SCAN stops at a blank"], "{}", r.describe());
    });
}
