//! The class-rewriting layer (`jvmpi_shim::bci`) against real JVMs.
//!
//! * `rewritten_program_behaves_and_counts_arrays`: tests/java/bci/AllocProgram.java, its
//!   classes rewritten by `instrument_allocations` and run with a counting tracker under
//!   `-Xverify:all` on every JDK: same results as the original, and every array its bytecode
//!   allocated was reported once.
//! * `jdk_classes_round_trip_and_verify`: every class of the JDK's own modules (JDK 17 and 25,
//!   dumped through jrt:/ by tests/java/bci/DumpJrt.java, cached under
//!   `<target>/bci-jdk-classes/`) goes through `instrument_allocations`; none may fail, every
//!   output must re-parse (with this layer and with ristretto's full parser) and have every
//!   allocation site hooked; then tests/java/bci/VerifyDriver.java links every rewritten class
//!   outside java.* in a fresh class loader under `-Xverify:all`: no VerifyError, no
//!   ClassFormatError — except for one class planted broken on purpose, which must be caught.
//! * `rewriter_shortcuts_change_no_byte`: the same classes through the allocation plan, the
//!   method plan and every plan at once, with the rewriter's shortcuts and without them
//!   (`bci::set_shortcuts`): the same output bytes (or the same error) for every class; on
//!   JDK 17 also every class made a version 49 and a version 48 class file (stack maps removed).

mod harness;
use harness::*;

use jvmpi_shim::bci::{
    instrument_allocations, shape_class, shape_class_name, tracker_class, tracker_class_counting, AllocHooks,
    ClassEditor, Instruction,
};
use ristretto_classfile::attributes::Attribute;
use ristretto_classfile::{Version, JAVA_1_4, JAVA_5};
use std::collections::BTreeMap;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const COUNTING: &str = "bci/CountingTracker";
const TRACKER: &str = "JvmpiShimTracker";
const HOOK: &str = "(Ljava/lang/Object;)V";

/// Errors `instrument_allocations` may give for JDK classes, with the reason: none.
const EXPECTED_FAILURES: &[(&str, &str)] = &[];

