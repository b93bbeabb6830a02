//! Migration and operations: the migration report, the event trace, control of a running JVM
//! (`Agent_OnAttach` commands) and a legacy agent attached late.

mod harness;
use harness::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn recorder() -> PathBuf {
    agent("recorder")
}

/// The recorder agent with shim options `shim_opts` (ending in `,` or empty).
fn rec(jdk: &Jdk, shim_opts: &str, agent_opts: &str, main: &str, args: &[&str]) -> Run {
    let lib = recorder();
    let opts = format!("{shim_opts}agent={}:log={{log}},{agent_opts}", lib.display());
    run(jdk, &opts, main, args, &[&format!("-Dprobe.lib={}", lib.display())])
}

fn report_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no report at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("report is not JSON: {e}\n{text}"))
}

fn function<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {r:#}"))
}

fn event<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["events"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap_or_else(|| panic!("no {name} in {r:#}"))
}

fn errors(f: &Value) -> Vec<(i64, u64)> {
    f["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["value"].as_i64().unwrap(), e["count"].as_u64().unwrap()))
        .collect()
}

#[test]
fn report_figures_match_what_the_agent_did() {
    for_each_jdk(|jdk| {
        let path = fresh_log_path(&format!("jdk{}_report", jdk.feature)).with_extension("json");
        let r = rec(jdk, &format!("report={},", path.display()), "enable=init", "Misc", &["garbage"]);
        r.assert_ok();
        let j = report_json(&path);
        assert_eq!(j["version"], 1);
        // The garbage probe of the recorder (tests/agents/recorder.c): known calls and refusals.
        let en = function(&j, "EnableEvent");
        assert_eq!(en["calls"], 6, "{en:#}");
        assert_eq!(errors(en), vec![(1, 3)], "999, -5 and HEAP_DUMP answer JVMPI_NOT_AVAILABLE: {en:#}");
        let rq = function(&j, "RequestEvent");
        assert_eq!(rq["calls"], 5);
        assert_eq!(errors(rq), vec![(-1, 3), (1, 1)], "{rq:#}");
        for f in [
            "SuspendThread",
            "ResumeThread",
            "SetThreadLocalStorage",
            "GetThreadObject",
            "GetMethodClass",
            "jobjectID2jobject",
            "RawMonitorEnter",
            "RawMonitorExit",
            "RawMonitorDestroy",
            "GetThreadStatus",
            "ThreadHasRun",
            "GetThreadLocalStorage",
            "GetCallTrace",
        ] {
            let v = function(&j, f);
            assert_eq!((v["calls"].as_u64(), v["refused_ids"].as_u64()), (Some(1), Some(1)), "{f}: {v:#}");
        }
        // Emulation and the JVMTI replacement come with each row.
        assert!(function(&j, "GetCallTrace")["jvmti"].as_str().unwrap().contains("GetStackTrace"));
        assert!(!function(&j, "EnableEvent")["emulation"].as_str().unwrap().is_empty());
        let init = event(&j, "JVM_INIT_DONE");
        assert_eq!((init["enabled"].as_bool(), init["delivered"].as_u64()), (Some(true), Some(1)), "{init:#}");
        assert_eq!(event(&j, "JVM_INIT_DONE")["jvmti"], "VMInit");
    });
}

#[test]
fn report_counts_every_delivered_event() {
    for_each_jdk(|jdk| {
        let path = fresh_log_path(&format!("jdk{}_report", jdk.feature)).with_extension("json");
        let r = rec(
            jdk,
            &format!("report={},", path.display()),
            "enable=thread_start+thread_end+class_load+object_alloc+shutdown",
            "Basic",
            &[],
        );
        r.assert_ok();
        let j = report_json(&path);
        for (ev, prefix) in [
            ("THREAD_START", "THREAD_START"),
            ("THREAD_END", "THREAD_END"),
            ("CLASS_LOAD", "CLASS_LOAD "),
            ("JVM_SHUT_DOWN", "SHUT_DOWN"),
        ] {
            assert_eq!(
                event(&j, ev)["delivered"].as_u64().unwrap() as usize,
                r.count(prefix),
                "{ev}\n{}",
                r.describe()
            );
        }
        let allocs: u64 = r.lines_with("ALLOC_TOTAL")[0]
            .split_whitespace()
            .find_map(|w| w.strip_prefix("allocs="))
            .unwrap()
            .parse()
            .unwrap();
        let e = event(&j, "OBJECT_ALLOC");
        assert_eq!(e["delivered"].as_u64().unwrap(), allocs);
        assert!(e["agent_ns_total"].as_u64().unwrap() > 0);
        assert!(j["shim"]["classes_rewritten"].as_u64().unwrap() > 0);
    });
}

#[test]
fn report_to_stderr_in_text() {
    let jdk = jdks().into_iter().next().expect("a JDK");
    let r = rec(&jdk, "report=-,", "enable=init+thread_start", "Hello", &[]);
    r.assert_ok();
    assert!(r.stderr.contains("jvmpi-shim migration report"), "{}", r.describe());
    assert!(r.stderr.contains("THREAD_START") && r.stderr.contains("ThreadStart"), "{}", r.describe());
}

/// A trace with IDs normalised: per thread, the sequence of events of a run.
fn trace_per_thread(path: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut m: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for l in std::fs::read_to_string(path).unwrap().lines() {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        let t = v["thread"].as_str().unwrap_or("-").to_string();
        m.entry(t).or_default().push(l.to_string());
    }
    m
}

#[test]
fn trace_is_identical_across_two_runs_and_the_diff_shows_a_change() {
    for_each_jdk(|jdk| {
        let mut traces = Vec::new();
        for (i, n) in ["3", "3", "5"].iter().enumerate() {
            let path = fresh_log_path(&format!("jdk{}_trace{i}", jdk.feature)).with_extension("jsonl");
            let r = rec(
                jdk,
                &format!("trace={},trace-events=object+class,", path.display()),
                "enable=object_alloc+class_load",
                "Traced",
                &[n],
            );
            r.assert_ok();
            traces.push(path);
        }
        // Every line is JSON with a normalised thread; the program's allocations carry its class.
        let a = trace_per_thread(&traces[0]);
        let markers = a
            .values()
            .flatten()
            .filter(|l| l.contains("\"ev\":\"OBJECT_ALLOC\"") && l.contains("\"class_name\":\"TracedMarker\""))
            .count();
        assert_eq!(markers, 3, "{a:#?}");
        // The comparison tool: same program → no difference in event counts; 3 vs 5 markers → shown.
        let diff = |x: &Path, y: &Path| {
            let out = Command::new("python3")
                .arg(repo_root().join("scripts/trace-diff.py"))
                .args([x, y])
                .args(["--grep", "TracedMarker"])
                .output()
                .unwrap();
            (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let (code, same) = diff(&traces[0], &traces[1]);
        assert_eq!(code, Some(0), "{same}");
        let (code, changed) = diff(&traces[0], &traces[2]);
        assert_eq!(code, Some(1), "{changed}");
        assert!(changed.contains("OBJECT_ALLOC"), "{changed}");
    });
}

// ---- a running JVM ----------------------------------------------------------------------------

struct Target {
    child: Child,
    dir: PathBuf,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    pid: String,
}

impl Target {
    fn start(jdk: &Jdk, shim_opts: Option<String>, tag: &str) -> Target {
        let dir = fresh_log_path(tag).with_extension("d");
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = Command::new(&jdk.java);
        if let Some(o) = shim_opts {
            cmd.arg(format!("-agentpath:{}={o}", shim().display()));
        }
        cmd.arg(format!("-Dprobe.lib={}", recorder().display()))
            .arg("-cp")
            .arg(classes())
            .arg("Waiter")
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(dir.join("stderr")).unwrap()));
        for v in ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"] {
            cmd.env_remove(v);
        }
        let mut child = cmd.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let mut t = Target { child, dir, lines: rx, seen: Vec::new(), pid: String::new() };
        let l = t.wait_for("PID ");
        t.pid = l.trim_start_matches("PID ").to_string();
        t
    }
    fn wait_for(&mut self, prefix: &str) -> String {
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push(l.clone());
                if l.starts_with(prefix) {
                    return l;
                }
            }
        }
        let _ = self.child.kill();
        panic!("no {prefix:?} from the target; it printed {:?}; stderr: {}", self.seen, self.stderr());
    }
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }
    fn touch(&self, name: &str) {
        std::fs::write(self.dir.join(name), b"").unwrap();
    }
    /// Loads the shim into the target with `options` (what `jcmd … JVMTI.agent_load` does).
    fn attach(&self, jdk: &Jdk, options: &str) -> String {
        let out = Command::new(&jdk.java)
            .arg("-cp")
            .arg(classes())
            .arg("AttachTool")
            .arg(&self.pid)
            .arg(shim())
            .arg(options)
            .output()
            .unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }
    fn stop(mut self) -> (String, String) {
        self.touch("stop");
        self.wait_for("DONE");
        let _ = self.child.wait();
        (self.seen.join("\n"), self.stderr())
    }
}

