//! JNI native methods that live in the legacy agent's library.
//!
//! HotSpot looked for the `Java_…` function of a native method in the class loader's own
//! libraries and then, with `dlsym`, in every agent library (`-Xrun`, `-agentlib`,
//! `-agentpath`; `NativeLookup::lookup_style`). Old tools relied on that: a Java helper class
//! declares `native` methods, the agent library exports them, and nobody calls
//! `System.loadLibrary`. Through the shim the JVM searches the shim's library, not the agent the
//! shim `dlopen`ed, so the shim does that part of the lookup itself:
//!
//! - when the event gate opens (the legacy `JVM_OnLoad` has returned), [`start`] reads the names
//!   the agent exports (its ELF `.dynsym`) and keeps the `Java_…` ones. None: nothing else
//!   happens, ever.
//! - otherwise the native methods of every class prepared from then on (JVMTI ClassPrepare) and
//!   of every class already prepared (the catch-up) are looked up as HotSpot does — the JNI short
//!   name first, then the long name, `dlsym` on the agent's handle — and those found are bound
//!   with `RegisterNatives`. A class is looked at only if some exported name starts with
//!   `Java_<its mangled name>_`.
//!
//! One difference: HotSpot looked in agent libraries only after the class loader's libraries.
//! Binding happens when the class is prepared, before any of its methods runs, so for a name
//! the agent exports the agent's function wins over one in a library the class loads itself
//! with `System.loadLibrary`.