fn unique_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = target_dir().join("bci-tmp").join(format!(
        "{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("create temp dir");
    d
}

fn is_alloc(i: &Instruction) -> bool {
    matches!(i, Instruction::Newarray(_) | Instruction::Anewarray(_) | Instruction::Multianewarray(..))
}

/// The index of the reference to the tracker's `name` hook, if the class's pool has it.
fn hook_ref(class: &[u8], tracker: &str, name: &str) -> Result<Option<u16>, String> {
    let mut ce = ClassEditor::parse(class).map_err(|e| format!("re-parse: {e}"))?;
    let before = ce.to_bytes().map_err(|e| e.to_string())?;
    let r = ce.pool().method_ref(tracker, name, HOOK).map_err(|e| e.to_string())?;
    Ok((ce.to_bytes().map_err(|e| e.to_string())? == before).then_some(r))
}

/// Every array allocation in `class` is followed by `dup; invokestatic <tracker>.newArray`,
/// every `new C` (class files of version 49 and later) by `ldc C; invokestatic
/// <tracker>.newObject`; returns the number of allocation sites.
fn check_hooked(class: &[u8], tracker: &str) -> Result<usize, String> {
    let ce = ClassEditor::parse(class).map_err(|e| format!("re-parse: {e}"))?;
    let ldc_class = ce.major_version() >= 49;
    let array_hook = hook_ref(class, tracker, "newArray")?;
    let new_hook = hook_ref(class, tracker, "newObject")?;
    let mut sites = 0;
    for m in 0..ce.method_count() {
        let Some(ed) = ce.method_editor(m).map_err(|e| format!("re-decode: {e}"))? else { continue };
        let code = ed.instructions();
        for (k, i) in code.iter().enumerate() {
            if is_alloc(i) {
                sites += 1;
                let Some(hook) = array_hook else {
                    return Err("no newArray method reference in the constant pool".into());
                };
                if code.get(k + 1) != Some(&Instruction::Dup)
                    || code.get(k + 2) != Some(&Instruction::Invokestatic(hook))
                {
                    return Err(format!("method #{m}: allocation at {k} is not hooked"));
                }
            }
            if let (Instruction::New(c), true) = (i, ldc_class) {
                sites += 1;
                let Some(hook) = new_hook else {
                    return Err("no newObject method reference in the constant pool".into());
                };
                // keep_new (version 50 and later): `dup; astore L` before the hook and
                // `aconst_null; astore L` after it, L the method's last local.
                let local = |i: Option<&Instruction>| match i {
                    Some(Instruction::Astore(l)) => Some(u16::from(*l)),
                    Some(Instruction::Astore_w(l)) => Some(*l),
                    _ => None,
                };
                let kept = code.get(k + 1) == Some(&Instruction::Dup) && local(code.get(k + 2)).is_some();
                let h = if kept { k + 2 } else { k };
                let ldc_ok = match code.get(h + 1) {
                    Some(Instruction::Ldc(x)) => u16::from(*x) == *c,
                    Some(Instruction::Ldc_w(x)) => x == c,
                    _ => false,
                };
                if !ldc_ok || code.get(h + 2) != Some(&Instruction::Invokestatic(hook)) {
                    return Err(format!("method #{m}: new at {k} is not hooked"));
                }
                if kept {
                    let l = local(code.get(k + 2));
                    let last = ce.max_locals(m).map(|n| n - 1);
                    if ce.major_version() < 50
                        || l != last
                        || code.get(h + 3) != Some(&Instruction::Aconst_null)
                        || local(code.get(h + 4)) != l
                    {
                        return Err(format!(
                            "method #{m}: new at {k} is kept in local {l:?} (last: {last:?}) and not cleared"
                        ));
                    }
                }
            }
        }
    }
    Ok(sites)
}

// ---------------------------------------------------------------------------------------------

#[test]
fn rewritten_program_behaves_and_counts_arrays() {
    let orig = classes().join("bci");
    let dir = unique_dir("program");
    let out = dir.join("bci");
    fs::create_dir_all(&out).unwrap();
    let mut rewritten = 0;
    let mut sites = 0;
    for e in fs::read_dir(&orig).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("AllocProgram") || !name.ends_with(".class") {
            continue;
        }
        let bytes = fs::read(e.path()).unwrap();
        let new = instrument_allocations(&bytes, &AllocHooks { tracker: COUNTING, keep_new: true })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(new) = &new {
            sites += check_hooked(new, COUNTING).unwrap_or_else(|e| panic!("{name}: {e}"));
            rewritten += 1;
        }
        fs::write(out.join(&name), new.unwrap_or(bytes)).unwrap();
    }
    assert!(rewritten >= 3 && sites >= 20, "{rewritten} classes, {sites} sites");
    fs::write(out.join("CountingTracker.class"), tracker_class_counting(COUNTING)).unwrap();
    for_each_jdk(|jdk| {
        let run = |cp: &Path| {
            let r = run_raw(
                jdk,
                &["-Xverify:all".into(), "-cp".into(), cp.display().to_string(), "bci.AllocProgram".into()],
            );
            r.assert_ok();
            r
        };
        let a = run(&classes());
        let b = run(&dir);
        let results = |s: &str| s.lines().filter(|l| l.starts_with("result ")).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(results(&a.stdout), results(&b.stdout), "results differ\n{}", b.describe());
        assert!(results(&a.stdout).len() >= 12, "{}", a.describe());
        let counts: Vec<&str> = b.stdout_lines_with("count ");
        assert!(counts.len() >= 13, "{}", b.describe());
        for l in counts {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[2], f[3], "{l}\n{}", b.describe());
        }
        // The original ran with the do-nothing stub.
        assert!(a.stdout.contains("count sumSquares 0 1"), "{}", a.describe());
    });
    let _ = fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------

struct Record {
    module: String,
    name: String,
    bytes: Vec<u8>,
}

fn read_utf(d: &[u8], at: &mut usize) -> String {
    let n = usize::from(u16::from_be_bytes([d[*at], d[*at + 1]]));
    let s = String::from_utf8_lossy(&d[*at + 2..*at + 2 + n]).into_owned();
    *at += 2 + n;
    s
}

fn read_records(path: &Path) -> Vec<Record> {
    let d = fs::read(path).unwrap();
    let mut at = 0;
    let mut v = Vec::new();
    while at < d.len() {
        let module = read_utf(&d, &mut at);
        let name = read_utf(&d, &mut at);
        let n = u32::from_be_bytes(d[at..at + 4].try_into().unwrap()) as usize;
        at += 4;
        v.push(Record { module, name, bytes: d[at..at + n].to_vec() });
        at += n;
    }
    v
}

