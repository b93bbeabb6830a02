//! Memory and strings: blocks JVMTI allocates (what ClassFileLoadHook returns), system
//! properties, C strings from the JVM or an agent. Not here: agent memory read without faulting
//! (`vm::safemem`).

use super::*;

// ---- memory -------------------------------------------------------------------------------------

/// Copies bytes into memory allocated by JVMTI `Allocate` (what ClassFileLoadHook must return).
pub fn jvmti_copy(bytes: &[u8]) -> Result<*mut u8> {
    let j = env()?;
    // SAFETY: Allocate returns a fresh block of the asked size or an error.
    let p = unsafe { j.allocate_raw(bytes.len() as jlong)? };
    // SAFETY: `p` has room for `bytes.len()` bytes and does not overlap `bytes`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
    Ok(p)
}

// ---- system properties ------------------------------------------------------------------------

pub fn system_property(name: &str) -> Option<String> {
    env().ok()?.get_system_property(name).ok()
}

/// The JDK's feature release (11, 17, 21, 25, …), from JVMTI's version number (since JDK 9 its
/// major field is the feature release).
pub fn jdk_feature() -> Option<u32> {
    let v = env().ok()?.get_version_number().ok()? as u32;
    Some((v >> 16) & 0x0FFF)
}

/// Reads a C string the JVM or an agent owns into a Rust string (lossy UTF-8).
pub fn c_str(p: *const std::ffi::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: callers pass NUL-terminated strings (agent-provided names, JVM-provided names).
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// A C string for an event field; interior NULs (impossible in JVM names) become '?'.
pub fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "?")).unwrap_or_default()
}
