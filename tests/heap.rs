//! Heap events: OBJECT_ALLOC for every allocation (bytecode, reflection, JNI, the VM), exact;
//! OBJECT_FREE once per dead tracked object, inside a GC bracket; ARENA_NEW; OBJECT_MOVE and
//! ARENA_DELETE never; JNI global references. On every JDK.

mod harness;

use harness::*;

const N: usize = 1000;

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
    r
}

/// (allocs, frees) of an ACOUNT line for a class and kind.
fn counts(r: &Run, class: &str, kind: i32) -> (usize, usize) {
    let prefix = format!("ACOUNT class={class} kind={kind} size=-1 ");
    let line =
        r.log_lines.iter().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {prefix:?}\n{}", summary(r)));
    let get = |k: &str| line.split(&format!(" {k}=")).nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    (get("allocs"), get("frees"))
}

/// How many primitive-array groups of `kind` (one size each) have exactly `n` allocations and
/// `n` frees.
fn prim_groups(r: &Run, kind: i32, n: usize) -> usize {
    let want = format!(" allocs={n} frees={n}");
    r.log_lines
        .iter()
        .filter(|l| l.starts_with(&format!("ACOUNT class=(prim) kind={kind} ")) && l.ends_with(&want))
        .count()
}

fn summary(r: &Run) -> String {
    r.log_lines
        .iter()
        .filter(|l| l.starts_with("ACOUNT") || l.starts_with("ALLOC_TOTAL"))
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_allocation_reported_exactly_once_and_freed_inside_a_bracket() {
    for_each_jdk(|jdk| {
        let r = rec(
            jdk,
            "enable=init+shutdown+class_load+thread_start+object_alloc+object_free+arena_new+gc_start+gc_finish,alloc-filter=Counted",
            "Allocs",
            &[&N.to_string()],
        );
        r.assert_ok();
        clean(&r);
        let n = N;
        let all = [
            ("Counted", 0, n),      // new
            ("Counted", 2, n),      // new Counted[5]
            ("[LCountedM;", 2, n),  // new CountedM[2][3]: the outer arrays …
            ("CountedM", 2, 2 * n), // … and their sub-arrays
            ("CountedR", 2, n),     // Array.newInstance (reflection)
            ("CountedC", 0, n),     // Constructor.newInstance (reflection)
            ("CountedK", 0, n + 1), // clone(), plus the original
            ("CountedJ", 0, n),     // JNI AllocObject
            ("CountedJ", 2, n),     // JNI NewObjectArray
        ];
        for (class, kind, want) in all {
            assert_eq!(counts(&r, class, kind), (want, want), "{class} kind {kind}\n{}", summary(&r));
        }
        // Primitive arrays of each kind (bytecode), and int[333] from JNI NewIntArray.
        for kind in [4, 5, 6, 7, 8, 9, 11] {
            assert!(prim_groups(&r, kind, n) >= 1, "kind {kind}\n{}", summary(&r));
        }
        assert!(prim_groups(&r, 10, n) >= 2, "int arrays\n{}", summary(&r));
        let total = r.log_lines.iter().find(|l| l.starts_with("ALLOC_TOTAL")).unwrap();
        assert!(total.ends_with("arena_before_first_alloc=1"), "{total}");
        assert!(r.log.contains("ARENA_NEW id=1 name=Java heap"));
    });
}

#[test]
fn requested_object_alloc_for_a_pre_existing_object_and_its_free() {
    for_each_jdk(|jdk| {
        let r = rec(
            jdk,
            "enable=class_load+object_free+gc_start+gc_finish+shutdown,alloc-filter=PreExisting",
            "Allocs",
            &["10", "enable-late"],
        );
        r.assert_ok();
        clean(&r);
        assert!(!r.stdout.contains("FAIL"), "{}", r.describe());
        let id = r.log_lines.iter().find_map(|l| l.strip_prefix("MARK pre id=")).unwrap();
        assert!(r.log.contains(&format!("OBJECT_ALLOC id=0x{id} class=PreExisting is_array=0 ")), "{}", r.describe());
        assert_eq!(counts(&r, "PreExisting", 0), (1, 1));
    });
}

#[test]
fn jni_global_and_weak_references() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=globalref_alloc+globalref_free+weak_alloc+weak_free", "Allocs", &["5"]);
        r.assert_ok();
        clean(&r);
        let refs = r.log_lines.iter().find(|l| l.starts_with("REFS id=")).unwrap();
        let f = |k: &str| refs.split(&format!("{k}=")).nth(1).unwrap().split(' ').next().unwrap().to_string();
        let (id, g, w) = (f("id"), f("g"), f("w"));
        let at =
            |p: &str| r.log_lines.iter().position(|l| l == p).unwrap_or_else(|| panic!("no {p:?}\n{}", r.describe()));
        let (ga, wa) = (at(&format!("GREF_ALLOC obj={id} ref={g}")), at(&format!("WREF_ALLOC obj={id} ref={w}")));
        let (gf, wf) = (at(&format!("GREF_FREE ref={g}")), at(&format!("WREF_FREE ref={w}")));
        let refs_at = at(refs);
        assert!(ga < refs_at && wa < refs_at && refs_at < gf && gf < wf);
        // The shim's own global references (its thread table) are not reported.
        assert_eq!(r.count("GREF_ALLOC obj="), 1, "{}", r.describe());
    });
}

