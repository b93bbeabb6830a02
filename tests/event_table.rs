//! The event table (`src/face/event_table.rs`) is the one place that knows about each JVMPI
//! event: no other file of `src/` matches on event numbers, and the table has exactly the
//! events of the original header, under their names.

use jvmpi_shim::event_table::{self, ROWS};
use std::path::{Path, PathBuf};

/// The one file allowed to match on event numbers.
const TABLE: &str = "src/face/event_table.rs";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Lines of `text` (1-based numbers) where a `JVMPI_EVENT_*` constant is a pattern: a match arm
/// (`X =>`, `(X, on) =>`), an alternative (`X | Y`), or inside `matches!`.
fn match_arms(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_matches = 0usize; // open parentheses of a `matches!(` spanning lines
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or("");
        let starts_matches = line.contains("matches!(");
        let mut hit = false;
        let mut at = 0;
        while let Some(i) = line[at..].find("JVMPI_EVENT_") {
            let start = at + i;
            let end = start
                + line[start..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(line.len() - start);
            let before = line[..start].trim_end();
            let after = line[end..].trim_start();
            // `X | Y`: a single `|` next to the constant, with a space on its far side (a
            // closure's `|x| X` has none, `||` is a boolean or).
            let pipe_before = before.ends_with('|') && !before.ends_with("||") && {
                let b = &before[..before.len() - 1];
                b.is_empty() || b.ends_with(char::is_whitespace)
            };
            let pipe_after = after.starts_with('|') && !after.starts_with("||");
            // `X =>` or `(X, _) =>`: an arrow after it on the line, with no `=` in between.
            let arrow = after.find("=>").is_some_and(|j| !after[..j].contains('='));
            if pipe_before || pipe_after || arrow || starts_matches || in_matches > 0 {
                hit = true;
            }
            at = end;
        }
        if starts_matches || in_matches > 0 {
            let from = if starts_matches { line.find("matches!(").unwrap() + "matches!".len() } else { 0 };
            let opened = in_matches;
            let mut depth = opened as isize;
            for c in line[from..].chars() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            in_matches = depth.max(0) as usize;
        }
        if hit {
            found.push((n + 1, raw.trim().to_string()));
        }
    }
    found
}

#[test]
fn no_match_on_event_numbers_outside_the_table() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    assert!(files.len() > 20, "src/ not found");
    let mut problems = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root()).unwrap().to_string_lossy().into_owned();
        if rel == TABLE {
            continue;
        }
        for (n, line) in match_arms(&std::fs::read_to_string(&f).unwrap()) {
            problems.push(format!("{rel}:{n}: {line}"));
        }
    }
    assert!(
        problems.is_empty(),
        "what the shim knows about an event belongs in a column of {TABLE}, not in a match elsewhere:\n{}",
        problems.join("\n")
    );
}

/// The check finds each form the old tables had, and leaves alone what only names an event.
#[test]
fn the_check_finds_matches_on_event_numbers() {
    let planted = [
        "        JVMPI_EVENT_METHOD_ENTRY => \"METHOD_ENTRY\",",
        "        JVMPI_EVENT_THREAD_START | JVMPI_EVENT_THREAD_END => \"thread\",",
        "        | JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE => Emulated(&[]),",
        "        JVMPI_EVENT_JNI_GLOBALREF_ALLOC\n        | JVMPI_EVENT_JNI_GLOBALREF_FREE",
        "        (JVMPI_EVENT_CLASS_LOAD_HOOK, _) => jvm::set_agent_hook(on),",
        "    matches!(event, JVMPI_EVENT_HEAP_DUMP | JVMPI_EVENT_MONITOR_DUMP)",
        "    matches!(event, JVMPI_EVENT_HEAP_DUMP)",
        "    let r = matches!(\n        event,\n        JVMPI_EVENT_CLASS_LOAD\n    );",
        "            Some(JVMPI_EVENT_OBJECT_ALLOC) => 1,",
    ];
    for p in planted {
        assert!(!match_arms(p).is_empty(), "not found: {p}");
    }
    let benign = [
        "    if events::enabled(JVMPI_EVENT_METHOD_ENTRY) || events::enabled(JVMPI_EVENT_METHOD_ENTRY2) {",
        "    if t == JVMPI_EVENT_CLASS_LOAD {",
        "    let calls = [JVMPI_EVENT_METHOD_ENTRY, JVMPI_EVENT_METHOD_EXIT].into_iter().any(|e| e > 0);",
        "    x.map(|_| JVMPI_EVENT_GC_START)",
        "    send(JVMPI_EVENT_GC_START); // JVMPI_EVENT_GC_FINISH => later",
        "    let m = matches!(p, Val::Ptr(0));\n    send(JVMPI_EVENT_GC_FINISH);",
    ];
    for b in benign {
        assert!(match_arms(b).is_empty(), "found in: {b}: {:?}", match_arms(b));
    }
}

/// Every event of the original header has its row, under its name (aliases skipped), in
/// number order, and nothing else has one.
#[test]
fn the_table_has_every_event_of_the_header_under_its_name() {
    let text = std::fs::read_to_string(root().join("tests/abi/expected-constants.txt")).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut header = Vec::new();
    for line in text.lines() {
        let Some((name, v)) = line.split_once('=') else { continue };
        let Some(ev) = name.strip_prefix("JVMPI_EVENT_") else { continue };
        let v: i32 = v.trim().parse().unwrap();
        if seen.insert(v) {
            header.push((ev.to_string(), v));
        }
    }
    assert_eq!(header.len(), 37);
    for (name, num) in &header {
        let row = event_table::get(*num).unwrap_or_else(|| panic!("no row for {name} ({num})"));
        assert_eq!((row.event, row.name), (*num, name.as_str()));
        assert_eq!(event_table::name(*num), *name);
    }
    assert_eq!(ROWS.len(), header.len());
    assert!(ROWS.windows(2).all(|w| w[0].event < w[1].event), "rows out of number order");
    for n in [-1, 0, 10, 36, 62, 63, 64, 1 << 24] {
        assert!(event_table::get(n).is_none(), "a row for {n}");
        assert_eq!(event_table::name(n), format!("event {n}"));
    }
}
