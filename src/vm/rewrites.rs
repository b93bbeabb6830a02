//! The rewrite cache: what the shim's rewriting made of a run's classes when a legacy agent's
//! `JVM_OnLoad` switched on OBJECT_ALLOC or method events — the classes loaded before (the
//! retransformation that runs before the event gate opens) and those loaded after — kept in a
//! file, so that the next start of the same JDK with the same plan hands the JVM the same class
//! files without rewriting them again.
//!
//! Not here: the rewriting itself (`bci`), which plan is in force and what a method number
//! means (the methods room), when a retransformation is the start-up one (the rooms that run
//! it, through [`retransform_all`]).
//!
//! * **What is kept.** One file per build of the shim, JDK and plan
//!   (`<build>-<jdk>-<plan>.bin` in the cache directory, `cache=` of the shim's options,
//!   by default `$XDG_CACHE_HOME/jvmpi-shim` or `~/.cache/jvmpi-shim`). An entry is keyed by a
//!   128-bit hash of the class file the hook was handed and the plan (xxh3), and holds the
//!   output (or "unchanged") and the range of method numbers the output calls the tracker with.
//!   A hit is therefore exactly the rewriting's output for those bytes; the build's own
//!   fingerprint (a hash of its sources, `build.rs`) keeps another build's outputs out. Each
//!   entry has two such keys: the hash of the bytes as they were, found at the cost of one
//!   hash, and the hash of the same bytes with the methods in a fixed order, looked for when
//!   the first misses (see [`key_of`]).
//! * **When it is read.** At the shim's start ([`prefetch`]), by a thread of its own, while the
//!   JVM initialises: the file of this build and JDK used last (the plan is not known before
//!   the legacy agent's `JVM_OnLoad`; a file is written or marked at each VM death that used
//!   it). The start-up retransformation takes it from there if it is its plan's, and reads its
//!   own file otherwise; what it did not take is dropped when the gate opens.
//! * **Method numbers.** The method plan's output names each method by a number the methods
//!   room gave out in the run that rewrote it. When a file is opened, the numbers it uses are
//!   reserved before any is given out in this run (the caller's `reserve`); an entry whose
//!   numbers may have been given out already in this run (below the reservation's floor), or
//!   that was handed out once in this run (two classes with the same bytes), is a miss.
//! * **When it is written.** At VM death, when the run had misses (no file, or more than an
//!   eighth of its classes new): the entries used in this run, no others, so the file is always
//!   one run's classes (at most 64 MiB of new outputs are kept for it). Written to a file of its own and renamed into
//!   place (a reader never sees half a file); the whole content carries a checksum, and a file
//!   that does not match it is ignored. The directory is made private (0700), and a file is
//!   read only if it and its directory are the user's and nobody else may write them (its
//!   class files go to the JVM unverified). When a file is written, other builds' files older
//!   than a day, this build's unused for a month and parts a killed writer left are removed.
//! * **Failures** (no home, a read-only directory, a full disk) cost the cache, nothing else: a
//!   debug line, and the classes are rewritten as without it.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use xxhash_rust::xxh3::{xxh3_128_with_seed, xxh3_64, Xxh3};

/// The build's fingerprint: a hash of the sources it was built from (`build.rs`).
const BUILD: &str = env!("JVMPI_SHIM_SOURCE_FINGERPRINT");
const MAGIC: &[u8; 8] = b"JVMPIRC2";
/// An entry's fixed part: key, key of the bytes as they were (16 each), first number, end of
/// numbers, changed flag, length (4 each).
const ENTRY_HEAD: usize = 48;

