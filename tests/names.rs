//! What events point to stays readable, and every method ID an agent is handed is listed by its
//! class's CLASS_LOAD (tests/agents/namekeeper.c on tests/java/Names.java).

mod harness;

use harness::*;

/// The agent's SHUTDOWN line as (key, number) pairs.
fn shutdown_figures(r: &Run) -> Vec<(String, i64)> {
    let line =
        r.lines_with("SHUTDOWN ").first().copied().unwrap_or_else(|| panic!("no SHUTDOWN line\n{}", r.describe()));
    line.split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap_or(-1)))
        .collect()
}

fn figure(f: &[(String, i64)], key: &str) -> i64 {
    f.iter().find(|(k, _)| k == key).map(|(_, v)| *v).unwrap_or_else(|| panic!("no {key} in SHUTDOWN"))
}

/// An agent that keeps every CLASS_LOAD's pointers (delivered and requested) reads them intact
/// at JVM_SHUT_DOWN, also those of a class unloaded meanwhile; and every method ID it meets in
/// GetCallTrace frames at OBJECT_ALLOC, COMPILED_METHOD_LOAD and METHOD_ENTRY is listed by the
/// CLASS_LOAD of the class GetMethodClass names.
/// Delivered CLASS_LOADs, each class requested once more at its first allocation.
#[test]
fn kept_names_stay_readable_and_every_method_is_listed() {
    kept_names(false);
}

/// The same agent without CLASS_LOAD enabled: every class it knows comes from a
/// RequestEvent(CLASS_LOAD), whose pointers it keeps as well.
#[test]
fn requested_class_loads_stay_readable_and_list_every_method() {
    kept_names(true);
}

fn kept_names(requested: bool) {
    let lib = agent("namekeeper");
    for_each_jdk(|jdk| {
        let mode = if requested { ",requested" } else { "" };
        let r = run(jdk, &format!("agent={}:{{log}}{mode}", lib.display()), "Names", &[], &[]);
        r.assert_ok();
        assert!(r.stdout.contains("done "), "the program did not finish\n{}", r.describe());
        let f = shutdown_figures(&r);
        let problems: Vec<&str> = r
            .log_lines
            .iter()
            .map(String::as_str)
            .filter(|l| ["BAD ", "UNLISTED ", "NOCLASS ", "REQUEST_FAILED ", "COPY "].iter().any(|p| l.starts_with(p)))
            .collect();
        assert!(problems.is_empty(), "JDK {}: {}\n{}", jdk.feature, problems.join("\n"), r.describe());
        for key in ["bad", "unlisted", "noclass", "copies"] {
            assert_eq!(figure(&f, key), 0, "JDK {}: {key}\n{}", jdk.feature, r.describe());
        }
        // The run exercised what it is meant to.
        let mut exercised =
            vec!["records", "requested", "frames", "compiled", "entries", "allocs", "strings", "arrays"];
        if requested {
            exercised.push("resolved");
        } else {
            exercised.extend(["unloaded", "unload_requests"]);
        }
        for key in exercised {
            assert!(figure(&f, key) > 0, "JDK {}: no {key}\n{}", jdk.feature, r.describe());
        }
        if requested {
            assert_eq!(figure(&f, "records"), figure(&f, "requested"), "JDK {}\n{}", jdk.feature, r.describe());
        }
    });
}
