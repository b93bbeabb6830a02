//! Fidelity: a legacy agent written the way real JDK 1.2–1.5 JVMPI tools were
//! (tests/agents/realagent.c: hprof-style ID resolution and heap sites, per-thread data in
//! JVMPI thread-local storage, a sampler thread, a class-file hook, natives of the program's
//! helper class in the agent library) runs tests/java/RealProg.java, and each test holds the
//! shim to what HotSpot 1.5 did — what such tools came to rely on, whether or not the JVMPI
//! specification promised it.
//!
//! The agent is configured by environment variables (its options may be NULL, as HotSpot
//! passed them); see the head of realagent.c for them and for its log lines. Most tests share
//! one run per JDK: the events the shim emulates today ([`EMULATED`]), heap sites on. The
//! full HotSpot 1.5 list has a run of its own.

mod harness;

use harness::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Every event on HotSpot 1.5's list that this shim emulates, in the agent's (HotSpot's)
/// order: the default list without INSTRUCTION_START, METHOD_ENTRY, METHOD_ENTRY2,
/// METHOD_EXIT, COMPILED_METHOD_LOAD, COMPILED_METHOD_UNLOAD, DATA_RESET_REQUEST and the five
/// MONITOR_ events. With it the agent gets past JVM_OnLoad today, so that the other items can
/// be tested on their own.
const EMULATED: &str = "CLASS_LOAD,CLASS_UNLOAD,CLASS_LOAD_HOOK,OBJECT_ALLOC,OBJECT_FREE,THREAD_START,THREAD_END,\
JNI_GLOBALREF_ALLOC,JNI_GLOBALREF_FREE,JNI_WEAK_GLOBALREF_ALLOC,JNI_WEAK_GLOBALREF_FREE,JVM_INIT_DONE,JVM_SHUT_DOWN,\
DATA_DUMP_REQUEST,OBJECT_MOVE,ARENA_NEW,ARENA_DELETE,RAW_MONITOR_CONTENDED_ENTER,RAW_MONITOR_CONTENDED_ENTERED,\
RAW_MONITOR_CONTENDED_EXIT,GC_START,GC_FINISH";

/// Number of events in the agent's default (HotSpot 1.5) list.
const FULL_LIST_LEN: usize = 34;

/// Heap sites: the program's classes (RealProg, RealSite*) and allocations made in their
/// methods, plus the reflection objects a JVM makes when something asks a class for its fields.
const SITES: &str = "Real,java.lang.reflect.Field,java.lang.Class$ReflectionData";

/// Classes of the program whose methods are "user code" (RpWorker's thread included).
fn is_user_class(class: &str) -> bool {
    class.starts_with("Real") || class.starts_with("Rp")
}

// ---- running ----------------------------------------------------------------------------------

/// Runs `main` under the shim and realagent. `agent_suffix` follows `agent=<lib>` verbatim
/// (`""`, `":"`, `":opts"`); `env` is added to REALAGENT_LOG.
fn real(jdk: &Jdk, agent_suffix: &str, main: &str, env: &[(&str, &str)]) -> Run {
    let lib = agent("realagent");
    let mut vars: Vec<(&str, String)> = vec![("REALAGENT_LOG", "{log}".to_string())];
    vars.extend(env.iter().map(|(k, v)| (*k, v.to_string())));
    run_env(jdk, &format!("agent={}{agent_suffix}", lib.display()), main, &[], &[], &vars)
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Config {
    /// [`EMULATED`] and [`SITES`].
    Emulated,
    /// The agent's default list (HotSpot 1.5's) and [`SITES`].
    Full,
}

/// The run of RealProg with `config` on `jdk`, made once per test process and shared by the
/// tests that look at it.
fn shared(jdk: &Jdk, config: Config) -> Arc<Run> {
    type Cell = Arc<OnceLock<Arc<Run>>>;
    static RUNS: OnceLock<Mutex<HashMap<(u32, Config), Cell>>> = OnceLock::new();
    let cell = RUNS
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry((jdk.feature, config))
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let env: Vec<(&str, &str)> = match config {
            Config::Emulated => vec![("REALAGENT_EVENTS", EMULATED), ("REALAGENT_SITES", SITES)],
            Config::Full => vec![("REALAGENT_SITES", SITES)],
        };
        Arc::new(real(jdk, "", "RealProg", &env))
    })
    .clone()
}

