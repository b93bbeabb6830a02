//! libjvmpi_shim.so exports Agent_OnAttach, Agent_OnLoad, Agent_OnUnload and JVM_OnLoad, and nothing else an
//! agent's symbols could collide with (shim/exports.map).

mod harness;

#[test]
fn only_the_entry_points_are_exported() {
    let so = harness::shim();
    let out = std::process::Command::new("nm").args(["-D", "--defined-only"]).arg(&so).output().expect("nm");
    assert!(out.status.success());
    let mut syms: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut p = l.split_whitespace();
            let (_addr, kind, name) = (p.next()?, p.next()?, p.next()?);
            (kind != "w" && kind != "U").then(|| name.to_string())
        })
        .collect();
    syms.sort();
    assert_eq!(
        syms,
        ["Agent_OnAttach", "Agent_OnLoad", "Agent_OnUnload", "JVM_OnLoad"],
        "exported symbols of {}",
        so.display()
    );
}
