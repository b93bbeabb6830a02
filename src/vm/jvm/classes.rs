//! Classes and methods: loaded classes, their signatures, status, methods and fields, line tables,
//! bytecodes and constant pools, retransformation, and natives registered at run time.

use super::*;

// ---- classes ------------------------------------------------------------------------------------

/// Every loaded class, as local references of the current thread (room is made for them in its
/// frame of local references; callers delete them or pop the frame).
pub fn loaded_classes() -> Result<Vec<jclass>> {
    let all = env()?.get_loaded_classes()?;
    made_locals(all.len());
    Ok(all)
}

/// Tells JNI that `n` local references were just made in the current thread's frame by JVMTI
/// (which does not count them), so that `-Xcheck:jni` does not see the frame over capacity.
pub(super) fn made_locals(n: usize) {
    if let Some(jni) = Jni::current() {
        jni.ensure_local_capacity(n);
    }
}

pub fn class_signature(k: jclass) -> Result<String> {
    // SAFETY: facade contract.
    unsafe { env()?.get_class_signature(k) }.map(|(s, _)| s)
}

/// JVMTI `GetClassModifiers` (ACC_ABSTRACT, ACC_INTERFACE, …).
pub fn class_modifiers(k: jclass) -> Result<jint> {
    // SAFETY: facade contract.
    unsafe { env()?.get_class_modifiers(k) }
}

pub fn class_status(k: jclass) -> Result<jint> {
    // SAFETY: facade contract.
    unsafe { env()?.get_class_status(k) }
}

pub fn source_file(k: jclass) -> Result<String> {
    // SAFETY: facade contract.
    unsafe { env()?.get_source_file_name(k) }
}

pub fn interface_count(k: jclass) -> Result<usize> {
    // SAFETY: facade contract.
    let v = unsafe { env()?.get_implemented_interfaces(k) }?;
    if let Some(jni) = Jni::current() {
        v.iter().for_each(|&i| jni.delete_local_ref(i));
    }
    Ok(v.len())
}

pub fn class_methods(k: jclass) -> Result<Vec<jmethodID>> {
    // SAFETY: facade contract.
    unsafe { env()?.get_class_methods(k) }
}

/// (name, signature, is_static) of each field the class declares.
pub fn class_fields(k: jclass) -> Result<Vec<(String, String, bool)>> {
    let j = env()?;
    // SAFETY: facade contract; field IDs come from the JVM for this class.
    unsafe {
        let mut out = Vec::new();
        for f in j.get_class_fields(k)? {
            let (name, sig, _) = j.get_field_name(k, f)?;
            let m = j.get_field_modifiers(k, f)?;
            out.push((name, sig, m & 0x0008 != 0));
        }
        Ok(out)
    }
}

pub fn method_name(m: jmethodID) -> Result<(String, String)> {
    // SAFETY: facade contract.
    unsafe { env()?.get_method_name(m) }.map(|(n, s, _)| (n, s))
}

pub fn method_class(m: jmethodID) -> Result<jclass> {
    // SAFETY: facade contract.
    unsafe { env()?.get_method_declaring_class(m) }
}

pub fn is_native(m: jmethodID) -> Result<bool> {
    // SAFETY: facade contract.
    unsafe { env()?.is_method_native(m) }
}

/// Whether `m` is an obsolete version of a method (its class was redefined or retransformed
/// since): frames and compiled code of the old version carry such an ID, which no class lists.
pub fn is_obsolete(m: jmethodID) -> Result<bool> {
    // SAFETY: facade contract.
    unsafe { env()?.is_method_obsolete(m) }
}

pub fn line_table(m: jmethodID) -> Result<Vec<(jlong, jint)>> {
    // SAFETY: facade contract.
    let t = unsafe { env()?.get_line_number_table(m)? };
    Ok(t.into_iter().map(|e| (e.start_location, e.line_number)).collect())
}

// ---- method bytecode and constant pools ------------------------------------------------------

/// (first, last) bytecode index of a method (JVMTI `GetMethodLocation`).
pub fn method_location(m: jmethodID) -> Result<(jlong, jlong)> {
    // SAFETY: facade contract: `m` is a method ID the JVM gave the shim.
    unsafe { env()?.get_method_location(m) }
}

