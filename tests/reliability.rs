//! Reliability: the shim must never hang, crash or lie to the JVM it runs in. An
//! invariant-checking agent (tests/agents/stressagent.c: every emulated event, a raw monitor held
//! across each GC bracket, call traces in allocation events, IDs resolved with RequestEvent, a
//! sampler suspending and resuming every thread) runs tests/java/Stress.java (threads allocating
//! and contending, short-lived threads, classes loaded and unloaded, collections), and:
//!
//! * a stress run keeps every JVMPI promise the agent checks;
//! * threads suspended around their THREAD_END are resumed and the JVM exits, and so are threads
//!   an agent suspends during JVM_SHUT_DOWN and resumes only after it, and a thread suspended
//!   inside EnableEvent (in the JVMTI call the shim makes under its event switch) and never resumed;
//! * shutdown races end the JVM with the right code and JVM_SHUT_DOWN last: System.exit,
//!   Runtime.halt, ProfilerExit from an allocation event, from GC_START, from JVM_SHUT_DOWN, from
//!   another thread (attached or not) while a GC bracket is open, and from GC_START while the
//!   JVM is already exiting;
//! * abuse is refused, never fatal: garbage, NULL and stale monitors and IDs, calls from a
//!   pthread the JVM does not know (before JVM_INIT_DONE, and after JVM_SHUT_DOWN until the
//!   process ends), re-entrant calls from handlers, NotifyEvent set to NULL or swapped;
//! * `-Xcheck:jni` finds nothing to say about the shim's JNI use.
//!
//! Each test runs on every JDK; the bounded sizes keep the whole file to a few minutes on two
//! cores. `scripts/stress.sh` runs the long version (`long_stress`, ignored here): minutes of
//! stress with RSS sampled every 5 s and at least 20 repetitions of each race.

mod harness;

use harness::*;
use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A JVM that has not ended by then is hung.
const HANG: Duration = Duration::from_secs(45);

fn stressagent() -> String {
    agent("stressagent").display().to_string()
}

/// `-agentpath:<shim>=agent=<stressagent>:log={log},<agent_opts> <jvm_args> -cp <classes> Stress <prog>`.
fn command(agent_opts: &str, jvm_args: &[&str], prog: &[&str]) -> Vec<String> {
    // locals=yes: the default from JDK 16 on; JDK 11 needs it asked for, so that the agent's ID
    // round trips in OBJECT_ALLOC handlers (ids=K) hold there too.
    let mut args = vec![format!("-agentpath:{{shim}}=locals=yes,agent={}:log={{log}},{agent_opts}", stressagent())];
    args.extend(jvm_args.iter().map(|s| s.to_string()));
    args.extend(["-cp".to_string(), "{classes}".to_string(), "Stress".to_string()]);
    args.extend(prog.iter().map(|s| s.to_string()));
    args
}

fn stress(jdk: &Jdk, agent_opts: &str, jvm_args: &[&str], prog: &[&str]) -> Run {
    run_raw_timeout(jdk, &command(agent_opts, jvm_args, prog), HANG)
}

/// `key=value` numbers of the agent's SUMMARY (or VIOLATIONS) line.
fn figures(r: &Run, prefix: &str) -> BTreeMap<String, i64> {
    r.log_lines
        .iter()
        .find(|l| l.starts_with(prefix))
        .map(|l| {
            l.split(' ')
                .skip(1)
                .filter_map(|kv| kv.split_once('='))
                .filter_map(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v)))
                .collect()
        })
        .unwrap_or_default()
}

