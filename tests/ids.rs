//! Object IDs: every object of a heap dump resolved at exit (RequestEvent OBJECT_ALLOC and
//! CLASS_LOAD, jobjectID2jobject) with every answer checked, and IDs reused after OBJECT_FREE
//! while staying unique among live objects.

mod harness;
use harness::*;

fn read(path: &std::path::Path, r: &Run) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), r.describe()))
}

fn field(line: &str, key: &str) -> String {
    line.split(' ')
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        .to_string()
}

/// A memory profiler's report at exit: a level-0 dump, then OBJECT_ALLOC and CLASS_LOAD
/// requested for every object in it, and jobjectID2jobject for each.
#[test]
fn every_object_of_a_level_0_dump_resolves_at_exit() {
    for_each_jdk(|jdk| {
        let out = fresh_log_path(&format!("memprof-{}", jdk.feature)).with_extension("txt");
        let lib = agent("memprof");
        let r = run(jdk, &format!("agent={}:out={}", lib.display(), out.display()), "IdsProg", &["keep", "20000"], &[]);
        r.assert_ok();
        let text = read(&out, &r);
        let line = |p: &str| {
            text.lines()
                .find(|l| l.starts_with(p))
                .unwrap_or_else(|| panic!("no {p}:\n{text}\n{}", r.describe()))
                .to_string()
        };
        let dump = line("DUMP ");
        assert_eq!(field(&dump, "rc"), "0", "{text}");
        assert_eq!(field(&dump, "parsed"), "ok", "{text}");
        let objects: u64 = field(&dump, "objects").parse().unwrap();
        assert!(objects > 40_000, "{text}");
        let req = line("REQ ");
        assert_eq!(field(&req, "bad"), "0", "{text}");
        assert_eq!(field(&line("J2J "), "bad"), "0", "{text}");
        let count = |kind: &str, name: &str| -> Vec<String> {
            line(&format!("{kind} {name} ")).split(' ').skip(2).map(String::from).collect()
        };
        let items = count("COUNT", "IdsProg$Item");
        assert_eq!(items[0], "20000", "{text}");
        assert!(items[1].parse::<u32>().unwrap() >= 16 && items.len() == 2, "one size for every item: {text}");
        assert_eq!(count("ARRAYS", "IdsProg$Item")[0], "1", "{text}");
        let ints = count("ARRAYS", "int");
        assert!(ints[0].parse::<u64>().unwrap() >= 20_000, "{text}");
        assert!(!text.lines().any(|l| l.ends_with(" mixed")), "instances of one class with different sizes:\n{text}");
    });
}

/// The same report over more objects than one JNI local frame may hold (65 536), under
/// `-Xcheck:jni`: the shim's index of IDs is rebuilt from a listing of every tagged object,
/// which must keep its local references within frames of their own (the checker warns of any
/// frame holding more than its capacity).
#[test]
fn resolving_a_large_dump_under_xcheck_jni_leaves_no_local_reference_behind() {
    for_each_jdk(|jdk| {
        let out = fresh_log_path(&format!("memprof-x-{}", jdk.feature)).with_extension("txt");
        let lib = agent("memprof");
        let r = run(
            jdk,
            &format!("agent={}:out={}", lib.display(), out.display()),
            "IdsProg",
            &["keep", "30000"],
            &["-Xcheck:jni"],
        );
        r.assert_ok();
        let text = read(&out, &r);
        let warnings: Vec<&str> = r
            .stdout
            .lines()
            .chain(r.stderr.lines())
            .filter(|l| {
                (l.starts_with("WARNING") && (l.contains("JNI") || l.contains("native method")))
                    || l.contains("JNI local refs")
                    || l.starts_with("FATAL ERROR")
            })
            .collect();
        assert!(warnings.is_empty(), "-Xcheck:jni: {warnings:#?}\n{}", r.describe());
        let dump = text.lines().find(|l| l.starts_with("DUMP ")).unwrap_or_else(|| panic!("no DUMP:\n{text}"));
        assert!(field(dump, "objects").parse::<u64>().unwrap() > 65_536, "more than one frame of references: {text}");
        let j2j = text.lines().find(|l| l.starts_with("J2J ")).unwrap_or_else(|| panic!("no J2J:\n{text}"));
        assert_eq!(field(j2j, "bad"), "0", "{text}");
    });
}

/// IDs are reused once their OBJECT_FREE has been sent: 2 M objects allocated with at most
/// 40 000 alive (plus those not yet collected) get IDs from a space far smaller than 2 M slots,
/// and no ID is ever announced while it names a live object. The reuse threshold (2^26 slots
/// made) is lowered to 1000 with the shim's test knob; without it, no ID is reused here.
#[test]
fn ids_are_reused_after_object_free_and_stay_unique() {
    for_each_jdk(|jdk| {
        let out = fresh_log_path(&format!("reuse-{}", jdk.feature)).with_extension("txt");
        let lib = agent("memprof");
        // Reuse begins after 1000 slots here (2^26 by default).
        let r = run_env(
            jdk,
            &format!("agent={}:out={},mode=reuse", lib.display(), out.display()),
            "IdsProg",
            &["churn", "1000000", "20000"],
            &["-Xmx256m"],
            &[("JVMPI_SHIM_ID_REUSE_AFTER", "1000".to_string())],
        );
        r.assert_ok();
        let text = read(&out, &r);
        let l = text.lines().next().unwrap_or("");
        let n = |k: &str| -> u64 { field(l, k).parse().unwrap() };
        let max_id = u64::from_str_radix(&field(l, "max_id"), 16).unwrap();
        assert!(n("allocs") >= 2_000_000, "{text}");
        assert_eq!(n("dups"), 0, "an ID announced while its object lived: {text}");
        assert_eq!(n("badfree"), 0, "OBJECT_FREE for an ID not live: {text}");
        assert_eq!(n("large"), 0, "{text}");
        assert!(n("reused") > 1_000_000, "IDs must be reused: {text}");
        assert!(max_id < 1_000_000 * 16, "the ID space stays near the live set: {text}");
    });
}

/// Below the reuse threshold no ID is ever reused (agents that match deaths to allocations late
/// rely on it): the same churn with the default threshold announces 2 M distinct IDs.
#[test]
fn no_id_is_reused_below_the_threshold() {
    for_each_jdk(|jdk| {
        let out = fresh_log_path(&format!("noreuse-{}", jdk.feature)).with_extension("txt");
        let lib = agent("memprof");
        let r = run(
            jdk,
            &format!("agent={}:out={},mode=reuse", lib.display(), out.display()),
            "IdsProg",
            &["churn", "300000", "20000"],
            &["-Xmx256m"],
        );
        r.assert_ok();
        let text = read(&out, &r);
        let l = text.lines().next().unwrap_or("");
        let n = |k: &str| -> u64 { field(l, k).parse().unwrap() };
        assert!(n("allocs") >= 600_000 && n("frees") > 400_000, "{text}");
        assert_eq!((n("dups"), n("reused"), n("badfree")), (0, 0, 0), "{text}");
    });
}
