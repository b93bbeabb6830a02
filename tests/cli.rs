//! The command-line front end, `jvmpi-shim`: `--help`, `check` on agents that will and will
//! not work, `run` with a real JVM (the exit code passes through), and the `jcmd` command lines
//! of `attach` and `ctl` (printed with `--dry-run`, and once for real against a sleeping JVM).

mod harness;

use harness::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_jvmpi-shim");

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    cmdline: String,
}

impl Out {
    fn describe(&self) -> String {
        format!("$ {}\nexit: {:?}\n--- stdout\n{}--- stderr\n{}", self.cmdline, self.code, self.stdout, self.stderr)
    }
    #[track_caller]
    fn code(&self, want: i32) -> &Self {
        assert_eq!(self.code, Some(want), "{}", self.describe());
        self
    }
    #[track_caller]
    fn out_has(&self, needle: &str) -> &Self {
        assert!(self.stdout.contains(needle), "stdout lacks {needle:?}\n{}", self.describe());
        self
    }
    #[track_caller]
    fn err_has(&self, needle: &str) -> &Self {
        assert!(self.stderr.contains(needle), "stderr lacks {needle:?}\n{}", self.describe());
        self
    }
}

/// Runs `jvmpi-shim <args>` (after making sure the shim library is built next to it) with the
/// extra environment `env` (`None` removes a variable), killing it after the harness timeout.
fn cli_env(args: &[&str], env: &[(&str, Option<&str>)]) -> Out {
    shim();
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(repo_root())
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .env_remove("_JAVA_OPTIONS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let cmdline = format!("jvmpi-shim {}", args.join(" "));
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {BIN}: {e}"));
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let (o, e) = (reader(Box::new(child.stdout.take().unwrap())), reader(Box::new(child.stderr.take().unwrap())));
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > timeout() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmdline} timed out after {:?}", timeout());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Out { code: status.code(), stdout: o.join().unwrap(), stderr: e.join().unwrap(), cmdline }
}