/// A method's bytecode, as JVMTI `GetBytecodes` gives it (constant-pool indices refer to
/// [`constant_pool`] of its class).
pub fn bytecodes(m: jmethodID) -> Result<Vec<u8>> {
    // SAFETY: facade contract: `m` is a method ID the JVM gave the shim.
    unsafe { env()?.get_bytecodes(m) }
}

/// A class's constant pool entries (without the count), as JVMTI `GetConstantPool` gives them.
pub fn constant_pool(k: jclass) -> Result<Vec<u8>> {
    // SAFETY: facade contract: `k` is a live class reference.
    unsafe { env()?.get_constant_pool(k) }
}

// ---- class definition and retransformation ----------------------------------------------------

/// Retransforms every modifiable loaded class (in batches; a batch that fails is retried class
/// by class, and classes that still fail are logged and skipped). Returns how many were done.
///
/// With `two_threads` (and JDK [`PARALLEL_FROM_JDK`] or later, at least two CPUs and
/// [`PARALLEL_MIN`] classes), every other class is
/// retransformed by a helper thread attached to the JVM for the purpose (temporarily, as for an
/// agent's call: no thread for the agents, see [`attached`]) while the calling thread does the
/// rest. Most of a retransformation runs in the thread that asks for it (the class-file hooks,
/// the JVM's parsing of the new class file and its comparison with the old one); only the
/// redefinition proper is a VM operation, one at a time. The sets are disjoint, the shim's
/// class-file hook runs concurrently anyway (classes load in any thread). The callers ask for
/// it only before the event gate opens: whatever the helper thread causes then (a class it
/// loads) is announced by the catch-up, never as an event of a thread the agent does not know.
pub fn retransform_all(two_threads: bool) -> usize {
    use std::sync::atomic::Ordering::SeqCst;
    STATE.retransforms.0.fetch_add(1, SeqCst);
    let n = retransform_all_now(two_threads);
    STATE.retransforms.1.fetch_add(1, SeqCst);
    n
}

/// How many [`retransform_all`]s have begun and how many have ended: a room that deferred a
/// retransformation can tell whether a whole one began after it decided, and has ended.
pub fn retransforms() -> (usize, usize) {
    use std::sync::atomic::Ordering::SeqCst;
    (STATE.retransforms.0.load(SeqCst), STATE.retransforms.1.load(SeqCst))
}

