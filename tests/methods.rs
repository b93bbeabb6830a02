//! METHOD_ENTRY, METHOD_ENTRY2, METHOD_EXIT and INSTRUCTION_START, through bytecode
//! instrumentation (the default) and through JVMTI MethodEntry/MethodExit (`methods=jvmti`),
//! with the agent of tests/agents/methodagent.c and the program tests/java/MethodsProg.java.
//! Every test runs on JDK 11, 17, 21 and 25.

mod harness;

use harness::*;
use jvmpi_shim::bci::{ClassEditor, Instruction};

fn method_agent() -> String {
    agent("methodagent").display().to_string()
}

fn run_prog(jdk: &Jdk, shim_opts: &str, agent_opts: &str, mode: &str) -> Run {
    let opts = format!("{shim_opts}agent={}:log={{log}},only=MethodsProg,{agent_opts}", method_agent());
    let r = run(jdk, &opts, "MethodsProg", &[mode], &[]);
    r.assert_ok();
    assert!(!r.log.contains("VIOLATION"), "{}", r.describe());
    r
}

/// ENTRY/EXIT lines without the thread, all of one thread.
fn calls(r: &Run) -> Vec<String> {
    let lines: Vec<&str> =
        r.log_lines.iter().map(String::as_str).filter(|l| l.starts_with("ENTRY ") || l.starts_with("EXIT ")).collect();
    let thread = |l: &str| l.split_whitespace().nth(1).unwrap_or("").to_string();
    let first = lines.first().map(|l| thread(l)).unwrap_or_default();
    assert!(lines.iter().all(|l| thread(l) == first), "events from several threads\n{}", r.describe());
    lines
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {}", f[0], f[2].trim_start_matches("MethodsProg."))
        })
        .collect()
}

fn fib_calls(n: u32, v: &mut Vec<String>) {
    v.push("ENTRY fib(I)I".into());
    if n >= 2 {
        fib_calls(n - 1, v);
        fib_calls(n - 2, v);
    }
    v.push("EXIT fib(I)I".into());
}

/// The program's call tree in `calls` mode; `native`: whether the native `mark` is in it.
fn expected_calls(native: bool) -> Vec<String> {
    let mut v = vec!["ENTRY main([Ljava/lang/String;)V".to_string()];
    fib_calls(4, &mut v);
    v.push("ENTRY catcher()I".into());
    for _ in 0..3 {
        v.push("ENTRY thrower(I)I".into());
    }
    for _ in 0..3 {
        // Left by the exception.
        v.push("EXIT thrower(I)I".into());
    }
    v.push("EXIT catcher()I".into());
    v.push("ENTRY <init>(I)V".into());
    v.push("EXIT <init>(I)V".into());
    if native {
        v.push("ENTRY mark(Ljava/lang/Object;)V".into());
        v.push("EXIT mark(Ljava/lang/Object;)V".into());
    }
    v.push("ENTRY twice()I".into());
    v.push("EXIT twice()I".into());
    v.push("EXIT main([Ljava/lang/String;)V".into());
    v
}

/// ENTRY2 lines: method → receiver.
fn receivers(r: &Run) -> Vec<(String, String)> {
    r.lines_with("ENTRY2 ")
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[2].trim_start_matches("MethodsProg.").to_string(), f[3].trim_start_matches("obj=").to_string())
        })
        .collect()
}

fn marked(r: &Run) -> String {
    r.lines_with("MARK obj=").first().expect("MARK line").trim_start_matches("MARK obj=").to_string()
}