/// The cache's state: one `static`, each field what it holds and who writes it.
struct CacheState {
    /// Where files go: None until [`configure`]d, `Some(None)`: off.
    dir: Mutex<Option<Option<PathBuf>>>,
    /// A start-up retransformation is under way (set and cleared by [`retransform_all`]).
    active: AtomicBool,
    /// The file of the start-up retransformation under way, opened at its first lookup.
    session: Mutex<Option<Arc<Session>>>,
    /// Classes taken from the cache, and classes looked up and not found (the log, the tests).
    hits: AtomicUsize,
    misses: AtomicUsize,
    /// Hits found by the second key only (methods in another order).
    reordered: AtomicUsize,
    /// The file read ahead ([`prefetch`]): its reading thread, until a session takes what it
    /// read or the gate opens ([`gate_opened`]).
    prefetched: Mutex<Option<(std::thread::JoinHandle<Option<Read>>, PathBuf)>>,
}

/// A cache file read and parsed: its bytes, its entries, the end of their method numbers.
type Read = (Vec<u8>, Entries, u32);

static STATE: CacheState = CacheState {
    dir: Mutex::new(None),
    active: AtomicBool::new(false),
    session: Mutex::new(None),
    hits: AtomicUsize::new(0),
    misses: AtomicUsize::new(0),
    reordered: AtomicUsize::new(0),
    prefetched: Mutex::new(None),
};

/// The `cache=` option: a directory, or `off`. Without it the default directory is used.
pub fn configure(option: Option<&str>) {
    let dir = match option {
        Some("off") => None,
        Some(d) => Some(PathBuf::from(d)),
        None => default_dir(),
    };
    *crate::vm::logger::lock(&STATE.dir) = Some(dir);
}

/// The largest file [`prefetch`] reads (a file is at most [`FRESH_MAX`] of new outputs and the
/// entries it reused).
const PREFETCH_BYTES: u64 = 96 << 20;

/// Reads this build's and JDK's file used last ahead, in a thread of its own, while the JVM
/// initialises (called once, in the OnLoad phase's `Agent_OnLoad`, after [`configure`]; a late
/// attach has no start-up retransformation to wait): the start-up retransformation then does
/// not wait for the file. The file used last (each VM death that used a file writes it or
/// renews its time) is the plan a program's agent asks for again; reading every plan's file
/// would cost the start its memory (2–3 MB each) on the other CPU, and another plan's file is
/// read when its retransformation asks for it, as without reading ahead. The thread only reads
/// the file; nothing waits for it but a session opening that file (see [`session`]).
pub fn prefetch() {
    let Some(dir) = dir() else { return };
    let prefix = format!("{BUILD}-{:016x}-", jdk_key());
    let Ok(list) = std::fs::read_dir(&dir) else { return };
    let newest = list
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".bin")))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .max_by_key(|f| f.0);
    let Some((_, len, path)) = newest.filter(|f| f.1 <= PREFETCH_BYTES) else { return };
    log::debug!("rewrite cache: reading {} ({len} bytes) ahead", path.display());
    let p = path.clone();
    match std::thread::Builder::new().name("jvmpi-shim cache".into()).spawn(move || read_file(&dir, &p)) {
        Ok(h) => *crate::vm::logger::lock(&STATE.prefetched) = Some((h, path)),
        Err(e) => log::debug!("rewrite cache: not read ahead: {e}"),
    }
}

/// The gate opened (or the legacy agent's start failed, or the VM dies): no start-up
/// retransformation is to come, what was read ahead and not taken is dropped (a thread still
/// reading drops it itself).
pub fn gate_opened() {
    *crate::vm::logger::lock(&STATE.prefetched) = None;
}

/// The file at `path`, read ahead or read now.
fn read_file(dir: &Path, path: &Path) -> Option<Read> {
    let d = read_trusted(dir, path)?;
    match parse(&d) {
        Some((entries, end)) => Some((d, entries, end)),
        None => {
            log::debug!("rewrite cache {}: not a valid file, ignored", path.display());
            None
        }
    }
}

/// The file at `path` as [`prefetch`] read it, if it did (waiting for its thread if it is still
/// reading it); None if it was not read ahead, was taken already, or was not a usable file.
fn take_prefetched(path: &Path) -> Option<Read> {
    let mut g = crate::vm::logger::lock(&STATE.prefetched);
    let (h, _) = g.take_if(|(_, p)| p == path)?;
    h.join().ok().flatten()
}

