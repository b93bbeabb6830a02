//! The foundation: a legacy JVMPI agent (tests/agents/recorder.c) loaded through the shim on
//! every JDK, its events, and each of the 28 JVMPI functions, driven by the Java programs in
//! tests/java. Every test runs on JDK 11, 17, 21 and 25.

mod harness;

use harness::*;

/// Runs `main` with the recorder agent and the given recorder options (after `log=`).
fn rec(jdk: &Jdk, agent_opts: &str, main: &str, args: &[&str]) -> Run {
    rec_with(jdk, "", agent_opts, main, args)
}

fn rec_with(jdk: &Jdk, shim_opts: &str, agent_opts: &str, main: &str, args: &[&str]) -> Run {
    let lib = agent("recorder");
    let opts = format!("{shim_opts}agent={}:log={{log}},{agent_opts}", lib.display());
    let probe = format!("-Dprobe.lib={}", lib.display());
    run(jdk, &opts, main, args, &[&probe])
}

/// No broken JVMPI promise was recorded, and the JVM did not crash.
fn clean(r: &Run) -> &Run {
    let v: Vec<_> = r.log_lines.iter().filter(|l| l.starts_with("VIOLATION")).collect();
    assert!(v.is_empty(), "JVMPI promises broken: {v:#?}\n{}", r.describe());
    assert!(!r.stdout.contains("SIGSEGV") && !r.stderr.contains("hs_err"), "JVM crashed\n{}", r.describe());
    r
}

/// Index of the first log line starting with `prefix` (panics with the run if none).
fn pos(r: &Run, prefix: &str) -> usize {
    r.log_lines
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no log line starting with {prefix:?}\n{}", r.describe()))
}

/// The value of `key=` in a log line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let k = format!(" {key}=");
    let i = line.find(&k).unwrap_or_else(|| panic!("no {key}= in {line:?}")) + k.len();
    line[i..].split(' ').next().unwrap()
}

/// The source line carrying `//@marker` in tests/java/<file>.
fn marker_line(file: &str, marker: &str) -> i32 {
    let src = std::fs::read_to_string(repo_root().join("tests/java").join(file)).unwrap();
    let tag = format!("//@{marker}");
    src.lines().position(|l| l.contains(&tag)).map(|i| i as i32 + 1).expect("marker")
}

fn ok_lines(r: &Run) -> Vec<&str> {
    let fails: Vec<_> = r.stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "checks failed: {fails:#?}\n{}", r.describe());
    r.stdout.lines().filter(|l| l.starts_with("OK ")).collect()
}

const ALL: &str = "enable=init+shutdown+thread_start+thread_end+class_load+class_unload+gc_start+gc_finish";

#[test]
fn options_reach_the_agent_byte_for_byte() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=init+shutdown,x=a:b=c,,y=1:2", "Hello", &[]);
        r.assert_ok();
        let opts =
            format!("ONLOAD options=log={},enable=init+shutdown,x=a:b=c,,y=1:2 reserved=(nil)", r.log_path.display());
        assert_eq!(r.log_lines[0], opts, "{}", r.describe());
        assert_eq!(r.log_lines[1], "GETENV rc=0 version_field=0x10000001 asked=0x10000001");
        assert!(r.stdout.contains("hello"));
    });
}

#[test]
fn getenv_answers_every_jvmpi_version() {
    for_each_jdk(|jdk| {
        for (v, hex) in [("2", "0x10000002"), ("3", "0x10000003")] {
            let r = rec(jdk, &format!("version={v},enable=init"), "Hello", &[]);
            r.assert_ok();
            assert!(r.log.contains(&format!("GETENV rc=0 version_field={hex} asked={hex}")), "{}", r.describe());
            pos(&r, "INIT_DONE");
        }
    });
}