#[test]
fn object_move_and_arena_delete_are_enabled_but_never_sent() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=object_move+arena_delete+object_alloc,alloc-filter=Counted", "Allocs", &["10"]);
        r.assert_ok();
        clean(&r);
        assert!(r.log.contains("ENABLE object_move rc=0") && r.log.contains("ENABLE arena_delete rc=0"));
        assert!(!r.log.contains("EVENT 6 ") && !r.log.contains("EVENT 49 "), "{}", r.describe());
    });
}

#[test]
fn disabling_object_alloc_stops_the_events() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=shutdown+class_load+object_alloc,alloc-filter=Counted", "Misc", &["alloc-toggle"]);
        r.assert_ok();
        clean(&r);
        assert_eq!(counts(&r, "Counted", 0).0, 100, "only the allocations made while enabled\n{}", summary(&r));
    });
}

#[test]
fn agent_class_hook_survives_the_retransformation_that_installs_tracking() {
    for_each_jdk(|jdk| {
        let r = rec(
            jdk,
            "enable=shutdown+class_load+class_load_hook,hook-patch,alloc-filter=Counted",
            "Misc",
            &["hook-alloc"],
        );
        r.assert_ok();
        clean(&r);
        assert!(
            r.stdout.contains("before=PATCHED!") && r.stdout.contains("after=PATCHED! kept=10"),
            "{}",
            r.describe()
        );
        assert_eq!(counts(&r, "Counted", 0).0, 10, "{}", summary(&r));
    });
}

#[test]
fn call_trace_lines_stay_right_when_instrumentation_moves_bytecode() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=class_load", "LineShift", &[]);
        r.assert_ok();
        clean(&r);
        for which in ["first ", "second "] {
            let line =
                r.stdout.lines().find_map(|l| l.strip_prefix(which)).unwrap_or_else(|| panic!("{}", r.describe()));
            // "LineShift.probe:<jvmpi line> java=<java line> len=1"
            let jvmpi = line.split(' ').next().unwrap().rsplit(':').next().unwrap();
            let java = line.split(" java=").nth(1).unwrap().split(' ').next().unwrap();
            assert_eq!(jvmpi, java, "{which}call: {line}");
        }
    });
}

#[test]
fn virtual_threads_allocate_and_trace() {
    for_each_jdk(|jdk| {
        if jdk.feature < 21 {
            return;
        }
        let r = rec(jdk, "enable=shutdown+thread_start+class_load+object_alloc,alloc-filter=Counted", "Virtual", &[]);
        r.assert_ok();
        clean(&r);
        let v = r.stdout.lines().find_map(|l| l.strip_prefix("virtual ")).unwrap_or_else(|| panic!("{}", r.describe()));
        assert!(v.starts_with("Probe.callTrace:-3;Virtual.inside:"), "the virtual thread's own frames: {v}");
        assert_eq!(counts(&r, "Counted", 0).0, 5, "{}", summary(&r));
    });
}
