//! `run`, `attach` and `ctl`: building the shim's option string and the `java` or `jcmd`
//! command line, and running it.

use super::locate::{self, Found};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The shim options the front end can set. They are written before `agent=`, which must come
/// last (everything after it belongs to the legacy agent: see `src/rooms/options.rs`).
#[derive(Debug, Default, Clone)]
pub struct ShimOptions {
    pub log: Option<String>,
    pub report: Option<String>,
    pub trace: Option<String>,
}

/// `<lib>[:<options>]` as given on the command line, split at the first `:`.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub lib: String,
    pub options: Option<String>,
}

impl AgentSpec {
    pub fn parse(spec: &str) -> Result<AgentSpec, String> {
        let (lib, options) = match spec.split_once(':') {
            Some((l, o)) => (l, Some(o.to_string())),
            None => (spec, None),
        };
        if lib.is_empty() {
            return Err(format!("`{spec}` names no agent library: write <lib>[:<agent options>]"));
        }
        if lib.contains(',') || lib.contains('=') {
            return Err(format!(
                "`{lib}`: an agent library name cannot contain ',' or '='; the agent's own options go after a ':' (<lib>:<options>)"
            ));
        }
        Ok(AgentSpec { lib: lib.to_string(), options })
    }

    /// The library as the shim should see it: an existing file becomes an absolute path (a bare
    /// `libx.so` in the current directory would otherwise be searched as a library name, and a
    /// JVM attached to has another working directory); a path that does not exist is an error;
    /// a bare name that is not a file here (`hprof`) is passed on, for the shim to search the way
    /// `-Xrun` did.
    pub fn resolved_lib(&self) -> Result<String, String> {
        let p = Path::new(&self.lib);
        if p.is_file() {
            let abs = locate::absolute(p)?;
            let s = abs.to_string_lossy().into_owned();
            if s.contains(':') || s.contains(',') || s.contains('=') {
                return Err(format!(
                    "the agent library's path {s} contains ':', ',' or '=', which the shim's options cannot carry; use a symbolic link"
                ));
            }
            return Ok(s);
        }
        if self.lib.contains('/') {
            return Err(format!("agent library {} does not exist", self.lib));
        }
        Ok(self.lib.clone())
    }
}

/// A file value for `report=` / `trace=`: `-` (stderr) as is, a path absolute if `absolute`.
fn file_value(what: &str, v: &str, absolute: bool) -> Result<String, String> {
    if v.is_empty() {
        return Err(format!("--{what} needs a file name (or - for stderr)"));
    }
    if v.contains(',') {
        return Err(format!("--{what} {v}: the file name cannot contain ',' (it separates the shim's options)"));
    }
    if v == "-" || !absolute {
        return Ok(v.to_string());
    }
    Ok(std::path::absolute(v).map_err(|e| format!("--{what} {v}: {e}"))?.to_string_lossy().into_owned())
}

/// `[log=<level>,][report=<file>,][trace=<file>,]agent=<lib>[:<options>]`. With `absolute`,
/// file names are made absolute (for a JVM with another working directory).
pub fn shim_option_string(shim: &ShimOptions, agent: &AgentSpec, absolute: bool) -> Result<String, String> {
    let mut parts = Vec::new();
    if let Some(l) = &shim.log {
        parts.push(format!("log={l}"));
    }
    if let Some(r) = &shim.report {
        parts.push(format!("report={}", file_value("report", r, absolute)?));
    }
    if let Some(t) = &shim.trace {
        parts.push(format!("trace={}", file_value("trace", t, absolute)?));
    }
    let mut a = format!("agent={}", agent.resolved_lib()?);
    if let Some(o) = &agent.options {
        a.push(':');
        a.push_str(o);
    }
    parts.push(a);
    Ok(parts.join(","))
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(s: &OsStr) -> String {
    let t = s.to_string_lossy();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c)) {
        t.into_owned()
    } else {
        format!("'{}'", t.replace('\'', "'\\''"))
    }
}

