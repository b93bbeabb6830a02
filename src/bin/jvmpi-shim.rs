//! `jvmpi-shim`: the command-line front end of the shim, for people who do not want to write
//! `-agentpath` strings or `jcmd` lines by hand.
//!
//! Exit codes: `run` exits with the code of `java` (it replaces itself with `java`), or 125 when
//! the front end fails before starting it, 126 when `java` cannot be executed, 127 when it
//! cannot be found (the conventions of `env`, `nohup` and `timeout`). The other commands exit
//! 0 on success, 1 when the operation failed (`check`: the agent will not work), 2 on a usage
//! error; `attach`/`ctl` pass `jcmd`'s own non-zero exit code through.

#[path = "jvmpi_shim_cli/check.rs"]
mod check;
#[path = "jvmpi_shim_cli/launch.rs"]
mod launch;
#[path = "jvmpi_shim_cli/locate.rs"]
mod locate;

use clap::{Args, Parser, Subcommand, ValueEnum};
use launch::{AgentSpec, ShimOptions};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "jvmpi-shim",
    version,
    about = "Runs legacy JVMPI profiler agents on JDK 11-25 through libjvmpi_shim.so",
    long_about = "Runs legacy JVMPI profiler agents (C libraries exporting JVM_OnLoad) unchanged on \
                  JDK 11-25 through libjvmpi_shim.so, which emulates JVMPI on JVMTI. This front end \
                  writes the -agentpath option and the jcmd command lines for you.",
    after_help = "Exit codes: run exits with java's code (125: the front end failed, 126: java cannot \
                  be executed, 127: java not found); the others exit 0 on success, 1 when the \
                  operation failed (check: the agent will not work), 2 on a usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start java with a legacy agent loaded through the shim.
    #[command(after_help = "Examples:\n  \
        jvmpi-shim run --agent ./libprof.so:heap=sites,depth=4 -- java -cp app Main\n  \
        jvmpi-shim run --agent hprof:cpu=samples --log info -- -cp app Main   (java from JAVA_HOME or PATH)\n\n\
        The command is `java -agentpath:<shim>=[log=..,][report=..,][trace=..,]agent=<lib>[:opts] ...`;\n\
        --dry-run prints it instead of running it.")]
    Run(RunArgs),
    /// Load a legacy agent into a running JVM (jcmd <pid> JVMTI.agent_load <shim> agent=<lib>:<opts>).
    Attach(AttachArgs),
    /// Send a command to the shim in a running JVM (jcmd <pid> JVMTI.agent_load <shim> <command>).
    Ctl(CtlArgs),
    /// Pre-flight a legacy agent library without a JVM: will the shim load it, what does it need?
    #[command(after_help = "Exit code 0: the agent should load and run; 1: it will not load, or parts \
        of it will fail when reached (the verdict says which).")]
    Check(CheckArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum Level {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Level::Off => "off",
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }
}

#[derive(Args)]
struct ShimArgs {
    /// The shim's own messages on stderr (shim option log=).
    #[arg(long, value_enum, value_name = "LEVEL")]
    log: Option<Level>,
    /// Write the migration report to FILE at exit (shim option report=; `-` is stderr, *.json is JSON).
    #[arg(long, value_name = "FILE")]
    report: Option<String>,
    /// Write the event trace to FILE as JSON lines (shim option trace=).
    #[arg(long, value_name = "FILE")]
    trace: Option<String>,
    /// Path of libjvmpi_shim.so (or its directory); default: next to this program.
    #[arg(long, value_name = "PATH")]
    shim: Option<PathBuf>,
}

impl ShimArgs {
    fn options(&self) -> ShimOptions {
        ShimOptions {
            log: self.log.map(|l| l.word().to_string()),
            report: self.report.clone(),
            trace: self.trace.clone(),
        }
    }
}

#[derive(Args)]
struct RunArgs {
    /// The legacy agent: a library path or a bare name (searched as lib<name>.so, like -Xrun),
    /// then `:` and the agent's own options, passed byte for byte.
    #[arg(long, short, value_name = "LIB[:OPTIONS]")]
    agent: String,
    #[command(flatten)]
    shim: ShimArgs,
    /// The java launcher to use when the command after `--` does not start with one
    /// (default: $JAVA_HOME/bin/java, else java on PATH).
    #[arg(long, value_name = "PATH")]
    java: Option<PathBuf>,
    /// Print the java command line instead of running it.
    #[arg(long)]
    dry_run: bool,
    /// `java` and its arguments, or only the arguments (java is then found as for --java).
    #[arg(last = true, required = true, value_name = "JAVA ARGS")]
    command: Vec<OsString>,
}

