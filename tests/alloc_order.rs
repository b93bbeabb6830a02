//! OBJECT_ALLOC comes where HotSpot posted it: at the allocation, before any constructor runs.
//! A leak finder that keeps its own call stack from METHOD_ENTRY/EXIT (tests/agents/allocstack.c)
//! charges each allocation to the method on top of its stack; on tests/java/AllocOrder.java —
//! `new`, a `new` inside a constructor's arguments, a `new` inside a constructor, constructors
//! and arguments that throw before `super(…)`, arrays, `clone`, reflection, a JDK class, a class
//! with a finalizer, JNI `NewObject`/`NewObjectA`/`NewObjectV`/`AllocObject` — that is the
//! allocating method, never a constructor, and GetCallTrace from the handler (and from another
//! thread while the handler runs) shows the allocating line. The ID announced resolves once the
//! object is constructed; asked about from the handler, it gets an answer; objects whose
//! constructor threw get OBJECT_FREE. On every JDK.

mod harness;

use harness::*;

const N: usize = 50;

/// The source line of `// SITE:<tag>` in AllocOrder.java.
fn site(tag: &str) -> i32 {
    let src = std::fs::read_to_string(repo_root().join("tests/java/AllocOrder.java")).unwrap();
    let want = format!("// SITE:{tag}");
    src.lines().position(|l| l.trim_end().ends_with(&want)).unwrap_or_else(|| panic!("no {want}")) as i32 + 1
}

struct Alloc {
    class: String,
    charge: String,
    trace: String,
    line: i32,
}

fn allocs(r: &Run) -> Vec<Alloc> {
    r.log_lines
        .iter()
        .filter_map(|l| l.strip_prefix("ALLOC "))
        .map(|l| {
            let f = |k: &str| l.split(&format!("{k}=")).nth(1).unwrap().split(' ').next().unwrap().to_string();
            let trace = f("trace");
            let (m, line) = trace.rsplit_once(':').unwrap();
            Alloc { class: f("class"), charge: f("charge"), trace: m.to_string(), line: line.parse().unwrap() }
        })
        .collect()
}

/// (allocs, ctor_ok, late, left, frees) of a SUMMARY line.
fn summary(r: &Run, class: &str) -> [i64; 5] {
    let prefix = format!("SUMMARY class={class} ");
    let l = r
        .log_lines
        .iter()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {prefix:?}\n{}", r.describe()));
    let f = |k: &str| l.split(&format!(" {k}=")).nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    [f("allocs"), f("ctor_ok"), f("late"), f("left"), f("frees")]
}