/// Instrumentation: exact calls in order, exits by exception, ENTRY2 receivers, and
/// GetCallTrace inside METHOD_ENTRY (the entered method on top, at its first line).
#[test]
fn entry_exit_and_receivers_by_instrumentation() {
    for_each_jdk(|jdk| {
        let r = run_prog(jdk, "", "enable=entry+entry2+exit,trace", "calls");
        assert!(r.stdout.contains("result 8"), "{}", r.describe());
        // The native `mark` (implemented by the agent library) is wrapped: it is in the tree.
        assert_eq!(calls(&r), expected_calls(true), "{}", r.describe());
        assert_eq!(r.count("TRACE ok"), expected_calls(true).len() / 2, "{}", r.describe());
        let rec = receivers(&r);
        let mark = marked(&r);
        assert_ne!(mark, "(nil)");
        assert!(rec.contains(&("twice()I".to_string(), mark)), "{rec:?}\n{}", r.describe());
        assert!(rec.contains(&("fib(I)I".to_string(), "(nil)".to_string())), "static: NULL");
        // Constructors: no receiver before super() (documented).
        assert!(rec.contains(&("<init>(I)V".to_string(), "(nil)".to_string())), "{rec:?}");
    });
}

/// METHOD_ENTRY2 alone, as a tool that wants receivers enables it: every call in order (the
/// static ones on the hot path after their first event, with no object), the receivers of
/// instance methods, and no METHOD_ENTRY.
#[test]
fn entry2_alone_gives_every_call_and_its_receiver() {
    for_each_jdk(|jdk| {
        let r = run_prog(jdk, "", "enable=entry2+exit", "calls");
        assert!(r.stdout.contains("result 8"), "{}", r.describe());
        assert_eq!(r.count("ENTRY "), 0, "no METHOD_ENTRY was asked for\n{}", r.describe());
        let seen: Vec<String> = r
            .log_lines
            .iter()
            .filter(|l| l.starts_with("ENTRY2 ") || l.starts_with("EXIT "))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                format!(
                    "{} {}",
                    if f[0] == "ENTRY2" { "ENTRY" } else { "EXIT" },
                    f[2].trim_start_matches("MethodsProg.")
                )
            })
            .collect();
        assert_eq!(seen, expected_calls(true), "{}", r.describe());
        let rec = receivers(&r);
        assert!(rec.contains(&("twice()I".to_string(), marked(&r))), "{rec:?}\n{}", r.describe());
        assert!(rec.iter().filter(|(m, _)| m == "fib(I)I").all(|(_, o)| o == "(nil)"), "static: NULL\n{rec:?}");
    });
}

/// Native methods of the program's own library on the default path (wrapped with a JVMTI
/// native method prefix): one bound by its JNI name, one registered with RegisterNatives, one
/// that throws; two call back into Java. Exact calls in order, nesting, the exit by exception,
/// the receiver, and GetCallTrace inside METHOD_ENTRY (the native on top, line -3, shown once).
#[test]
fn native_methods_by_instrumentation() {
    let lib = agent("methodnatives");
    for_each_jdk(|jdk| {
        let opts = format!("agent={}:log={{log}},only=MethodsProg,enable=entry+entry2+exit,trace", method_agent());
        let r = run(jdk, &opts, "MethodsProg", &["natives"], &[&format!("-Dnatives.lib={}", lib.display())]);
        r.assert_ok();
        assert!(!r.log.contains("VIOLATION"), "{}", r.describe());
        assert!(r.stdout.contains("result 110"), "{}", r.describe());
        let mut v = vec!["ENTRY main([Ljava/lang/String;)V".to_string(), "ENTRY nativeFib(I)I".into()];
        fib_calls(3, &mut v);
        v.push("EXIT nativeFib(I)I".into());
        for m in ["<init>(I)V", "mark(Ljava/lang/Object;)V"] {
            v.push(format!("ENTRY {m}"));
            v.push(format!("EXIT {m}"));
        }
        for m in ["ENTRY nativeTwice()I", "ENTRY twice()I", "EXIT twice()I", "EXIT nativeTwice()I"] {
            v.push(m.into());
        }
        // Left by the exception the native threw.
        v.push("ENTRY nativeThrow(I)I".into());
        v.push("EXIT nativeThrow(I)I".into());
        v.push("EXIT main([Ljava/lang/String;)V".into());
        assert_eq!(calls(&r), v, "{}", r.describe());
        assert_eq!(r.count("TRACE ok"), v.len() / 2, "{}", r.describe());
        // A native method is one frame, at line -3, under what it calls back; main calls it.
        let caller = |m: &str| {
            r.lines_with(&format!("CALLER MethodsProg.{m} ")).first().map(|l| l.to_string()).unwrap_or_default()
        };
        assert_eq!(caller("fib(I)I"), "CALLER MethodsProg.fib(I)I MethodsProg.nativeFib(I)I -3", "{}", r.describe());
        assert_eq!(caller("twice()I"), "CALLER MethodsProg.twice()I MethodsProg.nativeTwice()I -3", "{}", r.describe());
        assert!(
            caller("nativeThrow(I)I")
                .starts_with("CALLER MethodsProg.nativeThrow(I)I MethodsProg.main([Ljava/lang/String;)V "),
            "{}",
            r.describe()
        );
        // The renamed natives are no methods of the class to the agent.
        assert!(!r.log.contains("jvmpiShim$"), "{}", r.describe());
        let rec = receivers(&r);
        assert!(rec.contains(&("nativeTwice()I".to_string(), marked(&r))), "{rec:?}\n{}", r.describe());
        assert!(rec.contains(&("nativeFib(I)I".to_string(), "(nil)".to_string())), "static: NULL");
    });
}

