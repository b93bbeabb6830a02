//! Loading the legacy agent, and every way it can go wrong: the shim's options, finding the
//! library, `dlopen`, `JVM_OnLoad` and what it must do, `-Xrun`, and the shim's own
//! `JVM_OnLoad` on a JVM with native JVMPI. Each failure must end the JVM with exactly one
//! `jvmpi-shim: error:` line that says what is wrong, and never with a crash. Every JVM test
//! runs on JDK 11, 17, 21 and 25.

mod harness;

use harness::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const ERROR: &str = "jvmpi-shim: error:";

/// The `jvmpi-shim: error:` lines of a run, from stdout and stderr.
fn error_lines(r: &Run) -> Vec<&str> {
    r.stdout.lines().chain(r.stderr.lines()).filter(|l| l.starts_with(ERROR)).collect()
}

/// The JVM ended by itself (no signal) and did not crash.
fn no_crash(r: &Run) {
    assert!(r.code.is_some(), "JVM killed by a signal\n{}", r.describe());
    for s in [&r.stdout, &r.stderr] {
        assert!(
            !s.contains("SIGSEGV") && !s.contains("hs_err") && !s.contains("A fatal error has been detected"),
            "JVM crashed\n{}",
            r.describe()
        );
    }
}

/// The run failed cleanly: non-zero exit, no crash, exactly one error line, which contains every
/// one of `needles`. Returns that line.
#[track_caller]
fn fails_with<'a>(r: &'a Run, needles: &[&str]) -> &'a str {
    no_crash(r);
    assert_ne!(r.code, Some(0), "the JVM should not have run\n{}", r.describe());
    let errs = error_lines(r);
    assert_eq!(errs.len(), 1, "expected exactly one {ERROR:?} line, got {errs:#?}\n{}", r.describe());
    for n in needles {
        assert!(errs[0].contains(n), "error line lacks {n:?}: {:?}\n{}", errs[0], r.describe());
    }
    errs[0]
}

/// A failure in `Agent_OnLoad`: the JVM itself refuses to start (its own message is on stdout and
/// worded differently per JDK, but always begins the same).
#[track_caller]
fn refused_at_onload<'a>(r: &'a Run, needles: &[&str]) -> &'a str {
    let line = fails_with(r, needles);
    assert!(r.stdout.contains("Error occurred during initialization of VM"), "{}", r.describe());
    assert!(!r.stdout.contains("hello"), "the program ran\n{}", r.describe());
    line
}

/// The run succeeded: exit 0, no crash, no error line, the program's output.
#[track_caller]
fn loads(r: &Run) {
    no_crash(r);
    r.assert_ok();
    assert!(error_lines(r).is_empty(), "{}", r.describe());
    assert!(r.stdout.contains("hello"), "the program did not run\n{}", r.describe());
}

/// `-agentpath:<shim>=<opts> -cp <classes> Hello` (an empty `opts` gives no `=`).
fn hello(jdk: &Jdk, opts: &str) -> Run {
    run(jdk, opts, "Hello", &[], &[])
}

fn recorder() -> PathBuf {
    agent("recorder")
}

/// `-agentpath:<shim>=agent=<recorder>:log={log},<recorder options>`, program `Hello`.
fn rec(jdk: &Jdk, agent_opts: &str) -> Run {
    hello(jdk, &format!("agent={}:log={{log}},{agent_opts}", recorder().display()))
}

/// Exactly one log line starting with `prefix`; returns its index.
#[track_caller]
fn one(r: &Run, prefix: &str) -> usize {
    let at: Vec<usize> = (0..r.log_lines.len()).filter(|&i| r.log_lines[i].starts_with(prefix)).collect();
    assert_eq!(at.len(), 1, "expected one log line starting with {prefix:?}\n{}", r.describe());
    at[0]
}

// ---- 1, 2: the shim's options --------------------------------------------------------------