/// All classes of `jdk`'s modules, dumped once and cached.
fn jdk_classes(jdk: &Jdk) -> Vec<Record> {
    let home = jdk.java.parent().and_then(Path::parent).unwrap();
    let modules = home.join("lib/modules");
    let meta = fs::metadata(&modules).expect("lib/modules");
    let mut h = DefaultHasher::new();
    modules.hash(&mut h);
    meta.len().hash(&mut h);
    meta.modified().ok().hash(&mut h);
    let dir = target_dir().join("bci-jdk-classes");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("jdk{}-{:016x}.bin", jdk.feature, h.finish()));
    // Tests running at once (threads of this binary, or other test binaries) must never read a
    // dump still being written: one dump at a time here, written to a name of its own and then
    // renamed into place (a rename is atomic).
    static DUMPING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = DUMPING.lock().unwrap_or_else(|p| p.into_inner());
    if !file.is_file() {
        let part = dir.join(format!("jdk{}-{:016x}.bin.part-{}", jdk.feature, h.finish(), std::process::id()));
        let r = run_raw_timeout(
            jdk,
            &["-cp".into(), classes().display().to_string(), "bci.DumpJrt".into(), part.display().to_string()],
            Duration::from_secs(300),
        );
        r.assert_ok();
        assert!(part.is_file(), "{}", r.describe());
        fs::rename(&part, &file).expect("rename the dump into place");
    }
    read_records(&file)
}

struct Outcome {
    result: Result<Option<Vec<u8>>, String>,
    sites: usize,
    problems: Vec<String>,
}

fn instrument_one(r: &Record, tracker: &str) -> Outcome {
    let mut problems = Vec::new();
    let mut sites = 0;
    let result = instrument_allocations(&r.bytes, &AllocHooks { tracker, keep_new: true }).map_err(|e| e.to_string());
    if let Ok(Some(new)) = &result {
        match check_hooked(new, tracker) {
            Ok(n) => sites = n,
            Err(e) => problems.push(e),
        }
        if let Err(e) = ristretto_classfile::ClassFile::from_bytes(new) {
            problems.push(format!("ristretto cannot parse the output: {e}"));
        }
        if r.name == "java/lang/Object" {
            let mut ce = ClassEditor::parse(new).unwrap();
            let hook = ce.pool().method_ref(tracker, "objectInit", HOOK).unwrap();
            let m = ce.find_method("<init>", "()V").unwrap();
            let ed = ce.method_editor(m).unwrap().unwrap();
            if ed.instructions()[..2] != [Instruction::Aload_0, Instruction::Invokestatic(hook)] {
                problems.push("Object.<init> does not start with the objectInit hook".into());
            }
        }
    }
    Outcome { result, sites, problems }
}

/// `instrument_one` on every record, on all cores.
fn instrument_all(records: &[Record], tracker: &str) -> Vec<Outcome> {
    on_all_cores(records, |r| instrument_one(r, tracker))
}

/// `f` of every record, on all cores, in the records' order.
fn on_all_cores<T: Send>(records: &[Record], f: impl Fn(&Record) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, T)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut v = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(r) = records.get(i) else { break };
                        v.push((i, f(r)));
                    }
                    v
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("worker")).collect()
    });
    let mut all: Vec<(usize, T)> = parts.drain(..).flatten().collect();
    all.sort_by_key(|x| x.0);
    all.into_iter().map(|x| x.1).collect()
}