#[derive(Args)]
struct JcmdArgs {
    /// The jcmd to use (default: the one next to the java of --java, JAVA_HOME or PATH).
    #[arg(long, value_name = "PATH")]
    jcmd: Option<PathBuf>,
    /// The java whose jcmd to use.
    #[arg(long, value_name = "PATH")]
    java: Option<PathBuf>,
    /// Print the jcmd command line instead of running it.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args)]
struct AttachArgs {
    /// Process id of the running JVM.
    pid: u32,
    /// The legacy agent: a library path or bare name, then `:` and its options.
    #[arg(value_name = "LIB[:OPTIONS]")]
    agent: String,
    #[command(flatten)]
    shim: ShimArgs,
    #[command(flatten)]
    jcmd: JcmdArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum Control {
    /// DATA_DUMP_REQUEST to the agent.
    Dump,
    /// DATA_RESET_REQUEST to the agent.
    Reset,
    /// Write the migration report now.
    Report,
}

#[derive(Args)]
struct CtlArgs {
    /// Process id of the running JVM.
    pid: u32,
    #[arg(value_enum)]
    command: Control,
    /// Path of libjvmpi_shim.so (or its directory); default: next to this program.
    #[arg(long, value_name = "PATH")]
    shim: Option<PathBuf>,
    #[command(flatten)]
    jcmd: JcmdArgs,
}

#[derive(Args)]
struct CheckArgs {
    /// The legacy agent library.
    agent: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Check the agent's JVM symbols against this java's JDK (default: JAVA_HOME, else PATH).
    #[arg(long, value_name = "PATH")]
    java: Option<PathBuf>,
}

/// A one-line error and the exit code to leave with.
struct Fail(String, u8);

fn fail(code: u8) -> impl FnOnce(String) -> Fail {
    move |m| Fail(m, code)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Run(a) => run(a),
        Cmd::Attach(a) => attach(a),
        Cmd::Ctl(a) => ctl(a),
        Cmd::Check(a) => check(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Fail(msg, code)) => {
            eprintln!("jvmpi-shim: error: {msg}");
            ExitCode::from(code)
        }
    }
}

fn run(a: RunArgs) -> Result<u8, Fail> {
    let agent = AgentSpec::parse(&a.agent).map_err(fail(125))?;
    let options = launch::shim_option_string(&a.shim.options(), &agent, false).map_err(fail(125))?;
    let shim = locate::shim(a.shim.shim.as_deref()).map_err(fail(125))?;
    let (java, args) = launch::java_command(&shim, &options, a.java.as_deref(), &a.command).map_err(|m| {
        let code = if m.contains("no java found") || m.contains("not on PATH") || m.contains("has no bin/java") {
            127
        } else {
            125
        };
        Fail(m, code)
    })?;
    if a.dry_run {
        println!("{}", launch::command_line(&java, &args));
        return Ok(0);
    }
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(&java).args(&args).exec();
    let code = if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
    Err(Fail(format!("cannot run {}: {err}", java.display()), code))
}

fn jcmd_run(j: &JcmdArgs, pid: u32, shim: &Path, options: &str) -> Result<u8, Fail> {
    let found = locate::jcmd(j.jcmd.as_deref(), j.java.as_deref()).map_err(fail(1))?;
    let (program, args) = launch::jcmd_command(&found, pid, shim, options).map_err(fail(1))?;
    if j.dry_run {
        println!("{}", launch::command_line(&program, &args));
        return Ok(0);
    }
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return Err(Fail(format!("no process with id {pid} (is the JVM still running, on this machine?)"), 1));
    }
    let code = launch::run_jcmd(&program, &args).map_err(fail(1))?;
    Ok(u8::try_from(code).unwrap_or(1))
}

fn attach(a: AttachArgs) -> Result<u8, Fail> {
    let agent = AgentSpec::parse(&a.agent).map_err(fail(1))?;
    let options = launch::shim_option_string(&a.shim.options(), &agent, true).map_err(fail(1))?;
    let shim = locate::shim(a.shim.shim.as_deref()).map_err(fail(1))?;
    jcmd_run(&a.jcmd, a.pid, &shim, &options)
}

fn ctl(a: CtlArgs) -> Result<u8, Fail> {
    let shim = locate::shim(a.shim.as_deref()).map_err(fail(1))?;
    let word = match a.command {
        Control::Dump => "dump",
        Control::Reset => "reset",
        Control::Report => "report",
    };
    jcmd_run(&a.jcmd, a.pid, &shim, word)
}

fn check(a: CheckArgs) -> Result<u8, Fail> {
    if !a.agent.exists() {
        return Err(Fail(format!("{}: no such file", a.agent.display()), 1));
    }
    let java = locate::java(a.java.as_deref());
    let java = match (&a.java, java) {
        (Some(_), Err(e)) => return Err(Fail(e, 1)),
        (_, j) => j.ok().map(|f| f.path),
    };
    let analysis = check::analyse(&a.agent, java.as_deref());
    if a.json {
        println!("{}", check::json(&analysis));
    } else {
        print!("{}", check::text(&analysis));
    }
    Ok(analysis.exit_code() as u8)
}