/// Without `agent=` the shim loads no agent and serves JVMPI to the JNI libraries that ask for
/// it (tests/libraries.rs): the program runs, and nothing is said at the default level.
#[test]
fn no_agent_named() {
    for_each_jdk(|jdk| {
        for opts in ["", "log=warn", "report=-,log=warn"] {
            let r = hello(jdk, opts);
            loads(&r);
            let said: Vec<&str> = r.significant_stderr().into_iter().filter(|l| !l.is_empty()).collect();
            assert!(said.is_empty() || opts.starts_with("report"), "{}", r.describe());
        }
        let r = hello(jdk, "log=debug,");
        refused_at_onload(&r, &["trailing comma"]);
    });
}

#[test]
fn bad_shim_options() {
    let lib = recorder();
    let cases: [(String, &[&str]); 4] = [
        (format!("foo=1,agent={}", lib.display()), &["unknown shim option `foo=1`"]),
        ("agent=".into(), &["`agent=` names no library"]),
        ("agent=a,b=c".into(), &["ambiguous `agent=a,b=c`", "after a ':'"]),
        (format!("log=loud,agent={}", lib.display()), &["bad `log=loud`"]),
    ];
    for_each_jdk(|jdk| {
        for (opts, needles) in &cases {
            let r = hello(jdk, opts);
            refused_at_onload(&r, needles);
        }
    });
}

// ---- 3, 4, 5, 6: finding and opening the library --------------------------------------------

#[test]
fn agent_path_does_not_exist() {
    let missing = target_dir().join("no-such-dir/libmissing.so");
    let m = missing.display().to_string();
    for_each_jdk(|jdk| {
        let r = hello(jdk, &format!("agent={m}:log={{log}}"));
        refused_at_onload(&r, &[&format!("{m} does not exist")]);
    });
}

/// `<java home>/lib`, where `-Xrun` (and the shim) look for a bare library name first.
fn jdk_lib_dir(jdk: &Jdk) -> PathBuf {
    let java = std::fs::canonicalize(&jdk.java).unwrap();
    java.parent().and_then(Path::parent).unwrap().join("lib")
}

#[test]
fn bare_name_not_found() {
    for_each_jdk(|jdk| {
        let r = hello(jdk, "agent=nosuchagent");
        let dir = jdk_lib_dir(jdk).display().to_string();
        let line = refused_at_onload(&r, &["libnosuchagent.so", "system library path"]);
        assert!(line.contains(&format!("JDK library directory ({dir})")), "{line}\nexpected the JDK's {dir}");
    });
}

#[test]
fn bare_name_found_on_ld_library_path() {
    let lib = recorder();
    let dir = lib.parent().unwrap().display().to_string();
    for_each_jdk(|jdk| {
        let args = vec![
            "-agentpath:{shim}=agent=recorder:log={log},enable=init".to_string(),
            "-cp".into(),
            "{classes}".into(),
            "Hello".into(),
        ];
        let r = run_raw_env(jdk, &args, &[("LD_LIBRARY_PATH", dir.clone())]);
        loads(&r);
        assert!(r.log_lines[0].starts_with("ONLOAD options=log="), "{}", r.describe());
        one(&r, "INIT_DONE");
    });
}

/// What `dlopen` says about `path`.
fn dlerror_of(path: &Path) -> String {
    let c = std::ffi::CString::new(path.display().to_string()).unwrap();
    // SAFETY: dlopen with a NUL-terminated path (the test asserts that it fails).
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY) };
    assert!(h.is_null(), "{} loaded", path.display());
    // SAFETY: dlerror right after the failed dlopen returns its NUL-terminated message.
    unsafe { std::ffi::CStr::from_ptr(libc::dlerror()) }.to_string_lossy().into_owned()
}

#[test]
fn not_a_shared_object() {
    let garbage = target_dir().join("libgarbage.so");
    std::fs::write(&garbage, "This is a text file, not a shared object.\n".repeat(4)).unwrap();
    dlerror_of(&garbage);
    let g = garbage.display().to_string();
    for_each_jdk(|jdk| {
        let r = hello(jdk, &format!("agent={g}"));
        refused_at_onload(&r, &[&format!("cannot load legacy agent {g}"), "not an ELF shared library"]);
    });
}

