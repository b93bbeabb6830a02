//! JVMPI for JNI libraries that ask for it at run time, as HotSpot 1.2–1.5 answered any caller
//! of `GetEnv(JVMPI_VERSION_1…)`: a library without `JVM_OnLoad` (the shim loaded with no
//! `agent=`, or next to a named agent), DisableGC/EnableGC called from Java, an agent library
//! that is also loaded by `System.loadLibrary`. Every test runs on JDK 11, 17, 21 and 25.

mod harness;

use harness::*;

/// `System.load` warns from JDK 22 on unless native access is enabled.
fn native_access(jdk: &Jdk) -> &'static [&'static str] {
    if jdk.feature >= 22 {
        &["--enable-native-access=ALL-UNNAMED"]
    } else {
        &[]
    }
}

/// What the thread-dump library wrote, and the program's run.
struct Dump {
    run: Run,
    lines: Vec<String>,
}

fn thread_dump(jdk: &Jdk, shim_opts: &str) -> Dump {
    let lib = agent("threaddump").display().to_string();
    let out = fresh_log_path(&format!("threaddump-{}", jdk.feature));
    let out_s = out.display().to_string();
    let r = run(jdk, shim_opts, "ThreadDumpDemo", &[&lib, &out_s], native_access(jdk));
    let lines = std::fs::read_to_string(&out).unwrap_or_default().lines().map(str::to_string).collect();
    Dump { run: r, lines }
}

/// The deadlock demo's report: lock1 owned by `holder`, six threads waiting to enter it (HotSpot
/// 1.5's "entry count": the threads waiting to enter or to be notified), lock2 with no owner and `holder` waiting to be notified (not listed from JDK 23 on:
/// see compat-matrix.md, MONITOR_DUMP); every name and `file:line` frame of the demo's own
/// methods as `Thread.getStackTrace()` gave them; every thread released after the dump.
#[track_caller]
fn check_report(d: &Dump) {
    let r = &d.run;
    let all = || format!("{}\n--- library ---\n{}", r.describe(), d.lines.join("\n"));
    r.assert_ok();
    assert!(r.stdout.contains("released=7 alive=0"), "{}", all());
    let done = d.lines.iter().find(|l| l.starts_with("DONE ")).unwrap_or_else(|| panic!("no DONE\n{}", all()));
    // The interface's `version` says the version last asked for (the PATHS check asks for 1_2).
    assert!(done.ends_with("version=0x10000003"), "{}", all());
    assert!(!d.lines.iter().any(|l| l.starts_with("UNEXPECTED") || l.starts_with("BAD")), "{}", all());
    // Every way a library has to a JavaVM reaches the shim's GetEnv, for every JVMPI version.
    assert!(d.lines.iter().any(|l| l == "PATHS getjavavm=1 created=1 onload=1"), "{}", all());
    let mon = |label: &str| {
        d.lines.iter().filter(|l| l.starts_with(&format!("MONITOR {label} "))).cloned().collect::<Vec<_>>()
    };
    let lock1 = mon("lock1");
    assert_eq!(
        lock1,
        ["MONITOR lock1 class=java.lang.Object owner=holder entries=6 enter=6 notify=0 idok=1"],
        "{}",
        all()
    );
    let mut enter: Vec<&str> = d.lines.iter().filter_map(|l| l.strip_prefix("ENTER lock1 ")).collect();
    enter.sort();
    assert_eq!(enter, (0..6).map(|i| format!("blocked-{i}")).collect::<Vec<_>>(), "{}", all());
    let lock2 = mon("lock2");
    // Since JDK 23 the ownerless lock2 is found through its waiter's Object.wait frame
    // (can_access_local_variables, held by default from JDK 16): listed on every JDK.
    {
        assert_eq!(
            lock2,
            ["MONITOR lock2 class=java.lang.Object owner=NULL entries=1 enter=0 notify=1 idok=1"],
            "{}",
            all()
        );
        assert!(d.lines.iter().any(|l| l == "NOTIFY lock2 holder"), "{}", all());
        // The NULL owner passed on to GetThreadStatus, SuspendThread, GetCallTrace, ResumeThread.
        assert!(d.lines.iter().any(|l| l.starts_with("NULLOWNER lock2 ") && l.ends_with(" frames=0")), "{}", all());
    }
    // Frames of the demo's own methods, thread by thread, as Java saw them.
    let java: Vec<&str> = r.stdout.lines().filter_map(|l| l.strip_prefix("JAVA ")).collect();
    assert!(java.len() >= 7, "{}", all());
    for name in std::iter::once("holder".to_string()).chain((0..6).map(|i| format!("blocked-{i}"))) {
        let want: Vec<String> =
            java.iter().filter_map(|l| l.strip_prefix(&format!("{name} "))).map(str::to_string).collect();
        let got: Vec<String> = d
            .lines
            .iter()
            .filter_map(|l| l.strip_prefix("FRAME lock1 "))
            .filter_map(|l| l.strip_prefix(&format!("{name} ")))
            .filter(|f| f.starts_with("ThreadDumpDemo") && !f.contains("$$"))
            .map(str::to_string)
            .collect();
        assert!(!want.is_empty(), "{name}: no Java frames\n{}", all());
        assert_eq!(got, want, "{name}'s frames\n{}", all());
    }
}

