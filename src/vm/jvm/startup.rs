//! The JVM before the shim has a JVMTI environment: the `JavaVM`'s own invoke table (`GetEnv`,
//! `AttachCurrentThread`) for the "double agent" `JVM_OnLoad`, a probe for whether JVMTI can be
//! had yet, and one thread's JNI function table replaced by a copy with hooks (the deferred
//! start of `-Xrun` on JDK 9+), with calls through the JVM's own table. Not here: the JNI table
//! of every thread (JVMTI `SetJNIFunctionTable`, in the parent module). Here too: the `JavaVM`
//! whose `GetEnv` is the shim's ([`hook_get_env`]; the door itself is `doors::jvmpi::get_env`).
//!
//! The JVM's `JavaVM` is a pointer to a read-only table of invoke functions, but the `JavaVM`
//! slot itself is writable. The shim points it at a copy of the table in which `GetEnv` answers
//! `JVMPI_VERSION_1/1_1/1_2` with the shim's interface and passes every other version to the
//! JVM's own `GetEnv` ([`real_get_env`]). Because the JVM hands out that same slot everywhere
//! (`JNIEnv->GetJavaVM`, `JNI_GetCreatedJavaVMs`, the `JVM_OnLoad` argument), every route an
//! agent has to a `JavaVM*` reaches the shim's `GetEnv`.

use jvmti_bindings::sys::jni::{
    jboolean, jclass, jfieldID, jint, jmethodID, jthrowable, JNIEnv, JNIInvokeInterface_, JNINativeInterface_, JavaVM,
};
use jvmti_bindings::sys::{jni, jvmti};
use std::ffi::{c_char, c_void};
use std::sync::OnceLock;

/// The copy of the JVM's invoke table with the shim's `GetEnv`.
struct HookedTable(JNIInvokeInterface_);
// SAFETY: an immutable table of function pointers, shared read-only by every thread.
unsafe impl Sync for HookedTable {}
// SAFETY: as above; the table is never written once installed.
unsafe impl Send for HookedTable {}

/// The module's one state: the copy of the invoke table the `JavaVM` slot points at, made by
/// the first [`hook_get_env`]; it lives for the rest of the process.
static HOOKED: OnceLock<Box<HookedTable>> = OnceLock::new();

/// Points the JVM's `JavaVM` slot at a copy of its invoke table whose `GetEnv` is `get_env`
/// (the first call's `get_env` stays for the life of the process).
///
/// # Safety
/// `vm` is the `JavaVM` the JVM passed.
pub(crate) unsafe fn hook_get_env(vm: *mut JavaVM, get_env: GetEnvFn) {
    let table = HOOKED.get_or_init(|| {
        // SAFETY: `*vm` is the JVM's invoke table; copying its function pointers is a plain read.
        let mut copy: JNIInvokeInterface_ = unsafe { std::ptr::read(*vm) };
        copy.GetEnv = get_env;
        Box::new(HookedTable(copy))
    });
    // The table it now points to lives for the rest of the process.
    // SAFETY: the JavaVM slot is writable (measured on JDK 11-25).
    unsafe { *vm = &table.0 as *const JNIInvokeInterface_ };
}

/// The JVM's own `GetEnv` (as the shim's hooked one passes on every version but JVMPI's):
/// `JNI_ERR` before the shim has met the JVM.
///
/// # Safety
/// `vm` is a `JavaVM` of this JVM and `penv` the caller's out-pointer.
pub(crate) unsafe fn real_get_env(vm: *mut JavaVM, penv: *mut *mut c_void, version: jint) -> jint {
    match super::real_vm() {
        // SAFETY: the JVM's own GetEnv, with the arguments the caller gave.
        Some(real) => unsafe { (real.get_env)(vm, penv, version) },
        None => jni::JNI_ERR,
    }
}

/// A `JavaVM`'s `GetEnv`.
pub(crate) type GetEnvFn = unsafe extern "system" fn(*mut JavaVM, *mut *mut c_void, jint) -> jint;