fn default_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(base.join("jvmpi-shim"))
}

fn dir() -> Option<PathBuf> {
    let mut d = crate::vm::logger::lock(&STATE.dir);
    d.get_or_insert_with(default_dir).clone()
}

/// `jvm::retransform_all(before_gate)`; when the gate has not opened (the start-up
/// retransformation) with the cache open to the class-file hook, and it stays open for the
/// classes loaded afterwards, until [`at_exit`].
pub fn retransform_all(before_gate: bool) -> usize {
    if !before_gate || dir().is_none() {
        return crate::vm::jvm::retransform_all(before_gate);
    }
    // A second start-up retransformation (OBJECT_ALLOC switched on in JVM_OnLoad, method events
    // when the gate opens) runs with another plan: the first one's file is closed first.
    let first = crate::vm::logger::lock(&STATE.session).take();
    if let Some(s) = first {
        s.finish();
    }
    STATE.active.store(true, SeqCst);
    let (hits, misses) = figures();
    let r = crate::vm::jvm::retransform_all(before_gate);
    let open = crate::vm::logger::lock(&STATE.session).as_ref().map(|s| (s.path.clone(), s.ahead));
    if let Some((path, ahead)) = open {
        let (h, m) = figures();
        let how = if ahead { "read ahead" } else { "not read ahead" };
        log::info!(
            "start-up rewrite cache {}: {} classes from it, {} rewritten (the file {how})",
            path.display(),
            h - hits,
            m - misses
        );
    }
    r
}

/// VM death: the cache closes; the file is written again if this run rewrote more than an
/// eighth of its classes (or there was none).
pub fn at_exit() {
    STATE.active.store(false, SeqCst);
    gate_opened();
    let open = crate::vm::logger::lock(&STATE.session).take();
    if let Some(s) = open {
        let (h, m) = figures();
        let r = STATE.reordered.load(Relaxed);
        log::info!("rewrite cache {}: {h} classes from it in this run, {m} rewritten ({r} found with their methods in another order)", s.path.display());
        s.finish();
    }
}

/// What a lookup found.
pub enum Probe {
    /// No cache for this class (none open, or another plan's).
    Off,
    /// The output for these bytes: `None` for "unchanged".
    Hit(Option<Cached>),
    /// Not in the cache: rewrite, then [`record`] the result under these keys.
    Miss(Keys),
}

/// Looks the class file `input` up for `plan` (a number naming the plan in force, whatever
/// makes the output differ). `reserve(end)` is called once, when the file is opened: it must
/// make every method number below `end` unavailable to anything given out from then on and
/// return the first number not given out before (numbers below it may be in use already).
pub fn lookup(input: &[u8], plan: u64, reserve: &dyn Fn(u32) -> u32) -> Probe {
    if !STATE.active.load(SeqCst) {
        return Probe::Off;
    }
    let Some(s) = session(plan, reserve) else { return Probe::Off };
    let raw = xxh3_128_with_seed(input, plan);
    let (key, found) = match s.entries.by_raw.get(&raw) {
        Some(&i) => (s.entries.list[i].key, Some(i)),
        None => {
            let key = key_of(input, plan);
            let found = s.entries.by_key.get(&key).copied();
            if found.is_some() {
                STATE.reordered.fetch_add(1, Relaxed);
            }
            (key, found)
        }
    };
    let keys = Keys { key, raw };
    let Some(i) = found else {
        STATE.misses.fetch_add(1, Relaxed);
        return Probe::Miss(keys);
    };
    let e = &s.entries.list[i];
    let numbered = e.end > e.first;
    if numbered && (e.first < s.floor || e.used.swap(true, SeqCst)) {
        log::debug!("rewrite cache: numbers {}..{} not usable (floor {})", e.first, e.end, s.floor);
        STATE.misses.fetch_add(1, Relaxed);
        return Probe::Miss(keys);
    }
    e.used.store(true, SeqCst);
    STATE.hits.fetch_add(1, Relaxed);
    let (at, len, changed) = (e.at, e.len, e.changed);
    Probe::Hit(changed.then_some(Cached { session: s, at, len }))
}

