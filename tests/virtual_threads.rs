//! Virtual threads (JDK 21 and 25; skipped on 11 and 17, which have none) under agents that
//! follow threads: tests/java/VtTasks.java starts 20 000 virtual-thread tasks that park in the
//! middle of nested methods (`Thread.sleep`, contention on a `ReentrantLock`, a sleep pinned
//! inside `synchronized`, an exception thrown two frames down), and the shadow-stack agent of
//! tests/agents/shadowstack.c keeps each thread's stack in its thread-local storage, takes
//! GetCallTrace from its handlers and samples every thread from a thread of its own.
//!
//! The hang: on JDK 21 the JDK's own mount and unmount code ran the shim's method hooks inside
//! a JVMTI "VTMS transition", and the first call of a method resolved its `jmethodID` with
//! GetFrameLocation, which waits for every transition to end, its own thread's included: the
//! JVM hung for ever. The runs here are bounded by the harness's timeout; a hang fails them.

mod harness;

use harness::*;
use std::collections::HashMap;

fn shadow() -> String {
    agent("shadowstack").display().to_string()
}

/// The JDKs of [`jdks`] that have virtual threads.
fn vt_jdks() -> Vec<Jdk> {
    jdks().into_iter().filter(|j| j.feature >= 21).collect()
}

/// The agent's TOTAL line as numbers.
fn totals(r: &Run) -> HashMap<String, i64> {
    figures(r, "TOTAL ")
}

/// The agent's one line that begins with `prefix` (`key=value` after it), as numbers.
fn figures(r: &Run, prefix: &str) -> HashMap<String, i64> {
    let l = r.lines_with(prefix);
    assert_eq!(l.len(), 1, "one {prefix}line\n{}", r.describe());
    l[0].split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().expect("a number")))
        .collect()
}

/// The program's output with no agent at all.
fn plain_output(jdk: &Jdk, args: &[&str]) -> String {
    plain_output_of(jdk, "VtTasks", args)
}

/// `class`'s output with no agent at all.
fn plain_output_of(jdk: &Jdk, class: &str, args: &[&str]) -> String {
    let mut a = vec!["-cp".to_string(), classes().display().to_string(), class.to_string()];
    a.extend(args.iter().map(|s| s.to_string()));
    let r = run_raw(jdk, &a);
    r.assert_ok();
    assert!(!r.stdout.is_empty(), "{}", r.describe());
    r.stdout
}

/// The virtual threads VtTasks starts: its tasks and its named threads.
const VIRTUAL: i64 = 20_000 + 4;

/// One run of the hang case: method entry and exit, allocations, GetCallTrace from the
/// handlers and a sampler thread, JNI calls with each thread's env_id, over 20 000
/// virtual-thread tasks. Returns the run.
fn hang_case(jdk: &Jdk) -> Run {
    let opts = format!("agent={}:log={{log}},trace,alloc,sample,jni", shadow());
    let r = run(jdk, &opts, "VtTasks", &["20000"], &[]);
    r.assert_ok();
    r
}

#[test]
fn many_virtual_threads_do_not_hang_the_jvm() {
    let jdks = vt_jdks();
    if jdks.is_empty() {
        eprintln!("no JDK with virtual threads among {:?}: skipped", jdks);
        return;
    }
    for jdk in &jdks {
        eprintln!("jdk {}", jdk.feature);
        let plain = plain_output(jdk, &["20000"]);
        let r = hang_case(jdk);
        assert_eq!(r.stdout, plain, "the program's output is the same as with no agent\n{}", r.describe());
        let t = totals(&r);
        assert!(t["entries"] > 1_000_000, "the tasks' methods were seen\n{}", r.describe());
        assert!(t["traces"] > 0 && t["samples"] > 0, "traces were taken\n{}", r.describe());
        assert_eq!(t["badtraces"], 0, "every traced method resolves\n{}", r.describe());
        // Every method of every trace is one whose class the agent was told about (JDK 21
        // loads a few classes in its virtual-thread code without a ClassLoad event: HPROF
        // said "unable to resolve a method id" and crashed at its last MONITOR_DUMP).
        assert_eq!(t["lateclass"], 0, "no trace names a method of a class not announced\n{}", r.describe());
        // The sampler finds the tasks' own methods in the virtual threads' traces (not only
        // the JDK's mount and unmount machinery, which traces leave out).
        assert!(t["tasksamples"] > 0, "samples name the tasks' methods\n{}", r.describe());
        // The allocation sites of virtual threads (depth-4 traces at OBJECT_ALLOC, as
        // heap=sites took them) name the tasks' methods: the tasks box their results.
        assert!(t["tasksites"] > 0, "sites name the tasks' methods\n{}", r.describe());
        assert!(r.significant_stderr().is_empty(), "no error line\n{}", r.describe());
        assert_balanced(&r, &t);
        assert_eq!(t["jnibad"], 0, "JNI calls made with a thread's env_id work\n{}", r.describe());
        assert!(t["jniok"] >= VIRTUAL, "each virtual thread's THREAD_START made its JNI calls\n{}", r.describe());
    }
}