/// The `GetEnv` of `vm`'s invoke table as it is now (the JVM's own before the loader hooks it).
///
/// # Safety
/// `vm` is the `JavaVM` the JVM passed.
pub(crate) unsafe fn get_env_fn(vm: *mut JavaVM) -> GetEnvFn {
    // SAFETY: the caller's `vm` is the JVM's; its first word is its invoke table.
    unsafe { (**vm).GetEnv }
}

/// `GetEnv(version)` through `get_env`: its return code and the environment it gave.
///
/// # Safety
/// `get_env` is a `JavaVM`'s `GetEnv` and `vm` that `JavaVM`.
pub(crate) unsafe fn get_env_with(get_env: GetEnvFn, vm: *mut JavaVM, version: jint) -> (jint, *mut c_void) {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the caller's GetEnv and JavaVM, with a valid out-pointer.
    let rc = unsafe { get_env(vm, &mut p, version) };
    (rc, p)
}

/// Attaches the calling thread to `vm` with default arguments; returns the JNI return code.
///
/// # Safety
/// `vm` is the `JavaVM` the JVM passed.
pub(crate) unsafe fn attach_current_thread(vm: *mut JavaVM) -> jint {
    let mut e: *mut c_void = std::ptr::null_mut();
    // SAFETY: the JVM's AttachCurrentThread with a valid out-pointer and no arguments.
    unsafe { ((**vm).AttachCurrentThread)(vm, &mut e, std::ptr::null_mut()) }
}

/// Whether a JVMTI environment can be had now through `get_env` (the live phase, or OnLoad);
/// the probe's environment is given back at once.
///
/// # Safety
/// `get_env` is a `JavaVM`'s own `GetEnv` and `vm` that `JavaVM`.
pub(crate) unsafe fn jvmti_reachable(get_env: GetEnvFn, vm: *mut JavaVM) -> bool {
    // SAFETY: the caller's contract.
    let (rc, p) = unsafe { get_env_with(get_env, vm, jvmti::JVMTI_VERSION_1_2) };
    if rc != jvmti_bindings::sys::jni::JNI_OK || p.is_null() {
        return false;
    }
    let j = p as *mut jvmti::jvmtiEnv;
    // SAFETY: `j` is the jvmtiEnv GetEnv just created; disposing of it is its only use.
    if let Some(dispose) = unsafe { (*(*j).functions).DisposeEnvironment } {
        // SAFETY: as above.
        unsafe { dispose(j) };
    }
    true
}

/// Room for the largest JNI function table (236 slots in JDK 24+), and then some.
const TABLE_SLOTS: usize = 256;
const _: () = assert!(std::mem::size_of::<JNINativeInterface_>() <= TABLE_SLOTS * std::mem::size_of::<usize>());

/// The number of slots of the JNI function table of a JVM whose `GetVersion` says `version`:
/// 233 up to JNI 1.8, `GetModule` from 9, `IsVirtualThread` from 19, `GetStringUTFLengthAsLong`
/// from 24.
fn jni_table_slots(version: jint) -> usize {
    match version {
        v if v >= 0x0018_0000 => 236,
        v if v >= 0x0013_0000 => 235,
        v if v >= 0x0009_0000 => 234,
        _ => 233,
    }
}

/// Index of a JNI function in the function table.
macro_rules! jni_slot {
    ($f:ident) => {
        std::mem::offset_of!(jvmti_bindings::sys::jni::JNINativeInterface_, $f) / std::mem::size_of::<usize>()
    };
}
pub(crate) use jni_slot;

/// One thread's JNI function table replaced by a copy in which some slots are hooks. The copy
/// lives for the rest of the process.
pub(crate) struct HookedThreadTable {
    env: usize,
    original: usize,
    hooked: Box<[usize; TABLE_SLOTS]>,
}

