//! Links the cdylib with shim/exports.map, so that it exports only the JVM's entry points, and
//! fingerprints the sources for the start-up rewrite cache (`vm::rewrites`): a cache file made
//! by another build (whose rewriting may differ) is never read.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Links libjvmpi_shim.so with shim/exports.map, which names the only symbols it exports.
    let map = root.join("shim/exports.map");
    println!("cargo:rerun-if-changed={}", map.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
    // The sources' fingerprint: every file under src/ (path and content) and Cargo.lock.
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.push(root.join("Cargo.lock"));
    files.sort();
    let mut h = DefaultHasher::new();
    for f in &files {
        f.strip_prefix(root).unwrap_or(f).hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    println!("cargo:rustc-env=JVMPI_SHIM_SOURCE_FINGERPRINT={:016x}", h.finish());
    println!("cargo:rerun-if-changed={}", root.join("src").display());
    println!("cargo:rerun-if-changed={}", root.join("Cargo.lock").display());
}
