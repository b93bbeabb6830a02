//! The shim's option string: what follows `-agentpath:…/libjvmpi_shim.so=`.
//!
//! Syntax: `[log=<level>,]agent=<path-or-name>[:<agent options>]`, or the shim options alone
//! (none at all: `-agentpath:…/libjvmpi_shim.so`): no legacy agent, the shim only serves
//! `GetEnv(JVMPI_VERSION_1…)` to the JNI libraries that ask for it at run time.
//!
//! * Shim options come first, comma-separated `key=value`: `log=` (`off`, `error`, `warn`
//!   (default), `info`, `debug`); `report=<file>` (the migration report at exit: `-` for
//!   stderr, a name ending in `.json` for JSON); `trace=<file>` (every event and call as JSON
//!   lines), `trace-events=<family>+<family>…` (keep only these: thread, class, object, gc,
//!   monitor, method, jni, vm, call) and `trace-max=<lines>` (default 1000000);
//!   `methods=bci|jvmti`; `owned-monitors=yes|no` and `locals=yes|no` (default: yes from JDK 16); `cache=<dir>|off`
//!   (the start-up rewrite cache, `vm::rewrites`; default `$XDG_CACHE_HOME/jvmpi-shim` or
//!   `~/.cache/jvmpi-shim`); `vthreads=own|carrier` (JDK 21+: each virtual thread a JVMPI
//!   thread of its own, the default, or its events carried by its carrier's `env_id`).
//! * `agent=` must be the last shim option: everything after it belongs to the legacy agent.
//!   The library is named up to the first `:`; everything after that `:` is handed to the
//!   agent's `JVM_OnLoad` byte for byte, exactly as `-Xrun<name>:<options>` did — commas, `=`
//!   and further `:` included. Without a `:` the agent gets `NULL`, as `-Xrun<name>` without
//!   options gave; a trailing `:` gives `""`.
//! * A library path cannot contain `:` (the same rule as `-Xrun`); use a symlink if it must.

use log::LevelFilter;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub log: LevelFilter,
    /// `methods=jvmti`: METHOD_ENTRY/ENTRY2/EXIT from JVMTI MethodEntry/MethodExit instead of
    /// bytecode instrumentation (`methods=bci`, the default).
    pub methods_jvmti: bool,
    /// `owned-monitors=yes|no`: whether the shim takes JVMTI's `can_get_owned_monitor_info`
    /// (MONITOR_DUMP then lists monitors owned without contention). `None`: by the JDK, yes
    /// from [`OWNED_MONITORS_FREE_FROM_JDK`] on, where it leaves C2's escape analysis on.
    pub owned_monitors: Option<bool>,
    /// `locals=yes|no`: whether the shim takes JVMTI's `can_access_local_variables`, with which
    /// `jobjectID2jobject` answers for an object whose OBJECT_ALLOC is being delivered before its
    /// constructor runs; None: the default (yes from [`OWNED_MONITORS_FREE_FROM_JDK`] on).
    pub locals: Option<bool>,
    /// `agent=` value up to the first `:`: a path (contains `/`) or a bare library name; `None`
    /// without `agent=` (the shim serves JVMPI to the libraries that ask, no agent is loaded).
    pub agent: Option<String>,
    /// The legacy agent's own options, byte for byte; `None` (the agent gets `NULL`) when
    /// `agent=` has no `:`.
    pub agent_options: Option<Vec<u8>>,
    /// `report=`: where the migration report goes (`-` = stderr).
    pub report: Option<String>,
    /// `trace=`: the event trace file.
    pub trace: Option<String>,
    /// `trace-events=`: families kept in the trace (empty = all).
    pub trace_events: Vec<String>,
    /// `trace-max=`: the most lines a trace holds.
    pub trace_max: u64,
    /// `cache=`: the start-up rewrite cache's directory, or `off`; `None`: the default one.
    pub cache: Option<String>,
    /// `disable-gc-max=<seconds>`: how long DisableGC may hold collections off (default 10).
    pub disable_gc_max: Option<std::time::Duration>,
    /// `vthreads=own|carrier`: on JDK 21+, each virtual thread is a JVMPI thread of its own
    /// (`own`, the default), or its events carry its carrier's `env_id` as before (`carrier`).
    pub vthreads_carrier: bool,
}

/// The first JDK whose C2 keeps escape analysis on while an environment possesses
/// `can_get_owned_monitor_info` (JDK-8227745); before it, the capability turns escape analysis
/// and lock elimination off for the whole run.
pub const OWNED_MONITORS_FREE_FROM_JDK: u32 = 16;

/// Families a trace can keep.
pub const TRACE_FAMILIES: [&str; 9] = ["thread", "class", "object", "gc", "monitor", "method", "jni", "vm", "call"];