use crate::rooms::error::RoomError;
use crate::rooms::{classes, loader};
use crate::vm::jvm;
use jvmti_bindings::mutf8;
use jvmti_bindings::sys::jni::{jclass, jmethodID, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::ffi::{c_void, CString};
use std::fmt::Write;
use std::sync::OnceLock;

/// The agent library, once it is known to export `Java_…` functions.
struct Agent {
    handle: usize,
    path: String,
    /// The exported `Java_…` names, sorted.
    symbols: Vec<String>,
}

/// The natives room's state: the agent library and its `Java_…` names, set once by [`start`]
/// when the gate opens (if it exports any), read as classes prepare.
static AGENT: OnceLock<Agent> = OnceLock::new();

// ---- JNI names (JNI specification, "Resolving Native Method Names") ---------------------------

/// Appends the JNI escape of `s` to `out`: A-Z a-z 0-9 unchanged, `/` → `_`, `_` → `_1`,
/// `;` → `_2`, `[` → `_3`, any other UTF-16 code unit → `_0xxxx` (lower-case hex). Returns false
/// — the name cannot be linked — when a `0`–`3` of `s` would follow an underscore in the result
/// (at the start of `s` or after a `/`): names that do not come from Java source, which the
/// specification and HotSpot (on every JDK the shim supports) refuse to map.
fn escape(s: &str, out: &mut String) -> bool {
    let mut after_underscore = true;
    for u in s.encode_utf16() {
        let c = char::from_u32(u32::from(u)).filter(char::is_ascii);
        match c {
            Some('0'..='3') if after_underscore => return false,
            Some(c) if c.is_ascii_alphanumeric() => out.push(c),
            Some('/') => out.push('_'),
            Some('_') => out.push_str("_1"),
            Some(';') => out.push_str("_2"),
            Some('[') => out.push_str("_3"),
            _ => {
                let _ = write!(out, "_0{u:04x}");
            }
        }
        after_underscore = c == Some('/');
    }
    true
}

/// `Java_<class>_`, the start of every JNI name of a method of `class` (internal form,
/// `java/lang/Object`); `None` if the class name cannot be linked.
pub fn class_prefix(class: &str) -> Option<String> {
    let mut s = String::from("Java_");
    escape(class, &mut s).then(|| {
        s.push('_');
        s
    })
}

/// The short JNI name `Java_<class>_<method>`.
pub fn short_name(class: &str, method: &str) -> Option<String> {
    let mut s = class_prefix(class)?;
    escape(method, &mut s).then_some(s)
}

/// The long JNI name `Java_<class>_<method>__<argument descriptor>`, from the method's
/// signature `(<arguments>)<return type>`.
pub fn long_name(class: &str, method: &str, signature: &str) -> Option<String> {
    let mut s = short_name(class, method)?;
    let args = signature.strip_prefix('(')?;
    let args = &args[..args.find(')').unwrap_or(args.len())];
    s.push_str("__");
    escape(args, &mut s).then_some(s)
}

// ---- the agent's exported names -------------------------------------------------------------

/// The `Java_…` functions an ELF shared object exports (its `.dynsym` definitions), sorted.
pub fn java_symbols(elf: &[u8]) -> Result<Vec<String>, RoomError> {
    use object::{Object, ObjectSymbol};
    let file = object::File::parse(elf).map_err(|e| e.to_string())?;
    let mut names: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| !s.is_undefined() && s.is_global())
        .filter_map(|s| s.name().ok())
        .filter(|n| n.starts_with("Java_"))
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Whether some name of the sorted `symbols` starts with `prefix`.
fn any_starts_with(symbols: &[String], prefix: &str) -> bool {
    let i = symbols.partition_point(|s| s.as_str() < prefix);
    symbols.get(i).is_some_and(|s| s.starts_with(prefix))
}

/// The file the library behind `handle` was loaded from (its `JVM_OnLoad`'s object).
fn library_file(handle: *mut c_void) -> Option<String> {
    // SAFETY: dlsym on a handle dlopen returned (never closed), with a NUL-terminated name.
    let sym = unsafe { libc::dlsym(handle, c"JVM_OnLoad".as_ptr()) };
    if sym.is_null() {
        return None;
    }
    // SAFETY: an all-zero Dl_info is a valid value of the plain C struct dladdr fills in.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr with an address inside a loaded object and a valid out-pointer.
    let found = unsafe { libc::dladdr(sym, &mut info) } != 0;
    (found && !info.dli_fname.is_null()).then(|| jvm::c_str(info.dli_fname)).flatten()
}

// ---- binding ----------------------------------------------------------------------------------

impl Agent {
    /// The agent's function of that name (`dlsym` on its handle, as HotSpot's lookup did).
    fn lookup(&self, name: &str) -> Option<*mut c_void> {
        let c = CString::new(name).ok()?;
        // SAFETY: dlsym on the agent's handle (never closed) with a NUL-terminated name.
        let f = unsafe { libc::dlsym(self.handle as *mut c_void, c.as_ptr()) };
        (!f.is_null()).then_some(f)
    }

    /// Binds the native methods of class `k` that the agent implements. `early`: the class was
    /// prepared before the agent's `JVM_OnLoad` returned (the catch-up).
    fn bind(&self, env: *mut JNIEnv, k: jclass, early: bool) {
        let Ok(sig) = jvm::class_signature(k) else { return };
        let Some(class) = sig.strip_prefix('L').and_then(|s| s.strip_suffix(';')) else { return };
        let Some(prefix) = class_prefix(class) else { return };
        if !any_starts_with(&self.symbols, &prefix) {
            return;
        }
        let methods = match jvm::class_methods(k) {
            Ok(m) => m,
            Err(e) => {
                log::debug!("natives of {}: {}", classes::jvmpi_name(&sig), jvm::err_name(e));
                return;
            }
        };
        let found: Vec<_> = methods.into_iter().filter_map(|m| self.implementation(class, m)).collect();
        if found.is_empty() {
            return;
        }
        let list = found
            .iter()
            .map(|(n, s, sym, _)| format!("{}{s} → {sym}", n.strip_prefix(crate::vm::bci::NATIVE_PREFIX).unwrap_or(n)))
            .collect::<Vec<_>>()
            .join(", ");
        let natives: Vec<(CString, CString, *mut c_void)> =
            found.iter().map(|(n, s, _, f)| (mutf8::encode_cstring(n), mutf8::encode_cstring(s), *f)).collect();
        let name = classes::jvmpi_name(&sig);
        match jvm::Jni::of(env).register_natives_named(k, &natives) {
            Ok(()) => log::info!(
                "bound {} native method{} of {name} {}to functions of {}: {list}",
                found.len(),
                if found.len() == 1 { "" } else { "s" },
                if early { "(already prepared when the agent's JVM_OnLoad returned) " } else { "" },
                self.path
            ),
            Err(e) => log::warn!("native methods of {name} not bound to functions of {}: {e} ({list})", self.path),
        }
    }

    /// (name, signature, JNI name, function) of `m` if it is native and the agent implements
    /// it: the short name is looked up first, then the long one.
    fn implementation(&self, class: &str, m: jmethodID) -> Option<(String, String, String, *mut c_void)> {
        if !jvm::is_native(m).unwrap_or(false) {
            return None;
        }
        let (name, sig) = jvm::method_name(m).ok()?;
        // A native the shim wrapped (renamed with the prefix) is implemented under its own name.
        let own = name.strip_prefix(crate::vm::bci::NATIVE_PREFIX).unwrap_or(&name);
        let short = short_name(class, own)?;
        let (sym, f) = match self.lookup(&short) {
            Some(f) => (short, f),
            None => {
                let long = long_name(class, own, &sig)?;
                let f = self.lookup(&long)?;
                (long, f)
            }
        };
        Some((name, sig, sym, f))
    }
}

/// When the event gate opens: reads the agent's `Java_…` names and, if it has any, binds the
/// classes prepared so far and asks for ClassPrepare to bind the rest. `env` is the current
/// thread's.
pub fn start(env: *mut JNIEnv) {
    let Some(leg) = loader::legacy() else { return };
    if AGENT.get().is_some() {
        return;
    }
    let handle = leg.handle();
    let path = library_file(handle).unwrap_or_else(|| leg.path.clone());
    let symbols = match std::fs::read(&path).map_err(|e| RoomError::Msg(e.to_string())).and_then(|b| java_symbols(&b)) {
        Ok(s) => s,
        Err(e) => {
            log::warn!(
                "cannot read the exported functions of {path}: {e}; JNI natives it implements will not be found"
            );
            return;
        }
    };
    if symbols.is_empty() {
        log::debug!("{path} exports no JNI native functions (Java_…)");
        return;
    }
    log::info!(
        "{path} exports {} JNI native function{} (Java_…): they are bound as their classes are prepared",
        symbols.len(),
        if symbols.len() == 1 { "" } else { "s" }
    );
    let agent = AGENT.get_or_init(|| Agent { handle: handle as usize, path, symbols });
    // ClassPrepare first, then the list of loaded classes: no class falls between the two.
    if let Err(e) = jvm::want(jvmti::JVMTI_EVENT_CLASS_PREPARE) {
        log::warn!(
            "JVMTI ClassPrepare: {}; JNI natives of classes loaded from now on will not be bound",
            jvm::err_name(e)
        );
    }
    let began = std::time::Instant::now();
    let Ok(all) = jvm::loaded_classes() else { return };
    let (jni, n) = (jvm::Jni::of(env), all.len());
    for k in all {
        let prepared = jvm::class_status(k).is_ok_and(|s| {
            s & jvmti::JVMTI_CLASS_STATUS_PREPARED != 0
                && s & (jvmti::JVMTI_CLASS_STATUS_ARRAY | jvmti::JVMTI_CLASS_STATUS_PRIMITIVE) == 0
        });
        if prepared {
            agent.bind(env, k, true);
        }
        jni.delete_local_ref(k);
    }
    log::debug!("natives: {n} classes already loaded looked at in {:?}", began.elapsed());
}

/// JVMTI ClassPrepare.
pub fn on_class_prepare(env: *mut JNIEnv, k: jclass) {
    if let Some(agent) = AGENT.get() {
        agent.bind(env, k, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(short_name("NativeHelper", "cpuTime").as_deref(), Some("Java_NativeHelper_cpuTime"));
        assert_eq!(short_name("p/q/My_Class", "get_it").as_deref(), Some("Java_p_q_My_1Class_get_1it"));
        assert_eq!(short_name("NativeHelper$Inner", "nine").as_deref(), Some("Java_NativeHelper_00024Inner_nine"));
        assert_eq!(short_name("Café", "ü").as_deref(), Some("Java_Caf_000e9__000fc"));
        // A supplementary character is escaped as its two UTF-16 code units.
        assert_eq!(short_name("A", "x\u{1D4B3}").as_deref(), Some("Java_A_x_0d835_0dcb3"));
        assert_eq!(short_name("A", "a\0b").as_deref(), Some("Java_A_a_00000b"));
        // Digits are kept where they cannot be taken for an escape.
        assert_eq!(short_name("p/C4", "m9").as_deref(), Some("Java_p_C4_m9"));
        assert_eq!(short_name("p/4x", "9m").as_deref(), Some("Java_p_4x_9m"));
    }

    #[test]
    fn long_names() {
        // The JNI specification's own example: pkg.Cls.f(int, String).
        assert_eq!(
            long_name("pkg/Cls", "f", "(ILjava/lang/String;)D").as_deref(),
            Some("Java_pkg_Cls_f__ILjava_lang_String_2")
        );
        assert_eq!(long_name("NativeHelper", "sum", "([I)J").as_deref(), Some("Java_NativeHelper_sum___3I"));
        assert_eq!(
            long_name("A", "m", "([[Ljava/lang/Object;Z[J)V").as_deref(),
            Some("Java_A_m___3_3Ljava_lang_Object_2Z_3J")
        );
        assert_eq!(long_name("A", "m", "()V").as_deref(), Some("Java_A_m__"));
        assert_eq!(long_name("A", "m", "(Lp_q/R$S;)V").as_deref(), Some("Java_A_m__Lp_1q_R_00024S_2"));
    }

    #[test]
    fn names_that_cannot_be_linked() {
        // A 0-3 that would follow an underscore: at the start of a name or after a '/'.
        assert_eq!(class_prefix("p/1x"), None);
        assert_eq!(class_prefix("0x"), None);
        assert_eq!(short_name("A", "2m"), None);
        assert_eq!(long_name("A", "m", "(Lp/3q;)V"), None);
        // The short name can still be linked when only the long one cannot.
        assert!(short_name("A", "m").is_some());
        // Without the check, these two would collide.
        assert_eq!(short_name("package/my_class", "method").as_deref(), Some("Java_package_my_1class_method"));
        assert_eq!(short_name("package/my/1class", "method"), None);
    }

    #[test]
    fn every_name_is_a_c_identifier() {
        for (c, m, s) in [("a/b/C$D", "x_y", "([Ljava/lang/String;)V"), ("Ünï", "çø∂e", "(IJ)V")] {
            for n in [short_name(c, m).unwrap(), long_name(c, m, s).unwrap()] {
                assert!(n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{n}");
            }
        }
    }

    #[test]
    fn prefix_search() {
        let syms: Vec<String> = ["Java_A_m", "Java_B_00024C_n", "Java_Bb_x"].map(String::from).to_vec();
        assert!(any_starts_with(&syms, "Java_A_"));
        assert!(any_starts_with(&syms, "Java_B_"));
        assert!(any_starts_with(&syms, "Java_Bb_"));
        assert!(!any_starts_with(&syms, "Java_Ba_"));
        assert!(!any_starts_with(&syms, "Java_C_"));
        assert!(!any_starts_with(&[], "Java_A_"));
    }

    #[test]
    fn exported_names_of_an_elf_file() {
        assert!(java_symbols(b"not an object file").is_err());
        // This test binary is an ELF file with a .dynsym and no JNI functions.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(java_symbols(&me).unwrap(), Vec::<String>::new());
    }
}