// ---- reading a run ----------------------------------------------------------------------------

/// The run in a few lines, for failure messages (the whole log stays in its file).
fn brief(r: &Run) -> String {
    const SUMMARY: [&str; 12] = [
        "OPTIONS",
        "GETENV",
        "ENABLE",
        "INIT_DONE",
        "HOOKS",
        "CLASSES",
        "SAMPLER",
        "EVENTS",
        "VIOLATIONS",
        "DISABLE",
        "TABLE_FULL",
        "SHUT_DOWN",
    ];
    let picked: Vec<&str> = r
        .log_lines
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("VIOLATION ") || SUMMARY.iter().any(|p| l.starts_with(p)))
        .take(80)
        .collect();
    let stderr: Vec<&str> = r.stderr.lines().take(40).collect();
    format!(
        "command: {}\nexit: {:?} after {:.2?}\n--- stdout ---\n{}\n--- stderr (first 40 lines) ---\n{}\n\
         --- log {} ({} lines), summary and violations ---\n{}\n--- end ---",
        r.cmdline,
        r.code,
        r.elapsed,
        r.stdout.trim_end(),
        stderr.join("\n"),
        r.log_path.display(),
        r.log_lines.len(),
        picked.join("\n")
    )
}

/// The JVM ran RealProg to its end and the agent saw JVM_SHUT_DOWN; no crash.
#[track_caller]
fn completed(r: &Run) {
    assert!(
        !r.stdout.contains("SIGSEGV") && !r.stderr.contains("hs_err") && !r.stdout.contains("hs_err"),
        "the JVM crashed\n{}",
        brief(r)
    );
    assert!(
        r.code == Some(0) && r.stdout.contains("DONE") && r.log_lines.last().map(String::as_str) == Some("SHUT_DOWN"),
        "the program did not run to its end with the agent's JVM_SHUT_DOWN last\n{}",
        brief(r)
    );
}

/// `VIOLATION <kind> ...` lines of the given kinds.
fn violations<'a>(r: &'a Run, kinds: &[&str]) -> Vec<&'a str> {
    r.log_lines
        .iter()
        .map(String::as_str)
        .filter(|l| {
            l.strip_prefix("VIOLATION ").and_then(|rest| rest.split(' ').next()).is_some_and(|k| kinds.contains(&k))
        })
        .collect()
}

/// The value of `key=` in a log line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let k = format!(" {key}=");
    let i = line.find(&k)? + k.len();
    line[i..].split(' ').next()
}

/// The number in `key=` of the first log line starting with `prefix`.
#[track_caller]
fn number(r: &Run, prefix: &str, key: &str) -> i64 {
    let line = r
        .log_lines
        .iter()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no log line starting with {prefix:?}\n{}", brief(r)));
    field(line, key).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no number {key}= in {line:?}"))
}

/// jvmpi-shim's own lines on stderr.
fn shim_stderr(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains("jvmpi-shim")).collect()
}

/// One `SITE` line: what was allocated, and the call trace the agent took in OBJECT_ALLOC.
#[derive(Debug, Clone)]
struct Site {
    class: String,
    /// "Class.method:line" for each frame, callee first.
    frames: Vec<(String, i32)>,
    line: String,
}

impl Site {
    fn top(&self) -> Option<&(String, i32)> {
        self.frames.first()
    }
    /// The first frame that is not the shim's own (JvmpiShimTracker).
    fn first_non_shim(&self) -> Option<&(String, i32)> {
        self.frames.iter().find(|(m, _)| !m.contains("JvmpiShimTracker"))
    }
    /// Whether the allocation is attributed to the program's own code.
    fn in_user_code(&self) -> bool {
        self.first_non_shim().is_some_and(|(m, _)| is_user_class(class_of(m)))
    }
}

/// "a.b.C" of "a.b.C.method".
fn class_of(method: &str) -> &str {
    method.rsplit_once('.').map_or(method, |(c, _)| c)
}