/// What `jcmd <pid> JVMTI.agent_load <shim> <options>` hands the shim when the options were typed
/// unquoted: jcmd's own parser takes `agent=<lib>` (and `log=…`) for a key and value of its own
/// and passes only the key, the bare word `agent`. The message for that case (None otherwise).
pub fn unquoted_jcmd_hint(text: &str) -> Option<String> {
    const KEYS: [&str; 12] = [
        "agent",
        "log",
        "methods",
        "owned-monitors",
        "locals",
        "report",
        "trace",
        "trace-events",
        "trace-max",
        "cache",
        "disable-gc-max",
        "vthreads",
    ];
    let word = text.trim();
    if !KEYS.contains(&word) {
        return None;
    }
    Some(format!(
        "jcmd passed the shim only the word `{word}`: typed unquoted, `{word}=…` is taken by jcmd's own parser \
         for an argument of its own. Quote the whole option string: \
         jcmd <pid> JVMTI.agent_load <path>/libjvmpi_shim.so '\"agent=<lib>[:<options>]\"', \
         or let `jvmpi-shim attach <pid> <lib>[:<options>]` build the command"
    ))
}

/// Parses the shim's options; the error is a one-line, user-facing message.
pub fn parse(raw: Option<&[u8]>) -> Result<Options, String> {
    let raw = raw.unwrap_or(b"");
    let mut log = LevelFilter::Warn;
    let (mut report, mut trace, mut trace_events, mut trace_max) = (None, None, Vec::new(), 1_000_000u64);
    let mut methods_jvmti = false;
    let mut owned_monitors = None;
    let mut locals = None;
    let mut cache = None;
    let mut disable_gc_max = None;
    let mut vthreads_carrier = false;
    let mut rest = raw;
    loop {
        if rest.is_empty() {
            if raw.last() == Some(&b',') {
                return Err("empty option at the end of the shim's options (a trailing comma?)".into());
            }
            return Ok(Options {
                log,
                methods_jvmti,
                owned_monitors,
                locals,
                agent: None,
                agent_options: None,
                report,
                trace,
                trace_events,
                trace_max,
                cache,
                disable_gc_max,
                vthreads_carrier,
            });
        }
        if let Some(after) = rest.strip_prefix(b"agent=") {
            let (name, opts) = match after.iter().position(|&b| b == b':') {
                Some(i) => (&after[..i], Some(after[i + 1..].to_vec())),
                None => (after, None),
            };
            if name.is_empty() {
                return Err("`agent=` names no library: write agent=<path-or-name>[:<agent options>]".into());
            }
            let name =
                std::str::from_utf8(name).map_err(|_| "the agent's library name is not valid UTF-8".to_string())?;
            if name.contains(',') || name.contains('=') {
                return Err(format!(
                    "ambiguous `agent={name}`: a library name cannot contain ',' or '='; \
                     the agent's own options go after a ':' (agent=<lib>:<options>)"
                ));
            }
            return Ok(Options {
                log,
                methods_jvmti,
                owned_monitors,
                locals,
                agent: Some(name.to_string()),
                agent_options: opts,
                report,
                trace,
                trace_events,
                trace_max,
                cache,
                disable_gc_max,
                vthreads_carrier,
            });
        }
        let end = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
        let item = String::from_utf8_lossy(&rest[..end]).into_owned();
        match item.split_once('=') {
            Some(("log", v)) => {
                log = match v {
                    "off" => LevelFilter::Off,
                    "error" => LevelFilter::Error,
                    "warn" => LevelFilter::Warn,
                    "info" => LevelFilter::Info,
                    "debug" => LevelFilter::Debug,
                    "trace" => LevelFilter::Trace,
                    _ => return Err(format!("bad `log={v}`: use off, error, warn, info, debug or trace")),
                }
            }
            Some(("methods", v)) => {
                methods_jvmti = match v {
                    "bci" => false,
                    "jvmti" => true,
                    _ => return Err(format!("bad `methods={v}`: use bci (the default) or jvmti")),
                }
            }
            Some(("vthreads", v)) => {
                vthreads_carrier = match v {
                    "own" => false,
                    "carrier" => true,
                    _ => return Err(format!("bad `vthreads={v}`: use own (the default) or carrier")),
                }
            }
            Some(("owned-monitors", v)) => {
                owned_monitors = match v {
                    "yes" => Some(true),
                    "no" => Some(false),
                    _ => return Err(format!("bad `owned-monitors={v}`: use yes or no")),
                }
            }
            Some(("locals", v)) => {
                locals = match v {
                    "yes" => Some(true),
                    "no" => Some(false),
                    _ => return Err(format!("bad `locals={v}`: use yes or no")),
                }
            }
            Some(("report", v)) if !v.is_empty() => report = Some(v.to_string()),
            Some(("trace", v)) if !v.is_empty() => trace = Some(v.to_string()),
            Some(("trace-events", v)) => {
                trace_events = v.split('+').map(str::to_string).collect();
                if let Some(bad) = trace_events.iter().find(|f| !TRACE_FAMILIES.contains(&f.as_str())) {
                    return Err(format!("bad `trace-events`: unknown family `{bad}` (known: {})", TRACE_FAMILIES.join(", ")));
                }
            }
            Some(("cache", v)) if !v.is_empty() => cache = Some(v.to_string()),
            Some(("disable-gc-max", v)) => {
                let secs: f64 = v.parse().ok().filter(|s: &f64| s.is_finite() && *s > 0.0).ok_or_else(|| {
                    format!("bad `disable-gc-max={v}`: a number of seconds greater than 0")
                })?;
                disable_gc_max = Some(std::time::Duration::from_secs_f64(secs));
            }
            Some(("trace-max", v)) => {
                trace_max = v.parse().map_err(|_| format!("bad `trace-max={v}`: a number of lines"))?;
            }
            _ if item.is_empty() => return Err("empty option in the shim's options (two commas in a row?)".into()),
            _ => {
                return Err(format!(
                    "unknown shim option `{item}` (known: log=<level>, methods=bci|jvmti, owned-monitors=yes|no, locals=yes|no, report=<file>, trace=<file>, \
                     trace-events=<families>, trace-max=<lines>, cache=<dir>|off, disable-gc-max=<seconds>, vthreads=own|carrier, agent=<lib>[:<agent options>]; agent= must come last)"
                ))
            }
        }
        rest = if end < rest.len() { &rest[end + 1..] } else { &[] };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Options {
        parse(Some(s.as_bytes())).unwrap()
    }

    #[test]
    fn unquoted_jcmd_gives_the_quoted_form() {
        let m = unquoted_jcmd_hint("agent").unwrap();
        assert!(m.contains("only the word `agent`"), "{m}");
        assert!(m.contains("'\"agent=<lib>[:<options>]\"'") && m.contains("jvmpi-shim attach"), "{m}");
        assert!(unquoted_jcmd_hint("log").is_some());
        assert!(unquoted_jcmd_hint("agent=x").is_none() && unquoted_jcmd_hint("dump").is_none());
    }

    #[test]
    fn agent_options_survive_byte_for_byte() {
        let o = ok("agent=/x/libold.so:heap=sites,depth=4,file=out.txt:x=y");
        assert_eq!(o.agent.as_deref(), Some("/x/libold.so"));
        assert_eq!(o.agent_options.as_deref(), Some(&b"heap=sites,depth=4,file=out.txt:x=y"[..]));
        assert_eq!(o.log, LevelFilter::Warn);
    }

    #[test]
    fn shim_options_before_agent() {
        let o = ok("log=debug,agent=hprof:cpu=samples");
        assert_eq!(
            (o.log, o.agent.as_deref(), o.agent_options.as_deref()),
            (LevelFilter::Debug, Some("hprof"), Some(&b"cpu=samples"[..]))
        );
        // -Xrun<name> without options passed NULL; with a trailing ':' an empty string.
        assert_eq!(ok("agent=hprof").agent_options, None);
        assert_eq!(ok("agent=hprof:").agent_options.as_deref(), Some(&b""[..]));
    }

    #[test]
    fn owned_monitors_option() {
        assert_eq!(ok("agent=x").owned_monitors, None);
        assert_eq!(ok("owned-monitors=yes,agent=x").owned_monitors, Some(true));
        assert_eq!(ok("owned-monitors=no,agent=x:owned-monitors=yes").owned_monitors, Some(false));
        let e = parse(Some(b"owned-monitors=maybe,agent=x")).unwrap_err();
        assert!(e.contains("owned-monitors=maybe") && e.contains("yes or no"), "{e}");
    }

    #[test]
    fn cache_option() {
        assert_eq!(ok("agent=x").cache, None);
        assert_eq!(ok("cache=off,agent=x:cache=/y").cache.as_deref(), Some("off"));
        assert_eq!(ok("cache=/tmp/c,agent=x").cache.as_deref(), Some("/tmp/c"));
        assert!(parse(Some(b"cache=,agent=x")).is_err());
    }

    #[test]
    fn rejects_ambiguous() {
        for bad in ["agent=", "agent=:x", "agent=a,b=c", "foo=1,agent=x", "log=loud,agent=x", ",agent=x", "log=debug,"]
        {
            assert!(parse(Some(bad.as_bytes())).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn no_agent_serves_libraries() {
        for none in [None, Some(&b""[..]), Some(&b"log=debug"[..]), Some(&b"report=-,log=info"[..])] {
            let o = parse(none).unwrap();
            assert_eq!((o.agent, o.agent_options), (None, None), "{none:?}");
        }
        assert_eq!(ok("log=info").log, LevelFilter::Info);
    }

    #[test]
    fn report_and_trace_options() {
        let o = ok("report=r.json,trace=t.jsonl,trace-events=gc+thread,trace-max=10,agent=x:report=agent's");
        assert_eq!(o.report.as_deref(), Some("r.json"));
        assert_eq!(o.trace.as_deref(), Some("t.jsonl"));
        assert_eq!(o.trace_events, vec!["gc", "thread"]);
        assert_eq!(o.trace_max, 10);
        assert_eq!(o.agent_options.as_deref(), Some(&b"report=agent's"[..]));
        for bad in ["trace-events=gc+nope,agent=x", "trace-max=lots,agent=x"] {
            assert!(parse(Some(bad.as_bytes())).is_err(), "{bad:?} accepted");
        }
    }
}