pub fn command_line(program: &Path, args: &[OsString]) -> String {
    std::iter::once(shell_quote(program.as_os_str()))
        .chain(args.iter().map(|a| shell_quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the first word after `--` is a Java launcher (`java`, `/path/to/java`).
fn is_java_launcher(word: &OsStr) -> bool {
    Path::new(word).file_name().is_some_and(|n| n == "java")
}

/// The `java` command line of `run`: the launcher, `-agentpath:<shim>=<options>` first, then the
/// user's arguments.
pub fn java_command(
    shim: &Path,
    options: &str,
    java_given: Option<&Path>,
    command: &[OsString],
) -> Result<(PathBuf, Vec<OsString>), String> {
    let (java, rest) = match command.split_first() {
        Some((first, rest)) if is_java_launcher(first) => {
            if java_given.is_some() {
                return Err(
                    "the launcher is given twice: use either --java <path> or a java as the first word after --".into(),
                );
            }
            let p = Path::new(first);
            let java = if first.as_bytes().contains(&b'/') {
                p.to_path_buf()
            } else {
                locate::on_path(&first.to_string_lossy())
                    .ok_or_else(|| "`java` (the first word after --) is not on PATH".to_string())?
            };
            (java, rest)
        }
        _ => (locate::java(java_given)?.path, command),
    };
    let mut agentpath = OsString::from("-agentpath:");
    agentpath.push(shim.as_os_str());
    agentpath.push("=");
    agentpath.push(options);
    let mut args = vec![agentpath];
    args.extend(rest.iter().cloned());
    Ok((java, args))
}

/// The `jcmd` command line of `attach` and `ctl`: `jcmd <pid> JVMTI.agent_load <shim> <options>`.
pub fn jcmd_command(jcmd: &Found, pid: u32, shim: &Path, options: &str) -> Result<(PathBuf, Vec<OsString>), String> {
    for (what, s) in [("the shim's path", shim.to_string_lossy().into_owned()), ("the options", options.to_string())] {
        if s.chars().any(char::is_whitespace) {
            return Err(format!(
                "{what} `{s}` contains white space, which jcmd cannot pass on (it splits its command at spaces)"
            ));
        }
    }
    let args = vec![
        OsString::from(pid.to_string()),
        OsString::from("JVMTI.agent_load"),
        shim.as_os_str().to_os_string(),
        // jcmd's command parser takes `name=value` for a named option and drops it from the
        // positional `options` argument: quoted, the whole string reaches Agent_OnAttach.
        OsString::from(if options.contains('=') { format!("\"{options}\"") } else { options.to_string() }),
    ];
    Ok((jcmd.path.clone(), args))
}

/// Runs jcmd, shows its output, and turns it into an exit code: jcmd's own when it failed,
/// 1 when the JVM says the library was not loaded or its `Agent_OnAttach` failed (jcmd exits
/// 0 then), 0 otherwise.
pub fn run_jcmd(program: &Path, args: &[OsString]) -> Result<i32, String> {
    let out = Command::new(program)
        .args(args)
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("_JAVA_OPTIONS")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    let code = out.status.code().unwrap_or(1);
    if code != 0 {
        eprintln!("jvmpi-shim: error: jcmd failed (exit code {code}); its output is above");
        return Ok(code);
    }
    if let Some(why) = load_failure(&stdout) {
        eprintln!("jvmpi-shim: error: the JVM did not take the command: {why} (jcmd's output is above)");
        return Ok(1);
    }
    Ok(0)
}

/// What `JVMTI.agent_load` prints when it fails, though jcmd still exits 0.
fn load_failure(out: &str) -> Option<String> {
    for line in out.lines().map(str::trim) {
        if line.ends_with("was not loaded.")
            || line.contains("is not available in")
            || line.contains("Agent_OnAttach failed")
        {
            return Some(line.to_string());
        }
        if let Some(rc) = line.strip_prefix("return code:") {
            if rc.trim() != "0" {
                return Some(format!("Agent_OnAttach returned {}", rc.trim()));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_before_agent() {
        let shim = ShimOptions { log: Some("info".into()), report: Some("-".into()), trace: Some("t.jsonl".into()) };
        let a = AgentSpec::parse("hprof:heap=sites,depth=4:x").unwrap();
        assert_eq!(
            shim_option_string(&shim, &a, false).unwrap(),
            "log=info,report=-,trace=t.jsonl,agent=hprof:heap=sites,depth=4:x"
        );
        let a = AgentSpec::parse("hprof").unwrap();
        assert_eq!(shim_option_string(&ShimOptions::default(), &a, false).unwrap(), "agent=hprof");
        assert!(AgentSpec::parse(":x").is_err());
        assert!(AgentSpec::parse("a,b").is_err());
        assert!(AgentSpec::parse("/no/such/libx.so").unwrap().resolved_lib().is_err());
    }

    #[test]
    fn failures_of_agent_load() {
        assert!(load_failure("1:\n/x.so was not loaded.\n/x.so: cannot open").is_some());
        assert!(load_failure("1:\nAgent_OnAttach is not available in /x.so\n").is_some());
        assert!(load_failure("1:\nreturn code: -1\n").is_some());
        assert!(load_failure("1:\nreturn code: 0\n").is_none());
        assert!(load_failure("1:\n").is_none());
    }
}
