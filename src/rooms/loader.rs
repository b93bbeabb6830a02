//! Loading the legacy agent: finding its library the way `-Xrun` did, `dlopen`, its
//! `JVM_OnLoad`. Not here: the `JavaVM` whose `GetEnv` answers JVMPI (its door is
//! `doors::jvmpi::get_env`, installed by `jvm::hook_get_env`).

use crate::face::abi::JvmOnLoadFn;
use crate::face::table::MAX_AGENTS;
use crate::rooms::error::RoomError;
use crate::rooms::options::Options;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jint, JavaVM};
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The loaded legacy agent.
pub struct Legacy {
    pub path: String,
    /// The `dlopen` handle (the natives room looks up the agent's `Java_…` functions in it).
    handle: usize,
    onload: usize,
    /// `None`: the agent's `JVM_OnLoad` gets `NULL` (no `:` after the library). Otherwise the
    /// options, NUL-terminated, then [`OPTIONS_TAIL`].
    options: Option<Box<[u8]>>,
}

/// The loader room's state.
struct LoaderState {
    /// The loaded legacy agents, in load order (agent n is the n-th `-agentpath` of the shim):
    /// each set once by [`load`], read by [`legacies`], [`legacy`] and [`count`].
    legacy: [OnceLock<Legacy>; MAX_AGENTS],
    /// Held by [`load`]: one agent loads at a time, so each takes the next place of `legacy`.
    loading: Mutex<()>,
}

static STATE: LoaderState = LoaderState { legacy: [const { OnceLock::new() }; MAX_AGENTS], loading: Mutex::new(()) };

fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by libdl.
    let e = unsafe { libc::dlerror() };
    jvm::c_str(e).unwrap_or_else(|| "unknown dlopen error".into())
}

/// The ELF machine of this build (`e_machine`).
#[cfg(target_arch = "x86_64")]
const HOST_MACHINE: (object::elf::Machine, &str) = (object::elf::EM_X86_64, "x86_64");
#[cfg(target_arch = "aarch64")]
const HOST_MACHINE: (object::elf::Machine, &str) = (object::elf::EM_AARCH64, "aarch64");

/// Checks that `path` is a shared object `dlopen` can map safely in this process: a 64-bit,
/// little-endian ELF of this machine, of type ET_DYN, whose program headers and loadable
/// segments lie inside the file. `dlopen` of a truncated library crashes the process (SIGBUS
/// when a segment beyond the end is touched), so anything else is refused before it.
pub fn check_elf(path: &Path) -> Result<(), RoomError> {
    use object::read::elf::{FileHeader, ProgramHeader};
    let meta = std::fs::metadata(path).map_err(|e| format!("{e}"))?;
    if meta.is_dir() {
        return Err("it is a directory, not a shared library".into());
    }
    let data = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    if data.is_empty() {
        return Err("the file is empty".into());
    }
    if data.len() < 16 || &data[..4] != b"\x7fELF" {
        return Err("not an ELF shared library".into());
    }
    match (data[4], data[5]) {
        (1, _) => return Err(format!("a 32-bit library; this JVM is a 64-bit {} process", HOST_MACHINE.1).into()),
        (2, 1) => {}
        (2, _) => return Err("a big-endian library; this machine is little-endian".into()),
        _ => return Err("an ELF file of an unknown class".into()),
    }
    let bad = |e: object::read::Error| format!("a damaged or truncated ELF file ({e})");
    let h = object::elf::FileHeader64::<object::LittleEndian>::parse(&*data).map_err(bad)?;
    let en = object::LittleEndian;
    if h.e_machine(en) != HOST_MACHINE.0 {
        return Err(
            format!("built for another machine ({:?}); this JVM runs on {}", h.e_machine(en), HOST_MACHINE.1).into()
        );
    }
    if h.e_type(en) != object::elf::ET_DYN {
        return Err(format!("not a shared library (ELF type {})", h.e_type(en)).into());
    }
    let len = data.len() as u64;
    let sh_end = h.e_shoff(en).saturating_add(u64::from(h.e_shnum(en)) * u64::from(h.e_shentsize(en)));
    if sh_end > len {
        return Err(format!(
            "a truncated ELF file: its section headers end at byte {sh_end} but the file has {len} bytes"
        )
        .into());
    }
    for ph in h.program_headers(en, &*data).map_err(bad)? {
        let (t, off, size) = (ph.p_type(en), ph.p_offset(en), ph.p_filesz(en));
        if matches!(t, object::elf::PT_LOAD | object::elf::PT_DYNAMIC)
            && off.checked_add(size).is_none_or(|end| end > len)
        {
            return Err(format!(
                "a truncated ELF file: a segment ends at byte {} but the file has {len} bytes",
                off.saturating_add(size)
            )
            .into());
        }
    }
    Ok(())
}

