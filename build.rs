//! Links the cdylib with shim/exports.map, so that it exports only the JVM's entry points.

// Links libjvmpi_shim.so with shim/exports.map, which names the only symbols it exports.
fn main() {
    let map = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shim/exports.map");
    println!("cargo:rerun-if-changed={}", map.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
}