/// The shim loaded with no agent: it serves JVMPI to the library that asks at run time.
#[test]
fn jvmpi_for_a_library_without_an_agent() {
    for_each_jdk(|jdk| {
        let d = thread_dump(jdk, "");
        check_report(&d);
        assert!(d.run.significant_stderr().is_empty(), "{}", d.run.describe());
    });
}

/// Next to a named agent, the library gets the agent's interface: HotSpot 1.5 had one
/// `JVMPI_Interface`, and its `GetEnv` re-initialised it for every caller (every event disabled,
/// `NotifyEvent` left to whoever sets it next). So the agent's events stop at the library's
/// `GetEnv` (said once on stderr), the library's handler gets only what it asks for, and the
/// agent's own `GetEnv` from inside its handlers (the recorder's at JVM_INIT_DONE) changes nothing.
#[test]
fn jvmpi_for_a_library_next_to_an_agent() {
    let rec = agent("recorder").display().to_string();
    for_each_jdk(|jdk| {
        let d = thread_dump(jdk, &format!("agent={rec}:log={{log}},enable=init+thread_start+shutdown"));
        check_report(&d);
        let r = &d.run;
        let warned: Vec<&str> = r.significant_stderr();
        assert_eq!(warned.len(), 1, "{}", r.describe());
        assert!(warned[0].contains("re-initialised") && warned[0].contains("the 3 events"), "{}", r.describe());
        assert!(
            r.log_lines.iter().any(|l| l.starts_with("INIT_DONE ") && l.ends_with("same_iface=1")),
            "{}",
            r.describe()
        );
        for name in ["holder", "blocked-5"] {
            assert!(
                r.log_lines.iter().any(|l| l.starts_with(&format!("THREAD_START name={name} "))),
                "{}",
                r.describe()
            );
        }
        assert_eq!(r.count("SHUT_DOWN"), 0, "the agent's events went on after the library's GetEnv\n{}", r.describe());
        assert_eq!(r.count("VIOLATION"), 0, "{}", r.describe());
        // A do-nothing agent (the way users ran such a library before): nothing to disable.
        let d = thread_dump(jdk, &format!("agent={rec}:log={{log}}"));
        check_report(&d);
        assert!(d.run.significant_stderr().is_empty(), "{}", d.run.describe());
    });
}