fn sites(r: &Run) -> Vec<Site> {
    r.lines_with("SITE ")
        .into_iter()
        .map(|l| {
            let class = l.split(' ').nth(1).unwrap_or("").to_string();
            let frames = field(l, "frames")
                .unwrap_or("")
                .split(';')
                .filter(|f| !f.is_empty())
                .map(|f| {
                    let (m, n) = f.rsplit_once(':').unwrap_or((f, "0"));
                    (m.to_string(), n.parse().unwrap_or(0))
                })
                .collect();
            Site { class, frames, line: l.to_string() }
        })
        .collect()
}

/// A `// SITE:<tag> <what>...` marker of RealProg.java: its line number and what it lists.
#[derive(Debug, Clone)]
struct Marker {
    tag: String,
    line: i32,
    allocates: Vec<String>,
}

fn markers() -> Vec<Marker> {
    let src = std::fs::read_to_string(repo_root().join("tests/java/RealProg.java")).expect("RealProg.java");
    src.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let rest = l.split("// SITE:").nth(1)?;
            let mut words = rest.split_whitespace();
            let tag = words.next()?.to_string();
            Some(Marker { tag, line: i as i32 + 1, allocates: words.map(str::to_string).collect() })
        })
        .collect()
}

#[track_caller]
fn marker(tag: &str) -> i32 {
    markers()
        .into_iter()
        .find(|m| m.tag == tag)
        .unwrap_or_else(|| panic!("no // SITE:{tag} marker in RealProg.java"))
        .line
}

// ---- 1. class of class ------------------------------------------------------------------------

/// RequestEvent(OBJECT_ALLOC) on the Class object of java.lang.Class: HotSpot answered with
/// class_id NULL. An agent that resolves an object's class object before entering the object
/// (hprof) loops forever on any other answer — the class of that object is itself.
#[test]
fn class_object_of_java_lang_class_has_no_class() {
    for_each_jdk(|jdk| {
        let r = shared(jdk, Config::Emulated);
        let cc = r
            .lines_with("CLASS_OF_CLASS ")
            .first()
            .map(|l| l.to_string())
            .unwrap_or_else(|| panic!("the agent never resolved java.lang.Class's class object\n{}", brief(&r)));
        let rec = violations(&r, &["recursion"]);
        assert!(
            cc.starts_with("CLASS_OF_CLASS class_id=(nil) ") && rec.is_empty(),
            "RequestEvent(OBJECT_ALLOC, <java.lang.Class's class ID>) must describe it with class_id NULL, as HotSpot \
             did; got {cc:?}, recursion: {rec:#?}\n{}",
            brief(&r)
        );
        completed(&r);
    });
}

// ---- 2. the full list -------------------------------------------------------------------------

/// A tool that enables every event of HotSpot 1.5's list and gives up at the first refusal
/// must get the JVM started, and switching events on and off must not fill stderr.
#[test]
fn hotspot_event_list_is_enabled_and_the_program_runs() {
    for_each_jdk(|jdk| {
        let r = shared(jdk, Config::Full);
        let refused = r.lines_with("ENABLE_FAILED");
        assert!(
            refused.is_empty() && r.code == Some(0),
            "EnableEvent refused an event of HotSpot 1.5's list, so the agent's JVM_OnLoad failed and the JVM did not \
             start: {refused:?}\n{}",
            brief(&r)
        );
        assert_eq!(number(&r, "ENABLED", "n") as usize, FULL_LIST_LEN, "{}", brief(&r));
        completed(&r);
        assert_eq!(number(&r, "DISABLED", "n") as usize, FULL_LIST_LEN, "{}", brief(&r));
        let noise = shim_stderr(&r.stderr);
        assert!(noise.len() <= 2, "EnableEvent/DisableEvent of the list flood stderr: {noise:#?}\n{}", brief(&r));
    });
}

// ---- 3. allocation sites ----------------------------------------------------------------------