/// Libraries that `dlopen` would crash on, or load and then fail in obscure ways, are refused
/// with one line before `dlopen` sees them: a truncated copy of a real agent (its segments
/// reach past the end: `dlopen` gets SIGBUS), one built for another machine, a 32-bit one, an
/// empty file, a directory.
#[test]
fn malformed_libraries_are_refused_before_dlopen() {
    let real = std::fs::read(agent("recorder")).unwrap();
    let dir = target_dir().join("malformed-libs");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let truncated = write("libtruncated.so", &real[..real.len() / 2]);
    let cut_short = write("libcutshort.so", &real[..3000]);
    let mut other = real.clone();
    other[18..20].copy_from_slice(&183u16.to_le_bytes()); // EM_AARCH64 (or 62 on aarch64 hosts)
    if cfg!(target_arch = "aarch64") {
        other[18..20].copy_from_slice(&62u16.to_le_bytes());
    }
    let other_arch = write("libotherarch.so", &other);
    let mut elf32 = real[..64].to_vec();
    elf32[4] = 1; // ELFCLASS32
    let thirty_two = write("lib32.so", &elf32);
    let empty = write("libempty.so", b"");
    let a_dir = dir.join("libdir.so");
    std::fs::create_dir_all(&a_dir).unwrap();
    let a_dir = a_dir.display().to_string();
    let cases = [
        (truncated, "a truncated ELF file"),
        (cut_short, "a truncated ELF file"),
        (other_arch, "built for another machine"),
        (thirty_two, "a 32-bit library"),
        (empty, "the file is empty"),
        (a_dir, "it is a directory"),
    ];
    for_each_jdk(|jdk| {
        for (lib, why) in &cases {
            let r = hello(jdk, &format!("agent={lib}"));
            refused_at_onload(&r, &[&format!("cannot load legacy agent {lib}"), why]);
        }
    });
}

// ---- 7, 8, 9: the agent's JVM_OnLoad --------------------------------------------------------

#[test]
fn library_without_jvm_onload() {
    let lib = agent("noop_jvmti").display().to_string();
    for_each_jdk(|jdk| {
        let r = hello(jdk, &format!("agent={lib}"));
        refused_at_onload(&r, &[&lib, "exports no JVM_OnLoad"]);
    });
}

#[test]
fn jvm_onload_returns_jni_err() {
    let lib = recorder().display().to_string();
    for_each_jdk(|jdk| {
        let r = rec(jdk, "rc=-1");
        fails_with(&r, &[&format!("legacy agent {lib}"), "JVM_OnLoad returned -1"]);
        assert!(!r.stdout.contains("hello"), "the program ran\n{}", r.describe());
        // The agent did run (and got its interface) before it failed.
        one(&r, "ONLOAD ");
        one(&r, "GETENV rc=0 ");
    });
}

/// An agent that enables no event and never sets NotifyEvent (one that only uses the
/// interface's functions, from its JNI natives) starts, as HotSpot started it; one that enables
/// events without a NotifyEvent starts too, its events are not delivered, and the shim says so
/// once, whatever the number of events.
#[test]
fn agent_never_sets_notify_event() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "no-notify");
        loads(&r);
        assert!(r.significant_stderr().is_empty(), "{}", r.describe());
        assert!(r.log_lines.first().is_some_and(|l| l.starts_with("ONLOAD ")), "{}", r.describe());
        let r = rec(jdk, "no-notify,enable=init+thread_start+class_load+shutdown");
        loads(&r);
        let said: Vec<&str> = r.stderr.lines().filter(|l| l.contains("has no NotifyEvent")).collect();
        assert_eq!(said.len(), 1, "one line for every undelivered event\n{}", r.describe());
        assert!(said[0].starts_with("jvmpi-shim: warning:") && said[0].contains(" not delivered"), "{}", r.describe());
        assert_eq!(r.significant_stderr().len(), 1, "{}", r.describe());
        let own = ["ONLOAD ", "GETENV ", "ENABLE "];
        assert!(
            r.log_lines.iter().all(|l| own.iter().any(|p| l.starts_with(p))),
            "an event was delivered\n{}",
            r.describe()
        );
        assert_eq!(r.count("ENABLE "), 4, "{}", r.describe());
    });
}

