//! The shim's log: one line per message on stderr, each starting with `jvmpi-shim: `.
//!
//! Errors (an agent that cannot load, a bad ID handed to a JVMPI function, a JVMPI request the
//! shim cannot honour) are always printed once per kind of mistake; `log=info` or `log=debug`
//! in the shim's options show more. A warning is printed once per kind: its text with the
//! addresses (`0x…`) taken out, so a sampler naming a new stale `JNIEnv*` each millisecond, or a
//! thread calling with a new garbage handle each time, costs one line, and the set of kinds
//! seen stays small.
//!
//! [`guard`]: a panic inside the shim becomes one error line here and a fallback value, never
//! an unwind into the JVM or the agent.

use dashmap::DashSet;
use log::{Level, LevelFilter, Log, Metadata, Record};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
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
        // Warnings are about the agent's calls; one line per kind of message is enough.
        if r.level() == Level::Warn && (self.seen.len() >= MAX_KINDS || !self.seen.insert(kind(&msg))) {
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

/// Kinds of warnings remembered; past that many, further new kinds are not printed.
const MAX_KINDS: usize = 4096;

/// A message with its hexadecimal numbers (addresses, handles, IDs) replaced by `0x…`.
fn kind(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        out.push_str("0x…");
        let digits = rest[i + 2..].bytes().take_while(u8::is_ascii_hexdigit).count();
        rest = &rest[i + 2 + digits..];
    }
    out.push_str(rest);
    out
}

/// The module's one state: the logger, made by the first [`init`] (the start-up's) and handed
/// to the `log` crate.
static LOGGER: OnceLock<StderrLog> = OnceLock::new();

/// Installs the logger (idempotent) at the given level.
pub fn init(level: LevelFilter) {
    let l = LOGGER.get_or_init(|| StderrLog { seen: DashSet::new() });
    let _ = log::set_logger(l);
    log::set_max_level(level);
}

/// Runs `f`; a panic inside the shim is logged and turned into `fallback`, never unwound into
/// the JVM or the agent.
#[inline]
pub fn guard<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log::error!("internal error in {what}: {msg}; the call was abandoned");
            fallback
        }
    }
}

/// Locks `m`, also when a thread panicked while holding it: every lock of the shim guards state
/// that stays consistent between statements (a panic is caught by [`guard`] and the call
/// abandoned), so the shim goes on rather than taking the JVM down.
#[inline]
pub(crate) fn lock<T: ?Sized>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// [`lock`] for the exit paths, which must not wait for ever: `m` tried until `deadline` (at
/// least once), a poisoned lock taken as [`lock`] takes it. None: still held at `deadline`.
pub(crate) fn lock_until<T: ?Sized>(
    m: &std::sync::Mutex<T>,
    deadline: std::time::Instant,
) -> Option<std::sync::MutexGuard<'_, T>> {
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if std::time::Instant::now() >= deadline => return None,
            Err(std::sync::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn kinds_ignore_addresses() {
        assert_eq!(super::kind("RawMonitorEnter(0x7f12ab): not live"), "RawMonitorEnter(0x…): not live");
        assert_eq!(super::kind("a 0x1 b 0xdeadBEEF c"), "a 0x… b 0x… c");
        assert_eq!(super::kind("EnableEvent(event 999)"), "EnableEvent(event 999)");
        assert_eq!(super::kind("ends in 0x"), "ends in 0x…");
    }
}