/// Each allocation of RealProg.sites is reported with the allocating method and source line as
/// the top frame of the trace taken in OBJECT_ALLOC (HotSpot posted it at the `new`, before any
/// constructor ran): never the shim's tracker, never Object.<init>, never a constructor of the
/// class or its superclass. A sampler never sees the shim's frames in other threads either.
#[test]
fn allocation_sites_are_the_allocating_lines() {
    for_each_jdk(|jdk| {
        let r = shared(jdk, Config::Emulated);
        completed(&r);
        let all = sites(&r);
        // (class, top frame's method, its marker, the caller's method and marker, how many)
        let (sites_m, main) = ("RealProg.sites", "RealProg.main");
        let expected = [
            ("RealSiteA", sites_m, "a", main, None, 1),
            ("RealSiteSub", sites_m, "sub", main, None, 1),
            ("RealSiteSelf", sites_m, "self-outer", main, None, 1),
            ("RealSiteSelf", "RealSiteSelf.<init>", "self-inner", sites_m, Some("self-outer"), 1),
            ("[I", sites_m, "int-array", main, None, 1),
            ("[RealSiteA", sites_m, "obj-array", main, None, 1),
            ("[[I", sites_m, "multi", main, None, 1),
            ("[I", sites_m, "multi", main, None, 2),
            ("[RealSiteUnlinked", sites_m, "unlinked", main, None, 1),
        ];
        let mut problems = Vec::new();
        for (class, method, tag, caller, caller_tag, n) in expected {
            let line = marker(tag);
            let found: Vec<&Site> =
                all.iter().filter(|s| s.class == class && s.top() == Some(&(method.to_string(), line))).collect();
            if found.len() != n {
                let of_class: Vec<&str> = all.iter().filter(|s| s.class == class).map(|s| s.line.as_str()).collect();
                problems.push(format!(
                    "{n} x SITE {class} with top frame {method}:{line} (// SITE:{tag}); found {}; SITE lines of {class}: \
                     {of_class:#?}",
                    found.len()
                ));
                continue;
            }
            let caller_line = caller_tag.map(marker);
            for s in found {
                let ok = s.frames.get(1).is_some_and(|(m, l)| m == caller && caller_line.is_none_or(|c| *l == c));
                if !ok {
                    problems.push(format!("{}: the second frame should be {caller}, line {caller_line:?}", s.line));
                }
            }
        }
        // Each object once: a constructor chain or a constructor that allocates is no second site.
        for class in ["RealSiteA", "RealSiteSub", "RealSiteBase"] {
            let n = all.iter().filter(|s| s.class == class).count();
            let want = usize::from(class != "RealSiteBase");
            if n != want {
                problems.push(format!("{n} SITE lines for {class}, expected {want}"));
            }
        }
        let bad_top: Vec<&str> = all
            .iter()
            .filter(|s| s.top().is_some_and(|(m, _)| m.contains("JvmpiShimTracker") || m == "java.lang.Object.<init>"))
            .map(|s| s.line.as_str())
            .collect();
        if !bad_top.is_empty() {
            problems.push(format!(
                "{} of {} SITE lines have the shim's tracker or Object.<init> as their top frame, e.g. {:#?}",
                bad_top.len(),
                all.len(),
                &bad_top[..bad_top.len().min(3)]
            ));
        }
        let shim = violations(&r, &["shim-frame", "shim-frame-sampled"]);
        if !shim.is_empty() {
            problems.push(format!(
                "the shim's frames in call traces ({} times in OBJECT_ALLOC, {} times sampled from other threads), e.g. \
                 {:#?}",
                number(&r, "VIOLATIONS", "shim-frame"),
                number(&r, "VIOLATIONS", "shim-frame-sampled"),
                &shim[..shim.len().min(4)]
            ));
        }
        assert!(problems.is_empty(), "allocation sites:\n{}\n{}", problems.join("\n"), brief(&r));
    });
}

// ---- 4. the shim's own work ---------------------------------------------------------------------