/// Every shadow stack balanced, and one THREAD_START and one THREAD_END per virtual thread.
fn assert_balanced(r: &Run, t: &HashMap<String, i64>) {
    assert_eq!(t["mismatches"], 0, "no exit but the top frame's\n{}", r.describe());
    assert_eq!(t["underflows"], 0, "no exit on an empty stack\n{}", r.describe());
    assert_eq!(t["entries"] - t["exits"], t["open"], "entries - exits = frames still open\n{}", r.describe());
    assert_eq!(t["unannounced"], 0, "no event from a thread without THREAD_START\n{}", r.describe());
    assert_eq!(t["vstarts"], VIRTUAL, "a THREAD_START (group VirtualThreads) per virtual thread\n{}", r.describe());
    assert_eq!(t["vends"], VIRTUAL, "a THREAD_END per virtual thread\n{}", r.describe());
    assert_eq!(t["vnamed"], 4, "the named virtual threads are announced with their names\n{}", r.describe());
}

/// Each virtual thread is a JVMPI thread of its own: its own env_id for its whole life,
/// whichever carrier runs it, carried by every event it causes; its frames balanced in the
/// agent's stack kept under that env_id; one THREAD_START and THREAD_END each.
#[test]
fn virtual_threads_are_jvmpi_threads_with_balanced_stacks() {
    for jdk in &vt_jdks() {
        eprintln!("jdk {}", jdk.feature);
        let plain = plain_output(jdk, &["20000"]);
        let r = run(jdk, &format!("agent={}:log={{log}}", shadow()), "VtTasks", &["20000"], &[]);
        r.assert_ok();
        assert_eq!(r.stdout, plain, "the program's output is the same as with no agent\n{}", r.describe());
        let t = totals(&r);
        assert_balanced(&r, &t);
        // The carriers and the JVM's platform threads are few: not one per task.
        assert!(t["threads"] - VIRTUAL < 40, "platform threads\n{}", r.describe());
    }
}

/// `vthreads=carrier`: the events of virtual threads carry their carriers' env_id, as before;
/// no virtual thread is announced.
#[test]
fn carrier_option_keeps_virtual_threads_on_their_carriers() {
    for jdk in &vt_jdks() {
        eprintln!("jdk {}", jdk.feature);
        let r = run(jdk, &format!("vthreads=carrier,agent={}:log={{log}}", shadow()), "VtTasks", &["2000"], &[]);
        r.assert_ok();
        let t = totals(&r);
        assert_eq!(t["vstarts"], 0, "{}", r.describe());
        assert!(t["threads"] < 40, "only platform threads\n{}", r.describe());
    }
}

/// The hang case 50 times in a row on JDK 21 (about 3 s a run): `cargo test --test
/// virtual_threads -- --ignored`.
#[test]
#[ignore]
fn hang_case_fifty_times_on_jdk21() {
    let Some(jdk) = jdk(21) else {
        eprintln!("JDK 21 not installed: skipped");
        return;
    };
    let mut slowest = std::time::Duration::ZERO;
    for i in 0..50 {
        let r = hang_case(&jdk);
        assert!(r.stdout.contains("tasks 20000 total"), "run {i}\n{}", r.describe());
        slowest = slowest.max(r.elapsed);
    }
    eprintln!("50 runs on JDK 21, none hung; the slowest took {slowest:?}");
}

