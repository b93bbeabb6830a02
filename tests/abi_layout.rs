//! ABI checks for `shim/jvmpi.h`, the drop-in replacement of the original `jvmpi.h`.
//!
//! * `tests/abi/layout.c` prints the size, alignment and member offsets of every JVMPI structure
//!   and the value of every constant; the output must match `tests/abi/expected-offsets.txt`
//!   (sizes/offsets measured on the original header, x86_64) and
//!   `tests/abi/expected-constants.txt` (the original constant values) line for line.
//! * `tests/abi/compat_agent.c`, an agent-shaped translation unit, must compile with warnings as
//!   errors as C89/C99/C11 and as C++98/C++11/C++17.
//! * The header must not declare `JVM_OnLoad`.
//!
//! Needs a C compiler (`cc`, or `$CC`) and a JDK with `include/jni.h` (`$JAVA_HOME`, else the
//! JDK of the `javac` on `PATH`); the C++ checks use `g++` (or `$CXX`) and are skipped with a
//! warning when no C++ compiler is installed.
//!
//! Run with `cargo test --test abi_layout`.

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi_layout");
    fs::create_dir_all(&dir).expect("create work dir");
    dir
}

fn c_compiler() -> String {
    env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

fn cxx_compiler() -> String {
    env::var("CXX").unwrap_or_else(|_| "g++".to_string())
}

/// Whether the C++ compiler can be run at all. Machines with only a C compiler skip the C++
/// checks with a warning (a C++ compiler that runs but rejects the header still fails).
fn cxx_available() -> bool {
    let cxx = cxx_compiler();
    let ok = Command::new(&cxx).arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        eprintln!("warning: C++ compiler `{cxx}` not available; skipping the C++ checks");
    }
    ok
}

/// The JDK's `include` directory: `$JAVA_HOME/include`, else `<javac's JDK>/include`, where
/// javac's JDK is `readlink -f $(which javac)` without the trailing `/bin/javac`.
fn jdk_include() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let mut tried = Vec::new();
        if let Some(home) = env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
            let inc = PathBuf::from(home).join("include");
            if inc.join("jni.h").is_file() {
                return inc;
            }
            tried.push(inc);
        }
        let javac =
            env::var_os("PATH").and_then(|path| env::split_paths(&path).map(|d| d.join("javac")).find(|p| p.is_file()));
        if let Some(javac) = javac {
            let real = fs::canonicalize(&javac).unwrap_or(javac);
            if let Some(home) = real.parent().and_then(Path::parent) {
                let inc = home.join("include");
                if inc.join("jni.h").is_file() {
                    return inc;
                }
                tried.push(inc);
            }
        }
        panic!(
            "no JDK include directory with jni.h found (tried {tried:?}); \
             set JAVA_HOME or put a JDK's javac on PATH"
        );
    })
}

fn include_args() -> Vec<String> {
    let inc = jdk_include();
    vec![
        format!("-I{}", repo_root().join("shim").display()),
        format!("-I{}", inc.display()),
        format!("-I{}", inc.join("linux").display()),
    ]
}

/// Runs a command, panicking with its output if it cannot be started or fails.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("output is UTF-8")
}

/// Builds and runs `tests/abi/layout.c` once; returns its output.
fn layout_output() -> &'static str {
    static OUT: OnceLock<String> = OnceLock::new();
    OUT.get_or_init(|| {
        let exe = work_dir().join("layout");
        run(Command::new(c_compiler())
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
            .args(include_args())
            .arg(repo_root().join("tests/abi/layout.c"))
            .arg("-o")
            .arg(&exe));
        run(&mut Command::new(&exe))
    })
}

fn read_expected(name: &str) -> String {
    let path = repo_root().join("tests/abi").join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The part of a line that names what it measures: `offset JVMPI_Event.u = 16` → `offset
/// JVMPI_Event.u`, `JVMPI_FAIL=-1` → `JVMPI_FAIL`.
fn key_of(line: &str) -> &str {
    line.split(" = ").next().unwrap().split('=').next().unwrap()
}

/// Compares `actual` lines with `expected` lines by key; returns one message per difference.
fn compare(expected: &[&str], actual: &[&str]) -> Vec<String> {
    let actual_by_key: BTreeMap<&str, &str> = actual.iter().map(|l| (key_of(l), *l)).collect();
    let expected_keys: BTreeMap<&str, &str> = expected.iter().map(|l| (key_of(l), *l)).collect();
    let mut problems = Vec::new();
    for want in expected {
        match actual_by_key.get(key_of(want)) {
            None => problems.push(format!("missing:    {want}")),
            Some(got) if got != want => problems.push(format!("expected:   {want}\n    actual: {got}")),
            Some(_) => {}
        }
    }
    for got in actual {
        if !expected_keys.contains_key(key_of(got)) {
            problems.push(format!("unexpected: {got}"));
        }
    }
    problems
}

fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}: {} difference(s):\n  {}", problems.len(), problems.join("\n  "));
}