impl HookedThreadTable {
    /// A copy of `env`'s function table with `hooks` (slot from [`jni_slot!`], function) in
    /// place; not yet installed.
    ///
    /// # Safety
    /// `env` is the calling thread's JNIEnv, and each hook has the signature of its slot.
    pub(crate) unsafe fn new(env: *mut JNIEnv, hooks: &[(usize, *const ())]) -> Self {
        // SAFETY: `env` is the current thread's JNIEnv; its first word is its function table.
        let original = unsafe { *env };
        // SAFETY: GetVersion of the JVM's own table, on the thread the JNIEnv belongs to.
        let n = jni_table_slots(unsafe { ((*original).GetVersion)(env) })
            .min(std::mem::size_of::<JNINativeInterface_>() / std::mem::size_of::<usize>());
        let mut hooked = Box::new([0usize; TABLE_SLOTS]);
        // SAFETY: the JVM's table has at least `n` pointer-sized slots (its JNI version says so).
        unsafe { std::ptr::copy_nonoverlapping(original as *const usize, hooked.as_mut_ptr(), n) };
        for &(slot, f) in hooks {
            hooked[slot] = f as usize;
        }
        HookedThreadTable { env: env as usize, original: original as usize, hooked }
    }

    /// The JVM's own table of the hooked thread.
    pub(crate) fn original(&self) -> *const JNINativeInterface_ {
        self.original as *const JNINativeInterface_
    }

    /// Makes the copy the thread's table.
    ///
    /// # Safety
    /// Called on the thread whose JNIEnv the copy was made from, with `self` living for the
    /// rest of the process.
    pub(crate) unsafe fn install(&'static self) {
        // SAFETY: the JNIEnv's function-table slot is the calling thread's own writable word.
        unsafe { *(self.env as *mut JNIEnv) = self.hooked.as_ptr() as *const JNINativeInterface_ };
    }

    /// Puts the JVM's own table back if `env` is the hooked thread's and its table is still the
    /// copy (JVMTI `SetJNIFunctionTable` may have replaced it since).
    ///
    /// # Safety
    /// `env` is the calling thread's JNIEnv.
    pub(crate) unsafe fn remove(&self, env: *mut JNIEnv) {
        if env as usize != self.env {
            return;
        }
        let hooked = self.hooked.as_ptr() as *const JNINativeInterface_;
        // SAFETY: the thread's own function-table slot, set by `install`.
        unsafe {
            if *env == hooked {
                *env = self.original();
            }
        }
    }
}

// ---- calls through the JVM's own table (`t`), from the hooks ----------------------------------

/// `ExceptionCheck` of table `t`.
///
/// # Safety
/// `t` is the JVM's function table and `env` the calling thread's JNIEnv.
pub(crate) unsafe fn exception_check(t: *const JNINativeInterface_, env: *mut JNIEnv) -> jboolean {
    // SAFETY: the caller's contract.
    unsafe { ((*t).ExceptionCheck)(env) }
}

/// `ExceptionOccurred` of table `t`.
///
/// # Safety
/// `t` is the JVM's function table and `env` the calling thread's JNIEnv.
pub(crate) unsafe fn exception_occurred(t: *const JNINativeInterface_, env: *mut JNIEnv) -> jthrowable {
    // SAFETY: the caller's contract.
    unsafe { ((*t).ExceptionOccurred)(env) }
}

/// `FindClass` of table `t`.
///
/// # Safety
/// `t` is the JVM's function table, `env` the calling thread's JNIEnv, `name` the caller's.
pub(crate) unsafe fn find_class(t: *const JNINativeInterface_, env: *mut JNIEnv, name: *const c_char) -> jclass {
    // SAFETY: the caller's contract.
    unsafe { ((*t).FindClass)(env, name) }
}

/// Calls of the form `(env, class, name, signature) -> id` through table `t`.
macro_rules! member_id {
    ($($name:ident => $field:ident -> $ret:ty),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($field), "` of table `t`.")]
        ///
        /// # Safety
        /// `t` is the JVM's function table, `env` the calling thread's JNIEnv, the rest the
        /// caller's arguments.
        pub(crate) unsafe fn $name(t: *const JNINativeInterface_, env: *mut JNIEnv, k: jclass, name: *const c_char, sig: *const c_char) -> $ret {
            // SAFETY: the caller's contract.
            unsafe { ((*t).$field)(env, k, name, sig) }
        }
    )*};
}
member_id!(
    get_method_id => GetMethodID -> jmethodID,
    get_static_method_id => GetStaticMethodID -> jmethodID,
    get_field_id => GetFieldID -> jfieldID,
    get_static_field_id => GetStaticFieldID -> jfieldID,
);