/// An output the cache holds, handed out without a copy.
pub struct Cached {
    session: Arc<Session>,
    at: usize,
    len: usize,
}

impl std::ops::Deref for Cached {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.session.data[self.at..self.at + self.len]
    }
}

/// The two keys of a class file (see the module's comment).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Keys {
    key: u128,
    raw: u128,
}

/// The rewriting's result for a [`Probe::Miss`]: its output (`None`: unchanged) and the method
/// numbers it gave out (`first..end`; empty if none).
pub fn record(keys: Keys, plan: u64, output: Option<&[u8]>, numbers: std::ops::Range<u32>) {
    let Some(s) = crate::vm::logger::lock(&STATE.session).clone() else { return };
    if s.plan != plan {
        return;
    }
    s.keep(keys, output, numbers);
}

impl Session {
    /// Keeps a miss's output for the file (see [`record`]).
    fn keep(&self, keys: Keys, output: Option<&[u8]>, numbers: std::ops::Range<u32>) {
        let mut fresh = crate::vm::logger::lock(&self.fresh);
        let size = output.map_or(0, <[u8]>::len);
        if fresh.1 + size > FRESH_MAX || fresh.0.len() >= FRESH_ENTRIES {
            return;
        }
        // The same bytes again (a class defined anew by loader after loader): one entry serves
        // them all in the next run, so the first one is kept. Without this a program that defines
        // one class again and again kept a copy of its output per definition (a stress run's
        // churned class: 30 MiB in 4 minutes), up to the limits below.
        if !fresh.2.insert(keys.raw) {
            return;
        }
        fresh.1 += size;
        fresh.0.push(Fresh { keys, output: output.map(<[u8]>::to_vec), first: numbers.start, end: numbers.end });
    }
}

/// The most bytes of new outputs a run keeps for writing (a program that loads classes without
/// end does not grow the shim without end).
const FRESH_MAX: usize = 64 << 20;
/// The most new entries (unchanged classes too) a run keeps for writing.
const FRESH_ENTRIES: usize = 200_000;

/// Classes taken from the cache and classes looked up and not found, since the start.
fn figures() -> (usize, usize) {
    (STATE.hits.load(Relaxed), STATE.misses.load(Relaxed))
}

struct Loaded {
    key: u128,
    raw: u128,
    at: usize,
    len: usize,
    changed: bool,
    first: u32,
    end: u32,
    used: AtomicBool,
}

/// A file's entries, found by either key.
#[derive(Default)]
struct Entries {
    list: Vec<Loaded>,
    by_key: HashMap<u128, usize>,
    by_raw: HashMap<u128, usize>,
}

struct Fresh {
    keys: Keys,
    output: Option<Vec<u8>>,
    first: u32,
    end: u32,
}

struct Session {
    plan: u64,
    path: PathBuf,
    /// The file as read (empty if there was none).
    data: Vec<u8>,
    loaded: bool,
    /// The file was read ahead ([`prefetch`]).
    ahead: bool,
    entries: Entries,
    /// Method numbers below this may have been given out before the file was opened.
    floor: u32,
    /// The outputs of the misses, their bytes in all, and the keys of the bytes they were made
    /// from (each kept once).
    fresh: Mutex<(Vec<Fresh>, usize, std::collections::HashSet<u128>)>,
}