#[test]
fn foundation_events_in_order() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, ALL, "Basic", &[]);
        r.assert_ok();
        clean(&r);
        assert!(r.stdout.contains("done"));
        // JVM_INIT_DONE before the program runs; JVM_SHUT_DOWN is the very last event.
        assert!(pos(&r, "INIT_DONE") < pos(&r, "MARK main-start"), "{}", r.describe());
        assert_eq!(r.log_lines.last().map(String::as_str), Some("SHUT_DOWN"), "{}", r.describe());
        // Every route to a JavaVM reaches the shim's GetEnv.
        let init = &r.log_lines[pos(&r, "INIT_DONE")];
        assert!(init.ends_with("getjavavm_getenv_rc=0 same_iface=1"), "{init}");
        assert!(r.log.contains("CREATED_VMS found=1 getenv_rc=0 same_iface=1"), "{}", r.describe());
        // Threads: main, and each app thread before anything it does.
        let main = pos(&r, "THREAD_START name=main ");
        assert!(main < pos(&r, "MARK main-start"));
        for w in ["worker-1", "worker-2"] {
            let start = pos(&r, &format!("THREAD_START name={w} group=main"));
            assert!(start < pos(&r, &format!("MARK worker {w} true")), "{}", r.describe());
            let tenv = field(&r.log_lines[start], "tenv");
            assert!(pos(&r, &format!("THREAD_END env={tenv} name={w}")) > start);
        }
        // Classes: app classes announced before they run; classes loaded before the agent too.
        assert!(pos(&r, "CLASS_LOAD name=Basic ") < pos(&r, "MARK main-start"));
        assert!(pos(&r, "CLASS_LOAD name=Circle ") < pos(&r, "MARK worker"));
        pos(&r, "CLASS_LOAD name=java.lang.Object ");
        pos(&r, "CLASS_LOAD name=java.lang.Thread ");
        // System.gc(): a GC_START/GC_FINISH pair with heap figures, between the marks.
        let (b, a) = (pos(&r, "MARK before-gc"), pos(&r, "MARK after-gc"));
        let gs = r.log_lines[b..a].iter().position(|l| l == "GC_START").expect("GC_START after System.gc()") + b;
        let gf = &r.log_lines[gs + 1..a].iter().find(|l| l.starts_with("GC_FINISH")).expect("GC_FINISH");
        let (objs, used, total): (i64, i64, i64) = (
            field(gf, "objects").parse().unwrap(),
            field(gf, "used").parse().unwrap(),
            field(gf, "total").parse().unwrap(),
        );
        assert!(objs > 1000 && used > 10_000 && total >= used, "{gf}");
    });
}

#[test]
fn class_load_describes_the_class() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "detail=Circle,enable=class_load", "Basic", &[]);
        r.assert_ok();
        clean(&r);
        let cl = &r.log_lines[pos(&r, "CLASS_LOAD name=Circle ")];
        assert!(
            cl.contains(" src=Shapes.java ")
                && cl.contains(" nif=2 ")
                && cl.contains(" nstatics=2 ")
                && cl.contains(" ninst=2 "),
            "{cl}"
        );
        assert_eq!(field(cl, "nmethods"), "3", "{cl}");
        let (lo, hi) = (marker_line("Shapes.java", "area-start"), marker_line("Shapes.java", "area-end"));
        // A method's first line is the first line of its body's code.
        assert!(
            r.log.contains(&format!("METHOD class=Circle name=area sig=()D start={} end={hi}", lo + 1)),
            "{}",
            r.describe()
        );
        assert!(r.log.contains("METHOD class=Circle name=nativeThing sig=()V start=-1 end=-1"));
        assert!(r.log.contains("METHOD class=Circle name=<init> sig=(D)V"));
        for f in [
            "static=1 name=count sig=I",
            "static=1 name=KIND sig=Ljava/lang/String;",
            "static=0 name=r sig=D",
            "static=0 name=id sig=I",
        ] {
            assert!(r.log.contains(&format!("FIELD class=Circle {f}")), "{f}\n{}", r.describe());
        }
        // Dots, not slashes; each class once (the agent checks), interfaces too.
        pos(&r, "CLASS_LOAD name=java.io.Serializable ");
        assert!(!r.log.contains("name=java/"));
    });
}