/// The JVMTI path: the same tree, with the native method, and the constructor's receiver.
#[test]
fn entry_exit_and_receivers_by_jvmti_events() {
    for_each_jdk(|jdk| {
        let r = run_prog(jdk, "methods=jvmti,", "enable=entry+entry2+exit,trace", "calls");
        assert_eq!(calls(&r), expected_calls(true), "{}", r.describe());
        let rec = receivers(&r);
        let mark = marked(&r);
        assert!(rec.contains(&("twice()I".to_string(), mark.clone())), "{rec:?}");
        assert!(rec.contains(&("<init>(I)V".to_string(), mark)), "{rec:?}");
    });
}

/// INSTRUCTION_START: offsets of the original class file, outcomes of every kind of branch.
#[test]
fn instruction_start_outcomes() {
    let bytes = std::fs::read(classes().join("MethodsProg.class")).unwrap();
    let ce = ClassEditor::parse(&bytes).unwrap();
    let m = ce.find_method("branches", "(IILjava/lang/Object;Ljava/lang/Object;)I").unwrap();
    let ed = ce.method_editor(m).unwrap().unwrap();
    let insn_at =
        |off: u32| (0..ed.len()).find(|&k| ed.original_offset(k) == off).map(|k| ed.instructions()[k].clone());
    for_each_jdk(|jdk| {
        let r = run_prog(jdk, "", "enable=insn", "branches");
        let lines: Vec<Vec<String>> = r
            .lines_with("INSN MethodsProg.branches(")
            .iter()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect();
        // Three calls; every instruction reported is one of the original code.
        assert_eq!(lines.iter().filter(|f| f[2] == "0").count(), 3, "{}", r.describe());
        let mut ifs = Vec::new();
        let mut switches = Vec::new();
        for f in &lines {
            let off: u32 = f[2].parse().unwrap();
            let insn = insn_at(off).unwrap_or_else(|| panic!("offset {off} is no instruction\n{}", r.describe()));
            let n = |i: usize| f[i].parse::<i32>().unwrap();
            match insn {
                Instruction::Tableswitch(_) => switches.push(format!("table {} {} {}", n(4), n(5), n(6))),
                Instruction::Lookupswitch(_) => switches.push(format!("lookup {} {}", n(4), n(5))),
                i if jvmpi_shim::bci::branch_target(&i).is_some() && !matches!(i, Instruction::Goto(_)) => {
                    ifs.push(f[3].trim_start_matches("is_true=").parse::<u8>().unwrap())
                }
                _ => {}
            }
        }
        // `if (cond) …` compiles to a branch around the body: taken when cond is false.
        let first: Vec<u8> = vec![1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1, 0];
        assert_eq!(ifs[..16], first[..], "{}", r.describe());
        // (0, 1000, null, null): a == 0, a < b, o == p, o == null.
        let second: Vec<u8> = vec![0, 1, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1];
        assert_eq!(ifs[16..32], second[..]);
        assert_eq!(
            switches,
            ["table 3 1 4", "lookup 1 3", "table 0 1 4", "lookup 2 3", "table 9 1 4", "lookup 3 3"],
            "{}",
            r.describe()
        );
        assert!(r.stdout.contains("result "), "{}", r.describe());
    });
}

