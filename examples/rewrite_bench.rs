//! Offline benchmark of the class-file rewriting: the allocation plan and the method plan over a
//! set of class files, as the shim's class-file hook runs them (`rooms::methods::transform`).
//!
//!     cargo run --release --example rewrite_bench -- INPUT [alloc|methods|both|everything] [ROUNDS] [OUT]
//!
//! INPUT is a record file written by `benches/retransform_jvmti.c`'s `dump=FILE` (loaded before
//! the shim, its hook records the class files the shim's hook is handed; the last record of a
//! name is used), or a directory of `.class` files (searched recursively; e.g. `jimage extract`
//! of a JDK's `lib/modules`). The plan(s) run ROUNDS times over every class (default 5); the
//! median round is reported in µs per class. OUT, if given, receives every class's output in the
//! record format (unchanged classes with an empty body), to compare two builds byte for byte.
//! With CHECK=1 in the environment, the pass runs again without the rewriter's shortcuts
//! (`bci::set_shortcuts(false)`) and every class's output must be the same.
//! For a deterministic figure, count instructions with
//! `valgrind --tool=callgrind --toggle-collect='*rewrite_all*'` and ROUNDS=1.

use jvmpi_shim::bci::{instrument_class_wrapping, AllocHooks, Lookup, MethodHooks};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

fn read_records(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut at = 0;
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
    while at + 4 <= bytes.len() {
        let n = u32_at(at);
        let name = String::from_utf8_lossy(&bytes[at + 4..at + 4 + n]).into_owned();
        at += 4 + n;
        let len = u32_at(at);
        out.insert(name, bytes[at + 4..at + 4 + len].to_vec());
        at += 4 + len;
    }
    out
}

fn read_dir(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read dir").flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_dir(&p, base, out);
        } else if p.extension().is_some_and(|e| e == "class") {
            let name = p.strip_prefix(base).expect("under base").with_extension("").to_string_lossy().into_owned();
            out.insert(name, std::fs::read(&p).expect("read class"));
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Alloc,
    Methods,
    Both,
    /// Both plans, with the receiver and every instruction hooked (for output comparisons).
    Everything,
}

/// One pass of the plan over every class: (outputs, classes changed, failures).
#[inline(never)]
fn rewrite_all(classes: &[(&String, &Vec<u8>)], mode: Mode) -> (Vec<Option<Vec<u8>>>, usize, usize) {
    let alloc = AllocHooks { tracker: "JvmpiShimTracker", keep_new: true };
    let hooks = MethodHooks {
        tracker: "JvmpiShimMethods",
        also_skip: "JvmpiShimTracker",
        entry: true,
        receiver: mode == Mode::Everything,
        exit: true,
        instructions: mode == Mode::Everything,
    };
    let mut next_index = 0i32;
    let mut outs = Vec::with_capacity(classes.len());
    let (mut changed, mut failed) = (0, 0);
    for (_, bytes) in classes {
        let mut next = |_: &str, _: &str, _: &[Lookup]| -> i32 {
            next_index += 1;
            next_index
        };
        let a = (mode != Mode::Methods).then_some(&alloc);
        let m = (mode != Mode::Alloc).then_some((&hooks, &mut next as &mut dyn FnMut(&str, &str, &[Lookup]) -> i32));
        match instrument_class_wrapping(bytes, a, m, None) {
            Ok((out, _)) => {
                changed += usize::from(out.is_some());
                outs.push(out);
            }
            Err(_) => {
                failed += 1;
                outs.push(None);
            }
        }
    }
    (outs, changed, failed)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let input = args.get(1).expect("usage: rewrite_bench INPUT [alloc|methods|both|everything] [ROUNDS] [OUT]");
    let mode = match args.get(2).map(String::as_str) {
        None | Some("alloc") => Mode::Alloc,
        Some("methods") => Mode::Methods,
        Some("both") => Mode::Both,
        Some("everything") => Mode::Everything,
        Some(m) => panic!("unknown mode {m}"),
    };
    let rounds: usize = args.get(3).map_or(5, |r| r.parse().expect("ROUNDS"));
    let p = Path::new(input);
    let mut classes = BTreeMap::new();
    if p.is_dir() {
        read_dir(p, p, &mut classes);
    } else {
        classes = read_records(&std::fs::read(p).expect("read input"));
    }
    let list: Vec<(&String, &Vec<u8>)> = classes.iter().collect();
    let total: usize = list.iter().map(|(_, b)| b.len()).sum();
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        let r = rewrite_all(&list, mode);
        times.push(t.elapsed());
        last = Some(r);
    }
    times.sort();
    let (outs, changed, failed) = last.expect("one round");
    let median = times[times.len() / 2];
    let out_bytes: usize = outs.iter().flatten().map(Vec::len).sum();
    println!(
        "{} classes ({} KB), {} changed ({} KB out), {} failed; median of {} rounds {:.1} ms, {:.1} µs per class",
        list.len(),
        total / 1024,
        changed,
        out_bytes / 1024,
        failed,
        times.len(),
        median.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e6 / list.len() as f64
    );
    if std::env::var_os("CHECK").is_some() {
        // The same pass without the rewriter's shortcuts: every output must be the same.
        jvmpi_shim::bci::set_shortcuts(false);
        let (reference, ..) = rewrite_all(&list, mode);
        jvmpi_shim::bci::set_shortcuts(true);
        let differ: Vec<&str> = list
            .iter()
            .zip(outs.iter().zip(&reference))
            .filter(|(_, (a, b))| a != b)
            .map(|((n, _), _)| n.as_str())
            .collect();
        println!(
            "without shortcuts: {} of {} outputs differ {:?}",
            differ.len(),
            list.len(),
            &differ[..differ.len().min(10)]
        );
        if !differ.is_empty() {
            std::process::exit(1);
        }
    }
    if let Some(out) = args.get(4) {
        let mut w = Vec::new();
        for ((name, _), o) in list.iter().zip(&outs) {
            w.extend_from_slice(&(name.len() as u32).to_le_bytes());
            w.extend_from_slice(name.as_bytes());
            let o = o.as_deref().unwrap_or(&[]);
            w.extend_from_slice(&(o.len() as u32).to_le_bytes());
            w.extend_from_slice(o);
        }
        std::fs::write(out, w).expect("write output");
    }
}
