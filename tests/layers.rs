//! The folders of `src/` are the layers of the shim, and the arrows between modules run one way:
//!
//! ```text
//!   doors/  (the JVMTI callbacks, the JVMPI interface, the JNI hooks, the entry points)
//!     ↓
//!   rooms/  (one per JVMPI concept)
//!     ↓
//!   face/   (the gate, the IDs, the ABI, the interface tables, the record)
//!     ↓
//!   vm/     (the JVMTI/JNI facade, class-file rewriting, the logger, safe memory)
//! ```
//!
//! Every `use crate::…` and `crate::x::…` path (and `super::…`) in `src/` is read and checked:
//! it names its layer (`crate::vm::jvm`, never a name re-exported by `src/lib.rs`, whose
//! re-exports are for the crate's users), no arrow may point to a higher layer, and no two
//! modules may reach each other (no circle, within a layer or across). A folder inside a layer folder
//! (`vm/jvm/`) is one module here: its files are the parts of one thing. The class-file
//! rewriter is a crate of its own (`crates/rewriter/`, re-exported as `vm::bci`): it cannot
//! name the shim at all, and its own unit test `modules_form_no_circle` holds its modules to one
//! order. Comments are not read. No JVM is started.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, top first.
const LAYERS: [&str; 4] = ["doors", "rooms", "face", "vm"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file of the library (`src/` without `src/bin/`), as (path relative to `src/`, text).
fn library_sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(base).unwrap().to_string_lossy().replace('\\', "/");
            if path.is_dir() {
                if rel != "bin" {
                    walk(&path, base, out);
                }
            } else if rel.ends_with(".rs") {
                out.insert(rel, fs::read_to_string(&path).unwrap());
            }
        }
    }
    let src = root().join("src");
    let mut out = BTreeMap::new();
    walk(&src, &src, &mut out);
    out
}

/// The module path of a file: `face/ids.rs` → `face::ids`, `vm/jvm/mod.rs` → `vm::jvm`,
/// `lib.rs` → `` (the crate root).
fn module_of(file: &str) -> String {
    let stem = file.trim_end_matches(".rs");
    let mut parts: Vec<&str> = stem.split('/').collect();
    if parts.last() == Some(&"mod") || parts == ["lib"] {
        parts.pop();
    }
    parts.join("::")
}

/// The unit an arrow is drawn between: a layer folder's file, or a folder inside a layer folder
/// as a whole. `vm::jvm::heap` → `vm::jvm`, `face::ids` → `face::ids`, `face` → `face`.
fn unit_of(module: &str) -> String {
    module.split("::").take(2).collect::<Vec<_>>().join("::")
}

/// The layer of a module (its first segment), as an index into [`LAYERS`]; the crate root (and
/// anything outside the layers) is above them all.
fn layer_of(module: &str) -> Option<usize> {
    let first = module.split("::").next().unwrap_or("");
    LAYERS.iter().position(|l| *l == first)
}