#[test]
fn call_trace_lines_match_the_java_source() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=class_load", "Traces", &[]);
        r.assert_ok();
        clean(&r);
        let jvmpi: Vec<&str> = r.stdout.lines().find_map(|l| l.strip_prefix("JVMPI ")).unwrap().split(';').collect();
        let java: Vec<&str> = r.stdout.lines().find_map(|l| l.strip_prefix("JAVA ")).unwrap().split(';').collect();
        assert_eq!(jvmpi[0], "Probe.callTrace:-3", "native frame first: {jvmpi:?}");
        assert_eq!(&jvmpi[1..], &java[..], "JVMPI frames vs StackTraceElements");
        assert_eq!(java.len(), 4, "{java:?}");
        // Another thread, sleeping: callee first, native sleep on top, then our line.
        let other: Vec<&str> = r.stdout.lines().find_map(|l| l.strip_prefix("OTHER ")).unwrap().split(';').collect();
        let want = format!("Traces.sleeper:{}", marker_line("Traces.java", "sleep-line"));
        assert!(other.iter().any(|f| *f == want), "{want} not in {other:?}");
        assert!(other[0].ends_with(":-3"), "top frame is native: {other:?}");
    });
}

#[test]
fn thread_functions() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=thread_start+thread_end", "ThreadFns", &[]);
        r.assert_ok();
        clean(&r);
        let ok = ok_lines(&r);
        assert_eq!(ok.len(), 18, "{ok:#?}");
    });
}

#[test]
fn object_ids_method_class_and_requested_events() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=class_load+thread_start", "Objects", &[]);
        r.assert_ok();
        clean(&r);
        assert_eq!(ok_lines(&r).len(), 12, "{}", r.stdout);
        let ids = &r.log_lines[pos(&r, "MARK ids ")];
        let hex = |k: &str| format!("0x{}", field(ids, k));
        let after = pos(&r, "MARK requests");
        let req: Vec<&String> = r.log_lines[after..].iter().filter(|l| l.ends_with("req=1")).collect();
        assert!(
            req[0].starts_with(&format!("OBJECT_ALLOC id={} class=Circle is_array=0 size=", hex("circle"))),
            "{req:#?}"
        );
        assert!(req[0].ends_with(" arena=1 req=1") && field(req[0], "size").parse::<i32>().unwrap() >= 16);
        assert!(req[1].starts_with(&format!("OBJECT_ALLOC id={} class=(none) is_array=10 ", hex("arr"))), "{req:#?}");
        assert!(req[2].contains(" class=java.lang.String is_array=2 "), "{req:#?}");
        assert!(
            req[3].starts_with(&format!("CLASS_LOAD name=Circle src=Shapes.java id={} ", hex("circleclass"))),
            "{req:#?}"
        );
        assert!(
            req[4].starts_with("THREAD_START name=main ") && req[4].contains(&format!(" tid={} ", hex("main"))),
            "{req:#?}"
        );
    });
}

#[test]
fn raw_monitors_and_contention_events() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=raw_enter+raw_entered+raw_exit", "Monitors", &[]);
        r.assert_ok();
        clean(&r);
        assert_eq!(ok_lines(&r).len(), 2);
        let c = pos(&r, "MARK contending contended");
        let (en, ed, ex) = (
            pos(&r, "RAW_ENTER name=contended"),
            pos(&r, "RAW_ENTERED name=contended"),
            pos(&r, "RAW_EXIT name=contended"),
        );
        assert!(c < en && en < ed && ex < ed, "{}", r.describe());
        // The waiter sends ENTER/ENTERED; the holder sends EXIT.
        assert_eq!(field(&r.log_lines[en], "env"), field(&r.log_lines[ed], "env"));
        assert_ne!(field(&r.log_lines[en], "env"), field(&r.log_lines[ex], "env"));
        assert!(!r.log.contains("name=_quiet"), "monitors named _... send no events");
        assert!(
            r.stderr.contains("RawMonitorEnter") && r.stderr.contains("not a live raw monitor"),
            "{}",
            r.describe()
        );
    });
}