/// The session of the retransformation under way, opened for `plan` at the first lookup.
fn session(plan: u64, reserve: &dyn Fn(u32) -> u32) -> Option<Arc<Session>> {
    if let Some(s) = crate::vm::logger::lock(&STATE.session).as_ref() {
        return (s.plan == plan).then(|| s.clone());
    }
    let dir = dir()?;
    let path = dir.join(format!("{BUILD}-{:016x}-{plan:x}.bin", jdk_key()));
    {
        // A file read ahead is taken under the lock, so that the other retransforming thread
        // waits for it rather than reading the file again; nothing there can stop this thread
        // (no JVMTI call; at most a wait for the reading thread to finish its files, and it
        // takes no lock of the shim's).
        let mut g = crate::vm::logger::lock(&STATE.session);
        if let Some(s) = g.as_ref() {
            return (s.plan == plan).then(|| s.clone());
        }
        if let Some(read) = take_prefetched(&path) {
            return Some(install(&mut g, plan, path, Some(read), true, reserve));
        }
    }
    // Not read ahead: read without the lock; the first thread to install its session wins.
    let read = read_file(&dir, &path);
    let mut g = crate::vm::logger::lock(&STATE.session);
    if let Some(s) = g.as_ref() {
        return (s.plan == plan).then(|| s.clone());
    }
    Some(install(&mut g, plan, path, read, false, reserve))
}

/// Makes the session of `plan` from its file as read (None: no usable file) and installs it.
fn install(
    g: &mut Option<Arc<Session>>,
    plan: u64,
    path: PathBuf,
    read: Option<Read>,
    ahead: bool,
    reserve: &dyn Fn(u32) -> u32,
) -> Arc<Session> {
    let (data, entries, end) = read.unwrap_or_default();
    let loaded = !entries.list.is_empty();
    let floor = reserve(end);
    let s = Arc::new(Session {
        plan,
        path,
        data,
        loaded,
        ahead,
        entries,
        floor,
        fresh: Mutex::new((Vec::new(), 0, Default::default())),
    });
    *g = Some(s.clone());
    s
}

/// The file at `path` if it and its directory belong to this user and nobody else may write
/// them (a class file from it goes to the JVM unverified, boot classes included); its time is
/// renewed when it is older than a day, so that files in use are not removed as stale.
fn read_trusted(dir: &Path, path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let private = |m: &std::fs::Metadata| m.uid() == me && m.mode() & 0o022 == 0;
    let (dm, fm) = (std::fs::metadata(dir).ok()?, std::fs::metadata(path).ok()?);
    if !private(&dm) || !private(&fm) || !fm.is_file() {
        log::debug!("rewrite cache {}: not read (the file or its directory is not this user's alone)", path.display());
        return None;
    }
    let d = std::fs::read(path).ok()?;
    if fm.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|a| a > DAY) {
        renew(path);
    }
    Some(d)
}

/// Sets a file's time to now (it is in use: not stale, and the file used last).
fn renew(path: &Path) {
    let _ = std::fs::File::options().append(true).open(path).and_then(|f| f.set_modified(std::time::SystemTime::now()));
}

const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);
/// A file of this build not used for this long is removed when another is written.
const UNUSED: std::time::Duration = std::time::Duration::from_secs(30 * 86_400);

/// The key of a class file for `plan`: a hash of its bytes with its methods taken in the order
/// of their bytes. The class files the JVM reconstitutes for retransformation list the methods
/// in the order of their names' addresses, which changes from run to run for some classes
/// (JDK 21: about 40 of 430 at start-up); the methods' order means nothing to the JVM (it
/// sorts them itself), nor to the rewriting (each method is rewritten by itself), so the same
/// output serves both orders. A class file this cannot walk is hashed as it is.
fn key_of(input: &[u8], plan: u64) -> u128 {
    let Some((head, mut methods, tail)) = methods_of(input) else { return xxh3_128_with_seed(input, plan) };
    methods.sort_unstable();
    let mut h = Xxh3::with_seed(plan);
    h.update(head);
    for m in methods {
        h.update(&(m.len() as u32).to_le_bytes());
        h.update(m);
    }
    h.update(tail);
    h.digest128()
}

