//! The shim's log: one line per message on stderr, each starting with `jvmpi-shim: `.
//!
//! Errors (an agent that cannot load, a bad ID handed to a JVMPI function, a JVMPI request the
//! shim cannot honour) are always printed once per kind of mistake; `log=info` or `log=debug`
//! in the shim's options show more. Repeated warnings with the same text are printed once.

use dashmap::DashSet;
use log::{Level, LevelFilter, Log, Metadata, Record};
use std::io::Write;
use std::sync::OnceLock;

struct StderrLog {
    seen: DashSet<String>,
}

impl Log for StderrLog {
    fn enabled(&self, m: &Metadata) -> bool {
        m.level() <= log::max_level()
    }
    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let msg = r.args().to_string();
        // Warnings are about the agent's calls; one line per distinct message is enough.
        if r.level() == Level::Warn && !self.seen.insert(msg.clone()) {
            return;
        }
        let tag = match r.level() {
            Level::Error => "error: ",
            Level::Warn => "warning: ",
            _ => "",
        };
        let _ = writeln!(std::io::stderr().lock(), "jvmpi-shim: {tag}{msg}");
    }
    fn flush(&self) {}
}

static LOGGER: OnceLock<StderrLog> = OnceLock::new();

/// Installs the logger (idempotent) at the given level.
pub fn init(level: LevelFilter) {
    let l = LOGGER.get_or_init(|| StderrLog { seen: DashSet::new() });
    let _ = log::set_logger(l);
    log::set_max_level(level);
}