/// What the shim does for itself on the program's threads is not charged to the program: no
/// reflection objects (java.lang.reflect.Field, java.lang.Class$ReflectionData) appear to be
/// allocated by the program's own methods (it never uses reflection), and every allocation
/// attributed to the program's code is one its source makes on that line. Shim frames on top
/// of a trace are skipped here (the previous test is about them): the question is whose code
/// the allocation is charged to.
#[test]
fn shim_work_is_not_charged_to_the_program() {
    for_each_jdk(|jdk| {
        let r = shared(jdk, Config::Emulated);
        completed(&r);
        let all = sites(&r);
        let marks = markers();
        let mut problems = Vec::new();
        for s in all.iter().filter(|s| s.in_user_code()) {
            let reflective = s.class.trim_start_matches('[');
            if reflective == "java.lang.reflect.Field" || reflective == "java.lang.Class$ReflectionData" {
                problems.push(format!("reflection object charged to the program: {}", s.line));
                continue;
            }
            let (method, line) = s.first_non_shim().unwrap();
            match marks.iter().find(|m| m.line == *line) {
                None => problems.push(format!(
                    "{} allocated at {method}:{line}, where the program allocates nothing: {}",
                    s.class, s.line
                )),
                Some(m) if !m.allocates.iter().any(|a| a == "*" || *a == s.class) => problems.push(format!(
                    "{} allocated at {method}:{line}, where the program allocates only {:?} (// SITE:{}): {}",
                    s.class, m.allocates, m.tag, s.line
                )),
                Some(_) => {}
            }
        }
        assert!(problems.is_empty(), "allocations the program did not make:\n{}\n{}", problems.join("\n"), brief(&r));
    });
}

// ---- 5. threads announced, with their storage ----------------------------------------------------

/// Every event comes from a thread whose THREAD_START the agent had (from that thread itself)
/// and whose THREAD_END it has not had yet, and JVMPI thread-local storage holds what the
/// agent put there — up to JVM_SHUT_DOWN, which DestroyJavaVM sends after main's THREAD_END.
#[test]
fn events_come_from_announced_threads_with_their_storage() {
    for_each_jdk(|jdk| {
        let r = shared(jdk, Config::Emulated);
        let kinds =
            ["unannounced-env", "missing-tls", "missing-tls-at-shutdown", "thread-start-env", "thread-start-twice"];
        let v = violations(&r, &kinds);
        assert!(
            v.is_empty(),
            "events from threads the agent was not told about, or without their TLS: {v:#?}\n{}",
            brief(&r)
        );
        completed(&r);
        for w in ["real-worker-0", "real-worker-1", "real-worker-2"] {
            assert_eq!(r.lines_with(&format!("THREAD_START name={w} ")).len(), 1, "{w}\n{}", brief(&r));
            assert_eq!(r.lines_with(&format!("THREAD_END name={w} ")).len(), 1, "{w}\n{}", brief(&r));
        }
    });
}

// ---- 6. options -------------------------------------------------------------------------------------

/// `agent=<lib>` with no ':' gives the agent options == NULL, as `-Xrun<lib>` did; `<lib>:`
/// gives ""; anything after the ':' arrives byte for byte.
#[test]
fn options_are_null_without_a_colon() {
    for_each_jdk(|jdk| {
        for (suffix, want) in [("", "OPTIONS NULL"), (":", "OPTIONS ''"), (":a=b,c", "OPTIONS 'a=b,c'")] {
            let env = [("REALAGENT_EVENTS", "JVM_INIT_DONE,JVM_SHUT_DOWN"), ("REALAGENT_SAMPLER", "0")];
            let r = real(jdk, suffix, "Hello", &env);
            assert_eq!(r.log_lines.first().map(String::as_str), Some(want), "agent=<lib>{suffix}\n{}", brief(&r));
            r.assert_ok();
        }
    });
}

// ---- 7. natives in the agent library ------------------------------------------------------------------

/// RealProg.agentCpuTime is a native that lives in the agent library, and RealProg never
/// calls System.loadLibrary: HotSpot looked JNI natives up in -Xrun libraries too.
#[test]
fn natives_in_the_agent_library_are_found() {
    for_each_jdk(|jdk| {
        let r = shared(jdk, Config::Emulated);
        let native = r.stdout.lines().find(|l| l.starts_with("NATIVE ")).unwrap_or("(no NATIVE line)");
        assert_eq!(native, "NATIVE ok", "a native of the agent library was not found\n{}", brief(&r));
        completed(&r);
    });
}

// ---- 8. a CLASS_LOAD for every class -------------------------------------------------------------------