/// A class file cut in three: everything before its methods, each `method_info`, and what
/// follows them (the class's attributes). None if it is not a class file this can walk.
fn methods_of(b: &[u8]) -> Option<(&[u8], Vec<&[u8]>, &[u8])> {
    let u2 = |p: usize| -> Option<usize> { Some(usize::from(u16::from_be_bytes(b.get(p..p + 2)?.try_into().ok()?))) };
    let u4 = |p: usize| -> Option<usize> { Some(u32::from_be_bytes(b.get(p..p + 4)?.try_into().ok()?) as usize) };
    let count = u2(8)?;
    let (mut p, mut i) = (10, 1);
    while i < count {
        p += match *b.get(p)? {
            1 => 3 + u2(p + 1)?,
            3 | 4 | 9 | 10 | 11 | 12 | 17 | 18 => 5,
            5 | 6 => {
                i += 1;
                9
            }
            7 | 8 | 16 | 19 | 20 => 3,
            15 => 4,
            _ => return None,
        };
        i += 1;
    }
    p += 6;
    p += 2 + 2 * u2(p)?;
    // Fields, then methods: access, name, descriptor, attributes.
    let mut q = p;
    let skip = |q: &mut usize| -> Option<Vec<std::ops::Range<usize>>> {
        let n = u2(*q)?;
        *q += 2;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let s = *q;
            *q += 6;
            let attrs = u2(*q)?;
            *q += 2;
            for _ in 0..attrs {
                *q += 6 + u4(*q + 2)?;
            }
            v.push(s..*q);
        }
        Some(v)
    };
    skip(&mut q)?;
    let methods_at = q;
    let ms = skip(&mut q)?;
    let head = b.get(..methods_at)?;
    let tail = b.get(q..)?;
    Some((head, ms.into_iter().map(|r| &b[r]).collect(), tail))
}

/// The JDK this run is on: its home, its version, the size and time of its modules image.
fn jdk_key() -> u64 {
    let mut text = String::new();
    for p in ["java.home", "java.vm.version", "java.runtime.version", "java.vm.name"] {
        text.push_str(&crate::vm::jvm::system_property(p).unwrap_or_default());
        text.push('\n');
    }
    if let Some(home) = crate::vm::jvm::system_property("java.home") {
        if let Ok(m) = std::fs::metadata(Path::new(&home).join("lib/modules")) {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            text.push_str(&format!("{} {t}", m.len()));
        }
    }
    xxh3_64(text.as_bytes())
}

fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

/// The entries of a file and the end of the method numbers they use; None if it is not one
/// (wrong magic, wrong checksum, truncated).
fn parse(d: &[u8]) -> Option<(Entries, u32)> {
    if d.len() < 20 || &d[..8] != MAGIC || u64::from_le_bytes(d[8..16].try_into().ok()?) != xxh3_64(&d[16..]) {
        return None;
    }
    let count = u32_at(d, 16)? as usize;
    let mut at = 20;
    let n = count.min(d.len() / ENTRY_HEAD);
    let mut entries =
        Entries { list: Vec::with_capacity(n), by_key: HashMap::with_capacity(n), by_raw: HashMap::with_capacity(n) };
    let mut end = 0;
    for _ in 0..count {
        let key = u128::from_le_bytes(d.get(at..at + 16)?.try_into().ok()?);
        let raw = u128::from_le_bytes(d.get(at + 16..at + 32)?.try_into().ok()?);
        let (first, last, changed, len) =
            (u32_at(d, at + 32)?, u32_at(d, at + 36)?, u32_at(d, at + 40)?, u32_at(d, at + 44)? as usize);
        at += ENTRY_HEAD;
        d.get(at..at + len)?;
        // A key written twice (a class rewritten again because its numbers were in use): the
        // later entry wins.
        let i = entries.list.len();
        entries.by_key.insert(key, i);
        entries.by_raw.insert(raw, i);
        entries.list.push(Loaded {
            key,
            raw,
            at,
            len,
            changed: changed != 0,
            first,
            end: last,
            used: AtomicBool::new(false),
        });
        end = end.max(last);
        at += len;
    }
    (at == d.len()).then_some((entries, end))
}