fn cli(args: &[&str]) -> Out {
    cli_env(args, &[])
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// The shim as the front end names it: next to the binary, absolute.
fn shim_path() -> String {
    s(&shim().canonicalize().unwrap())
}

fn scratch(name: &str) -> PathBuf {
    let d = target_dir().join("test-cli");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

// ---- --help ----------------------------------------------------------------------------------

#[test]
fn help_on_every_subcommand() {
    cli(&["--help"]).code(0).out_has("run").out_has("attach").out_has("ctl").out_has("check").out_has("Exit codes");
    cli(&["--version"]).code(0).out_has("jvmpi-shim");
    cli(&["run", "--help"])
        .code(0)
        .out_has("--agent")
        .out_has("--report")
        .out_has("--trace")
        .out_has("--log")
        .out_has("--dry-run");
    cli(&["attach", "--help"]).code(0).out_has("<PID>").out_has("JVMTI.agent_load");
    cli(&["ctl", "--help"]).code(0).out_has("dump").out_has("reset").out_has("report");
    cli(&["check", "--help"]).code(0).out_has("--json");
    // Usage errors: exit 2, one clear message.
    cli(&[]).code(2).err_has("Usage");
    cli(&["frobnicate"]).code(2).err_has("unrecognized subcommand");
    cli(&["ctl", "12", "explode"]).code(2).err_has("possible values: dump, reset, report");
    cli(&["ctl", "notapid", "dump"]).code(2).err_has("invalid value 'notapid'");
    cli(&["run", "--agent", "x"]).code(2).err_has("<JAVA ARGS>");
}

// ---- check -----------------------------------------------------------------------------------

fn system_java() -> String {
    s(&jdk17_home().join("bin/java"))
}

fn check(lib: &Path, json: bool) -> Out {
    let (j, lib) = (system_java(), s(lib));
    let mut args = vec!["check", lib.as_str(), "--java", j.as_str()];
    if json {
        args.push("--json");
    }
    cli(&args)
}

#[test]
fn check_a_jvmpi_agent() {
    let r = check(&agent("recorder"), false);
    r.code(0)
        .out_has("JVM_OnLoad:      exported")
        .out_has("JVMPI_VERSION_1 (0x10000001")
        .out_has("JVMPI_VERSION_1_2 (0x10000003")
        .out_has("(as far as can be seen)")
        .out_has("Probe.callTrace")
        .out_has("verdict: should load and run under the shim")
        .out_has("cannot be read from the file");
    let j = check(&agent("recorder"), true);
    j.code(0).out_has("\"works\":true").out_has("\"JVM_OnLoad\":true").out_has("\"name\":\"JVMPI_VERSION_1\"");
    assert_eq!(j.stdout.trim().lines().count(), 1, "{}", j.describe());
    assert!(j.stdout.trim().starts_with('{') && j.stdout.trim().ends_with('}'));
}

#[test]
fn check_a_library_without_jvm_onload() {
    check(&agent("noop_jvmti"), false)
        .code(1)
        .out_has("JVM_OnLoad:      not exported")
        .out_has("verdict: will not work")
        .out_has("exports no JVM_OnLoad")
        .out_has("It exports Agent_OnLoad: it is a JVMTI agent");
    check(&agent("noop_jvmti"), true).code(1).out_has("\"loads\":false").out_has("\"severity\":\"fatal\"");
}

#[test]
fn check_files_that_are_not_libraries() {
    let text = scratch("notes.txt");
    std::fs::write(&text, "not a library\n").unwrap();
    check(&text, false).code(1).out_has("not an ELF shared library").out_has("verdict: will not work");

    let bytes = std::fs::read(agent("recorder")).unwrap();
    let cut = scratch("libtruncated.so");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    check(&cut, false).code(1).out_has("truncated").out_has("verdict: will not work");
    check(&cut, true).code(1).out_has("\"elf_error\":\"a truncated ELF file");

    cli(&["check", "/no/such/libagent.so"]).code(1).err_has("jvmpi-shim: error: /no/such/libagent.so: no such file");
}

/// A JDK 1.2-era agent: it needs libhpi.so, calls an HPI function, a JVM function no modern
/// JDK exports, one that JDK 25 dropped, and one that is still there.
#[test]
fn check_an_agent_that_needs_what_modern_jdks_removed() {
    let dir = scratch("old");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("old.c");
    std::fs::write(
        &src,
        "extern int JVM_OnExit(void (*)(void));\n\
         extern void *sysMalloc(unsigned long);\n\
         extern int JVM_Sleep(void *, void *, long long);\n\
         extern int jio_snprintf(char *, unsigned long, const char *, ...);\n\
         int JVM_OnLoad(void *vm, char *o, void *r) {\n\
           if (o && o[0] == 'x') { JVM_OnExit(0); sysMalloc(1); JVM_Sleep(0, 0, 0); jio_snprintf(0, 0, \"\"); }\n\
           return o ? 0x10000002 : 0;\n\
         }\n",
    )
    .unwrap();
    std::fs::write(dir.join("hpi.c"), "int DLL_Initialize(void) { return 0; }\n").unwrap();
    let gcc = |args: &[&str]| {
        let o = Command::new("gcc").current_dir(&dir).args(args).output().unwrap();
        assert!(o.status.success(), "gcc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    gcc(&["-shared", "-fPIC", "-o", "libold.so", "old.c"]);
    // A stand-in libhpi.so to link against, removed afterwards, as no modern JDK has one.
    gcc(&["-shared", "-fPIC", "-Wl,-soname,libhpi.so", "-o", "libhpi.so", "hpi.c"]);
    gcc(&["-shared", "-fPIC", "-o", "libold_hpi.so", "old.c", "-L.", "-Wl,--no-as-needed", "-lhpi"]);
    std::fs::remove_file(dir.join("libhpi.so")).unwrap();

    let r = check(&dir.join("libold.so"), false);
    r.code(1)
        .out_has("JVMPI_VERSION_1_1 (0x10000002, in code)")
        .out_has("verdict: loads, but parts of it will fail when reached")
        .out_has("!! JVM_OnExit (function): not exported by libjvm.so of the JDK at")
        .out_has("exported by none of JDK 11, 17, 21, 25")
        .out_has("!! sysMalloc (function): an HPI")
        .out_has("ok jio_snprintf")
        .out_has("symbol lookup error");
    // JDK 17 still has JVM_Sleep; JDK 25 does not.
    r.out_has("ok JVM_Sleep").out_has("not exported by JDK 25");
    if let Some(j25) = jdk(25) {
        let (lib, java) = (s(&dir.join("libold.so")), s(&j25.java));
        cli(&["check", &lib, "--java", &java]).code(1).out_has("!! JVM_Sleep (function): not exported by libjvm.so");
    }

    check(&dir.join("libold_hpi.so"), false)
        .code(1)
        .out_has("needs library:   libhpi.so (NOT FOUND)")
        .out_has("verdict: will not work")
        .out_has("the Host Porting Interface of JDK 1.2-6");
    check(&dir.join("libold_hpi.so"), true)
        .code(1)
        .out_has("{\"name\":\"libhpi.so\",\"path\":null}")
        .out_has("\"status\":\"hpi\"");
}

// ---- run -------------------------------------------------------------------------------------

/// `<home>` of a JDK's `java`.
fn home_of(jdk: &Jdk) -> PathBuf {
    jdk.java.canonicalize().unwrap().parent().unwrap().parent().unwrap().to_path_buf()
}

#[test]
fn run_passes_the_exit_code_through() {
    let rec = s(&agent("recorder"));
    let classes = s(&classes());
    for_each_jdk(|jdk| {
        let java = s(&jdk.java);
        let log = fresh_log_path(&format!("cli-run-jdk{}", jdk.feature));
        let agent = format!("{rec}:log={},enable=init", log.display());
        // `-- java …`
        let r = cli(&["run", "--agent", &agent, "--", &java, "-cp", &classes, "Hello", "exit", "3"]);
        r.code(3).out_has("hello");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(text.contains("GETENV rc=0"), "the agent got no JVMPI interface:\n{text}\n{}", r.describe());
        assert!(text.lines().any(|l| l.starts_with("INIT_DONE")), "no JVM_INIT_DONE:\n{text}\n{}", r.describe());

        // `--java <java> -- <program args>`
        let log2 = fresh_log_path(&format!("cli-run2-jdk{}", jdk.feature));
        let agent2 = format!("{rec}:log={}", log2.display());
        cli(&["run", "--log", "warn", "--agent", &agent2, "--java", &java, "--", "-cp", &classes, "Hello"])
            .code(0)
            .out_has("hello");
        assert!(std::fs::read_to_string(&log2).unwrap_or_default().contains("ONLOAD"));

        // java from JAVA_HOME.
        let home = s(&home_of(jdk));
        let d = cli_env(
            &["run", "--dry-run", "--agent", "hprof:x", "--", "-cp", "app", "Main"],
            &[("JAVA_HOME", Some(&home))],
        );
        d.code(0).out_has(&format!("{home}/bin/java -agentpath:{}=agent=hprof:x -cp app Main", shim_path()));
    });
}

#[test]
fn run_builds_the_agentpath() {
    let rec = s(&agent("recorder").canonicalize().unwrap());
    let shim = shim_path();
    let java = system_java();
    let r = cli(&[
        "run",
        "--dry-run",
        "--log",
        "info",
        "--report",
        "out.txt",
        "--trace",
        "-",
        "--agent",
        &format!("{rec}:heap=sites,depth=4:x=y"),
        "--",
        &java,
        "-Xmx64m",
        "-cp",
        "app",
        "Main",
        "a b",
    ]);
    r.code(0).out_has(&format!(
        "{java} -agentpath:{shim}=log=info,report=out.txt,trace=-,agent={rec}:heap=sites,depth=4:x=y -Xmx64m -cp app Main 'a b'"
    ));
    // A library named by a relative path is made absolute; a bare name is left for the shim to search.
    let rel = Path::new(&rec).strip_prefix(repo_root()).unwrap().display().to_string();
    cli(&["run", "--dry-run", "--agent", &format!("{rel}:o"), "--", &java])
        .code(0)
        .out_has(&format!("=agent={rec}:o\n"));
    cli(&["run", "--dry-run", "--agent", "hprof", "--", &java]).code(0).out_has("=agent=hprof\n");
    // --shim: a file or its directory.
    let dir = s(Path::new(&shim).parent().unwrap());
    cli(&["run", "--dry-run", "--shim", &dir, "--agent", "hprof", "--", &java])
        .code(0)
        .out_has(&format!("-agentpath:{shim}="));
}

#[test]
fn run_errors() {
    let java = system_java();
    cli(&["run", "--agent", "/no/such/libagent.so", "--", &java, "-version"])
        .code(125)
        .err_has("jvmpi-shim: error: agent library /no/such/libagent.so does not exist");
    cli(&["run", "--agent", "a,b", "--", &java]).code(125).err_has("cannot contain ',' or '='");
    cli(&["run", "--agent", "hprof", "--report", "a,b", "--", &java]).code(125).err_has("cannot contain ','");
    cli(&["run", "--agent", "hprof", "--shim", "/no/such/libjvmpi_shim.so", "--", &java])
        .code(125)
        .err_has("--shim /no/such/libjvmpi_shim.so: no such file");
    cli(&["run", "--agent", "hprof", "--java", &java, "--", &java]).code(125).err_has("the launcher is given twice");
    cli_env(&["run", "--agent", "hprof", "--", "Main"], &[("JAVA_HOME", None), ("PATH", Some("/nonexistent"))])
        .code(127)
        .err_has("no java found");
    // The shim's own refusals come from the JVM, with its exit code.
    let r = cli(&["run", "--agent", "/etc/hostname", "--", &java, "-version"]);
    assert_ne!(r.code, Some(0), "{}", r.describe());
    r.err_has("jvmpi-shim: error:");
}

// ---- attach, ctl -----------------------------------------------------------------------------

#[test]
fn attach_and_ctl_command_lines() {
    let home = s(&jdk17_home());
    let env = [("JAVA_HOME", Some(home.as_str()))];
    let shim = shim_path();
    let jcmd = format!("{home}/bin/jcmd");
    for (word, _) in [("dump", 0), ("reset", 0), ("report", 0)] {
        cli_env(&["ctl", "4242", word, "--dry-run"], &env)
            .code(0)
            .out_has(&format!("{jcmd} 4242 JVMTI.agent_load {shim} {word}\n"));
    }
    let rec = s(&agent("recorder").canonicalize().unwrap());
    let rel = Path::new(&rec).strip_prefix(repo_root()).unwrap().display().to_string();
    cli_env(
        &["attach", "4242", &format!("{rel}:heap=sites,depth=4"), "--log", "info", "--report", "r.txt", "--dry-run"],
        &env,
    )
    .code(0)
    .out_has(&format!(
        "{jcmd} 4242 JVMTI.agent_load {shim} '\"log=info,report={}/r.txt,agent={rec}:heap=sites,depth=4\"'\n",
        repo_root().display()
    ));
    // --jcmd, and --java to find it.
    cli(&["ctl", "1", "dump", "--dry-run", "--jcmd", "/bin/true"]).code(0).out_has("/bin/true 1 JVMTI.agent_load");
    if let Some(j25) = jdk(25) {
        let j = s(&j25.java);
        let d = j25.java.parent().unwrap().join("jcmd");
        if d.is_file() {
            cli(&["ctl", "1", "dump", "--dry-run", "--java", &j])
                .code(0)
                .out_has(&format!("{} 1 JVMTI.agent_load", d.display()));
        }
    }
    // A runtime without jcmd.
    let bare = scratch("bare-runtime/bin");
    std::fs::create_dir_all(&bare).unwrap();
    let fake = bare.join("java");
    std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
    let mut p = std::fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    std::fs::set_permissions(&fake, p).unwrap();
    cli(&["ctl", "1", "dump", "--java", &s(&fake)]).code(1).err_has("ships without jcmd");
    // Errors.
    cli(&["attach", "4242", "/no/such/lib.so", "--dry-run"])
        .code(1)
        .err_has("agent library /no/such/lib.so does not exist");
    cli(&["attach", "4242", &format!("{rec}:a b"), "--dry-run"]).code(1).err_has("white space");
    cli_env(&["ctl", "999999999", "dump"], &env).code(1).err_has("no process with id 999999999");
}

/// A real `jcmd` against a sleeping JVM: `ctl` with no agent in it is refused (exit 1, the
/// shim's reason in the JVM's stderr), `attach` loads the recorder late (exit 0), and then
/// `ctl dump` reaches it (exit 0, DATA_DUMP in its log).
#[test]
fn ctl_and_attach_run_jcmd() {
    let home = jdk17_home();
    if !home.join("bin/jcmd").is_file() {
        eprintln!("no jcmd in {}: skipped", home.display());
        return;
    }
    let mut jvm = Command::new(home.join("bin/java"))
        .args(["-cp", &s(&classes()), "Hello", "sleep", "60000"])
        .env_remove("JAVA_TOOL_OPTIONS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = jvm.id().to_string();
    let log = fresh_log_path("cli_attach");
    let env = [("JAVA_HOME", Some(home.to_str().unwrap()))];
    // The attach listener answers once the JVM is up; jcmd itself waits for it.
    let before = cli_env(&["ctl", &pid, "dump"], &env);
    let spec = format!("{}:log={},enable=init+data_dump", s(&agent("recorder")), log.display());
    let a = cli_env(&["attach", &pid, &spec], &env);
    let after = cli_env(&["ctl", &pid, "dump"], &env);
    let _ = jvm.kill();
    let _ = jvm.wait();
    for o in [&before, &a, &after] {
        o.out_has(&format!("{pid}:"));
    }
    assert_eq!(before.code, Some(1), "{}", before.describe());
    before.err_has("jvmpi-shim: error:");
    assert_eq!(a.code, Some(0), "{}", a.describe());
    assert_eq!(after.code, Some(0), "{}", after.describe());
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.lines().any(|l| l.starts_with("INIT_DONE")) && text.lines().any(|l| l == "DATA_DUMP"), "{text}");
}

/// `jcmd <pid> JVMTI.agent_load <shim> agent=<lib>` typed unquoted, as JVMTI users type it:
/// jcmd's own parser takes `agent=` for a key and hands the shim the bare word `agent`. The
/// shim says so, and shows the quoted form and `jvmpi-shim attach`; nothing is attached.
#[test]
fn unquoted_jcmd_agent_load_names_the_quoted_form() {
    let home = jdk17_home();
    if !home.join("bin/jcmd").is_file() {
        eprintln!("no jcmd in {}: skipped", home.display());
        return;
    }
    let err_path = fresh_log_path("jcmd_unquoted").with_extension("err");
    let mut jvm = Command::new(home.join("bin/java"))
        .args(["-cp", &s(&classes()), "Hello", "sleep", "60000"])
        .env_remove("JAVA_TOOL_OPTIONS")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
        .spawn()
        .unwrap();
    let pid = jvm.id().to_string();
    let lib = format!("agent={}", s(&agent("recorder")));
    let o = Command::new(home.join("bin/jcmd")).args([&pid, "JVMTI.agent_load", &shim_path(), &lib]).output().unwrap();
    // The JVM's stderr line comes with the load; give it a moment to be written.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut err = String::new();
    while Instant::now() < deadline {
        err = std::fs::read_to_string(&err_path).unwrap_or_default();
        if err.contains("jvmpi-shim") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = jvm.kill();
    let _ = jvm.wait();
    let jcmd_out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(err.contains("only the word `agent`"), "JVM stderr:\n{err}\njcmd:\n{jcmd_out}");
    assert!(err.contains("'\"agent=<lib>[:<options>]\"'") && err.contains("jvmpi-shim attach"), "{err}");
    assert!(!err.contains("attaching a legacy agent"), "{err}");
}