#[test]
fn c_layout_matches_original() {
    let expected = read_expected("expected-offsets.txt");
    let expected: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
    let actual: Vec<&str> =
        layout_output().lines().filter(|l| l.starts_with("sizeof ") || l.starts_with("offset ")).collect();
    assert!(expected.len() > 100, "expected-offsets.txt looks truncated");
    assert_no_problems("layout of shim/jvmpi.h", &compare(&expected, &actual));
}

#[test]
fn c_constants_match_original() {
    let expected = read_expected("expected-constants.txt");
    let expected: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
    let actual: Vec<&str> = layout_output().lines().filter_map(|l| l.strip_prefix("const ")).collect();
    assert!(expected.len() > 80, "expected-constants.txt looks truncated");
    assert_no_problems("constants of shim/jvmpi.h", &compare(&expected, &actual));
}

#[test]
fn header_compiles_as_c_and_cxx() {
    let src = repo_root().join("tests/abi/compat_agent.c");
    let obj = work_dir().join("compat_agent.o");
    for std in ["c89", "c99", "c11"] {
        run(Command::new(c_compiler())
            .args(["-x", "c", &format!("-std={std}")])
            .args(["-Wall", "-Wextra", "-Werror", "-pedantic"])
            .args(include_args())
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(&obj));
    }
    if !cxx_available() {
        return;
    }
    for std in ["c++98", "c++11", "c++17"] {
        run(Command::new(cxx_compiler())
            .args(["-x", "c++", &format!("-std={std}")])
            .args(["-Wall", "-Wextra", "-Werror", "-pedantic"])
            .args(include_args())
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(&obj));
    }
}

#[test]
fn header_does_not_declare_jvm_onload() {
    // Agents define JVM_OnLoad themselves, with varying spellings of the same signature; a
    // prototype in the header would conflict with some of them.
    let header = repo_root().join("shim/jvmpi.h");
    let mut compilers = vec![(c_compiler(), "c")];
    if cxx_available() {
        compilers.push((cxx_compiler(), "c++"));
    }
    for (compiler, lang) in compilers {
        let pre = run(Command::new(compiler).args(["-E", "-P", "-x", lang]).args(include_args()).arg(&header));
        assert!(!pre.contains("JVM_OnLoad"), "shim/jvmpi.h declares JVM_OnLoad when preprocessed as {lang}");
        assert!(pre.contains("JVMPI_Interface"), "preprocessing as {lang} lost the header");
    }
}

/// The expected files are copies of `../shared/reference/` (beside the repository in CI);
/// when that directory exists, the copies must not have drifted from it.
#[test]
fn expected_files_match_shared_reference() {
    let reference = repo_root().join("../shared/reference");
    if !reference.is_dir() {
        eprintln!("{} not found; skipping the comparison", reference.display());
        return;
    }
    for (copy, original) in
        [("expected-offsets.txt", "jvmpi-abi-lp64-offsets.txt"), ("expected-constants.txt", "jvmpi-constants.txt")]
    {
        let original = reference.join(original);
        if let Ok(text) = fs::read_to_string(&original) {
            assert_eq!(read_expected(copy), text, "tests/abi/{copy} differs from {}", original.display());
        }
    }
}