/// A record of VerifyDriver's input: a class for context (`original` None) or a target with
/// its original bytes (possibly empty).
fn put_record(out: &mut Vec<u8>, name: &str, bytes: &[u8], original: Option<&[u8]>) {
    out.extend_from_slice(&(name.len() as u16).to_be_bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(u8::from(original.is_some()));
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
    if let Some(o) = original {
        out.extend_from_slice(&(o.len() as u32).to_be_bytes());
        out.extend_from_slice(o);
    }
}

/// A class that must fail verification: AllocProgram with a `pop` on the empty stack.
fn planted_broken_class() -> (String, Vec<u8>, Vec<u8>) {
    let bytes = fs::read(classes().join("bci/AllocProgram.class")).unwrap();
    let mut ce = ClassEditor::parse(&bytes).unwrap();
    let m = ce.find_method("sumSquares", "(I)I").unwrap();
    let mut ed = ce.method_editor(m).unwrap().unwrap();
    ed.insert_before(0, &[Instruction::Pop]).unwrap();
    ce.commit(ed).unwrap();
    ("bci/AllocProgram".into(), ce.to_bytes().unwrap(), bytes.clone())
}

fn round_trip(jdk: &Jdk) {
    let t0 = Instant::now();
    let records = jdk_classes(jdk);
    let t_dump = t0.elapsed();
    assert!(records.len() > 5000, "only {} classes dumped", records.len());
    let t1 = Instant::now();
    let outcomes = instrument_all(&records, TRACKER);
    let t_rust = t1.elapsed();

    let mut failures = Vec::new();
    let (mut rewritten, mut unchanged, mut sites) = (0, 0, 0);
    for (r, o) in records.iter().zip(&outcomes) {
        for p in &o.problems {
            failures.push(format!("{}/{}: {p}", r.module, r.name));
        }
        match &o.result {
            Ok(Some(_)) => rewritten += 1,
            Ok(None) => unchanged += 1,
            Err(e) => {
                if !EXPECTED_FAILURES.iter().any(|(n, why)| *n == r.name && e.contains(why)) {
                    failures.push(format!("{}/{}: {e}", r.module, r.name));
                }
            }
        }
        sites += o.sites;
    }
    eprintln!(
        "JDK {}: {} classes ({} rewritten, {} unchanged), {sites} allocation sites; dump {:.1?}, instrumentation + checks {:.1?}",
        jdk.feature,
        records.len(),
        rewritten,
        unchanged,
        t_dump,
        t_rust
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(rewritten > 1000, "only {rewritten} classes rewritten");
    assert!(outcomes
        .iter()
        .zip(&records)
        .any(|(o, r)| r.name == "java/lang/Object" && matches!(o.result, Ok(Some(_)))));

    // Link every rewritten class outside java.* under -Xverify:all.
    let mut blob = Vec::new();
    let mut targets = 0;
    for (r, o) in records.iter().zip(&outcomes) {
        if r.name.starts_with("java/") || r.name.ends_with("module-info") {
            continue;
        }
        match &o.result {
            Ok(Some(new)) => {
                put_record(&mut blob, &r.name, new, Some(&r.bytes));
                targets += 1;
            }
            _ => put_record(&mut blob, &r.name, &r.bytes, None),
        }
    }
    put_record(&mut blob, TRACKER, &tracker_class(TRACKER), Some(&[]));
    // Its shape class: the tracker's hooks call `Reference.get` on a shape, which the verifier
    // checks by loading it.
    put_record(&mut blob, &shape_class_name(TRACKER), &shape_class(TRACKER), Some(&[]));
    let (broken, broken_bytes, broken_original) = planted_broken_class();
    put_record(&mut blob, &broken, &broken_bytes, Some(&broken_original));
    let dir = unique_dir(&format!("verify{}", jdk.feature));
    let input = dir.join("classes.bin");
    fs::write(&input, &blob).unwrap();
    // Every JDK package exported to the unnamed modules of the fresh loaders, so that classes
    // whose supertypes live in non-exported packages can be linked (and verified) too.
    let mut packages: Vec<String> = records
        .iter()
        .filter(|r| !r.name.ends_with("module-info"))
        .filter_map(|r| r.name.rfind('/').map(|i| format!("{}/{}", r.module, r.name[..i].replace('/', "."))))
        .collect();
    packages.sort();
    packages.dedup();
    let argfile = dir.join("args");
    let mut args = String::from("-Xverify:all\n-Xss4m\n-XX:TieredStopAtLevel=1\n");
    for p in &packages {
        args += &format!("--add-exports\n{p}=ALL-UNNAMED\n");
    }
    fs::write(&argfile, args).unwrap();
    let t2 = Instant::now();
    let r = run_raw_timeout(
        jdk,
        &[
            format!("@{}", argfile.display()),
            "-cp".into(),
            classes().display().to_string(),
            "bci.VerifyDriver".into(),
            input.display().to_string(),
            TRACKER.into(),
        ],
        Duration::from_secs(240),
    );
    let t_java = t2.elapsed();
    r.assert_ok();
    let summary = r
        .stdout_lines_with("summary ")
        .first()
        .map(|s| s.to_string())
        .unwrap_or_else(|| panic!("no summary\n{}", r.describe()));
    let field = |k: &str| -> usize {
        summary
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{k}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {summary}"))
    };
    let others: BTreeMap<String, usize> = r
        .stdout_lines_with("other ")
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.get(1)?.to_string(), f.get(2)?.parse().ok()?))
        })
        .collect();
    eprintln!("JDK {}: verifier run {:.1?}: {summary}; other failures: {others:?}", jdk.feature, t_java);
    for l in r.stdout_lines_with("BASELINE ").iter().take(3).chain(&r.stdout_lines_with("OTHER ")) {
        eprintln!("  {l}");
    }
    let verify_errors = r.stdout_lines_with("VERIFY ");
    let format_errors = r.stdout_lines_with("FORMAT ");
    // Exactly the planted class fails verification.
    assert_eq!(
        verify_errors.len(),
        1,
        "VerifyErrors:\n{}\n{}",
        verify_errors.join("\n"),
        r.stdout.lines().filter(|l| l.starts_with("OTHER")).collect::<Vec<_>>().join("\n")
    );
    assert!(verify_errors[0].starts_with(&format!("VERIFY {broken}:")), "{}", verify_errors[0]);
    assert!(format_errors.is_empty(), "ClassFormatErrors:\n{}", format_errors.join("\n"));
    assert_eq!(field("targets"), targets + 3);
    assert_eq!(field("verify"), 1);
    assert_eq!(field("format"), 0);
    // Most classes are really linked (the others fail on module access or missing classes,
    // before or instead of verification).
    assert!(field("linked") * 2 > targets, "only {} of {targets} rewritten classes were linked", field("linked"));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn jdk_classes_round_trip_and_verify() {
    let wanted: Vec<Jdk> = jdks().into_iter().filter(|j| j.feature == 17 || j.feature == 25).collect();
    if wanted.is_empty() {
        eprintln!("neither JDK 17 nor JDK 25 selected: skipped");
        return;
    }
    let mut failures = Vec::new();
    for jdk in wanted {
        eprintln!("jdk {}", jdk.feature);
        if let Err(e) = std::panic::catch_unwind(|| round_trip(&jdk)) {
            failures.push(format!("on JDK {}: {}", jdk.feature, panic_message(&*e)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every class of the JDK's modules through the allocation plan, the method plan (entry and
/// exit) and every plan at once (entry with the receiver, exit, instructions, allocations),
/// with the rewriter's shortcuts (the default) and without them (`bci::set_shortcuts(false)`:
/// every method decoded, `max_stack` by simulating types, every constant built before it is
/// looked up): the same bytes, or the same error, for every class.
fn shortcuts_change_nothing_on(jdk: &Jdk) {
    use jvmpi_shim::bci::{instrument_class, set_shortcuts, Lookup, MethodHooks};
    let records = jdk_classes(jdk);
    let alloc = AllocHooks { tracker: TRACKER, keep_new: true };
    let plans: [(&str, bool, Option<MethodHooks>); 3] = [
        ("allocations", true, None),
        (
            "methods",
            false,
            Some(MethodHooks {
                tracker: "JvmpiShimMethods",
                also_skip: TRACKER,
                entry: true,
                receiver: false,
                exit: true,
                instructions: false,
            }),
        ),
        (
            "everything",
            true,
            Some(MethodHooks {
                tracker: "JvmpiShimMethods",
                also_skip: TRACKER,
                entry: true,
                receiver: true,
                exit: true,
                instructions: true,
            }),
        ),
    ];
    // Class files older than version 50 (no stack maps, the JVM's old verifier; below 49 no
    // `ldc` of a class, so no hook at `new`) take other paths through the rewriter: every class
    // is also compared as version 49 and as version 48, its stack maps stripped.
    let old_versions: &[Version] = if jdk.feature == 17 { &[JAVA_5, JAVA_1_4] } else { &[] };
    let downgrades = AtomicUsize::new(0);
    let differences: Vec<String> = on_all_cores(&records, |r| {
        let mut v = Vec::new();
        let mut variants = vec![(String::new(), r.bytes.clone())];
        for ver in old_versions {
            if let Some(b) = downgraded(&r.bytes, ver.clone()) {
                downgrades.fetch_add(1, Ordering::Relaxed);
                variants.push((format!(" as version {}", ver.major()), b));
            }
        }
        for (variant, bytes) in &variants {
            for (plan, with_alloc, hooks) in &plans {
                let run = |shortcuts: bool| {
                    set_shortcuts(shortcuts);
                    let mut n = 0;
                    let mut next_index = |_: &str, _: &str, _: &[Lookup]| -> i32 {
                        n += 1;
                        n
                    };
                    let methods = hooks.as_ref().map(|h| (h, &mut next_index as &mut dyn FnMut(&str, &str, &[Lookup]) -> i32));
                    let out = instrument_class(bytes, with_alloc.then_some(&alloc), methods).map_err(|e| e.to_string());
                    set_shortcuts(true);
                    out
                };
                let with = run(true);
                if with != run(false) {
                    v.push(format!("{}{variant} ({plan})", r.name));
                } else if let Ok(Some(out)) = &with {
                    if !variant.is_empty() {
                        match ristretto_classfile::ClassFile::from_bytes(out) {
                            Err(e) => v.push(format!("{}{variant} ({plan}): the output does not parse: {e}", r.name)),
                            Ok(cf) if cf.methods.iter().flat_map(|m| &m.attributes).any(|a| {
                                matches!(a, Attribute::Code { attributes, .. } if attributes.iter().any(|x| matches!(x, Attribute::StackMapTable { .. })))
                            }) => v.push(format!("{}{variant} ({plan}): stack maps in an old class file", r.name)),
                            Ok(_) => {}
                        }
                    }
                }
            }
        }
        v
    })
    .into_iter()
    .flatten()
    .collect();
    let downgrades = downgrades.into_inner();
    eprintln!(
        "jdk {}: {} classes compared in 3 plans, and {downgrades} of them as older class files",
        jdk.feature,
        records.len()
    );
    assert!(
        old_versions.is_empty() || downgrades > records.len(),
        "only {downgrades} classes could be made older class files"
    );
    assert!(records.len() > 10_000, "only {} classes", records.len());
    assert!(
        differences.is_empty(),
        "{} outputs differ without the shortcuts: {:?}",
        differences.len(),
        &differences[..differences.len().min(20)]
    );
}

/// `class` as a class file of version `version` (49: Java 5, 48: Java 1.4): the same class, its
/// `StackMapTable` attributes removed (the old verifier has none). None if it cannot be parsed
/// or written again.
fn downgraded(class: &[u8], version: Version) -> Option<Vec<u8>> {
    let mut cf = ristretto_classfile::ClassFile::from_bytes(class).ok()?;
    cf.version = version;
    for m in &mut cf.methods {
        for a in &mut m.attributes {
            if let Attribute::Code { attributes, .. } = a {
                attributes.retain(|x| !matches!(x, Attribute::StackMapTable { .. }));
            }
        }
    }
    let mut out = Vec::new();
    cf.to_bytes(&mut out).ok()?;
    Some(out)
}

#[test]
fn rewriter_shortcuts_change_no_byte() {
    let wanted: Vec<Jdk> = jdks().into_iter().filter(|j| j.feature == 17 || j.feature == 25).collect();
    if wanted.is_empty() {
        eprintln!("neither JDK 17 nor JDK 25 selected: skipped");
        return;
    }
    for jdk in wanted {
        shortcuts_change_nothing_on(&jdk);
    }
}

// ---------------------------------------------------------------------------------------------

/// The counting tracker, patched into java.base so that every module can reach it.
const BOOT_TRACKER: &str = "java/lang/JvmpiBciTracker";

/// Every JDK module rewritten and patched in (`--patch-module`), the JVM started under
/// `-Xverify:all`: it boots on a rewritten java.base (Object.<init> included), JDK code
/// reports its allocations, and every rewritten class — java.* included — links in its own
/// module and loader.
fn patched_jdk(jdk: &Jdk) {
    let records = jdk_classes(jdk);
    let t1 = Instant::now();
    let outcomes = instrument_all(&records, BOOT_TRACKER);
    let t_rust = t1.elapsed();
    let dir = unique_dir(&format!("patched{}", jdk.feature));
    let mut list = String::new();
    let mut modules = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    // One class outside java.base is planted broken: the run must report exactly it.
    let mut victim: Option<String> = None;
    for (r, o) in records.iter().zip(&outcomes) {
        failures.extend(o.problems.iter().map(|p| format!("{}: {p}", r.name)));
        match &o.result {
            Ok(Some(new)) => {
                let f = dir.join(&r.module).join(format!("{}.class", r.name));
                fs::create_dir_all(f.parent().unwrap()).unwrap();
                let mut bytes = new.clone();
                if victim.is_none() && r.module == "java.sql" {
                    let mut ce = ClassEditor::parse(new).unwrap();
                    if let Some(m) = (0..ce.method_count()).find(|&m| ce.method(m).unwrap().has_code) {
                        let mut ed = ce.method_editor(m).unwrap().unwrap();
                        ed.insert_before(0, &[Instruction::Pop]).unwrap();
                        ce.commit(ed).unwrap();
                        bytes = ce.to_bytes().unwrap();
                        victim = Some(r.name.clone());
                    }
                }
                fs::write(&f, bytes).unwrap();
                modules.insert(r.module.clone());
                list += &format!("{} {}\n", r.module, r.name);
            }
            Ok(None) => {}
            Err(e) => failures.push(format!("{}: {e}", r.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let victim = victim.expect("a rewritten class of java.sql");
    let t = dir.join("java.base").join(format!("{BOOT_TRACKER}.class"));
    fs::create_dir_all(t.parent().unwrap()).unwrap();
    fs::write(&t, tracker_class_counting(BOOT_TRACKER)).unwrap();
    list += &format!("java.base {BOOT_TRACKER}\n");
    let listfile = dir.join("classes.txt");
    fs::write(&listfile, &list).unwrap();
    let mut args = String::from("-Xverify:all\n-Xshare:off\n--add-modules\nALL-SYSTEM\n");
    for m in &modules {
        args += &format!("--patch-module\n{m}={}\n", dir.join(m).display());
    }
    let argfile = dir.join("args");
    fs::write(&argfile, args).unwrap();
    let t2 = Instant::now();
    let r = run_raw_timeout(
        jdk,
        &[
            format!("@{}", argfile.display()),
            "-cp".into(),
            classes().display().to_string(),
            "bci.BootCheck".into(),
            listfile.display().to_string(),
        ],
        Duration::from_secs(240),
    );
    let t_java = t2.elapsed();
    r.assert_ok();
    let summary =
        r.stdout_lines_with("summary ").first().map(|s| s.to_string()).unwrap_or_else(|| panic!("{}", r.describe()));
    eprintln!(
        "JDK {}: {} classes of {} modules patched (instrumentation {:.1?}); JVM {:.1?}: {summary}",
        jdk.feature,
        list.lines().count(),
        modules.len(),
        t_rust,
        t_java
    );
    for l in r.stdout_lines_with("OTHER ").iter().chain(&r.stdout_lines_with("other ")) {
        eprintln!("  {l}");
    }
    let number = |prefix: &str| -> i64 {
        r.stdout_lines_with(prefix).first().and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or(-1)
    };
    // 1000 `new Object()` in BootCheck (not rewritten itself): Object.<init> reported each.
    let objects = number("objects ");
    assert!((1000..1100).contains(&objects), "objects {objects}\n{}", r.describe());
    // 1000 Arrays.copyOf: java.base's newarray reported each.
    let arrays = number("arrays ");
    assert!((1000..1100).contains(&arrays), "arrays {arrays}\n{}", r.describe());
    assert!(r.stdout.contains("last-is-the-copy true"), "{}", r.describe());
    let verify = r.stdout_lines_with("VERIFY ");
    let format = r.stdout_lines_with("FORMAT ");
    assert!(
        verify.len() == 1 && verify[0].starts_with(&format!("VERIFY {victim}:")) && format.is_empty(),
        "expected only the planted {victim} to fail:\n{}\n{}",
        verify.join("\n"),
        format.join("\n")
    );
    let field = |k: &str| -> usize {
        summary.split_whitespace().find_map(|f| f.strip_prefix(&format!("{k}="))).and_then(|v| v.parse().ok()).unwrap()
    };
    assert_eq!(field("verify"), 1, "{summary}");
    assert!(field("linked") * 10 > field("classes") * 9, "{summary}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn jdk_rewritten_and_patched_in_boots_reports_and_verifies() {
    for_each_jdk(patched_jdk);
}