#[test]
fn class_unload_inside_a_gc_bracket() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, ALL, "Unload", &[]);
        r.assert_ok();
        clean(&r);
        let id = format!("0x{}", field(&r.log_lines[pos(&r, "MARK loaded 42 ")], "id"));
        let cl = &r.log_lines[pos(&r, "CLASS_LOAD name=Unloadable ")];
        assert_eq!(field(cl, "id"), id);
        let want = format!("CLASS_UNLOAD id={id} name=Unloadable in_gc=1");
        let after = pos(&r, "MARK after-gcs");
        let un = r.log_lines.iter().position(|l| l.starts_with(&want));
        assert!(
            un.is_some_and(|u| u < after),
            "no {want:?} before MARK after-gcs; what the agent saw of the class and the collections:\n{}\n{}",
            unload_story(&r),
            r.describe()
        );
    });
}

/// Each of several classes, each dying in a collection of its own while the program runs, has
/// its CLASS_UNLOAD inside a bracket before the program's last mark: none is lost to a heap
/// walk of the shim's other environments taking the deaths from the main one (JDK 17.0.6+).
#[test]
fn every_class_unload_of_a_run_arrives_during_it() {
    const ROUNDS: usize = 12;
    for_each_jdk(|jdk| {
        let r = rec(jdk, ALL, "Unload", &[&format!("rounds={ROUNDS}")]);
        r.assert_ok();
        clean(&r);
        let after = pos(&r, "MARK after-gcs");
        let rounds = r.log_lines[..after].iter().filter(|l| l.starts_with("MARK round ")).count();
        assert_eq!(rounds, ROUNDS, "{}", r.describe());
        let unloads = r.log_lines[..after]
            .iter()
            .filter(|l| l.starts_with("CLASS_UNLOAD ") && l.contains(" name=Unloadable in_gc=1"))
            .count();
        assert_eq!(
            unloads,
            ROUNDS,
            "CLASS_UNLOADs of Unloadable before MARK after-gcs; what the agent saw:\n{}\n{}",
            unload_story(&r),
            r.describe()
        );
    });
}

/// The log lines about the throw-away classes and the collections (numbered), for a failure
/// message: their CLASS_LOADs, the marks, GC brackets, OBJECT_FREEs and CLASS_UNLOADs, and
/// JVM_SHUT_DOWN.
fn unload_story(r: &Run) -> String {
    let keep =
        ["CLASS_LOAD name=Unloadable ", "MARK ", "GC_START", "GC_FINISH", "CLASS_UNLOAD ", "OBJECT_FREE", "SHUT_DOWN"];
    r.log_lines
        .iter()
        .enumerate()
        .filter(|(_, l)| keep.iter().any(|k| l.starts_with(k)))
        .map(|(i, l)| format!("{:>5}: {l}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn class_load_hook_replaces_class_bytes() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=class_load_hook,hook-patch", "Hook", &[]);
        r.assert_ok();
        clean(&r);
        assert!(r.stdout.contains("message=PATCHED!"), "{}", r.describe());
        assert!(r.stdout.contains("adler=851975"), "{}", r.describe());
        pos(&r, "HOOK patched");
        pos(&r, "HOOK boot Adler32");
        let r = rec(jdk, "enable=class_load_hook", "Hook", &[]);
        assert!(r.stdout.contains("message=ORIGINAL"), "{}", r.describe());
    });
}

#[test]
fn gc_lock_held_across_the_bracket_does_not_deadlock() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=gc_start+gc_finish+shutdown,gc-lock", "GcLock", &[]);
        r.assert_ok();
        clean(&r);
        assert!(r.count("GC_START") >= 1 && r.count("GC_START") == r.count("GC_FINISH"), "{}", r.describe());
    });
}

#[test]
fn data_dump_request_on_sigquit() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=data_dump+data_reset+thread_start", "Misc", &["sigquit"]);
        r.assert_ok();
        clean(&r);
        // HotSpot 1.5 sent DATA_RESET_REQUEST right after DATA_DUMP_REQUEST, on the same signal.
        let dump = pos(&r, "DATA_DUMP");
        let reset = pos(&r, "DATA_RESET");
        assert!(dump < reset, "{}", r.describe());
    });
}