/// The run in brief, for failure messages.
fn brief(r: &Run) -> String {
    let picked: Vec<&str> = r
        .log_lines
        .iter()
        .map(String::as_str)
        .filter(|l| {
            ["VIOLATION", "SUMMARY", "EXIT", "SHUT_DOWN", "ATEXIT", "SAMPLER", "INIT_DONE", "ONLOAD", "ENABLE", "HOLD"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .take(60)
        .collect();
    let stderr: Vec<&str> = r.stderr.lines().take(60).collect();
    format!(
        "command: {}\nexit: {:?} after {:.2?}\n--- stdout ---\n{}\n--- stderr (first 60 lines) ---\n{}\n--- log {} ---\n{}\n--- end ---",
        r.cmdline,
        r.code,
        r.elapsed,
        r.stdout.trim_end(),
        stderr.join("\n"),
        r.log_path.display(),
        picked.join("\n")
    )
}

/// No crash, JVM_SHUT_DOWN delivered exactly once, no broken promise.
#[track_caller]
fn healthy(r: &Run) {
    let crashed = r.code.is_none()
        || r.stdout.contains("# A fatal error")
        || r.stderr.contains("# A fatal error")
        || r.stdout.contains("hs_err")
        || r.stderr.contains("hs_err");
    assert!(!crashed, "the JVM crashed\n{}", brief(r));
    assert_eq!(r.count("SHUT_DOWN"), 1, "JVM_SHUT_DOWN exactly once\n{}", brief(r));
    let v: Vec<&String> = r.log_lines.iter().filter(|l| l.starts_with("VIOLATION ")).collect();
    assert!(v.is_empty(), "broken promises: {v:#?}\n{}", brief(r));
    let total: i64 = figures(r, "VIOLATIONS").values().sum();
    assert_eq!(total, 0, "{}", brief(r));
    assert!(!r.stderr.contains("did not return within"), "VM death waited for an event handler\n{}", brief(r));
}

#[track_caller]
fn exits_with(r: &Run, code: i32) {
    assert_eq!(r.code, Some(code), "exit code\n{}", brief(r));
    healthy(r);
}

/// What the agent counted, checked to be at least `min` each.
#[track_caller]
fn at_least(r: &Run, min: &[(&str, i64)]) {
    let f = figures(r, "SUMMARY");
    for (k, n) in min {
        let got = f.get(*k).copied().unwrap_or(-1);
        assert!(got >= *n, "{k}={got}, expected at least {n}\n{}", brief(r));
    }
}

// ---- the stress run ---------------------------------------------------------------------------

#[test]
fn stress_run_keeps_every_promise() {
    for_each_jdk(|jdk| {
        let r = stress(jdk, "sampler=2,traces=8,reenter,ids=97", &[], &["ms=2500", "workers=3", "min=1"]);
        exits_with(&r, 0);
        assert!(r.stdout.contains("STRESS end=normal"), "{}", brief(&r));
        at_least(
            &r,
            &[
                ("allocs", 10_000),
                ("frees", 1_000),
                ("classes", 400),
                ("unloads", 1),
                ("threads", 50),
                ("ends", 50),
                ("gc", 3),
                ("requested", 50),
                ("traces", 1_000),
                ("samples", 100),
                ("suspends", 100),
                ("reenter", 3),
                ("swaps", 1),
                // Round trips of the ID just announced, in its handler and from the agent's thread.
                ("idchecks", 50),
                ("idchecks_thread", 20),
            ],
        );
    });
}

// ---- 1. suspension around THREAD_END ------------------------------------------------------------

/// A sampler that suspends every thread it knows every millisecond, a stream of short threads,
/// and a THREAD_END handler that takes its time: threads are suspended during and around their
/// THREAD_END. Every one must be resumable, every short thread's end seen, and the JVM must
/// exit.
#[test]
fn threads_suspended_around_their_end_are_resumed() {
    for_each_jdk(|jdk| {
        let r = stress(
            jdk,
            "sampler=1,traces=0,slow-end=2000,no-alloc",
            &[],
            &["ms=2000", "workers=1", "short=1500", "inflight=24", "churn=0", "gc=0"],
        );
        exits_with(&r, 0);
        // How many short threads the program ran in its 2 s depends on the machine's load:
        // every one of them must have been seen to end, and enough of them to race.
        let short = r
            .stdout
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix("short="))
            .and_then(|v| v.parse::<i64>().ok())
            .expect("the program's STRESS line counts its short threads");
        at_least(&r, &[("ends", short.max(50)), ("suspends", 100)]);
    });
}

// ---- 2. shutdown races ----------------------------------------------------------------------------

/// How many times each race runs (scripts/stress.sh raises it).
fn repeat() -> usize {
    std::env::var("JVMPI_SHIM_STRESS_REPEAT").ok().and_then(|s| s.parse().ok()).unwrap_or(1)
}

#[test]
fn profiler_exit_inside_gc_start_does_not_deadlock() {
    for_each_jdk(|jdk| {
        for _ in 0..repeat() {
            let r = stress(jdk, "sampler=2,exit=gc_start:2:41", &[], &["ms=200", "end=wait", "gc=100"]);
            exits_with(&r, 41);
            assert!(r.log.contains("EXIT calling where=gc_start"), "{}", brief(&r));
        }
    });
}

/// ProfilerExit in the third GC_START while 8 threads allocate and call System.gc() (objects
/// dying all the time, so ObjectFree events in flight): the JVM ends with the agent's code.
/// It hung about 1 run in 20 on JDK 17 when VM death waited for the thread posting ObjectFree
/// events, itself waiting for a safepoint the exiting thread held up; the shim now switches
/// ObjectFree off before it exits. `JVMPI_SHIM_STRESS_REPEAT=50` runs it 50 times in a row.
#[test]
fn profiler_exit_in_gc_start_while_threads_allocate_and_collect() {
    for_each_jdk(|jdk| {
        for _ in 0..repeat() {
            let r = stress(jdk, "sampler=2,exit=gc_start:3:43", &[], &["ms=400", "workers=8", "gc=20", "end=wait"]);
            exits_with(&r, 43);
            assert!(r.log.contains("EXIT calling where=gc_start"), "{}", brief(&r));
        }
    });
}

#[test]
fn profiler_exit_inside_an_allocation_event() {
    for_each_jdk(|jdk| {
        for _ in 0..repeat() {
            let r = stress(jdk, "sampler=2,exit=alloc:20000:42", &[], &["ms=200", "end=wait"]);
            exits_with(&r, 42);
        }
    });
}

#[test]
fn profiler_exit_from_another_thread_while_a_bracket_is_open() {
    for_each_jdk(|jdk| {
        for _ in 0..repeat() {
            for (who, code) in [("thread", 43), ("pthread", 44)] {
                let r = stress(jdk, &format!("sampler=2,exit={who}:2:{code}"), &[], &["ms=200", "end=wait", "gc=100"]);
                exits_with(&r, code);
                assert!(r.log.contains(&format!("EXIT calling where={who}")), "{}", brief(&r));
            }
        }
    });
}

#[test]
fn system_exit_while_a_bracket_is_open() {
    for_each_jdk(|jdk| {
        for _ in 0..repeat() {
            let r = stress(jdk, "sampler=2,bracket=300", &[], &["ms=500", "gc=0", "end=gc-exit", "delay=100"]);
            exits_with(&r, 5);
        }
    });
}

#[test]
fn system_exit_and_halt_during_activity() {
    for_each_jdk(|jdk| {
        for _ in 0..repeat() {
            for (end, code) in [("exit", 3), ("halt", 4)] {
                let r = stress(jdk, "sampler=2,traces=8", &[], &["ms=700", &format!("end={end}")]);
                exits_with(&r, code);
            }
        }
    });
}

/// An agent that suspends every thread during JVM_SHUT_DOWN (the exiting one included, while it
/// runs the handler) and resumes them only after it: JVMTI can resume nothing once VM death is
/// over, so the shim resumes them before it returns, and the JVM exits.
#[test]
fn threads_suspended_at_shutdown_do_not_hold_up_the_exit() {
    for_each_jdk(|jdk| {
        for end in ["normal", "exit"] {
            let r = stress(jdk, "sampler=2,freeze-at-exit", &[], &["ms=300", &format!("end={end}")]);
            exits_with(&r, if end == "exit" { 3 } else { 0 });
            // The agent's own "resumed" line may be cut off by the exit itself (its sampler is
            // a daemon that sleeps before resuming), so the test asks only that the JVM exits
            // with the program's code, in time.
            assert!(r.elapsed < std::time::Duration::from_secs(30), "{}", brief(&r));
        }
    });
}

/// A thread the agent suspends while it runs the agent's own code, and never resumes, then
/// calls EnableEvent: it stops inside the JVMTI call the shim makes to switch the event on (on
/// JDK 17+ a suspended thread runs native code until its next entry into the VM), with the
/// shim's event switch held. VM death, which flushed the ObjectFree events the JVM owes under
/// that switch (JDK 11 still does; 17+ no longer flush), waited for it for ever before
/// JVM_SHUT_DOWN, so the shim never resumed the thread; the exit now goes on without the flush
/// and the shim resumes the thread after JVM_SHUT_DOWN. The agent's JVM_SHUT_DOWN handler
/// disables an event meanwhile, which needs the same switch: the exit paths' waits end at one
/// time limit, 2 s after VM death began, and the event is disabled for the agent.
#[test]
fn a_thread_suspended_inside_enable_event_does_not_hold_up_the_exit() {
    for_each_jdk(|jdk| {
        let r = stress(jdk, "sampler=2,hold-switch", &[], &["ms=500", "end=exit"]);
        exits_with(&r, 3);
        assert!(
            r.log.contains("HOLD calling EnableEvent state=2"),
            "the holder was not suspended first\n{}",
            brief(&r)
        );
        assert!(r.log.contains("HOLD disabled at shutdown r=0"), "DisableEvent in JVM_SHUT_DOWN\n{}", brief(&r));
    });
}

/// ProfilerExit in GC_START while the JVM is already exiting (a shutdown hook collects): the
/// exit under way wins. `System.exit` in the handler would wait for it forever, with the
/// agent's GC monitor held, and the agent's JVM_SHUT_DOWN handler, which takes that monitor,
/// would never end.
#[test]
fn profiler_exit_while_the_jvm_is_exiting() {
    for_each_jdk(|jdk| {
        for _ in 0..repeat() {
            let r = stress(
                jdk,
                "sampler=2,exit=gc_start:1:41",
                &[],
                &["ms=100", "workers=0", "churn=0", "gc=0", "short=0", "end=hook-gc", "delay=300"],
            );
            exits_with(&r, 6);
            assert!(r.log.contains("EXIT returned where=gc_start"), "{}", brief(&r));
        }
    });
}

/// ProfilerExit while the VM is already dying (in JVM_SHUT_DOWN): HotSpot's stubs blocked
/// forever; the shim returns at once and the JVM ends as it was ending.
#[test]
fn profiler_exit_inside_jvm_shut_down_returns() {
    for_each_jdk(|jdk| {
        let r = stress(jdk, "sampler=2,exit=shutdown:0:45", &[], &["ms=300"]);
        exits_with(&r, 0);
        assert!(r.log.contains("EXIT returned where=shutdown"), "{}", brief(&r));
    });
}

// ---- 3. abuse -----------------------------------------------------------------------------------

/// A pthread the JVM does not know calls every interface function, with good, NULL, garbage and
/// stale arguments, from before JVM_INIT_DONE until after the process's atexit handlers ran;
/// handlers make re-entrant calls; NotifyEvent is set to NULL and swapped at run time.
#[test]
fn abuse_is_refused_not_fatal() {
    for_each_jdk(|jdk| {
        let args = command("sampler=2,traces=8,reenter,abuse,notify-null", &[], &["ms=1500", "workers=2"]);
        let args: Vec<String> = args.into_iter().map(|a| a.replace("{shim}=", "{shim}=log=info,")).collect();
        let r = run_raw_timeout(jdk, &args, HANG);
        exits_with(&r, 0);
        let at_exit = r.lines_with("ATEXIT ok");
        assert_eq!(at_exit.len(), 1, "the atexit handler's calls returned\n{}", brief(&r));
        // Raw monitors work in a thread the JVM does not know: a timed wait takes its time, an
        // untimed one (negative timeout) ends when another such thread notifies.
        let waits = r.lines_with("ABUSE waits ");
        let ms = |k: &str| {
            let line = waits.first()?;
            let v = line.split(' ').find_map(|kv| kv.strip_prefix(&format!("{k}=")))?;
            v.trim_end_matches("ms").parse::<i64>().ok()
        };
        assert!(ms("timed").is_some_and(|t| t >= 29), "{waits:?}\n{}", brief(&r));
        assert!(ms("negative_notified_after").is_some_and(|t| (15..5000).contains(&t)), "{waits:?}\n{}", brief(&r));
        // CreateSystemThread from such a thread works; the thread it makes is an announced one.
        assert!(r.log.contains("ABUSE CreateSystemThread from a pthread rc=0"), "{}", brief(&r));
        assert!(r.log.contains("announced=1"), "{}", brief(&r));
        // Each kind of refusal is one line, not one per call.
        let warnings = r.stderr.lines().filter(|l| l.starts_with("jvmpi-shim: warning:")).count();
        assert!(warnings < 60, "{warnings} warnings of the shim on stderr\n{}", brief(&r));
        for refused in
            ["RequestEvent called from a thread the JVM does not know", "EnableEvent called after JVM_SHUT_DOWN"]
        {
            assert_eq!(r.stderr.lines().filter(|l| l.contains(refused)).count(), 1, "{refused}\n{}", brief(&r));
        }
    });
}

// ---- 4. -Xcheck:jni -----------------------------------------------------------------------------

/// What HotSpot's JNI checker (`-Xcheck:jni`) says: "WARNING in native method: …" (a JNI call
/// made with an exception pending or unchecked), "WARNING: JNI local refs: N, exceeds capacity"
/// and fatal errors.
fn checker_lines(r: &Run) -> Vec<&str> {
    r.stdout
        .lines()
        .chain(r.stderr.lines())
        .filter(|l| {
            (l.starts_with("WARNING") && (l.contains("JNI") || l.contains("native method")))
                || l.contains("in native method")
                || l.contains("JNI local refs")
                || l.contains("JNI call made")
                || l.starts_with("FATAL ERROR")
        })
        .collect()
}

/// HotSpot's JNI checker finds nothing to say about the shim's JNI calls: every call that can
/// throw is followed by an exception check, and local references stay within their frames'
/// capacity (catch-up over every class and thread, GC brackets, allocation events).
#[test]
fn xcheck_jni_finds_nothing() {
    let rec = agent("recorder").display().to_string();
    for_each_jdk(|jdk| {
        let args = vec![
            format!(
                "-agentpath:{{shim}}=agent={rec}:log={{log}},enable=init+shutdown+class_load+class_unload+thread_start+thread_end+object_alloc+object_free+arena_new+gc_start+gc_finish+globalref_alloc+globalref_free,alloc-filter=Counted"
            ),
            "-Xcheck:jni".to_string(),
            format!("-Dprobe.lib={rec}"),
            "-cp".to_string(),
            "{classes}".to_string(),
            "Allocs".to_string(),
            "3000".to_string(),
        ];
        let r = run_raw_timeout(jdk, &args, HANG);
        r.assert_ok();
        let warnings = checker_lines(&r);
        assert!(warnings.is_empty(), "-Xcheck:jni warnings: {warnings:#?}\n{}", r.describe());
        // The stress agent with its re-entrant calls and ID round trips from handlers (the
        // agent's RequestEvent, jobjectID2jobject and jobject2jobjectID inside the allocation
        // tracker's native must leave no local reference behind).
        let s = stress(jdk, "sampler=2,traces=8,reenter,ids=97", &["-Xcheck:jni"], &["ms=2000", "workers=3"]);
        exits_with(&s, 0);
        let warnings = checker_lines(&s);
        assert!(warnings.is_empty(), "-Xcheck:jni warnings: {warnings:#?}\n{}", brief(&s));
        at_least(&s, &[("idchecks", 20), ("idchecks_thread", 10)]);
    });
}

// ---- the long version (scripts/stress.sh) ---------------------------------------------------------

/// One JVM run of the long suite, with the process's RSS sampled as it runs.
struct Outcome {
    code: Option<i32>,
    hung: bool,
    log: String,
    stdout: String,
    stderr: String,
    /// (seconds since start, RSS in KiB)
    rss: Vec<(u64, u64)>,
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn run_sampled(
    jdk: &Jdk,
    agent_opts: &str,
    jvm_args: &[&str],
    prog: &[&str],
    limit: Duration,
    every: Duration,
) -> Outcome {
    let log = fresh_log_path(&format!("jdk{}-long", jdk.feature));
    let args: Vec<String> = command(agent_opts, jvm_args, prog)
        .into_iter()
        .map(|a| {
            a.replace("{log}", &log.display().to_string())
                .replace("{shim}", &shim().display().to_string())
                .replace("{classes}", &classes().display().to_string())
        })
        .collect();
    let mut child = Command::new(&jdk.java)
        .args(&args)
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .env_remove("_JAVA_OPTIONS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start java");
    let pid = child.id();
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let (o, e) = (reader(Box::new(child.stdout.take().unwrap())), reader(Box::new(child.stderr.take().unwrap())));
    let start = Instant::now();
    let mut next = every;
    let mut rss = Vec::new();
    let mut hung = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        let t = start.elapsed();
        if t >= limit {
            hung = true;
            // A thread dump for the report, then the end.
            let _ = Command::new("kill").args(["-QUIT", &pid.to_string()]).status();
            std::thread::sleep(Duration::from_millis(500));
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        if t >= next {
            if let Some(k) = rss_kib(pid) {
                rss.push((t.as_secs(), k));
            }
            next += every;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code: status.code(),
        hung,
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        stdout: o.join().unwrap_or_default(),
        stderr: e.join().unwrap_or_default(),
        rss,
    }
}

#[derive(Default)]
struct Tally {
    runs: usize,
    crashes: usize,
    hangs: usize,
    wrong_code: usize,
    violations: i64,
    after_shutdown: i64,
    no_shut_down: usize,
    allocs: i64,
    failures: Vec<String>,
}

impl Tally {
    fn add(&mut self, what: &str, o: &Outcome, want: i32) {
        self.runs += 1;
        let crashed =
            o.code.is_none() && !o.hung || o.stdout.contains("# A fatal error") || o.stderr.contains("# A fatal error");
        let v: BTreeMap<String, i64> = o
            .log
            .lines()
            .find(|l| l.starts_with("VIOLATIONS"))
            .map(|l| {
                l.split(' ')
                    .skip(1)
                    .filter_map(|kv| kv.split_once('='))
                    .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
                    .collect()
            })
            .unwrap_or_default();
        let n: i64 = v.values().sum();
        let after = v.get("after-shutdown").copied().unwrap_or(0);
        let shut = o.log.lines().filter(|l| *l == "SHUT_DOWN").count();
        self.allocs += o
            .log
            .lines()
            .find(|l| l.starts_with("SUMMARY"))
            .and_then(|l| l.split(' ').find_map(|kv| kv.strip_prefix("allocs=")))
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        let mut bad = Vec::new();
        if crashed {
            self.crashes += 1;
            bad.push("crash".to_string());
        }
        if o.hung {
            self.hangs += 1;
            bad.push("hang".to_string());
        }
        if !o.hung && !crashed && o.code != Some(want) {
            self.wrong_code += 1;
            bad.push(format!("exit {:?}, expected {want}", o.code));
        }
        if n > 0 {
            bad.push(format!("{n} violations"));
        }
        if shut != 1 && !o.hung {
            self.no_shut_down += 1;
            bad.push(format!("{shut} JVM_SHUT_DOWN"));
        }
        self.violations += n;
        self.after_shutdown += after;
        if !bad.is_empty() {
            let stderr: Vec<&str> = o.stderr.lines().take(40).collect();
            let viol: Vec<&str> = o.log.lines().filter(|l| l.starts_with("VIOLATION")).take(10).collect();
            self.failures.push(format!("{what}: {}\n{}\n{}", bad.join(", "), viol.join("\n"), stderr.join("\n")));
        }
    }
}

/// The long suite: `JVMPI_SHIM_STRESS_MINUTES` of stress per JDK (RSS sampled every 5 s), each
/// race `JVMPI_SHIM_STRESS_REPEAT` times (at least 20 by default), abuse and -Xcheck:jni runs;
/// one summary line. Run by scripts/stress.sh.
#[test]
#[ignore]
fn long_stress() {
    let minutes: f64 = std::env::var("JVMPI_SHIM_STRESS_MINUTES").ok().and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let reps = std::env::var("JVMPI_SHIM_STRESS_REPEAT").ok().and_then(|s| s.parse().ok()).unwrap_or(20usize);
    let ms = (minutes * 60_000.0) as u64;
    let mut t = Tally::default();
    let mut rss_report = Vec::new();
    let mut features = Vec::new();
    let started = Instant::now();
    let every = Duration::from_secs(5);
    for jdk in jdks() {
        features.push(jdk.feature.to_string());
        // Minutes of stress, RSS sampled every 5 s.
        let o = run_sampled(
            &jdk,
            "sampler=2,traces=8,reenter,ids=97",
            &["-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch"],
            &[&format!("ms={ms}"), "workers=8", "inflight=16"],
            Duration::from_millis(ms) + Duration::from_secs(120),
            every,
        );
        t.add(&format!("JDK {} stress", jdk.feature), &o, 0);
        // Growth: the mean of the last quarter of the samples against the mean of the second
        // quarter (the first is warm-up: JIT, class loading, heap sizing).
        eprintln!(
            "jdk {}: RSS every 5 s (MiB): {}",
            jdk.feature,
            o.rss.iter().map(|(_, k)| (k / 1024).to_string()).collect::<Vec<_>>().join(" ")
        );
        if o.rss.len() >= 8 {
            let q = o.rss.len() / 4;
            let mean = |s: &[(u64, u64)]| s.iter().map(|x| x.1 as f64).sum::<f64>() / s.len() as f64;
            let (a, b) = (mean(&o.rss[q..2 * q]), mean(&o.rss[o.rss.len() - q..]));
            let max = o.rss.iter().map(|x| x.1).max().unwrap_or(0);
            rss_report.push(format!(
                "jdk{}:{:+.1}%(max {} MiB, {} samples)",
                jdk.feature,
                (b - a) / a * 100.0,
                max / 1024,
                o.rss.len()
            ));
        }
        eprintln!("jdk {}: stress done ({} so far)", jdk.feature, t.runs);
        let races: [(&str, &str, Vec<&str>, i32); 10] = [
            ("System.exit", "sampler=2,traces=8", vec!["ms=700", "end=exit"], 3),
            ("Runtime.halt", "sampler=2,traces=8", vec!["ms=700", "end=halt"], 4),
            (
                "System.exit in a bracket",
                "sampler=2,bracket=300",
                vec!["ms=500", "gc=0", "end=gc-exit", "delay=100"],
                5,
            ),
            ("ProfilerExit in OBJECT_ALLOC", "sampler=2,exit=alloc:20000:42", vec!["ms=200", "end=wait"], 42),
            ("ProfilerExit in GC_START", "sampler=2,exit=gc_start:2:41", vec!["ms=200", "end=wait", "gc=100"], 41),
            (
                "ProfilerExit from a thread, bracket open",
                "sampler=2,exit=thread:2:43",
                vec!["ms=200", "end=wait", "gc=100"],
                43,
            ),
            (
                "ProfilerExit from a pthread, bracket open",
                "sampler=2,exit=pthread:2:44",
                vec!["ms=200", "end=wait", "gc=100"],
                44,
            ),
            ("ProfilerExit in JVM_SHUT_DOWN", "sampler=2,exit=shutdown:0:45", vec!["ms=300"], 0),
            ("threads suspended at JVM_SHUT_DOWN", "sampler=2,freeze-at-exit", vec!["ms=300", "end=exit"], 3),
            (
                "ProfilerExit in GC_START while exiting",
                "sampler=2,exit=gc_start:1:41",
                vec!["ms=100", "workers=0", "churn=0", "gc=0", "short=0", "end=hook-gc", "delay=300"],
                6,
            ),
        ];
        for (name, opts, prog, code) in &races {
            for _ in 0..reps {
                let o = run_sampled(&jdk, opts, &[], prog, HANG, Duration::from_secs(3600));
                t.add(&format!("JDK {} {name}", jdk.feature), &o, *code);
            }
        }
        eprintln!("jdk {}: races done ({} so far)", jdk.feature, t.runs);
        for _ in 0..reps.div_ceil(4) {
            let o = run_sampled(
                &jdk,
                "sampler=2,traces=8,reenter,abuse,notify-null",
                &[],
                &["ms=3000"],
                HANG,
                Duration::from_secs(3600),
            );
            if !o.log.contains("ATEXIT ok") {
                t.failures.push(format!("JDK {} abuse: the atexit handler did not finish", jdk.feature));
            }
            t.add(&format!("JDK {} abuse", jdk.feature), &o, 0);
        }
        let o = run_sampled(
            &jdk,
            "sampler=2,traces=8,reenter,ids=97",
            &["-Xcheck:jni"],
            &["ms=20000"],
            Duration::from_secs(120),
            Duration::from_secs(3600),
        );
        let xw = o
            .stdout
            .lines()
            .chain(o.stderr.lines())
            .filter(|l| {
                (l.starts_with("WARNING") && (l.contains("JNI") || l.contains("native method")))
                    || l.contains("in native method")
                    || l.contains("JNI local refs")
                    || l.contains("JNI call made")
            })
            .count();
        if xw > 0 {
            t.failures.push(format!("JDK {} -Xcheck:jni: {xw} warnings", jdk.feature));
        }
        t.add(&format!("JDK {} -Xcheck:jni", jdk.feature), &o, 0);
        eprintln!("jdk {}: done ({} runs)", jdk.feature, t.runs);
    }
    for f in &t.failures {
        eprintln!("FAILED {f}\n");
    }
    println!(
        "stress: jdk={} minutes={minutes} repetitions={reps} runs={} crashes={} hangs={} wrong_exit={} violations={} \
         after_shutdown={} missing_shut_down={} allocs={} rss_growth={} failures={} wall={}s",
        features.join(","),
        t.runs,
        t.crashes,
        t.hangs,
        t.wrong_code,
        t.violations,
        t.after_shutdown,
        t.no_shut_down,
        t.allocs,
        rss_report.join(","),
        t.failures.len(),
        started.elapsed().as_secs()
    );
    assert!(t.failures.is_empty(), "{} failed runs", t.failures.len());
}

/// Garbage pointers handed to the JVMPI functions (4 of 11 bad-input agents tried crashed the
/// JVM this way): a garbage dump argument and garbage IDs to RequestEvent, a garbage trace or
/// frames buffer (and a read-only one) to GetCallTrace, names and thread lists that point
/// nowhere, jobject2jobjectID of a garbage handle — from JVM_OnLoad, JVM_INIT_DONE, inside a
/// handler and inside JVM_SHUT_DOWN. Each gets the failure value and one log line, the JVM
/// runs on, and a real heap dump still works afterwards. A dump asked for from JVM_OnLoad is
/// refused as too early (not blamed on VM death).
#[test]
fn garbage_pointers_get_the_failure_value_in_every_phase() {
    for_each_jdk(|jdk| {
        for phase in ["onload", "init", "handler", "shutdown"] {
            let out = fresh_log_path(&format!("badinput-{}-{phase}", jdk.feature)).with_extension("txt");
            let lib = agent("badinput");
            let r =
                run(jdk, &format!("agent={}:out={},phase={phase}", lib.display(), out.display()), "Census", &[], &[]);
            r.assert_ok();
            assert!(r.stdout.contains("kept 1234"), "{phase}: {}", r.describe());
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            let v = |call: &str| -> i64 {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("R {call} ")))
                    .unwrap_or_else(|| panic!("{phase}: no {call}\n{text}"))
                    .parse()
                    .unwrap()
            };
            assert!(text.contains(&format!("DONE {phase}")), "{phase}\n{text}");
            for call in [
                "HEAP_DUMP,bad",
                "OBJECT_DUMP,bad",
                "OBJECT_ALLOC,bad",
                "CLASS_LOAD,bad",
                "THREAD_START,bad",
                "HEAP_DUMP,level9",
            ] {
                assert_eq!(v(&format!("RequestEvent({call})")), -1, "{phase}: {call}\n{text}");
            }
            assert_eq!(v("GetCallTrace(frames=bad).num_frames"), 0, "{phase}\n{text}");
            assert_eq!(v("GetCallTrace(frames=readonly).num_frames"), 0, "{phase}\n{text}");
            assert_eq!(v("GetCallTrace(good).written"), 1, "{phase}\n{text}");
            assert_eq!(v("RawMonitorCreate(bad)==NULL"), 1, "{phase}\n{text}");
            assert_eq!(v("CreateSystemThread(bad)"), -1, "{phase}\n{text}");
            assert_eq!(v("jobject2jobjectID(bad)==NULL"), 1, "{phase}\n{text}");
            assert_eq!(v("SuspendThreadList(list=bad)"), 5, "{phase}: results left as they were\n{text}");
            let log = r.stderr_lines_with("jvmpi-shim");
            let said = |what: &str| log.iter().filter(|l| l.contains(what)).count();
            assert!(
                said("0xdeadbeef is not readable") >= 2 && said("jobject2jobjectID(0xdeadbeef)") == 1,
                "{phase}: {}",
                r.describe()
            );
            if phase == "onload" {
                // No dump can be taken before JVM_OnLoad has returned; nothing blamed on VM death.
                assert_eq!(v("RequestEvent(HEAP_DUMP,NULL)@onload"), -1, "{text}");
                assert_eq!(v("RequestEvent(HEAP_DUMP,level0)"), -1, "{text}");
                assert!(said("too early") >= 1 && said("VM death") == 0, "{}", r.describe());
            } else {
                assert_eq!(v("RequestEvent(HEAP_DUMP,level0)"), 0, "{phase}\n{text}");
                assert_eq!(v("heap_dumps"), 1, "{phase}\n{text}");
            }
        }
    });
}
