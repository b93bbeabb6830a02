//! The documentation is held to the code: the module map of docs/design.md names every file of
//! `src/` and nothing else, the room table of `src/lib.rs` names every module of `face/`,
//! `rooms/` and `vm/` once, README.md stays short and gives the test command CI runs, and every
//! relative link in README.md, compat-matrix.md and docs/*.md points at a file (and heading) that
//! exists. No JVM is started.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every `.rs` file under `dir`, as paths relative to the crate root with `/` separators.
fn rust_files(dir: &Path, out: &mut BTreeSet<String>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root()).unwrap();
            out.insert(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The text between backticks, in order: "`gc`, `deaths`" → ["gc", "deaths"].
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The lines of the section that begins with the heading `title` and ends at the next heading
/// of the same or a higher level.
fn section<'a>(md: &'a str, title: &str) -> Vec<&'a str> {
    let level = title.chars().take_while(|&c| c == '#').count();
    let mut lines = md.lines().skip_while(|l| l.trim_end() != title);
    assert!(lines.next().is_some(), "no heading {title:?}");
    lines
        .take_while(|l| {
            let hashes = l.chars().take_while(|&c| c == '#').count();
            !(hashes > 0 && hashes <= level && l[hashes..].starts_with(' '))
        })
        .collect()
}

/// Checks a module map against the files of `src/`: every entry has its file, every file is
/// named by one entry (a folder's `mod.rs` by its heading), nothing is named twice. Returns the
/// problems found.
fn check_module_map(map: &[&str], files: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut covered: BTreeMap<String, String> = BTreeMap::new();
    let mut cover = |file: String, by: String, problems: &mut Vec<String>| {
        if let Some(first) = covered.insert(file.clone(), by.clone()) {
            problems.push(format!("{file} is named twice: by {first} and by {by}"));
        }
    };
    let mut folder: Option<String> = None;
    for line in map {
        if let Some(heading) = line.strip_prefix("### ") {
            let f = code_spans(heading).first().map(|s| s.to_string());
            match f {
                Some(f) if f.starts_with("src/") && f.ends_with('/') => {
                    if !root().join(&f).is_dir() {
                        problems.push(format!("heading {heading:?}: no folder {f}"));
                    }
                    let own = format!("{f}mod.rs");
                    if files.contains(&own) {
                        cover(own, format!("the heading of {f}"), &mut problems);
                    }
                    folder = Some(f);
                }
                _ => problems.push(format!("heading {heading:?} names no folder `src/…/`")),
            }
            continue;
        }
        if !line.starts_with("| `") {
            continue;
        }
        let Some(folder) = &folder else {
            problems.push(format!("row before any folder heading: {line}"));
            continue;
        };
        let first_cell = line[1..].split(" | ").next().unwrap_or("");
        for name in code_spans(first_cell) {
            let rel = name.replace("::", "/");
            let candidates = [format!("{folder}{rel}.rs"), format!("{folder}{rel}/mod.rs")];
            match candidates.iter().find(|c| files.contains(*c)) {
                Some(file) => cover(file.clone(), format!("`{name}` under {folder}"), &mut problems),
                None => problems
                    .push(format!("`{name}` under {folder}: neither {} nor {} exists", candidates[0], candidates[1])),
            }
        }
    }
    for file in files {
        if !covered.contains_key(file) {
            problems.push(format!("{file} is not in the module map"));
        }
    }
    problems
}

#[test]
fn the_module_map_names_every_file_of_src_and_nothing_else() {
    let design = read("docs/design.md");
    let map = section(&design, "## Module map");
    let mut files = BTreeSet::new();
    rust_files(&root().join("src"), &mut files);
    assert!(files.len() > 40, "src/ has only {} files?", files.len());
    let problems = check_module_map(&map, &files);
    assert!(problems.is_empty(), "docs/design.md, Module map:\n  {}", problems.join("\n  "));
}

#[test]
fn the_module_map_check_finds_a_file_added_or_an_entry_removed() {
    let design = read("docs/design.md");
    let map = section(&design, "## Module map");
    let mut files = BTreeSet::new();
    rust_files(&root().join("src"), &mut files);
    // A file the map does not name.
    let mut planted = files.clone();
    planted.insert("src/rooms/planted.rs".into());
    let problems = check_module_map(&map, &planted);
    assert!(problems.iter().any(|p| p.contains("src/rooms/planted.rs is not in the module map")), "{problems:?}");
    // An entry whose file is gone.
    let mut removed = files.clone();
    assert!(removed.remove("src/rooms/reset.rs"));
    let problems = check_module_map(&map, &removed);
    assert!(problems.iter().any(|p| p.contains("`reset` under src/rooms/")), "{problems:?}");
    // An entry named twice.
    let mut doubled: Vec<&str> = map.clone();
    let at = map.iter().position(|l| l.starts_with("| `gc`")).expect("a row for gc");
    doubled.insert(at + 1, map[at]);
    let problems = check_module_map(&doubled, &files);
    assert!(problems.iter().any(|p| p.contains("src/rooms/gc.rs is named twice")), "{problems:?}");
}