/// The text without comments (line comments, doc comments, block comments). String literals are
/// kept as they are, except that `//` inside one ends the line's text: the loss is harmless here.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for line in text.lines() {
        let mut rest = line;
        let mut kept = String::new();
        loop {
            if depth > 0 {
                match (rest.find("/*"), rest.find("*/")) {
                    (Some(o), Some(c)) if o < c => {
                        depth += 1;
                        rest = &rest[o + 2..];
                    }
                    (_, Some(c)) => {
                        depth -= 1;
                        rest = &rest[c + 2..];
                    }
                    _ => break,
                }
                continue;
            }
            match (rest.find("//"), rest.find("/*")) {
                (Some(l), b) if b.is_none_or(|b| l < b) => {
                    kept.push_str(&rest[..l]);
                    break;
                }
                (_, Some(b)) => {
                    kept.push_str(&rest[..b]);
                    depth += 1;
                    rest = &rest[b + 2..];
                }
                _ => {
                    kept.push_str(rest);
                    break;
                }
            }
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Parses a path (after `crate::` or `super::`) at the start of `s`: `a::b::{c, d::e}` gives
/// ["a::b::c", "a::b::d::e"]. `self` in a group names the group's own path; `*` and `as` names
/// are dropped.
fn parse_paths(s: &str) -> Vec<String> {
    fn tree(s: &str, i: &mut usize, prefix: &str, out: &mut Vec<String>) {
        let b = s.as_bytes();
        let mut path = prefix.to_string();
        loop {
            while *i < b.len() && (b[*i] as char).is_whitespace() {
                *i += 1;
            }
            if *i < b.len() && b[*i] == b'{' {
                *i += 1;
                loop {
                    while *i < b.len() && (b[*i] as char).is_whitespace() {
                        *i += 1;
                    }
                    if *i >= b.len() {
                        return;
                    }
                    if b[*i] == b'}' {
                        *i += 1;
                        return;
                    }
                    if b[*i] == b',' {
                        *i += 1;
                        continue;
                    }
                    tree(s, i, &path, out);
                }
            }
            let start = *i;
            while *i < b.len() && is_ident(b[*i] as char) {
                *i += 1;
            }
            let seg = &s[start..*i];
            if seg.is_empty() {
                if *i < b.len() && b[*i] == b'*' {
                    *i += 1;
                }
                out.push(path);
                return;
            }
            if seg != "self" {
                if !path.is_empty() {
                    path.push_str("::");
                }
                path.push_str(seg);
            }
            if s[*i..].starts_with("::") {
                *i += 2;
                continue;
            }
            // `as name`, `!` of a macro, or the end of the path.
            let rest = s[*i..].trim_start();
            if let Some(r) = rest.strip_prefix("as ") {
                let skip = s.len() - r.len();
                *i = skip;
                while *i < b.len() && (b[*i] as char).is_whitespace() {
                    *i += 1;
                }
                while *i < b.len() && is_ident(b[*i] as char) {
                    *i += 1;
                }
            }
            out.push(path);
            return;
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    tree(s, &mut i, "", &mut out);
    out
}

/// The paths a file names from the crate root: `crate::…` as written, `super::…` made absolute
/// from the file's module.
fn references(module: &str, is_mod_rs: bool, text: &str) -> Vec<String> {
    let text = strip_comments(text);
    let mut out = Vec::new();
    let _ = is_mod_rs; // `super` is the parent of a `mod.rs`'s module and a plain file's alike
    for kw in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(kw) {
            let start = from + at;
            from = start + kw.len();
            let before = &text[..start];
            if before.ends_with("::") || before.chars().next_back().is_some_and(|c| is_ident(c) || c == '$') {
                continue; // `$crate::`, `foo_crate::`, the second `super::` of a chain
            }
            let mut base = String::new();
            if kw == "super::" {
                let mut parts: Vec<&str> = module.split("::").filter(|p| !p.is_empty()).collect();
                parts.pop();
                while text[from..].starts_with("super::") {
                    parts.pop();
                    from += "super::".len();
                }
                base = parts.join("::");
            }
            for p in parse_paths(&text[from..]) {
                out.push(if base.is_empty() {
                    p
                } else if p.is_empty() {
                    base.clone()
                } else {
                    format!("{base}::{p}")
                });
            }
        }
    }
    out
}

/// Resolves a path from the crate root to the longest module it names ("" = the crate root, or
/// a name the path does not give its layer).
fn resolve(path: &str, modules: &BTreeSet<String>) -> String {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut best = String::new();
    for n in 1..=segs.len() {
        let candidate = segs[..n].join("::");
        if modules.contains(&candidate) {
            best = candidate;
        }
    }
    best
}

/// Checks the sources (path under `src/` → text); returns the problems found.
fn check(sources: &BTreeMap<String, String>) -> Vec<String> {
    let modules: BTreeSet<String> = sources.keys().map(|f| module_of(f)).collect();
    let mut problems = Vec::new();
    // unit → (unit it reaches, an example of the reference)
    let mut arrows: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (file, text) in sources {
        let module = module_of(file);
        if module.is_empty() {
            continue; // the crate root only declares the layers and re-exports
        }
        let Some(from_layer) = layer_of(&module) else {
            problems.push(format!("src/{file}: not in a layer folder ({})", LAYERS.join(", ")));
            continue;
        };
        let from = unit_of(&module);
        for r in references(&module, file.ends_with("mod.rs"), text) {
            let target = resolve(&r, &modules);
            let to = unit_of(&target);
            if to == from || (!target.is_empty() && module.starts_with(&format!("{target}::"))) {
                continue; // within one unit, or a file's own folder module
            }
            match layer_of(&target) {
                None => problems.push(format!(
                    "src/{file}: `{r}` does not name its layer ({}): lib.rs holds only the layers and the crate's exports",
                    LAYERS.join(", ")
                )),
                Some(to_layer) if to_layer < from_layer => problems.push(format!(
                    "src/{file}: `{r}` ({target}) runs up from {} to {}",
                    LAYERS[from_layer], LAYERS[to_layer]
                )),
                Some(_) => {
                    arrows.entry(from.clone()).or_default().entry(to).or_insert(r);
                }
            }
        }
    }
    problems.extend(circles(&arrows));
    problems
}

/// Every circle among the units, one line per strongly connected group, with the arrows that
/// close it.
fn circles(arrows: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    // reach[u] = every unit u reaches (small graph: a fixed point is enough).
    let mut reach: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (u, outs) in arrows {
        reach.insert(u, outs.keys().map(String::as_str).collect());
    }
    loop {
        let mut changed = false;
        let keys: Vec<&str> = reach.keys().copied().collect();
        for u in keys {
            let next: BTreeSet<&str> =
                reach[u].iter().flat_map(|v| reach.get(v).cloned().unwrap_or_default()).collect();
            let entry = reach.get_mut(u).unwrap();
            for v in next {
                changed |= entry.insert(v);
            }
        }
        if !changed {
            break;
        }
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for u in reach.keys() {
        if seen.contains(u) || !reach[u].contains(u) {
            continue;
        }
        let group: Vec<&str> = reach.keys().copied().filter(|v| reach[u].contains(v) && reach[v].contains(u)).collect();
        let mut inside = Vec::new();
        for a in &group {
            seen.insert(*a);
            for (b, r) in &arrows[*a] {
                if group.contains(&b.as_str()) {
                    inside.push(format!("{a} → {b} (`{r}`)"));
                }
            }
        }
        out.push(format!("circle between {}: {}", group.join(", "), inside.join(", ")));
    }
    out
}

#[test]
fn arrows_run_down_the_layers_and_never_in_a_circle() {
    let sources = library_sources();
    assert!(sources.len() > 40, "src/ has only {} files?", sources.len());
    let problems = check(&sources);
    assert!(problems.is_empty(), "layers (doors → rooms → face → vm):\n  {}", problems.join("\n  "));
}

#[test]
fn the_check_finds_an_upward_import_a_circle_and_a_root_item() {
    let sources = library_sources();
    let plant = |file: &str, line: &str| {
        let mut s = sources.clone();
        let text = s.get_mut(file).unwrap_or_else(|| panic!("no src/{file}"));
        *text = format!("{line}\n{text}");
        check(&s)
    };
    // face → rooms, in a group.
    let p = plant("face/ids.rs", "use crate::{face::abi, rooms::threads};");
    assert!(p.iter().any(|p| p.contains("face/ids.rs") && p.contains("runs up from face to rooms")), "{p:?}");
    let p = plant("vm/jvm/heap.rs", "fn f() { crate::doors::jvmti::table(); }");
    assert!(p.iter().any(|p| p.contains("vm/jvm/heap.rs") && p.contains("runs up from vm to doors")), "{p:?}");
    let p = plant("vm/logger.rs", "use super::super::face::events;");
    assert!(p.iter().any(|p| p.contains("vm/logger.rs") && p.contains("runs up from vm to face")), "{p:?}");
    // A circle within a layer: threads → gc, and gc → threads already, or a new pair.
    let p = plant("rooms/reset.rs", "use crate::rooms::lifecycle;");
    assert!(p.iter().any(|p| p.starts_with("circle between") && p.contains("rooms::reset")), "{p:?}");
    // An item of the crate root, and a name the crate root re-exports for its users.
    let p = plant("rooms/gc.rs", "fn g() { crate::no_such_thing(); }");
    assert!(p.iter().any(|p| p.contains("rooms/gc.rs") && p.contains("does not name its layer")), "{p:?}");
    let p = plant("rooms/gc.rs", "use crate::abi::*;");
    assert!(p.iter().any(|p| p.contains("`abi`") && p.contains("does not name its layer")), "{p:?}");
    // Comments are not read.
    let p = plant("face/ids.rs", "// use crate::rooms::threads;\n/* crate::rooms::lifecycle::x */");
    assert_eq!(p, check(&sources));
}

#[test]
fn paths_are_parsed_with_groups_aliases_and_self() {
    assert_eq!(
        parse_paths("{events, face::record::{self, Val}, jvm as j};"),
        ["events", "face::record", "face::record::Val", "jvm"]
    );
    assert_eq!(parse_paths("gc::on_object_free(tag)"), ["gc::on_object_free"]);
    assert_eq!(parse_paths("abi::*;"), ["abi"]);
    assert_eq!(module_of("vm/jvm/mod.rs"), "vm::jvm");
    assert_eq!(unit_of("vm::jvm::heap"), "vm::jvm");
}