impl Session {
    /// After the retransformation: the file written again if it was missing or stale.
    fn finish(&self) {
        let (fresh, _, _) = std::mem::take(&mut *crate::vm::logger::lock(&self.fresh));
        let used: Vec<&Loaded> = self.entries.list.iter().filter(|e| e.used.load(SeqCst)).collect();
        let total = used.len() + fresh.len();
        if total == 0 || (self.loaded && fresh.len() * 8 <= total) {
            if self.loaded && total > 0 {
                // Kept as it is, and marked as the file used last (see [`prefetch`]).
                renew(&self.path);
            }
            return;
        }
        let mut body = Vec::with_capacity(
            self.data.len() + fresh.iter().map(|f| f.output.as_ref().map_or(0, Vec::len) + ENTRY_HEAD).sum::<usize>(),
        );
        body.extend_from_slice(&(total as u32).to_le_bytes());
        let mut put = |keys: Keys, first: u32, end: u32, out: Option<&[u8]>| {
            body.extend_from_slice(&keys.key.to_le_bytes());
            body.extend_from_slice(&keys.raw.to_le_bytes());
            body.extend_from_slice(&first.to_le_bytes());
            body.extend_from_slice(&end.to_le_bytes());
            body.extend_from_slice(&u32::from(out.is_some()).to_le_bytes());
            let out = out.unwrap_or_default();
            body.extend_from_slice(&(out.len() as u32).to_le_bytes());
            body.extend_from_slice(out);
        };
        for e in used {
            put(Keys { key: e.key, raw: e.raw }, e.first, e.end, e.changed.then(|| &self.data[e.at..e.at + e.len]));
        }
        for f in &fresh {
            put(f.keys, f.first, f.end, f.output.as_deref());
        }
        match write(&self.path, &body) {
            Ok(()) => log::debug!("rewrite cache {}: {total} classes kept ({} new)", self.path.display(), fresh.len()),
            Err(e) => log::debug!("rewrite cache {}: not written: {e}", self.path.display()),
        }
    }
}