/// Every env_id of every event, and of every trace of the MONITOR_DUMPs and the HEAP_DUMP that
/// a per-thread-record agent requests while virtual threads come and go (the agent of
/// tests/threads_known.rs: records in thread-local storage, at most 8192 threads, so 5000 tasks
/// here), names a live thread it was told about; one THREAD_START and THREAD_END each.
#[test]
fn dumps_and_events_name_known_threads_with_virtual_threads() {
    for jdk in &vt_jdks() {
        eprintln!("jdk {}", jdk.feature);
        let opts = format!("agent={}:log={{log}},dumps=20", agent("threadwatch").display());
        let r = run(jdk, &opts, "VtTasks", &["5000"], &[]);
        r.assert_ok();
        assert_eq!(r.count("SHUTDOWN"), 1, "{}", r.describe());
        let unknown: Vec<&str> = r.lines_with("UNKNOWN").into_iter().chain(r.lines_with("TLS ")).collect();
        assert!(unknown.is_empty(), "env_ids of threads the agent does not know: {unknown:?}\n{}", r.describe());
        assert!(r.lines_with("TWICE").is_empty(), "{}", r.describe());
        let vstarts = r.lines_with("TSTART ").iter().filter(|l| l.contains("group=VirtualThreads")).count();
        let vends = r.lines_with("TEND ").len();
        assert_eq!(vstarts, 5004, "a THREAD_START per virtual thread\n{}", r.describe());
        assert!(vends >= 5004, "a THREAD_END per virtual thread\n{}", r.describe());
        assert!(r.count("MDUMP ") >= 1 && r.count("HDUMP ") == 1, "the dumps were delivered\n{}", r.describe());
    }
}

/// A CPU sampler built as HPROF's `cpu=samples` was (tests/agents/sampler.c, `hprof`: every
/// millisecond it suspends each thread it knows whose GetThreadStatus is RUNNABLE, takes the
/// depth-4 GetCallTrace of those whose ThreadHasRun says TRUE, and counts them by top frame)
/// over 200 CPU-bound virtual threads that yield their carrier between rounds
/// (tests/java/VtBusy.java): the samples are the tasks' methods, `VtBusy.spin` on top most
/// often; a virtual thread that waits for a carrier (in `Thread.yield`, unmounted), or that the
/// sampler's suspension stopped inside the JDK's mount or unmount code, is not taken for a
/// running one; and no sample is a carrier's: neither the scheduler's loop
/// (`ForkJoinPool`'s) nor the frames below a virtual thread it runs. Before, 95 % of the samples
/// were `Thread.yield` (every virtual thread waiting in the scheduler's queue) and the carriers
/// running virtual threads were sampled as second running threads of the same work. (The
/// thread that starts the first virtual threads runs `CarrierThread.<clinit>` and
/// `ForkJoinPool.createWorker` for the program: its samples there are the program's; a
/// carrier's own are its `CarrierThread.run` and the pool's loop, sampled before its first
/// mount too.)
#[test]
fn a_sampler_finds_the_running_virtual_threads_and_never_a_carrier() {
    for jdk in &vt_jdks() {
        eprintln!("jdk {}", jdk.feature);
        let args = ["200", "4", "5000000"];
        let plain = plain_output_of(jdk, "VtBusy", &args);
        let opts = format!(
            "agent={}:log={{log}},hprof,task=VtBusy.,idle=java.lang.Thread.yield,\
             bad=java.util.concurrent.ForkJoinPool.scan,bad=java.util.concurrent.ForkJoinPool.runWorker,\
             bad=java.util.concurrent.ForkJoinPool$WorkQueue.topLevelExec,bad=java.util.concurrent.ForkJoinWorkerThread.run,\
             bad=java.util.concurrent.ForkJoinPool.awaitWork,bad=java.util.concurrent.ForkJoinTask.doExec,\
             prefix=java.lang.VirtualThread,prefix=jdk.internal.vm.Continuation.,prefix=jdk.internal.vm.Continuation$,prefix=jdk.internal.misc.CarrierThread.run",
            agent("sampler").display()
        );
        let r = run(jdk, &opts, "VtBusy", &args, &[]);
        r.assert_ok();
        assert_eq!(r.stdout, plain, "the program's output is the same as with no agent\n{}", r.describe());
        assert!(r.significant_stderr().is_empty(), "no error line\n{}", r.describe());
        let s = figures(&r, "SAMPLES ");
        assert!(s["total"] >= 50, "enough samples\n{}", r.describe());
        assert_eq!(s["bad"], 0, "no sample of a carrier's own frames\n{}", r.describe());
        assert_eq!(s["unnamed"], 0, "{}", r.describe());
        assert!(s["tasks"] * 2 > s["total"], "most samples are the tasks' methods\n{}", r.describe());
        assert!(s["idle"] * 10 < s["total"], "virtual threads waiting for a carrier are not sampled\n{}", r.describe());
        let tops = r.lines_with("TOP ");
        assert!(
            tops.first().is_some_and(|l| l.ends_with(" VtBusy.spin")),
            "VtBusy.spin on top most often\n{}",
            r.describe()
        );
    }
}