/// Classes whose CLASS_LOAD cannot be had, with the reason. None today: HotSpot 1.5 sent
/// CLASS_LOAD when a class was defined, linked or not.
const UNANNOUNCEABLE: &[&str] = &[];

/// Every class whose class file went through CLASS_LOAD_HOOK is announced with CLASS_LOAD,
/// including those that are loaded and never linked (RealLoadedOnly, and the JDK's own).
#[test]
fn every_hooked_class_gets_a_class_load() {
    for_each_jdk(|jdk| {
        let r = shared(jdk, Config::Emulated);
        completed(&r);
        let missing: Vec<&str> = r
            .lines_with("MISSING_CLASS_LOAD ")
            .into_iter()
            .map(|l| &l["MISSING_CLASS_LOAD ".len()..])
            .filter(|n| !UNANNOUNCEABLE.contains(n))
            .collect();
        assert!(
            missing.is_empty(),
            "{} hooked classes never got a CLASS_LOAD (the agent counted {}): {missing:#?}\n{}",
            missing.len(),
            number(&r, "HOOKS", "missing"),
            brief(&r)
        );
        assert!(number(&r, "HOOKS", "n") > 0, "{}", brief(&r));
    });
}

// ---- 9. the hook from the start ----------------------------------------------------------------------------

/// An agent that enables CLASS_LOAD_HOOK in JVM_OnLoad sees the class files of the JVM's first
/// classes, java/lang/Object included, as under -Xrun: at least as many hooks as CLASS_LOADs of
/// JDK classes.
#[test]
fn hook_sees_the_first_classes() {
    for_each_jdk(|jdk| {
        let r = shared(jdk, Config::Emulated);
        completed(&r);
        let (hooks, boot) = (number(&r, "HOOKS", "n"), number(&r, "CLASSES", "boot"));
        let unhooked = r.lines_with("UNHOOKED ");
        assert!(
            r.lines_with("HOOK java/lang/Object").len() == 1 && hooks >= boot,
            "CLASS_LOAD_HOOK started late: java/lang/Object hooked {} times; {hooks} hooks, {boot} CLASS_LOADs of JDK \
             classes, {} of them never hooked, e.g. {unhooked:#?}\n{}",
            r.lines_with("HOOK java/lang/Object").len(),
            number(&r, "CLASSES", "boot_unhooked"),
            brief(&r)
        );
    });
}

// ---- 10. quiet at shutdown -------------------------------------------------------------------------------------

/// What the agent does in JVM_SHUT_DOWN — GetThreadStatus, ThreadHasRun and GetCallTrace of
/// every thread it knows, then DisableEvent of every event of its list — works and prints
/// nothing on stderr: no WRONG_PHASE, no unknown thread. With the events the shim emulates
/// today and with HotSpot 1.5's full list.
#[test]
fn shutdown_calls_are_quiet() {
    for_each_jdk(|jdk| {
        let mut problems = Vec::new();
        let mut briefs = Vec::new();
        for config in [Config::Emulated, Config::Full] {
            let r = shared(jdk, config);
            briefs.push(brief(&r));
            let (Some(b), Some(e)) =
                (r.stderr.find("realagent: shutdown calls begin"), r.stderr.find("realagent: shutdown calls end"))
            else {
                problems.push(format!(
                    "{config:?}: the agent never got to its shutdown calls (exit {:?}; {:?})",
                    r.code,
                    r.lines_with("ENABLE_FAILED")
                ));
                continue;
            };
            let noise = shim_stderr(&r.stderr[b..e]);
            if !noise.is_empty() {
                problems.push(format!("{config:?}: shim messages from the shutdown calls: {noise:#?}"));
            }
            for l in r.lines_with("SHUTDOWN_THREAD ") {
                if field(l, "status") == Some("-1") {
                    problems.push(format!("{config:?}: GetThreadStatus failed for a thread the agent knows: {l}"));
                }
            }
            let refused = r.lines_with("DISABLE_FAILED");
            if !refused.is_empty() {
                problems.push(format!("{config:?}: DisableEvent refused: {refused:?}"));
            }
        }
        assert!(problems.is_empty(), "{}\n{}", problems.join("\n"), briefs.join("\n"));
    });
}