#[test]
fn lib_rs_lists_every_module_of_doors_face_rooms_and_vm_once() {
    let lib = read("src/lib.rs");
    let mut listed: BTreeMap<String, usize> = BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//! | [`")) {
        let name = line.split('`').next().unwrap();
        *listed.entry(name.to_string()).or_default() += 1;
    }
    let mut modules = BTreeSet::new();
    for layer in ["doors", "face", "rooms", "vm"] {
        for entry in fs::read_dir(root().join("src").join(layer)).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let folder_module = path.is_dir() && path.join("mod.rs").is_file();
            if folder_module || (path.extension().is_some_and(|e| e == "rs") && stem != "mod") {
                modules.insert(stem);
            }
        }
    }
    let twice: Vec<_> = listed.iter().filter(|(_, &n)| n > 1).map(|(m, _)| m.as_str()).collect();
    let missing: Vec<_> = modules.iter().filter(|m| !listed.contains_key(*m)).collect();
    let unknown: Vec<_> = listed.keys().filter(|m| !modules.contains(*m)).collect();
    assert!(
        twice.is_empty() && missing.is_empty() && unknown.is_empty(),
        "src/lib.rs's room table: listed twice {twice:?}, missing {missing:?}, no such module {unknown:?}"
    );
}

#[test]
fn readme_is_at_most_250_lines_and_gives_the_test_command_ci_runs() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 250, "README.md has {lines} lines; the rest belongs in docs/");
    let ci = read(".ci/run");
    assert!(ci.lines().any(|l| l.trim() == "scripts/test.sh"), ".ci/run no longer runs scripts/test.sh");
    assert!(
        readme.lines().any(|l| l.starts_with("    scripts/test.sh ")),
        "README.md's two commands no longer show `scripts/test.sh`, the command .ci/run runs"
    );
}

/// GitHub's anchor for a heading: lower case, backticks and punctuation dropped, spaces → `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(md: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in md.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if in_code || hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let s = slug(&line[hashes..]);
        let n = seen.entry(s.clone()).or_default();
        out.insert(if *n == 0 { s.clone() } else { format!("{s}-{n}") });
        *n += 1;
    }
    out
}

/// The targets of the inline links `[text](target)` of a Markdown text.
fn link_targets(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_string());
        }
    }
    out
}

#[test]
fn relative_links_in_readme_and_docs_point_at_what_exists() {
    let pages = doc_pages();
    let mut problems = Vec::new();
    let mut links = 0;
    for page in &pages {
        let text = read(page);
        let dir = root().join(page).parent().unwrap().to_path_buf();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            links += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() { root().join(page) } else { dir.join(file) };
            if !path.exists() {
                problems.push(format!("{page}: ({target}): no file {}", path.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let md = fs::read_to_string(&path).unwrap_or_default();
                if !anchors(&md).contains(anchor) {
                    problems.push(format!("{page}: ({target}): no heading with anchor #{anchor}"));
                }
            }
        }
    }
    assert!(links >= 15, "only {links} relative links found: is the link parser broken?");
    assert!(problems.is_empty(), "broken links:\n  {}", problems.join("\n  "));
}

/// The pages whose text names the project's files: the README, the contributors' guide, the
/// matrix and every page of docs/.
fn doc_pages() -> Vec<String> {
    let mut pages: Vec<String> =
        ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "compat-matrix.md"].iter().map(|s| s.to_string()).collect();
    for entry in fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(format!("docs/{}", path.file_name().unwrap().to_string_lossy()));
        }
    }
    pages
}

/// The paths of the project's files that `text` names in code spans (`src/…`, `tests/…`, a
/// layer's file as `rooms/x.rs`, …) and that do not exist: each as the span.
fn stale_paths(text: &str, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    const TOP: [&str; 10] =
        ["src/", "crates/", "tests/", "scripts/", "docs/", "shim/", "benches/", "examples/", "corpus/", ".ci/"];
    const LAYER: [&str; 4] = ["doors/", "rooms/", "face/", "vm/"];
    const EXT: [&str; 9] = [".rs", ".c", ".h", ".sh", ".java", ".md", ".py", ".patch", ".toml"];
    let mut out = Vec::new();
    for span in code_spans(text) {
        let p = span.trim();
        let plain = !p.is_empty()
            && p.chars().all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
            && !p.contains("..")
            && !p.contains("//");
        if !plain || !EXT.iter().any(|e| p.ends_with(e)) {
            continue;
        }
        let candidates: Vec<String> = if TOP.iter().any(|t| p.starts_with(t)) {
            vec![p.to_string()]
        } else if LAYER.iter().any(|l| p.starts_with(l)) {
            vec![format!("src/{p}")]
        } else {
            continue;
        };
        if !candidates.iter().any(|c| exists(c)) {
            out.push(p.to_string());
        }
    }
    out
}

/// Every file of the project a page names in a code span exists (a page that still names a
/// moved or removed file misleads whoever reads it; three did once).
#[test]
fn every_path_the_docs_name_exists() {
    let exists = |p: &str| root().join(p).exists();
    let mut problems = Vec::new();
    let mut named = 0;
    for page in doc_pages() {
        let text = read(&page);
        named += code_spans(&text).len();
        for p in stale_paths(&text, &exists) {
            problems.push(format!("{page}: `{p}` does not exist"));
        }
    }
    assert!(named > 100, "only {named} code spans found: is the span parser broken?");
    assert!(problems.is_empty(), "stale paths:\n  {}", problems.join("\n  "));
}

/// The check finds a planted stale path, in both forms, and lets the real ones pass.
#[test]
fn the_path_check_finds_a_planted_stale_path() {
    let exists = |p: &str| root().join(p).exists();
    let text = "the door (`vm/callbacks.rs`), the room (`rooms/alloc.rs`), a test \
                (`tests/heap.rs`), a gone script (`scripts/nothing-here.sh`), a type (`JNIEnv *`)";
    assert_eq!(stale_paths(text, &exists), vec!["vm/callbacks.rs".to_string(), "scripts/nothing-here.sh".to_string()]);
}

/// The README is a page a user reads in five minutes: at most 10 KB (the rest is in docs/).
#[test]
fn readme_is_under_10_kb() {
    let n = read("README.md").len();
    assert!(n <= 10 * 1024, "README.md is {n} bytes; the rest belongs in docs/");
}