/// A coverage-style agent (fails JVM_OnLoad if an event is refused): exact per-method counts.
#[test]
fn coverage_agent_counts() {
    for_each_jdk(|jdk| {
        let r = run_prog(jdk, "log=info,", "enable=entry+insn,count", "calls");
        // Only entries are wanted: no exit hooks, one native call per Java call.
        assert_eq!(
            r.stderr_lines_with("jvmpi-shim: method hooks \"entry + instructions\": ").len(),
            1,
            "{}",
            r.describe()
        );
        let count = |m: &str| {
            r.lines_with(&format!("COUNT MethodsProg.{m} "))
                .first()
                .and_then(|l| l.split_whitespace().last())
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or(0)
        };
        assert_eq!(
            [
                count("fib(I)I"),
                count("thrower(I)I"),
                count("catcher()I"),
                count("twice()I"),
                count("<init>(I)V"),
                count("main([Ljava/lang/String;)V")
            ],
            [9, 3, 1, 1, 1, 1],
            "{}",
            r.describe()
        );
        assert_eq!(count("branches(IILjava/lang/Object;Ljava/lang/Object;)I"), 0);
    });
}

/// Switched off and on at run time: events only while enabled, and everything retransformed
/// back when disabled.
#[test]
fn enable_disable_at_run_time() {
    for_each_jdk(|jdk| {
        let r = run_prog(jdk, "log=info,", "enable=entry+exit", "toggle");
        assert!(r.stdout.contains("result 15"), "{}", r.describe());
        // main was entered while the events were on; its exit came after they were switched off.
        // The native `toggle` is wrapped (the class was defined while the events were on): the
        // calls that switch off are entered, their exits come after the switch; the call that
        // switches on began in the plain wrapper and runs it to the end (no exit).
        let mut v = vec!["ENTRY main([Ljava/lang/String;)V".to_string(), "ENTRY toggle(Z)V".into()];
        fib_calls(3, &mut v);
        v.push("ENTRY toggle(Z)V".into());
        assert_eq!(calls(&r), v, "{}", r.describe());
        assert_eq!(r.stderr_lines_with("jvmpi-shim: method hooks \"off\"").len(), 2, "{}", r.describe());
    });
}

/// An agent enabling METHOD_ENTRY/EXIT or OBJECT_ALLOC in `JVM_OnLoad` has the classes loaded
/// so far retransformed at start-up (in two threads when there are two CPUs): no thread of the
/// shim's shows, neither to the program (its first unnamed thread is still `Thread-0`; a helper
/// attached without a name would have taken number 0) nor to the agent (no THREAD_START for it).
#[test]
fn start_up_retransformation_leaves_the_programs_threads_alone() {
    for_each_jdk(|jdk| {
        let methods = format!("agent={}:log={{log}},only=ThreadNumber,enable=entry+exit", method_agent());
        let allocs = format!(
            "agent={}:log={{log}},enable=object_alloc+thread_start,alloc-filter=ThreadNumber",
            agent("recorder").display()
        );
        for opts in [methods, allocs] {
            let r = run(jdk, &opts, "ThreadNumber", &[], &[]);
            r.assert_ok();
            assert!(!r.log.contains("VIOLATION"), "{}", r.describe());
            assert!(r.stdout.contains("unnamed Thread-0"), "{}", r.describe());
            assert!(!r.log.contains("retransformer"), "{}", r.describe());
        }
    });
}