#[test]
fn running_jvm_obeys_dump_reset_and_report() {
    for_each_jdk(|jdk| {
        let log = fresh_log_path(&format!("jdk{}_ctl", jdk.feature));
        let report = log.with_extension("report.txt");
        let opts =
            format!("agent={}:log={},enable=data_dump+data_reset+thread_start", recorder().display(), log.display());
        let mut t = Target::start(jdk, Some(opts), &format!("jdk{}_ctl", jdk.feature));
        let rec_log = || std::fs::read_to_string(&log).unwrap_or_default();
        assert!(t.attach(jdk, "dump").contains("ATTACHED"));
        assert!(t.attach(jdk, "reset").contains("ATTACHED"));
        assert!(t.attach(jdk, &format!("report={}", report.display())).contains("ATTACHED"));
        let bad = t.attach(jdk, "frobnicate");
        assert!(bad.contains("ATTACH_FAILED"), "{bad}");
        t.touch("go1");
        t.wait_for("ROUND 1");
        let (_, stderr) = t.stop();
        let l = rec_log();
        assert_eq!(l.lines().filter(|x| *x == "DATA_DUMP").count(), 1, "{l}");
        assert_eq!(l.lines().filter(|x| *x == "DATA_RESET").count(), 1, "{l}");
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        assert!(text.contains("jvmpi-shim migration report") && text.contains("DATA_DUMP_REQUEST"), "{text}");
        assert!(stderr.contains("unknown jvmpi-shim command `frobnicate`"), "{stderr}");
    });
}