/// Writes a cache file (magic, checksum, `body`) through a file of its own renamed into place,
/// and removes other builds' files older than a day.
fn write(path: &Path, body: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().ok_or_else(|| std::io::Error::other("no directory"))?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    // A name no other writer has (JVMs in containers sharing the directory may have one pid).
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let tmp = path.with_extension(format!("{}-{nanos:x}.part", std::process::id()));
    let r = (|| {
        let mut f = std::fs::File::options().write(true).create_new(true).mode(0o600).open(&tmp)?;
        f.write_all(MAGIC)?;
        f.write_all(&xxh3_64(body).to_le_bytes())?;
        f.write_all(body)?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r?;
    // Stale files: another build's after a day, this build's when unused for a month, and parts
    // a killed writer left after a day.
    for e in std::fs::read_dir(dir)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let age = e.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok()).unwrap_or_default();
        let stale = if name.ends_with(".part") {
            age > DAY
        } else if name.ends_with(".bin") {
            if name.starts_with(BUILD) {
                age > UNUSED
            } else {
                age > DAY
            }
        } else {
            false
        };
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_ignores_the_order_of_methods_only() {
        use ristretto_classfile::attributes::{Attribute, Instruction};
        use ristretto_classfile::{ClassFile, ConstantPool, Method, MethodAccessFlags};
        let class = |names: [&str; 2]| {
            let mut cp = ConstantPool::new();
            let this_class = cp.add_class("K").unwrap();
            let super_class = cp.add_class("java/lang/Object").unwrap();
            let code = cp.add_utf8("Code").unwrap();
            let desc = cp.add_utf8("()V").unwrap();
            let ids: Vec<u16> = ["a", "b", "c"].iter().map(|n| cp.add_utf8(n).unwrap()).collect();
            let id = |n: &str| ids[usize::from(n.as_bytes()[0] - b'a')];
            let methods = names
                .iter()
                .map(|n| Method {
                    access_flags: MethodAccessFlags::STATIC,
                    name_index: id(n),
                    descriptor_index: desc,
                    attributes: vec![Attribute::Code {
                        name_index: code,
                        max_stack: 0,
                        max_locals: 0,
                        code: vec![Instruction::Return],
                        exception_table: vec![],
                        attributes: vec![],
                    }],
                })
                .collect();
            let mut out = Vec::new();
            ClassFile { constant_pool: cp, this_class, super_class, methods, ..ClassFile::default() }
                .to_bytes(&mut out)
                .unwrap();
            out
        };
        let (ab, ba, ac) = (class(["a", "b"]), class(["b", "a"]), class(["a", "c"]));
        assert_ne!(ab, ba);
        assert_eq!(methods_of(&ab).unwrap().1.len(), 2);
        assert_eq!(key_of(&ab, 1), key_of(&ba, 1));
        assert_ne!(key_of(&ab, 1), key_of(&ac, 1));
        assert_ne!(key_of(&ab, 1), key_of(&ab, 2), "the plan is part of the key");
        assert!(methods_of(&ab[..ab.len() - 3]).is_none(), "a truncated class file");
    }

    #[test]
    fn a_file_reads_back_and_a_damaged_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("jvmpi-rc-{}", std::process::id()));
        let path = dir.join("x.bin");
        let mut body = Vec::new();
        body.extend_from_slice(&2u32.to_le_bytes());
        for (k, first, end, out) in [(7u128, 0u32, 0u32, Some(&b"abc"[..])), (9, 10, 20, None)] {
            body.extend_from_slice(&k.to_le_bytes());
            body.extend_from_slice(&(k + 100).to_le_bytes());
            body.extend_from_slice(&first.to_le_bytes());
            body.extend_from_slice(&end.to_le_bytes());
            body.extend_from_slice(&u32::from(out.is_some()).to_le_bytes());
            body.extend_from_slice(&(out.unwrap_or_default().len() as u32).to_le_bytes());
            body.extend_from_slice(out.unwrap_or_default());
        }
        write(&path, &body).unwrap();
        let d = std::fs::read(&path).unwrap();
        let (entries, end) = parse(&d).unwrap();
        assert_eq!(end, 20);
        let e = &entries.list[entries.by_key[&7]];
        assert!(e.changed && &d[e.at..e.at + e.len] == b"abc");
        assert_eq!(entries.by_raw[&107], entries.by_key[&7]);
        let e = &entries.list[entries.by_raw[&109]];
        assert!(!e.changed && e.first == 10 && e.key == 9);
        for i in [0, 12, 20, 40, d.len() - 1] {
            let mut bad = d.clone();
            bad[i] ^= 1;
            assert!(parse(&bad).is_none(), "byte {i} changed and still read");
        }
        assert!(parse(&d[..d.len() - 1]).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A class defined again and again from the same bytes (a loader per definition) is kept
    /// once for the file, however many times it is rewritten; other bytes are kept too.
    #[test]
    fn the_same_bytes_rewritten_again_are_kept_once() {
        let s = Session {
            plan: 1,
            path: PathBuf::new(),
            data: Vec::new(),
            loaded: false,
            ahead: false,
            entries: Entries::default(),
            floor: 0,
            fresh: Mutex::new((Vec::new(), 0, Default::default())),
        };
        for n in 0..1000u32 {
            s.keep(Keys { key: 5, raw: 6 }, Some(&[7u8; 600][..]), n * 3..n * 3 + 3);
        }
        s.keep(Keys { key: 8, raw: 9 }, None, 0..0);
        let fresh = crate::vm::logger::lock(&s.fresh);
        assert_eq!(fresh.0.len(), 2);
        assert_eq!(fresh.1, 600, "bytes kept");
        assert_eq!((fresh.0[0].first, fresh.0[0].end), (0, 3), "the first rewriting is the one kept");
    }
}