/// An agent whose library the application loads again (`System.loadLibrary`): one instance, so
/// its JNI_OnLoad and its natives see what its JVM_OnLoad kept; it sets no NotifyEvent, and
/// starts; its natives' own GetEnv(JVMPI) keeps the interface as it was; GetCurrentThreadCpuTime through the kept interface, from a
/// native called by ordinary Java code, agrees with ThreadMXBean on a busy loop.
#[test]
fn the_agent_library_loaded_again_is_the_same_instance() {
    let lib = agent("selfload");
    let dir = lib.parent().unwrap().display().to_string();
    for_each_jdk(|jdk| {
        let mut args = vec![format!("-Djava.library.path={dir}")];
        args.extend(native_access(jdk).iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(jdk, &format!("agent={}:selftest", lib.display()), "SelfLoad", &[], &args);
        r.assert_ok();
        assert!(r.significant_stderr().is_empty(), "{}", r.describe());
        // The agent's own GetEnv at run time (from its native) keeps its events: no re-initialisation
        // is said on stderr (it would be, for the event JVM_OnLoad enabled).
        assert!(r.stdout.contains("onload=1 jni_onload=1 again=1"), "{}", r.describe());
        let cpu = r.stdout.lines().find_map(|l| l.strip_prefix("cpu ")).unwrap_or_else(|| panic!("{}", r.describe()));
        let val =
            |k: &str| -> f64 { cpu.split(' ').find_map(|w| w.strip_prefix(k)).and_then(|v| v.parse().ok()).unwrap() };
        let (j, m) = (val("jvmpi="), val("mxbean="));
        assert!(m > 20e6, "the loop took {m} ns of CPU\n{}", r.describe());
        assert!((j - m).abs() <= 0.15 * m + 5e6, "JVMPI {j} ns against ThreadMXBean {m} ns\n{}", r.describe());
    });
}

/// GcLockDemo under `collector`: (the run, held, after, left).
fn gc_lock(jdk: &Jdk, collector: &str, mode: &str, mb: &str, max: &str) -> (Run, Vec<i64>) {
    gc_lock_with(jdk, "", collector, mode, mb, max)
}

fn gc_lock_with(jdk: &Jdk, shim_opts: &str, collector: &str, mode: &str, mb: &str, max: &str) -> (Run, Vec<i64>) {
    let lib = agent("gclock").display().to_string();
    let mut args = vec![collector, "-Xms64m", "-Xmx512m"];
    args.extend(native_access(jdk));
    let r = run(jdk, &format!("{shim_opts}disable-gc-max={max}"), "GcLockDemo", &[&lib, mode, mb], &args);
    let nums = r
        .stdout
        .lines()
        .find(|l| l.starts_with("held="))
        .map(|l| l.split(' ').filter_map(|w| w.split_once('=')).filter_map(|(_, v)| v.parse().ok()).collect())
        .unwrap_or_default();
    (r, nums)
}

/// DisableGC from Java holds collections off, as HotSpot 1.5's GC locker did, where the collector
/// honours a JNI critical section held for the agent (Serial on every JDK, G1 up to JDK 21): an
/// allocating thread gets no collection for 1.5 s (the heap grows, or it waits), and once another
/// thread calls EnableGC collections resume. Where nothing can hold them (Shenandoah, G1 from
/// JDK 22), collections go on and the shim says so once.
#[test]
fn disable_gc_holds_collections_off() {
    for_each_jdk(|jdk| {
        for (gc, holds) in
            [("-XX:+UseSerialGC", true), ("-XX:+UseG1GC", jdk.feature < 22), ("-XX:+UseShenandoahGC", false)]
        {
            let (r, n) = gc_lock(jdk, gc, "hold", "256", "30");
            r.assert_ok();
            assert_eq!(n.len(), 3, "{gc}\n{}", r.describe());
            let (held, after) = (n[0], n[1]);
            let said: Vec<&str> = r.stderr.lines().filter(|l| l.contains("DisableGC cannot hold")).collect();
            if holds {
                assert_eq!(held, 0, "{gc}: collections while disabled\n{}", r.describe());
                assert!(said.is_empty(), "{gc}\n{}", r.describe());
            } else {
                assert!(held > 0, "{gc}: no collection while disabled, without a lever?\n{}", r.describe());
                assert_eq!(said.len(), 1, "{gc}\n{}", r.describe());
            }
            assert!(after > 0, "{gc}: no collection after EnableGC\n{}", r.describe());
            assert_eq!(r.significant_stderr().len(), said.len(), "{gc}\n{}", r.describe());
        }
    });
}

/// A thread that allocates more than the heap holds while it has collections disabled would wait
/// for ever for its own EnableGC (HotSpot's locker did): the shim gives the lock up at
/// `disable-gc-max=`, says so once, and the program ends.
#[test]
fn disable_gc_never_hangs_the_jvm() {
    for_each_jdk(|jdk| {
        let (r, _) = gc_lock(jdk, "-XX:+UseSerialGC", "stall", "1024", "1");
        r.assert_ok();
        assert!(r.stdout.contains("stall-done"), "{}", r.describe());
        let said: Vec<&str> = r.stderr.lines().filter(|l| l.contains("without EnableGC: given up")).collect();
        assert_eq!(said.len(), 1, "{}", r.describe());
        assert!(r.elapsed < std::time::Duration::from_secs(20), "{}", r.describe());
    });
}

/// Where DisableGC cannot hold collections off, the migration report says so in DisableGC's row,
/// once, with the collector and the JDK.
#[test]
fn disable_gc_that_cannot_hold_is_in_the_report() {
    for_each_jdk(|jdk| {
        let (r, _) = gc_lock_with(jdk, "report=-,", "-XX:+UseShenandoahGC", "hold", "64", "30");
        r.assert_ok();
        let note = format!(
            "In this run: DisableGC cannot hold collections off with the Shenandoah collector on JDK {}",
            jdk.feature
        );
        assert_eq!(r.stderr.matches(&note).count(), 1, "{}", r.describe());
        assert!(r.stderr.contains("GetPrimitiveArrayCritical"), "{}", r.describe());
    });
}