#[test]
fn legacy_agent_attached_late_sees_allocations_from_then_on() {
    for_each_jdk(|jdk| {
        let log = fresh_log_path(&format!("jdk{}_late", jdk.feature));
        let mut t = Target::start(jdk, None, &format!("jdk{}_late", jdk.feature));
        // Before the agent: 1000 markers it never hears of.
        t.touch("go1");
        t.wait_for("ROUND 1");
        let opts = format!(
            "agent={}:log={},enable=thread_start+class_load+object_alloc+shutdown,alloc-filter=WaiterMarker",
            recorder().display(),
            log.display()
        );
        let a = t.attach(jdk, &opts);
        assert!(a.contains("ATTACHED"), "{a}\n{}", t.stderr());
        // Dump and report work in the attached emulation; a second agent is refused.
        assert!(t.attach(jdk, &opts).contains("ATTACH_FAILED"));
        t.touch("go2");
        t.wait_for("ROUND 2");
        let (_, stderr) = t.stop();
        let l = std::fs::read_to_string(&log).unwrap_or_default();
        let v: Vec<&str> = l.lines().filter(|x| x.starts_with("VIOLATION")).collect();
        assert!(v.is_empty(), "{v:#?}\n{stderr}");
        // Threads and classes that existed are announced; exactly the 1000 markers made after
        // the attach are reported.
        assert!(l.contains("THREAD_START name=main") || l.contains("THREAD_START name=\"main\""), "{l}");
        assert!(l.lines().any(|x| x.starts_with("CLASS_LOAD name=WaiterMarker ")), "{l}");
        let count =
            l.lines().find(|x| x.starts_with("ACOUNT class=WaiterMarker ")).unwrap_or_else(|| panic!("{l}\n{stderr}"));
        assert!(count.contains(" allocs=1000 "), "{count}");
        assert!(l.lines().last() == Some("SHUT_DOWN"), "{l}");
    });
}