fn retransform_all_now(two_threads: bool) -> usize {
    let Ok(all) = loaded_classes() else { return 0 };
    let jni = Jni::current();
    let modifiable: Vec<jclass> = match env() {
        // SAFETY: facade contract: local class references just listed by the JVM.
        Ok(j) => all.iter().copied().filter(|&k| unsafe { j.is_modifiable_class(k) }.unwrap_or(false)).collect(),
        Err(_) => Vec::new(),
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let concurrent_ok = jdk_feature().is_some_and(|f| f >= PARALLEL_FROM_JDK);
    let done = match &jni {
        Some(jni) if two_threads && concurrent_ok && cpus >= 2 && modifiable.len() >= PARALLEL_MIN => {
            retransform_in_two(jni, &modifiable)
        }
        _ => {
            if two_threads && !concurrent_ok {
                log::debug!(
                    "retransforming in one thread: JDK {:?} (two at once from JDK {PARALLEL_FROM_JDK})",
                    jdk_feature()
                );
            }
            retransform_list(&modifiable)
        }
    };
    if let Some(jni) = jni {
        all.into_iter().for_each(|k| jni.delete_local_ref(k));
    }
    done
}

/// Fewer classes than this are retransformed in the calling thread alone.
pub const PARALLEL_MIN: usize = 64;

/// The first JDK on which two threads retransform at once. On JDK 11 a plain JVMTI agent doing
/// so (`benches/retransform_jvmti.c`, option `two`) crashed the JVM in `Rewriter::rewrite_member_reference`
/// under `VM_RedefineClasses::load_new_class_versions` (SIGSEGV, 2026-11-26; see
/// docs/benchmarks.md, "Start-up and shutdown"): there the shim retransforms in one thread.
pub const PARALLEL_FROM_JDK: u32 = 17;

/// Retransforms the odd-numbered classes of `ks` in a helper thread and the others here.
fn retransform_in_two(jni: &Jni, ks: &[jclass]) -> usize {
    let (mine, theirs): (Vec<(usize, jclass)>, Vec<(usize, jclass)>) =
        ks.iter().copied().enumerate().partition(|(i, _)| i % 2 == 0);
    let globals: Vec<usize> = theirs.iter().map(|&(_, k)| jni.new_global_ref(k) as usize).filter(|&g| g != 0).collect();
    let shared = globals.clone();
    let (mine, theirs_done) = std::thread::scope(|scope| {
        let helper = std::thread::Builder::new().name("JVMPI retransformer".into()).spawn_scoped(scope, move || {
            let ks: Vec<jclass> = shared.iter().map(|&g| g as jclass).collect();
            // Named, so that the program's next `Thread-<n>` keeps its number.
            attached_named(Some(c"JVMPI retransformer"), || retransform_list(&ks))
        });
        let mine: Vec<jclass> = mine.into_iter().map(|(_, k)| k).collect();
        let done = retransform_list(&mine);
        let theirs = match helper {
            Ok(h) => h.join().ok().flatten(),
            Err(e) => {
                log::debug!("retransforming in one thread: no helper thread ({e})");
                None
            }
        };
        (done, theirs)
    });
    let mut done = mine;
    let ks: Vec<jclass> = globals.iter().map(|&g| g as jclass).collect();
    // The helper could not do its half (no thread, or it could not be attached): done here.
    done += theirs_done.unwrap_or_else(|| retransform_list(&ks));
    ks.into_iter().for_each(|g| jni.delete_global_ref(g));
    done
}

/// Retransforms `ks` in the calling thread, in batches.
fn retransform_list(ks: &[jclass]) -> usize {
    let Ok(j) = env() else { return 0 };
    let mut done = 0;
    for batch in ks.chunks(64) {
        // SAFETY: facade contract.
        if unsafe { j.retransform_classes(batch) }.is_ok() {
            done += batch.len();
            continue;
        }
        for &k in batch {
            // SAFETY: facade contract.
            match unsafe { j.retransform_classes(&[k]) } {
                Ok(()) => done += 1,
                Err(e) => log::info!("retransforming {}: {}", class_signature(k).unwrap_or_default(), err_name(e)),
            }
        }
    }
    done
}

/// A native method binding for RegisterNatives.
pub struct Native {
    pub name: &'static std::ffi::CStr,
    pub signature: &'static std::ffi::CStr,
    pub f: *mut c_void,
}

impl Jni {
    /// Defines a class in the bootstrap class loader; returns a global reference to it.
    pub fn define_boot_class(&self, name: &str, bytes: &[u8]) -> Option<jclass> {
        let _i = Internal::enter();
        // SAFETY: NULL loader = the bootstrap loader; `bytes` is a class file.
        let k = unsafe { self.0.define_class(name, std::ptr::null_mut(), bytes) };
        if self.clear_exception() {
            return None;
        }
        let k = k?;
        let g = self.new_global_ref(k);
        self.delete_local_ref(k);
        (!g.is_null()).then_some(g)
    }
    pub fn register_natives(&self, k: jclass, natives: &[Native]) -> bool {
        let _i = Internal::enter();
        let m: Vec<jni::JNINativeMethod> = natives
            .iter()
            .map(|n| jni::JNINativeMethod { name: n.name.as_ptr(), signature: n.signature.as_ptr(), fnPtr: n.f })
            .collect();
        // SAFETY: `k` is a live class; each fnPtr has the C signature its JNI signature implies.
        let ok = unsafe { self.0.register_natives(k, &m) }.is_ok();
        !self.clear_exception() && ok
    }
    /// Sets a `static boolean` field.
    pub fn set_static_boolean(&self, k: jclass, name: &str, v: bool) -> bool {
        // SAFETY: `k` is a live class; the field is looked up by name and type first.
        unsafe {
            match self.0.get_static_field_id(k, name, "Z") {
                Some(f) => {
                    self.0.set_static_boolean_field(k, f, v);
                    true
                }
                None => {
                    self.clear_exception();
                    false
                }
            }
        }
    }
    /// Sets a (non-final) `static` object field of type `sig` to `v`.
    pub fn set_static_object(&self, k: jclass, name: &str, sig: &str, v: jobject) -> bool {
        let _i = Internal::enter();
        // The field is looked up by name and type first, and is not final.
        // SAFETY: `k` is a live class and `v` a live reference of the field's type.
        unsafe {
            match self.0.get_static_field_id(k, name, sig) {
                Some(f) => {
                    self.0.set_static_object_field(k, f, v);
                    !self.clear_exception()
                }
                None => {
                    self.clear_exception();
                    false
                }
            }
        }
    }
    /// A new array of `n` NULL elements of class `k` (a local reference).
    pub fn new_object_array(&self, n: jint, k: jclass) -> Option<jobject> {
        let _i = Internal::enter();
        // SAFETY: `k` is a live class; NULL is a valid initial element.
        let a = unsafe { self.0.new_object_array(n, k, std::ptr::null_mut()) };
        if self.clear_exception() {
            return None;
        }
        a
    }
    /// A new instance of `k` made by its constructor `ctor` with `args` (a local reference).
    pub fn new_object(&self, k: jclass, ctor: jmethodID, args: &[jni::jvalue]) -> Option<jobject> {
        let _i = Internal::enter();
        // SAFETY: `ctor` is a constructor of the live class `k` and `args` match its descriptor.
        let o = unsafe { self.0.new_object(k, ctor, args) };
        if self.clear_exception() {
            return None;
        }
        o
    }
    /// Stores `v` at index `i` of the object array `a` (both live, `i` within the array,
    /// `v` of its element type).
    pub fn set_array_element(&self, a: jobject, i: jint, v: jobject) -> bool {
        let _i = Internal::enter();
        // SAFETY: see above; an exception (none expected) is cleared.
        unsafe { self.0.set_object_array_element(a, i, v) };
        !self.clear_exception()
    }
    /// Makes java.base read the module of `k` (the unnamed module of the boot loader).
    pub fn java_base_reads_module_of(&self, k: jclass) -> Result<()> {
        let _i = Internal::enter();
        let object = self.0.find_class("java/lang/Object").ok_or(jvmtiError::INTERNAL)?;
        // SAFETY: live class references; GetModule returns their modules.
        let r = unsafe {
            let base = self.0.get_module(object).map_err(|_| jvmtiError::NOT_AVAILABLE)?;
            let target = self.0.get_module(k).map_err(|_| jvmtiError::NOT_AVAILABLE)?;
            env()?.add_module_reads(base, target)
        };
        self.delete_local_ref(object);
        r
    }
    /// Elements of an object array (local references).
    pub fn array_elements(&self, array: jobject) -> Vec<jobject> {
        // SAFETY: `array` is a live object array.
        unsafe {
            let n = self.0.get_array_length(array);
            (0..n).map(|i| self.0.get_object_array_element(array, i)).collect()
        }
    }
}

// ---- JNI natives found in the legacy agent's library (the natives room) ----------------------

impl Jni {
    /// `RegisterNatives` with names and signatures known only at run time (modified UTF-8
    /// strings). On failure the pending exception is cleared and named in the error.
    pub fn register_natives_named(
        &self,
        k: jclass,
        natives: &[(CString, CString, *mut c_void)],
    ) -> std::result::Result<(), VmError> {
        let m: Vec<jni::JNINativeMethod> = natives
            .iter()
            .map(|(n, s, f)| jni::JNINativeMethod { name: n.as_ptr(), signature: s.as_ptr(), fnPtr: *f })
            .collect();
        // Each fnPtr is the function the JNI naming rules give for that method's name and
        // signature, so its C signature is the one the JVM will call.
        // SAFETY: `k` is a live class and every entry's pointers are valid for the call.
        let r = unsafe { self.0.register_natives(k, &m) };
        let thrown = self.0.exception_occurred().map(|t| {
            self.0.exception_clear();
            let kt = self.object_class(t);
            let name = class_signature(kt).unwrap_or_default();
            self.delete_local_ref(kt);
            self.delete_local_ref(t);
            name
        });
        match (r, thrown) {
            (Ok(()), None) => Ok(()),
            (r, thrown) => Err(VmError::RegisterNatives(r.err().unwrap_or(0), thrown)),
        }
    }
}