/// The same sampler over tests/java/VtTasks.java, whose virtual threads park, contend on locks
/// and on monitors: no sample is a carrier's, and none is of a JDK thread that runs nothing but
/// the virtual-thread machinery (JDK 24+'s `VirtualThread-unblocker`, whose trace, the
/// machinery left out, was `Thread.runWith` alone: 74 % of HPROF's samples on JDK 25).
#[test]
fn a_sampler_never_takes_the_virtual_thread_machinery_for_the_program() {
    for jdk in &vt_jdks() {
        eprintln!("jdk {}", jdk.feature);
        let opts = format!(
            "agent={}:log={{log}},hprof,task=VtTasks.,idle=java.lang.Thread.runWith,\
             bad=java.util.concurrent.ForkJoinPool.scan,bad=java.util.concurrent.ForkJoinPool.runWorker,\
             bad=java.util.concurrent.ForkJoinPool$WorkQueue.topLevelExec,bad=java.util.concurrent.ForkJoinWorkerThread.run,\
             bad=java.util.concurrent.ForkJoinTask.doExec,prefix=java.lang.VirtualThread,prefix=jdk.internal.vm.Continuation.,prefix=jdk.internal.vm.Continuation$",
            agent("sampler").display()
        );
        let r = run(jdk, &opts, "VtTasks", &["20000"], &[]);
        r.assert_ok();
        assert!(r.stdout.contains("tasks 20000 total"), "{}", r.describe());
        let s = figures(&r, "SAMPLES ");
        assert!(s["total"] > 0, "{}", r.describe());
        assert_eq!(s["bad"], 0, "no sample of a carrier's own frames\n{}", r.describe());
        assert_eq!(s["idle"], 0, "no sample of Thread.runWith alone\n{}", r.describe());
        assert_eq!(s["unnamed"], 0, "{}", r.describe());
    }
}

/// A carrier's own CPU clock (GetCurrentThreadCpuTime in its own events) stops at its first
/// mount: mounting and unmounting virtual threads and finding the next one are the runtime's
/// work, not the carrier's methods' (HPROF `cpu=times` charged 76-86 % of all CPU time of
/// VtTasks to the carriers' `ForkJoinTask…exec` frames). The sampler agent's `clocks` mode
/// reads the clock at every METHOD_ENTRY of the `ForkJoinPool-…-worker-…` threads (the
/// carriers) and of the scheduler's timer (JDK 21 `VirtualThread-unparker`, JDK 25
/// `ForkJoinPool-…-delayScheduler`, whose clock stops at its start), as HPROF did: each
/// moves by no more than what the carrier used before it first mounted a virtual thread
/// (before this: hundreds of milliseconds).
#[test]
fn a_carriers_own_clock_stops_at_its_first_mount() {
    for jdk in &vt_jdks() {
        eprintln!("jdk {}", jdk.feature);
        let opts = format!("agent={}:log={{log}},busy,clocks", agent("sampler").display());
        let r = run(jdk, &opts, "VtTasks", &["20000"], &[]);
        r.assert_ok();
        assert!(r.stdout.contains("tasks 20000 total"), "{}", r.describe());
        let l = r.lines_with("CLOCKS ");
        assert_eq!(l.len(), 1, "one CLOCKS line\n{}", r.describe());
        let v: HashMap<&str, i64> = l[0]
            .split_whitespace()
            .skip(1)
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k, v.parse().expect("a number")))
            .collect();
        assert!(v["threads"] >= 1, "carriers were announced\n{}", r.describe());
        assert!(v["maxns"] < 30_000_000, "a carrier's clock moved after its first mount\n{}", r.describe());
    }
}