#[test]
fn profiler_exit_ends_the_jvm_with_the_code() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=shutdown", "Misc", &["exit"]);
        r.assert_code(7);
        assert!(!r.stdout.contains("not reached"));
        assert_eq!(r.log_lines.last().map(String::as_str), Some("SHUT_DOWN"), "{}", r.describe());
    });
}

#[test]
fn create_system_thread_runs_a_named_daemon() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=thread_start+thread_end", "Misc", &["systhread"]);
        r.assert_ok();
        clean(&r);
        ok_lines(&r);
        let run = pos(&r, "SYSTHREAD_RUN ");
        let env = field(&r.log_lines[run], "env");
        let start = pos(&r, "THREAD_START name=jvmpi-sys ");
        assert_eq!(field(&r.log_lines[start], "tenv"), env);
        assert_eq!(field(&r.log_lines[start], "group"), "system", "a system thread, beside the JVM's own");
        assert!(start < run);
        assert_eq!(field(&r.log_lines[run], "arg"), "(nil)");
    });
}

#[test]
fn garbage_ids_and_bad_calls_are_refused_not_fatal() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=init", "Misc", &["garbage"]);
        r.assert_ok();
        assert!(r.stdout.contains("still alive"));
        let g = r.stdout.lines().find_map(|l| l.strip_prefix("GARBAGE ")).unwrap();
        assert_eq!(
            g,
            "trace=0 obj=(nil) tobj=(nil) mclass=(nil) status=1 hasrun=0 tls=(nil) list=-1 enable999=1 enableneg=1 \
             disable999=1 enable_heapdump=1 req_heapdump=0 req_method=1 req_classbad=-1 req_threadbad=-1 \
             req_objbad=-1 enable_twice=0,0 disable_unknown=0"
        );
        for what in [
            "GetCallTrace",
            "GetThreadObject",
            "GetMethodClass",
            "jobjectID2jobject",
            "RawMonitorEnter",
            "EnableEvent(event 999)",
        ] {
            assert!(
                r.stderr.lines().any(|l| l.starts_with("jvmpi-shim: warning: ") && l.contains(what)),
                "{what}\n{}",
                r.describe()
            );
        }
    });
}

#[test]
fn gc_functions() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=gc_start+gc_finish", "Misc", &["gcfns"]);
        r.assert_ok();
        clean(&r);
        let (a, b) = (pos(&r, "MARK rungc"), pos(&r, "MARK rungc-done"));
        assert!(r.log_lines[a..b].iter().any(|l| l == "GC_START"), "RunGC collects\n{}", r.describe());
        assert!(r.stderr.contains("EnableGC without a matching DisableGC"));
    });
}

#[test]
fn jni_works_inside_the_legacy_jvm_onload() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "jni-in-onload,enable=init", "Hello", &[]);
        r.assert_ok();
        assert!(r.log.contains("ONLOAD_JNI rc=0 findclass=1"), "{}", r.describe());
    });
}

#[test]
fn events_enabled_before_notify_event_is_set_are_delivered() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "set-notify-late,enable=init+thread_start+class_load+shutdown", "Hello", &[]);
        r.assert_ok();
        clean(&r);
        pos(&r, "THREAD_START name=main ");
        pos(&r, "CLASS_LOAD name=Hello ");
        assert_eq!(r.log_lines.last().map(String::as_str), Some("SHUT_DOWN"));
    });
}

#[test]
fn disable_stops_events_and_enable_catches_up() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=class_load", "Misc", &["toggle"]);
        r.assert_ok();
        clean(&r);
        let (off, enabling, on) = (pos(&r, "MARK disabled"), pos(&r, "MARK enabling"), pos(&r, "MARK enabled"));
        let un = pos(&r, "CLASS_LOAD name=Unloadable ");
        assert!(
            off < enabling && enabling < un && un < on,
            "loaded while disabled, announced when enabled again\n{}",
            r.describe()
        );
        assert_eq!(r.count("CLASS_LOAD name=Unloadable "), 1);
    });
}