#[test]
fn agent_is_the_shim_itself() {
    for_each_jdk(|jdk| {
        let shim = shim().display().to_string();
        let r = hello(jdk, &format!("agent={shim}"));
        refused_at_onload(&r, &[&shim, "is jvmpi-shim itself"]);
    });
}

// ---- 10: -Xrun -----------------------------------------------------------------------------

/// `java <jvm args> -cp <classes> <main>` with `LD_LIBRARY_PATH` set to the shim's directory:
/// HotSpot looks for an `-Xrun` library in the JDK's lib directory, then on the library path.
fn xrun(jdk: &Jdk, jvm_args: &[String], main: &str) -> Run {
    let mut args = jvm_args.to_vec();
    args.extend(["-cp".into(), "{classes}".into(), main.into()]);
    let shim_dir = shim().parent().unwrap().display().to_string();
    run_raw_env(jdk, &args, &[("LD_LIBRARY_PATH", shim_dir)])
}

/// HotSpot calls an -Xrun library's JVM_OnLoad (before the live phase) in preference to its
/// Agent_OnLoad; the shim's JVM_OnLoad starts the emulation as soon as JVMTI can be had, before
/// the program runs.
#[test]
fn xrun_loads_the_shim() {
    let lib = recorder().display().to_string();
    for_each_jdk(|jdk| {
        let r = xrun(jdk, &[format!("-Xrunjvmpi_shim:agent={lib}:log={{log}},enable=init+shutdown")], "Hello");
        loads(&r);
        assert!(r.significant_stderr().is_empty(), "{}", r.describe());
        let opts = format!("ONLOAD options=log={},enable=init+shutdown reserved=(nil)", r.log_path.display());
        assert_eq!(r.log_lines.first(), Some(&opts), "{}", r.describe());
        assert!(r.log_lines[1].starts_with("GETENV rc=0 version_field=0x10000001"), "{}", r.describe());
        one(&r, "INIT_DONE");
        assert_eq!(r.log_lines.last().map(String::as_str), Some("SHUT_DOWN"), "{}", r.describe());

        // The full event stream, in order, with the program's own marks.
        let all = "enable=init+shutdown+thread_start+thread_end+class_load+gc_start+gc_finish";
        let r = xrun(
            jdk,
            &[format!("-Xrunjvmpi_shim:agent={lib}:log={{log}},{all}"), format!("-Dprobe.lib={lib}")],
            "Basic",
        );
        no_crash(&r);
        r.assert_ok();
        assert!(error_lines(&r).is_empty() && r.stdout.contains("done"), "{}", r.describe());
        assert!(!r.log.contains("VIOLATION"), "{}", r.describe());
        let main = one(&r, "THREAD_START name=main ");
        let init = one(&r, "INIT_DONE");
        let basic = one(&r, "CLASS_LOAD name=Basic ");
        let start = one(&r, "MARK main-start");
        assert!(main < init && init < basic && basic < start, "{}", r.describe());
        assert!(r.log.contains("CREATED_VMS found=1 getenv_rc=0 same_iface=1"), "{}", r.describe());
        assert_eq!(r.log_lines.last().map(String::as_str), Some("SHUT_DOWN"), "{}", r.describe());
    });
}

/// -Xrun failures: bad options make the JVM refuse the library; a missing agent is found out
/// when the emulation starts, and ends the JVM before the program runs.
#[test]
fn xrun_errors() {
    let missing = target_dir().join("no-such-dir/libmissing.so").display().to_string();
    for_each_jdk(|jdk| {
        // No agent named: the shim serves JVMPI to the libraries that ask (tests/libraries.rs).
        loads(&xrun(jdk, &["-Xrunjvmpi_shim".to_string()], "Hello"));
        let r = xrun(jdk, &["-Xrunjvmpi_shim:foo=1,agent=x".to_string()], "Hello");
        refused_at_onload(&r, &["unknown shim option `foo=1`"]);
        assert!(r.stdout.contains("jvmpi_shim"), "{}", r.describe());
        let r = xrun(jdk, &[format!("-Xrunjvmpi_shim:agent={missing}")], "Hello");
        fails_with(&r, &[&format!("{missing} does not exist")]);
        assert!(!r.stdout.contains("hello"), "the program ran\n{}", r.describe());
    });
}