#[test]
fn object_alloc_comes_before_the_constructor_and_is_charged_to_the_allocating_method() {
    let lib = agent("allocstack");
    for_each_jdk(|jdk| {
        let r = run(jdk, &format!("agent={}:{{log}}", lib.display()), "AllocOrder", &[], &[]);
        r.assert_ok();
        assert!(!r.stdout.contains("SIGSEGV") && !r.stderr.contains("hs_err"), "JVM crashed\n{}", r.describe());
        let mut problems = Vec::new();
        for want in [
            format!("resolved {N} of {N}"),
            format!("jni constructors threw {N} of {N}"),
            "jni args 1,2.5,3,s,4.5,5,6,7,8.5,9.5,10".to_string(),
        ] {
            if !r.stdout.contains(&want) {
                problems.push(format!("stdout lacks {want:?}"));
            }
        }
        let all = allocs(&r);
        // (class, allocating method, its site, how many at least)
        let jni = cfg!(target_arch = "x86_64"); // the variadic NewObject is hooked there
        let mut expected = vec![
            ("AoNode", "AllocOrder.allocNodes", Some("nodes"), N),
            ("AoNode", "AllocOrder.nested", Some("nested"), 2 * N),
            ("AoNode", "AoOuter.<init>", Some("outer-inner"), N),
            ("AoNode", "AllocOrder.resolving", Some("resolve"), N),
            ("AoPair", "AllocOrder.nested", Some("nested"), N),
            ("AoOuter", "AllocOrder.inConstructor", Some("outer"), N),
            ("AoThrower", "AllocOrder.throwing", Some("thrower"), N),
            ("AoArgFail", "AllocOrder.throwing", Some("argfail"), N),
            ("[AoNode", "AllocOrder.arrays", Some("array"), N),
            ("java.util.concurrent.atomic.AtomicInteger", "AllocOrder.jdkClasses", Some("atomic"), N),
            ("AoFinal", "AllocOrder.finalizable", Some("final"), N),
            ("AoClone", "AllocOrder.cloning", Some("clone-orig"), 1),
            ("AoJniA", "AllocOrder.jniNew", None, N),
            ("AoJniV", "AllocOrder.jniNew", None, N),
            ("AoJniAlloc", "AllocOrder.jniNew", None, N),
        ];
        if jni {
            expected.push(("AoJni", "AllocOrder.jniNew", None, N));
            expected.push(("AoJniThrow", "AllocOrder.jniThrow", None, N));
        }
        for (class, method, tag, n) in &expected {
            let found = all
                .iter()
                .filter(|a| {
                    a.class == *class
                        && a.charge == *method
                        && a.trace == *method
                        && tag.is_none_or(|t| a.line == site(t))
                })
                .count();
            if found != *n {
                let seen: std::collections::BTreeSet<String> = all
                    .iter()
                    .filter(|a| a.class == *class)
                    .map(|a| format!("{} / {}:{}", a.charge, a.trace, a.line))
                    .collect();
                problems.push(format!(
                    "{class}: {found} allocations charged to {method} with it on top of the trace (line {:?}), expected {n}; \
                     seen (charge / trace top): {seen:#?}",
                    tag.map(site)
                ));
            }
        }
        // A clone runs no constructor: charged to the method that called clone().
        let clones = all.iter().filter(|a| a.class == "AoClone" && a.charge == "AoClone.copy").count();
        if clones != N {
            problems.push(format!("{clones} clones charged to AoClone.copy, expected {N}"));
        }
        // Reflection: whatever JDK code makes the object, never its constructor.
        for a in all.iter().filter(|a| a.class == "AoRefl") {
            if a.charge.ends_with(".<init>") || a.trace.ends_with(".<init>") {
                problems.push(format!("AoRefl charged to {} (trace top {})", a.charge, a.trace));
                break;
            }
        }
        let ctor = all
            .iter()
            .filter(|a| a.trace == "java.lang.Object.<init>" || a.charge == "java.lang.Object.<init>")
            .count();
        if ctor > 0 {
            problems.push(format!("{ctor} allocations charged to, or traced at, java.lang.Object.<init>"));
        }
        // Every constructor of a watched class entered after its allocation was announced.
        let mut constructed =
            vec!["AoNode", "AoPair", "AoOuter", "AoThrower", "AoRefl", "AoFinal", "AoJniA", "AoJniV", "AoJniAlloc"];
        if jni {
            constructed.extend(["AoJni", "AoJniThrow"]);
        }
        for class in constructed {
            let [a, ok, late, _, _] = summary(&r, class);
            if late != 0 || ok != a || a == 0 {
                problems
                    .push(format!("{class}: {a} OBJECT_ALLOC, {ok} constructors entered after theirs, {late} before"));
            }
        }
        // Objects whose construction threw are garbage: OBJECT_FREE (by the last GC bracket).
        let mut thrown = vec!["AoThrower", "AoArgFail"];
        if jni {
            thrown.push("AoJniThrow");
        }
        for class in thrown {
            let [a, _, _, _, frees] = summary(&r, class);
            if a != N as i64 || frees != a {
                problems.push(format!("{class}: {a} OBJECT_ALLOC, {frees} OBJECT_FREE (the constructor threw)"));
            }
        }
        if !r.log_lines.iter().any(|l| l == "REQ rc=0 seen=1 same=1") {
            problems.push("RequestEvent(OBJECT_ALLOC) of the announced ID from the handler: no matching answer".into());
        }
        let sampled = format!("SAMPLED top=AllocOrder.allocNodes:{}", site("nodes"));
        if !r.log_lines.contains(&sampled) {
            problems.push(format!(
                "another thread's trace while the handler ran: want {sampled:?}, got {:?}",
                r.lines_with("SAMPLED")
            ));
        }
        assert!(problems.is_empty(), "JDK {}:\n{}\n{}", jdk.feature, problems.join("\n"), r.describe());
    });
}