/// The Rust mirror (`src/face/abi.rs`) against the same facts: every `sizeof`/`offset` line of
/// `tests/abi/expected-offsets.txt` is regenerated from `size_of`/`align_of`/`offset_of!` of the
/// Rust types, and every constant of `expected-constants.txt` from the Rust constants.
#[test]
fn rust_mirror_structs_match_c_layout() {
    use jvmpi_shim::abi::*;
    use std::mem::{align_of, offset_of, size_of};
    let mut lines: Vec<String> = Vec::new();
    macro_rules! sizeof {
        ($t:ident) => {
            lines.push(format!("sizeof {} = {} (align {})", stringify!($t), size_of::<$t>(), align_of::<$t>()))
        };
    }
    macro_rules! fields {
        ($prefix:expr, $base:expr, $t:ty, [$($f:ident),*]) => {
            $( lines.push(format!("offset {}.{} = {}", $prefix, stringify!($f), $base + offset_of!($t, $f))); )*
        };
    }
    sizeof!(JVMPI_CallFrame);
    fields!("JVMPI_CallFrame", 0, JVMPI_CallFrame, [lineno, method_id]);
    sizeof!(JVMPI_CallTrace);
    fields!("JVMPI_CallTrace", 0, JVMPI_CallTrace, [env_id, num_frames, frames]);
    sizeof!(JVMPI_Method);
    fields!("JVMPI_Method", 0, JVMPI_Method, [method_name, method_signature, start_lineno, end_lineno, method_id]);
    sizeof!(JVMPI_Field);
    fields!("JVMPI_Field", 0, JVMPI_Field, [field_name, field_signature]);
    sizeof!(JVMPI_Lineno);
    fields!("JVMPI_Lineno", 0, JVMPI_Lineno, [offset, lineno]);
    sizeof!(JVMPI_HeapDumpArg);
    sizeof!(JVMPI_Event);
    fields!("JVMPI_Event", 0, JVMPI_Event, [event_type, env_id, u]);
    let u = offset_of!(JVMPI_Event, u);
    macro_rules! member {
        ($m:ident, $t:ty, [$($f:ident),*]) => {
            lines.push(format!("offset JVMPI_Event.u.{} = {} size {}", stringify!($m), u + offset_of!(EventData, $m), size_of::<$t>()));
            fields!(concat!("JVMPI_Event.u.", stringify!($m)), u + offset_of!(EventData, $m), $t, [$($f),*]);
        };
    }
    member!(
        class_load,
        ClassLoad,
        [
            class_name,
            source_name,
            num_interfaces,
            num_methods,
            methods,
            num_static_fields,
            statics,
            num_instance_fields,
            instances,
            class_id
        ]
    );
    member!(class_unload, ClassUnload, [class_id]);
    member!(class_load_hook, ClassLoadHook, [class_data, class_data_len, new_class_data, new_class_data_len, malloc_f]);
    member!(obj_alloc, ObjAlloc, [arena_id, class_id, is_array, size, obj_id]);
    member!(obj_free, ObjFree, [obj_id]);
    member!(obj_move, ObjMove, [arena_id, obj_id, new_arena_id, new_obj_id]);
    member!(new_arena, NewArena, [arena_id, arena_name]);
    member!(delete_arena, DeleteArena, [arena_id]);
    member!(thread_start, ThreadStart, [thread_name, group_name, parent_name, thread_id, thread_env_id]);
    member!(heap_dump, HeapDump, [dump_level, begin, end, num_traces, traces]);
    member!(jni_globalref_alloc, JniGlobalrefAlloc, [obj_id, ref_id]);
    member!(jni_globalref_free, JniGlobalrefFree, [ref_id]);
    member!(method, Method, [method_id]);
    member!(method_entry2, MethodEntry2, [method_id, obj_id]);
    member!(
        compiled_method_load,
        CompiledMethodLoad,
        [method_id, code_addr, code_size, lineno_table_size, lineno_table]
    );
    member!(compiled_method_unload, CompiledMethodUnload, [method_id]);
    member!(instruction, Instruction, [method_id, offset]);
    let iu = u + offset_of!(EventData, instruction) + offset_of!(Instruction, u);
    fields!("JVMPI_Event.u.instruction.u.if_info", iu + offset_of!(InstructionInfo, if_info), IfInfo, [is_true]);
    fields!(
        "JVMPI_Event.u.instruction.u.tableswitch_info",
        iu + offset_of!(InstructionInfo, tableswitch_info),
        TableswitchInfo,
        [key, low, hi]
    );
    fields!(
        "JVMPI_Event.u.instruction.u.lookupswitch_info",
        iu + offset_of!(InstructionInfo, lookupswitch_info),
        LookupswitchInfo,
        [chosen_pair_index]
    );
    member!(monitor_dump, MonitorDump, [begin, end, num_traces, traces, threads_status]);
    member!(raw_monitor, RawMonitorInfo, [name, id]);
    member!(monitor, Monitor, [object]);
    member!(monitor_wait, MonitorWait, [object, timeout]);
    member!(gc_info, GcInfo, [used_objects, used_object_space, total_object_space]);
    member!(object_dump, ObjectDump, [data_len, data]);
    sizeof!(JVMPI_Interface);
    fields!(
        "JVMPI_Interface",
        0,
        JVMPI_Interface,
        [
            version,
            NotifyEvent,
            EnableEvent,
            DisableEvent,
            RequestEvent,
            GetCallTrace,
            ProfilerExit,
            RawMonitorCreate,
            RawMonitorEnter,
            RawMonitorExit,
            RawMonitorWait,
            RawMonitorNotifyAll,
            RawMonitorDestroy,
            GetCurrentThreadCpuTime,
            SuspendThread,
            ResumeThread,
            GetThreadStatus,
            ThreadHasRun,
            CreateSystemThread,
            SetThreadLocalStorage,
            GetThreadLocalStorage,
            DisableGC,
            EnableGC,
            RunGC,
            GetThreadObject,
            GetMethodClass,
            jobjectID2jobject,
            jobject2jobjectID,
            SuspendThreadList,
            ResumeThreadList
        ]
    );

    let expected = read_expected("expected-offsets.txt");
    let expected: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
    // The C file gives `sizeof X = n (align a)` for structs; the reference lists only some aligns.
    let actual: Vec<String> = lines
        .iter()
        .map(|l| {
            let key = key_of(l);
            match expected.iter().find(|e| key_of(e) == key) {
                Some(e) if !e.contains("(align") => l.split(" (align").next().unwrap().to_string(),
                _ => l.clone(),
            }
        })
        .collect();
    let actual_refs: Vec<&str> = actual.iter().map(String::as_str).collect();
    let problems: Vec<String> =
        compare(&expected, &actual_refs).into_iter().filter(|p| !p.starts_with("extra")).collect();
    assert!(problems.is_empty(), "src/face/abi.rs differs from the original layout:\n{}", problems.join("\n"));

    let constants = read_expected("expected-constants.txt");
    let rust: BTreeMap<&str, i64> = [
        ("JVMPI_VERSION_1", JVMPI_VERSION_1 as i64),
        ("JVMPI_VERSION_1_1", JVMPI_VERSION_1_1 as i64),
        ("JVMPI_VERSION_1_2", JVMPI_VERSION_1_2 as i64),
        ("JVMPI_SUCCESS", JVMPI_SUCCESS as i64),
        ("JVMPI_NOT_AVAILABLE", JVMPI_NOT_AVAILABLE as i64),
        ("JVMPI_FAIL", JVMPI_FAIL as i64),
        ("JVMPI_REQUESTED_EVENT", JVMPI_REQUESTED_EVENT as i64),
        ("JVMPI_THREAD_RUNNABLE", JVMPI_THREAD_RUNNABLE as i64),
        ("JVMPI_THREAD_MONITOR_WAIT", JVMPI_THREAD_MONITOR_WAIT as i64),
        ("JVMPI_THREAD_CONDVAR_WAIT", JVMPI_THREAD_CONDVAR_WAIT as i64),
        ("JVMPI_THREAD_SUSPENDED", JVMPI_THREAD_SUSPENDED as i64),
        ("JVMPI_THREAD_INTERRUPTED", JVMPI_THREAD_INTERRUPTED as i64),
        ("JVMPI_MINIMUM_PRIORITY", JVMPI_MINIMUM_PRIORITY as i64),
        ("JVMPI_NORMAL_PRIORITY", JVMPI_NORMAL_PRIORITY as i64),
        ("JVMPI_MAXIMUM_PRIORITY", JVMPI_MAXIMUM_PRIORITY as i64),
        ("JVMPI_NORMAL_OBJECT", JVMPI_NORMAL_OBJECT as i64),
        ("JVMPI_CLASS", JVMPI_CLASS as i64),
        ("JVMPI_BOOLEAN", JVMPI_BOOLEAN as i64),
        ("JVMPI_CHAR", JVMPI_CHAR as i64),
        ("JVMPI_FLOAT", JVMPI_FLOAT as i64),
        ("JVMPI_DOUBLE", JVMPI_DOUBLE as i64),
        ("JVMPI_BYTE", JVMPI_BYTE as i64),
        ("JVMPI_SHORT", JVMPI_SHORT as i64),
        ("JVMPI_INT", JVMPI_INT as i64),
        ("JVMPI_LONG", JVMPI_LONG as i64),
        ("JVMPI_EVENT_METHOD_ENTRY", JVMPI_EVENT_METHOD_ENTRY as i64),
        ("JVMPI_EVENT_METHOD_ENTRY2", JVMPI_EVENT_METHOD_ENTRY2 as i64),
        ("JVMPI_EVENT_METHOD_EXIT", JVMPI_EVENT_METHOD_EXIT as i64),
        ("JVMPI_EVENT_OBJECT_ALLOC", JVMPI_EVENT_OBJECT_ALLOC as i64),
        ("JVMPI_EVENT_OBJECT_FREE", JVMPI_EVENT_OBJECT_FREE as i64),
        ("JVMPI_EVENT_OBJECT_MOVE", JVMPI_EVENT_OBJECT_MOVE as i64),
        ("JVMPI_EVENT_COMPILED_METHOD_LOAD", JVMPI_EVENT_COMPILED_METHOD_LOAD as i64),
        ("JVMPI_EVENT_COMPILED_METHOD_UNLOAD", JVMPI_EVENT_COMPILED_METHOD_UNLOAD as i64),
        ("JVMPI_EVENT_INSTRUCTION_START", JVMPI_EVENT_INSTRUCTION_START as i64),
        ("JVMPI_EVENT_THREAD_START", JVMPI_EVENT_THREAD_START as i64),
        ("JVMPI_EVENT_THREAD_END", JVMPI_EVENT_THREAD_END as i64),
        ("JVMPI_EVENT_CLASS_LOAD_HOOK", JVMPI_EVENT_CLASS_LOAD_HOOK as i64),
        ("JVMPI_EVENT_HEAP_DUMP", JVMPI_EVENT_HEAP_DUMP as i64),
        ("JVMPI_EVENT_JNI_GLOBALREF_ALLOC", JVMPI_EVENT_JNI_GLOBALREF_ALLOC as i64),
        ("JVMPI_EVENT_JNI_GLOBALREF_FREE", JVMPI_EVENT_JNI_GLOBALREF_FREE as i64),
        ("JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC", JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC as i64),
        ("JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE", JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE as i64),
        ("JVMPI_EVENT_CLASS_LOAD", JVMPI_EVENT_CLASS_LOAD as i64),
        ("JVMPI_EVENT_CLASS_UNLOAD", JVMPI_EVENT_CLASS_UNLOAD as i64),
        ("JVMPI_EVENT_DATA_DUMP_REQUEST", JVMPI_EVENT_DATA_DUMP_REQUEST as i64),
        ("JVMPI_EVENT_DATA_RESET_REQUEST", JVMPI_EVENT_DATA_RESET_REQUEST as i64),
        ("JVMPI_EVENT_JVM_INIT_DONE", JVMPI_EVENT_JVM_INIT_DONE as i64),
        ("JVMPI_EVENT_JVM_SHUT_DOWN", JVMPI_EVENT_JVM_SHUT_DOWN as i64),
        ("JVMPI_EVENT_ARENA_NEW", JVMPI_EVENT_ARENA_NEW as i64),
        ("JVMPI_EVENT_ARENA_DELETE", JVMPI_EVENT_ARENA_DELETE as i64),
        ("JVMPI_EVENT_OBJECT_DUMP", JVMPI_EVENT_OBJECT_DUMP as i64),
        ("JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER", JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER as i64),
        ("JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED", JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED as i64),
        ("JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT", JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT as i64),
        ("JVMPI_EVENT_MONITOR_CONTENDED_ENTER", JVMPI_EVENT_MONITOR_CONTENDED_ENTER as i64),
        ("JVMPI_EVENT_MONITOR_CONTENDED_ENTERED", JVMPI_EVENT_MONITOR_CONTENDED_ENTERED as i64),
        ("JVMPI_EVENT_MONITOR_CONTENDED_EXIT", JVMPI_EVENT_MONITOR_CONTENDED_EXIT as i64),
        ("JVMPI_EVENT_MONITOR_WAIT", JVMPI_EVENT_MONITOR_WAIT as i64),
        ("JVMPI_EVENT_MONITOR_WAITED", JVMPI_EVENT_MONITOR_WAITED as i64),
        ("JVMPI_EVENT_MONITOR_DUMP", JVMPI_EVENT_MONITOR_DUMP as i64),
        ("JVMPI_EVENT_GC_START", JVMPI_EVENT_GC_START as i64),
        ("JVMPI_EVENT_GC_FINISH", JVMPI_EVENT_GC_FINISH as i64),
        ("JVMPI_MAX_EVENT_TYPE_VAL", JVMPI_MAX_EVENT_TYPE_VAL as i64),
    ]
    .into_iter()
    .collect();
    let mut checked = 0;
    for line in constants.lines().filter(|l| !l.trim().is_empty()) {
        let (name, value) = line.split_once('=').unwrap();
        if let Some(&v) = rust.get(name) {
            assert_eq!(v, value.trim().parse::<i64>().unwrap(), "{name} in src/face/abi.rs");
            checked += 1;
        }
    }
    assert_eq!(checked, rust.len(), "every Rust constant is in the reference list");
}