/// Checks the file, then `dlopen`s it.
fn dlopen(path: &str) -> Result<*mut c_void, RoomError> {
    if Path::new(path).exists() {
        check_elf(Path::new(path))?;
    }
    let c = CString::new(path).map_err(|_| format!("library path {path:?} contains a NUL byte"))?;
    // SAFETY: dlopen with a valid C string; RTLD_LAZY as the JVM used for -Xrun libraries.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY) };
    if h.is_null() {
        Err(dlerror().into())
    } else {
        Ok(h)
    }
}

/// The JDK's own library directories (`sun.boot.library.path`), searched first by `-Xrun`.
fn jdk_library_dirs() -> Vec<PathBuf> {
    jvm::system_property("sun.boot.library.path")
        .map(|p| p.split(':').filter(|s| !s.is_empty()).map(PathBuf::from).collect())
        .unwrap_or_default()
}

/// Finds and opens the agent library and its `JVM_OnLoad`, as the next agent. Errors are
/// one-line messages.
pub fn load(opts: &Options) -> Result<&'static Legacy, RoomError> {
    let _g = crate::vm::logger::lock(&STATE.loading);
    let Some(name) = &opts.agent else { return Err("no legacy agent named (agent=<path-or-name>)".into()) };
    if count() == MAX_AGENTS {
        return Err(format!("agent={name}: at most {MAX_AGENTS} legacy agents can run in one JVM").into());
    }
    let (path, handle) = if name.contains('/') {
        if !Path::new(name).exists() {
            return Err(format!("legacy agent not found: {name} does not exist").into());
        }
        let h = dlopen(name).map_err(|e| format!("cannot load legacy agent {name}: {e}"))?;
        (name.clone(), h)
    } else {
        let file = format!("lib{name}.so");
        let dirs = jdk_library_dirs();
        match dirs.iter().map(|d| d.join(&file)).find(|p| p.exists()) {
            Some(p) => {
                let p = p.to_string_lossy().into_owned();
                let h = dlopen(&p).map_err(|e| format!("cannot load legacy agent {p}: {e}"))?;
                (p, h)
            }
            None => {
                let h = dlopen(&file).map_err(|e| {
                    let looked: Vec<_> = dirs.iter().map(|d| d.display().to_string()).collect();
                    format!(
                        "legacy agent `{name}` not found: looked for {file} in the JDK library directory ({}) \
                         and on the system library path (LD_LIBRARY_PATH, ld.so.cache): {e}",
                        looked.join(":")
                    )
                })?;
                (file, h)
            }
        }
    };
    // SAFETY: dlsym on a handle dlopen returned, with a NUL-terminated symbol name.
    let sym = unsafe { libc::dlsym(handle, c"JVM_OnLoad".as_ptr()) };
    if sym.is_null() {
        return Err(format!(
            "legacy agent {path} exports no JVM_OnLoad (is it a JVMPI agent? is the symbol exported?)"
        )
        .into());
    }
    // `agent=` naming the shim: dlopen hands back the shim itself, whose JVM_OnLoad would start a
    // second emulation on top of the first.
    if in_the_shim(sym) {
        return Err(
            format!("legacy agent {path} is jvmpi-shim itself: agent= must name the JVMPI agent's library").into()
        );
    }
    // The same library twice is one instance (dlopen counts references): its globals — its
    // interface pointer, its NotifyEvent's state — cannot serve two agents.
    if let Some(other) = legacies().into_iter().find(|l| l.handle == handle as usize) {
        return Err(format!(
            "legacy agent {path} is loaded already (as {}): one library is one agent instance; \
             to run it twice, load a copy under another file name",
            other.path
        )
        .into());
    }
    let options = match &opts.agent_options {
        Some(o) => {
            let c = CString::new(o.clone()).map_err(|_| "the agent's options contain a NUL byte".to_string())?;
            Some([c.as_bytes_with_nul(), OPTIONS_TAIL].concat().into_boxed_slice())
        }
        None => None,
    };
    Ok(STATE.legacy[count()].get_or_init(|| Legacy { path, handle: handle as usize, onload: sym as usize, options }))
}