// ---- a normal run is quiet -----------------------------------------------------------------

#[test]
fn successful_run_prints_nothing_on_stderr() {
    for_each_jdk(|jdk| {
        let r = rec(jdk, "enable=init");
        loads(&r);
        assert!(r.significant_stderr().is_empty(), "the shim printed on stderr\n{}", r.describe());
        one(&r, "INIT_DONE");
    });
}

// ---- 11: the shim's JVM_OnLoad on a JVM with native JVMPI ----------------------------------

/// Builds tests/agents/fakevm.c into an executable (once per process).
fn fakevm() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = repo_root();
            let dir = target_dir().join("test-agents");
            std::fs::create_dir_all(&dir).unwrap();
            let out = dir.join(format!("fakevm-{}", std::process::id()));
            let inc = jdk_include();
            let res = Command::new("gcc")
                .args(["-g", "-O1", "-Wall", "-I"])
                .arg(root.join("shim"))
                .arg("-I")
                .arg(&inc)
                .arg("-I")
                .arg(inc.join("linux"))
                .arg("-o")
                .arg(&out)
                .arg(root.join("tests/agents/fakevm.c"))
                .arg("-ldl")
                .output()
                .expect("running gcc");
            assert!(
                res.status.success(),
                "gcc failed on fakevm.c:\n{}{}",
                String::from_utf8_lossy(&res.stdout),
                String::from_utf8_lossy(&res.stderr)
            );
            out
        })
        .clone()
}

struct Fake {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `fakevm <shim> <options>`: it calls the shim's JVM_OnLoad with a fake JavaVM whose GetEnv
/// knows no JVMTI and answers JVMPI_VERSION_1 with the fake JVM's own interface.
fn run_fakevm(options: &str) -> Fake {
    let out = Command::new(fakevm()).arg(shim()).arg(options).output().expect("running fakevm");
    Fake {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn double_agent_on_a_jvm_with_native_jvmpi() {
    let lib = recorder().display().to_string();
    let log = fresh_log_path("fakevm");
    let agent_opts = format!("log={},enable=init", log.display());
    let f = run_fakevm(&format!("agent={lib}:{agent_opts}"));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let ctx = format!("exit {:?}\nstdout:\n{}\nstderr:\n{}\nlog:\n{}", f.code, f.stdout, f.stderr, text);
    assert_eq!(f.code, Some(0), "{ctx}");
    assert!(f.stdout.lines().any(|l| l == "JVM_OnLoad rc=0"), "{ctx}");
    assert!(!f.stdout.contains(ERROR) && !f.stderr.contains(ERROR), "{ctx}");
    let lines: Vec<&str> = text.lines().collect();
    // The agent got its options byte for byte, and the fake JVM's own JVMPI interface.
    assert_eq!(lines.first().copied(), Some(format!("ONLOAD options={agent_opts} reserved=(nil)").as_str()), "{ctx}");
    assert!(lines.get(1).is_some_and(|l| l.starts_with("GETENV rc=0 version_field=0x10000001 ")), "{ctx}");
    // Its EnableEvent(JVMPI_EVENT_JVM_INIT_DONE) went to the fake interface.
    assert!(f.stdout.lines().any(|l| l == "fake EnableEvent(46)"), "{ctx}");

    // No JVMTI, and an agent that does not exist: JNI_ERR and one error line.
    let missing = target_dir().join("no-such-dir/libmissing.so").display().to_string();
    let f = run_fakevm(&format!("agent={missing}:log={}", log.display()));
    let ctx = format!("exit {:?}\nstdout:\n{}\nstderr:\n{}", f.code, f.stdout, f.stderr);
    assert_eq!(f.code, Some(0), "{ctx}");
    assert!(f.stdout.lines().any(|l| l == "JVM_OnLoad rc=-1"), "{ctx}");
    let errs: Vec<&str> = f.stdout.lines().chain(f.stderr.lines()).filter(|l| l.starts_with(ERROR)).collect();
    assert_eq!(errs.len(), 1, "{ctx}");
    assert!(errs[0].contains(&format!("{missing} does not exist")), "{ctx}");
}