/// How many legacy agents are loaded.
pub fn count() -> usize {
    STATE.legacy.iter().take_while(|l| l.get().is_some()).count()
}

/// The loaded legacy agents, in load order.
pub fn legacies() -> Vec<&'static Legacy> {
    STATE.legacy.iter().map_while(|l| l.get()).collect()
}

impl Legacy {
    /// The agent library's `dlopen` handle; it is never closed.
    pub fn handle(&self) -> *mut c_void {
        self.handle as *mut c_void
    }
}

/// The first legacy agent.
pub fn legacy() -> Option<&'static Legacy> {
    STATE.legacy[0].get()
}

/// What follows the NUL of the options string the agent gets: a blank, then NUL. Option
/// parsers of the era skipped to the next `,` or blank without looking for the NUL (NiagaraST's
/// `goToNextOption`); past the last option they read whatever followed — on HotSpot 1.5 the
/// rest of the command line — and, on garbage with a comma in it, refused their own options.
const OPTIONS_TAIL: &[u8] = b" \0";
/// Whether `p` lies in the shim's own library (the one this function is in).
fn in_the_shim(p: *const c_void) -> bool {
    let base = |a: *const c_void| {
        // SAFETY: dladdr only reads the loader's tables; `info` is a valid out-pointer.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let found = unsafe { libc::dladdr(a, &mut info) } != 0;
        found.then_some(info.dli_fbase as usize)
    };
    let own = base(in_the_shim as *const c_void);
    own.is_some() && base(p) == own
}

/// Whether address `p` lies in the library of a loaded legacy agent.
pub fn lies_in_an_agent(p: *const c_void) -> bool {
    let base = file_base(p);
    base.is_some() && legacies().iter().any(|l| file_base(l.onload as *const c_void) == base)
}

/// The load address of the shared object `p` lies in.
fn file_base(a: *const c_void) -> Option<usize> {
    // SAFETY: dladdr only reads the loader's tables; `info` is a valid out-pointer.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let found = unsafe { libc::dladdr(a, &mut info) } != 0;
    found.then_some(info.dli_fbase as usize)
}

/// Calls the legacy `JVM_OnLoad(vm, options, NULL)` and returns its result.
pub fn call_onload(leg: &Legacy, vm: *mut JavaVM) -> jint {
    // SAFETY: `onload` is the agent's exported JVM_OnLoad, whose C signature is fixed by JVMPI.
    let f: JvmOnLoadFn = unsafe { std::mem::transmute::<usize, JvmOnLoadFn>(leg.onload) };
    // The agent may keep the pointer (old agents did): the options string lives forever.
    let opts = leg.options.as_ref().map_or(std::ptr::null_mut(), |o| o.as_ptr() as *mut c_char);
    let shown = leg.options.as_ref().and_then(|o| CStr::from_bytes_until_nul(o).ok());
    log::info!("calling JVM_OnLoad of {} with options {:?}", leg.path, shown);
    // SAFETY: calling the agent's entry point as the JVM would have.
    unsafe { f(vm, opts, std::ptr::null_mut()) }
}

/// Reads the raw `-agentpath` options string.
pub fn option_bytes(options: *const c_char) -> Option<Vec<u8>> {
    // SAFETY: the JVM passes NULL or a NUL-terminated options string.
    (!options.is_null()).then(|| unsafe { CStr::from_ptr(options) }.to_bytes().to_vec())
}
