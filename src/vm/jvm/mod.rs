//! The JVM underneath: the JVMTI environments the shim owns, their capabilities, which JVMTI
//! events are switched on, and a safe facade over the JVMTI and JNI calls the rooms use.
//!
//! Every call into JVMTI or JNI made by the shim goes through this file, so this is where the
//! `unsafe` surface of talking to the JVM is. The contract of the facade: JNI handles passed in
//! (`jobject`, `jclass`, `jthread`, `jmethodID`) are live handles that the JVM gave the shim
//! (callback arguments, local references made in the current thread, global references the
//! shim keeps, method IDs the JVM listed). IDs that come from an agent are never handed to the
//! JVM before the room that owns them has checked them against its own table.
//!
//! JVMTI events are reference-counted: a room asks for an event with [`want`] and gives it back
//! with [`unwant`]; the JVM is told only on the 0↔1 transitions, so an event no JVMPI event
//! needs costs nothing.

use jvmti_bindings::sys::jni::{self, jclass, jint, jlong, jmethodID, jobject, jthread, JNIEnv, JavaVM};
use jvmti_bindings::sys::jvmti::{self, jvmtiError, jvmtiEvent};
use jvmti_bindings::env::{JniEnv, Jvmti};
use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

pub(crate) mod startup;

/// The shim's JVMTI environment. JVMTI environments may be used from any thread.
struct Env(Jvmti);
// SAFETY: a jvmtiEnv is valid process-wide and JVMTI functions are thread-safe (JVMTI spec,
// "Environments"); the wrapper holds only the pointer.
unsafe impl Send for Env {}
// SAFETY: as above.
unsafe impl Sync for Env {}

static ENV: OnceLock<Env> = OnceLock::new();
/// A second environment, not retransformation-capable, that runs the agent's CLASS_LOAD_HOOK:
/// the JVM applies its changes before the shim's own instrumentation and keeps them when the
/// shim retransforms a class (JVMTI, "RetransformClasses").
static HOOK_ENV: OnceLock<Env> = OnceLock::new();
/// A third environment, retransformation-capable and created before the main one, that offers
/// the classes loaded before the agent started to the agent's CLASS_LOAD_HOOK (see `hooks`).
/// JVMTI calls ClassFileLoadHook in retransformation-incapable environments first, then in
/// retransformation-capable ones in the order they were created: this one runs before the
/// main environment's allocation instrumentation.
static EARLY_ENV: OnceLock<Env> = OnceLock::new();
/// The early environment has its capabilities and its callback.
static EARLY_READY: AtomicBool = AtomicBool::new(false);

/// The JVM's own `JavaVM*` and its real invoke table (before the loader hooked `GetEnv`).
#[derive(Clone, Copy)]
pub struct RealVm {
    pub vm: usize,
    pub get_env: unsafe extern "system" fn(*mut JavaVM, *mut *mut c_void, jint) -> jint,
    pub attach_daemon: unsafe extern "system" fn(*mut JavaVM, *mut *mut c_void, *mut c_void) -> jint,
    pub detach: unsafe extern "system" fn(*mut JavaVM) -> jint,
}
static REAL_VM: OnceLock<RealVm> = OnceLock::new();

pub type Error = jvmtiError;
pub type Result<T> = std::result::Result<T, Error>;

fn env() -> Result<&'static Jvmti> {
    ENV.get().map(|e| &e.0).ok_or(jvmtiError::INVALID_ENVIRONMENT)
}

/// The name of a JVMTI error, for log lines.
pub fn err_name(e: Error) -> String {
    match env() {
        Ok(j) => j.error_to_string(e),
        Err(_) => format!("JVMTI error {}", e.raw()),
    }
}

/// Connects to the JVM: remembers its invoke table and gets the shim's JVMTI environment.
/// Must run before the loader replaces the `JavaVM`'s table.
pub fn connect(vm: *mut JavaVM) -> std::result::Result<(), String> {
    if vm.is_null() {
        return Err("the JVM passed a NULL JavaVM".into());
    }
    // SAFETY: `vm` is the JavaVM the JVM passed us; its first word is its process-lifetime invoke table.
    let table = unsafe { &**vm };
    let real = RealVm {
        vm: vm as usize,
        get_env: table.GetEnv,
        attach_daemon: table.AttachCurrentThreadAsDaemon,
        detach: table.DetachCurrentThread,
    };
    let _ = REAL_VM.set(real);
    // The early environment first: creation order is the order of retransformation-capable
    // environments' class-file hooks.
    let mut e: *mut c_void = std::ptr::null_mut();
    // SAFETY: calling the JVM's own GetEnv with its own JavaVM and a valid out-pointer.
    if unsafe { (real.get_env)(vm, &mut e, jvmti::JVMTI_VERSION_1_2) } == jni::JNI_OK && !e.is_null() {
        // SAFETY: `e` is a jvmtiEnv* just returned by GetEnv.
        let _ = EARLY_ENV.set(Env(unsafe { Jvmti::from_raw(e as *mut jvmti::jvmtiEnv) }));
    }
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: calling the JVM's own GetEnv with its own JavaVM and a valid out-pointer.
    let rc = unsafe { (real.get_env)(vm, &mut p, jvmti::JVMTI_VERSION_1_2) };
    if rc != jni::JNI_OK || p.is_null() {
        return Err(format!("the JVM did not give a JVMTI environment (GetEnv returned {rc})"));
    }
    // SAFETY: `p` is a jvmtiEnv* just returned by GetEnv.
    let _ = ENV.set(Env(unsafe { Jvmti::from_raw(p as *mut jvmti::jvmtiEnv) }));
    let mut h: *mut c_void = std::ptr::null_mut();
    // SAFETY: as above, a second environment.
    if unsafe { (real.get_env)(vm, &mut h, jvmti::JVMTI_VERSION_1_2) } == jni::JNI_OK && !h.is_null() {
        // SAFETY: `h` is a jvmtiEnv* just returned by GetEnv.
        let _ = HOOK_ENV.set(Env(unsafe { Jvmti::from_raw(h as *mut jvmti::jvmtiEnv) }));
    }
    Ok(())
}

/// Sets up the class-hook environment (its one capability and its one callback, `cb`) and the
/// early environment (callback `early`). Without the early environment (a JVM that cannot
/// retransform) the classes loaded before the agent started are not offered; that is logged
/// when it matters, and is not an error here.
pub fn set_up_hook_env(cb: jvmti::JvmtiClassFileLoadHookFn, early: jvmti::JvmtiClassFileLoadHookFn) -> Result<()> {
    let h = &HOOK_ENV.get().ok_or(jvmtiError::INVALID_ENVIRONMENT)?.0;
    let mut c = jvmti::jvmtiCapabilities::default();
    c.set_can_generate_all_class_hook_events(true);
    h.add_capabilities(&c)?;
    let mut t = jvmti::jvmtiEventCallbacks::default();
    t.ClassFileLoadHook = Some(cb);
    h.set_event_callbacks(t)?;
    match set_up_early_env(early) {
        Ok(()) => EARLY_READY.store(true, Ordering::Release),
        Err(e) => log::info!("the JVMTI environment for classes loaded before the agent started: {}", err_name(e)),
    }
    Ok(())
}

fn early_env() -> Result<&'static Jvmti> {
    EARLY_ENV.get().map(|e| &e.0).ok_or(jvmtiError::INVALID_ENVIRONMENT)
}

/// The early environment's capabilities: retransformation (so that the JVM calls its hook on
/// retransformation) and tags (its own, on the classes it offers; the main environment's tags
/// are object IDs and are not touched).
fn set_up_early_env(cb: jvmti::JvmtiClassFileLoadHookFn) -> Result<()> {
    let j = early_env()?;
    let p = j.get_potential_capabilities()?;
    if !p.can_retransform_classes() || !p.can_tag_objects() {
        return Err(jvmtiError::MUST_POSSESS_CAPABILITY);
    }
    let mut c = jvmti::jvmtiCapabilities::default();
    c.set_can_retransform_classes(true);
    c.set_can_tag_objects(true);
    c.set_can_generate_all_class_hook_events(p.can_generate_all_class_hook_events());
    c.set_can_retransform_any_class(p.can_retransform_any_class());
    j.add_capabilities(&c)?;
    let mut t = jvmti::jvmtiEventCallbacks::default();
    t.ClassFileLoadHook = Some(cb);
    j.set_event_callbacks(t)
}

/// Whether the early environment can offer classes (set up with its capabilities).
pub fn early_env_ready() -> bool {
    EARLY_READY.load(Ordering::Acquire)
}

/// Switches the early environment's class-file hook on or off.
pub fn set_early_hook(on: bool) -> Result<()> {
    // SAFETY: NULL thread = all threads.
    unsafe { early_env()?.set_event_notification_mode(on, jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, std::ptr::null_mut()) }
}

/// Whether RetransformClasses can be applied to `k` (false for primitive and array classes,
/// hidden classes, and the JVM's own unmodifiable classes).
pub fn is_modifiable(k: jclass) -> bool {
    // SAFETY: facade contract: `k` is a live class reference.
    unsafe { early_env().and_then(|j| j.is_modifiable_class(k)) }.unwrap_or(false)
}

/// The early environment's own tag on class `k` (0: none).
pub fn early_tag(k: jclass) -> Result<jlong> {
    // SAFETY: facade contract: `k` is a live class reference.
    unsafe { early_env()?.get_tag(k) }
}

pub fn set_early_tag(k: jclass, tag: jlong) -> Result<()> {
    // SAFETY: facade contract: `k` is a live class reference.
    unsafe { early_env()?.set_tag(k, tag) }
}

/// One RetransformClasses over `classes`, called in the early environment. The JVM either
/// applies every class or none.
pub fn early_retransform(classes: &[jclass]) -> Result<()> {
    if classes.is_empty() {
        return Ok(());
    }
    // SAFETY: facade contract: live class references.
    unsafe { early_env()?.retransform_classes(classes) }
}

/// Switches the agent's class hook on or off (the class-hook environment's only event).
pub fn set_agent_hook(on: bool) -> Result<()> {
    let h = &HOOK_ENV.get().ok_or(jvmtiError::INVALID_ENVIRONMENT)?.0;
    // SAFETY: NULL thread = all threads.
    unsafe { h.set_event_notification_mode(on, jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, std::ptr::null_mut()) }
}

/// The JNI function interception (`vm::jnihooks`), registered at start-up by the entry points.
static JNI_HOOKS: OnceLock<fn() -> std::result::Result<(), String>> = OnceLock::new();

pub fn set_jni_hooks(install: fn() -> std::result::Result<(), String>) {
    let _ = JNI_HOOKS.set(install);
}

/// Installs the JNI function hooks (allocations by native code, JNI global references), once a
/// room needs them.
pub fn install_jni_hooks() -> std::result::Result<(), String> {
    match JNI_HOOKS.get() {
        Some(install) => install(),
        None => Err("the JNI function hooks are not registered".into()),
    }
}

pub fn real_vm() -> Option<RealVm> {
    REAL_VM.get().copied()
}

/// The current thread's JNIEnv, if the thread is attached to the JVM.
pub fn current_jni() -> Option<*mut JNIEnv> {
    let real = REAL_VM.get()?;
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the real GetEnv with the real JavaVM and a valid out-pointer.
    let rc = unsafe { (real.get_env)(real.vm as *mut JavaVM, &mut p, jni::JNI_VERSION_1_2) };
    (rc == jni::JNI_OK && !p.is_null()).then_some(p as *mut JNIEnv)
}

/// The current thread's JNIEnv, attaching the thread (as a daemon) if it is not attached yet.
pub fn attach_current() -> Option<*mut JNIEnv> {
    if let Some(e) = current_jni() {
        return Some(e);
    }
    let real = REAL_VM.get()?;
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the real AttachCurrentThreadAsDaemon with the real JavaVM; NULL args are allowed.
    let rc = unsafe { (real.attach_daemon)(real.vm as *mut JavaVM, &mut p, std::ptr::null_mut()) };
    (rc == jni::JNI_OK && !p.is_null()).then_some(p as *mut JNIEnv)
}

thread_local! {
    /// Set while the current thread is attached only for one JVMPI call (see [`attached`]).
    static TEMPORARY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the current thread is attached to the JVM only for the JVMPI call it is making: an
/// agent's thread the JVM does not know. It is no JVMPI thread (no THREAD_START, no
/// THREAD_END) and the events it causes carry no `env_id`.
pub fn temporarily_attached() -> bool {
    TEMPORARY.with(|t| t.get())
}

/// Runs `f` in the current thread attached to the JVM: as it is when it is attached, otherwise
/// attached (as a daemon) for the call and detached after it. What the JVM allocates to attach
/// and detach the thread is the shim's own work, not reported. None if the thread cannot be
/// attached (the VM is going away).
pub fn attached<R>(f: impl FnOnce() -> R) -> Option<R> {
    if current_jni().is_some() {
        return Some(f());
    }
    let real = *REAL_VM.get()?;
    struct Detach(RealVm);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _i = Internal::enter();
            // SAFETY: the real DetachCurrentThread, on the thread attached below.
            unsafe { (self.0.detach)(self.0.vm as *mut JavaVM) };
            TEMPORARY.with(|t| t.set(false));
        }
    }
    TEMPORARY.with(|t| t.set(true));
    let mut p: *mut c_void = std::ptr::null_mut();
    let rc = {
        let _i = Internal::enter();
        // SAFETY: the real AttachCurrentThreadAsDaemon with the real JavaVM; NULL args are allowed.
        unsafe { (real.attach_daemon)(real.vm as *mut JavaVM, &mut p, std::ptr::null_mut()) }
    };
    if rc != jni::JNI_OK || p.is_null() {
        TEMPORARY.with(|t| t.set(false));
        return None;
    }
    let _detach = Detach(real);
    Some(f())
}

/// A JNI view of a JNIEnv that belongs to the current thread.
pub fn jni(env: *mut JNIEnv) -> JniEnv {
    // SAFETY: callers pass the current thread's JNIEnv (from a JVMTI callback or current_jni()).
    unsafe { JniEnv::from_raw(env) }
}

// ---- capabilities and callbacks ---------------------------------------------------------------

/// Adds every capability the shim may need. Done once, in the OnLoad (or live) phase; none of
/// these changes how the JVM runs until an event that uses it is enabled.
pub fn add_capabilities() -> std::result::Result<(), String> {
    let j = env().map_err(err_name)?;
    let potential = j.get_potential_capabilities().map_err(err_name)?;
    let mut c = jvmti::jvmtiCapabilities::default();
    // Keep only what this JVM can give (a live-phase start cannot have onload-only ones).
    macro_rules! take {
        ($($get:ident => $set:ident),* $(,)?) => { $( if potential.$get() { c.$set(true); } )* };
    }
    take!(
        can_tag_objects => set_can_tag_objects,
        can_generate_garbage_collection_events => set_can_generate_garbage_collection_events,
        can_generate_object_free_events => set_can_generate_object_free_events,
        can_get_source_file_name => set_can_get_source_file_name,
        can_get_line_numbers => set_can_get_line_numbers,
        can_suspend => set_can_suspend,
        can_get_current_thread_cpu_time => set_can_get_current_thread_cpu_time,
        can_get_thread_cpu_time => set_can_get_thread_cpu_time,
        can_signal_thread => set_can_signal_thread,
        can_generate_all_class_hook_events => set_can_generate_all_class_hook_events,
        can_get_monitor_info => set_can_get_monitor_info,
        can_get_owned_monitor_info => set_can_get_owned_monitor_info,
        can_get_current_contended_monitor => set_can_get_current_contended_monitor,
        can_retransform_classes => set_can_retransform_classes,
        can_retransform_any_class => set_can_retransform_any_class,
        can_generate_vm_object_alloc_events => set_can_generate_vm_object_alloc_events,
        can_get_bytecodes => set_can_get_bytecodes,
        can_get_constant_pool => set_can_get_constant_pool,
        can_generate_compiled_method_load_events => set_can_generate_compiled_method_load_events,
        can_generate_monitor_events => set_can_generate_monitor_events,
        can_set_native_method_prefix => set_can_set_native_method_prefix,
    );
    j.add_capabilities(&c).map_err(err_name)
}

pub fn set_callbacks(cb: jvmti::jvmtiEventCallbacks) -> Result<()> {
    env()?.set_event_callbacks(cb)
}

static WANTED: [AtomicU32; 100] = [const { AtomicU32::new(0) }; 100];
static EVENT_SWITCH: Mutex<()> = Mutex::new(());

fn set_mode(ev: jvmtiEvent, on: bool) -> Result<()> {
    let j = env()?;
    // SAFETY: a NULL thread means "all threads"; the event number comes from the JVMTI constants.
    unsafe { j.set_event_notification_mode(on, ev, std::ptr::null_mut()) }
}

/// Asks for a JVMTI event; the JVM is told to send it when the first asker arrives.
pub fn want(ev: jvmtiEvent) -> Result<()> {
    let _g = EVENT_SWITCH.lock().unwrap_or_else(|p| p.into_inner());
    let n = &WANTED[ev as usize];
    if n.load(Ordering::Relaxed) == 0 {
        set_mode(ev, true)?;
    }
    n.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Gives a JVMTI event back; the JVM stops sending it when the last asker leaves.
pub fn unwant(ev: jvmtiEvent) {
    let _g = EVENT_SWITCH.lock().unwrap_or_else(|p| p.into_inner());
    let n = &WANTED[ev as usize];
    if n.load(Ordering::Relaxed) == 0 {
        return;
    }
    if n.fetch_sub(1, Ordering::Relaxed) == 1 {
        if let Err(e) = set_mode(ev, false) {
            log::debug!("disabling JVMTI event {ev}: {}", err_name(e));
        }
    }
}

/// Before the shim takes the JVM down on the agent's behalf (ProfilerExit): the collection
/// events are switched off, so that no new GC bracket starts. (ObjectFree is left on: switching
/// it off makes the calling thread post the pending ObjectFree events, which on JDK 17 can
/// deadlock with the Service Thread doing the same, just as VM death's own flush can.)
pub fn silence_for_exit() {
    let _g = EVENT_SWITCH.lock().unwrap_or_else(|p| p.into_inner());
    for ev in [jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_START, jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH] {
        if WANTED[ev as usize].swap(0, Ordering::Relaxed) > 0 {
            if let Err(e) = set_mode(ev, false) {
                log::debug!("disabling JVMTI event {ev} for the exit: {}", err_name(e));
            }
        }
    }
}

pub fn phase() -> Result<jvmti::jvmtiPhase> {
    env()?.get_phase()
}

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

// ---- tags -----------------------------------------------------------------------------------------

pub fn get_tag(obj: jobject) -> Result<jlong> {
    // SAFETY: facade contract: `obj` is a live JNI reference.
    unsafe { env()?.get_tag(obj) }
}

pub fn set_tag(obj: jobject, tag: jlong) -> Result<()> {
    // SAFETY: facade contract: `obj` is a live JNI reference.
    unsafe { env()?.set_tag(obj, tag) }
}

/// The object carrying `tag`, as a local reference of the current thread.
pub fn object_with_tag(tag: jlong) -> Result<Option<jobject>> {
    let (objs, _) = env()?.get_objects_with_tags(&[tag])?;
    Ok(objs.into_iter().next())
}

/// Every object the main environment has tagged, with its tag, handed to `f` as a local
/// reference (deleted after `f` returns). JVMTI lists objects only by exact tag values, scanning
/// its whole tag map once per call and comparing each entry with every value asked for; so a
/// second, short-lived environment tags every object of the heap with the same value 1 (one
/// heap iteration), lists them all with one `GetObjectsWithTags`, and the main environment's
/// tag of each is read. Returns how many tagged objects were found. Cost: about one heap
/// iteration with tagging plus one `GetTag` per object of the heap (docs/benchmarks.md, "Object IDs").
pub fn each_tagged_object(jni: &Jni, mut f: impl FnMut(jlong, jobject)) -> Result<usize> {
    unsafe extern "system" fn mark(_ct: jlong, _size: jlong, tag: *mut jlong, _len: jint, ud: *mut c_void) -> jint {
        // `ud` is owned by the enclosing call and alive for the iteration.
        // SAFETY: JVMTI passes the tag slot of the object being visited; `ud` is the counter.
        unsafe {
            *tag = 1;
            *(ud as *mut jlong) += 1;
        }
        0
    }
    let real = REAL_VM.get().copied().ok_or(jvmtiError::INVALID_ENVIRONMENT)?;
    let main = env()?;
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the JVM's own GetEnv with its own JavaVM and a valid out-pointer.
    if unsafe { (real.get_env)(real.vm as *mut JavaVM, &mut p, jvmti::JVMTI_VERSION_1_2) } != jni::JNI_OK || p.is_null() {
        return Err(jvmtiError::INVALID_ENVIRONMENT);
    }
    // It is disposed of below and used by this call only.
    // SAFETY: `p` is a jvmtiEnv* just returned by GetEnv.
    let b = unsafe { Jvmti::from_raw(p as *mut jvmti::jvmtiEnv) };
    let r = (|| {
        let mut c = jvmti::jvmtiCapabilities::default();
        c.set_can_tag_objects(true);
        b.add_capabilities(&c)?;
        let cb = jvmti::jvmtiHeapCallbacks { heap_iteration_callback: Some(mark), ..Default::default() };
        let mut marked: jlong = 0;
        // SAFETY: the callback touches only the tag slot JVMTI hands it and the counter.
        unsafe { b.iterate_through_heap(0, std::ptr::null_mut(), &cb, &mut marked as *mut jlong as *const c_void)? };
        // One local reference per object: a frame with room for all of them (objects made
        // since the iteration are not tagged in the listing environment).
        let room = i32::try_from(marked.saturating_add(64)).unwrap_or(i32::MAX);
        jni.framed_with(room, || {
            let (objs, _) = {
                let _i = Internal::enter();
                b.get_objects_with_tags(&[1])?
            };
            let mut n = 0;
            for o in objs {
                // SAFETY: `o` is a local reference JVMTI just made in this thread.
                if let Ok(t) = unsafe { main.get_tag(o) } {
                    if t != 0 {
                        f(t, o);
                        n += 1;
                    }
                }
                jni.delete_local_ref(o);
            }
            Ok(n)
        })
    })();
    // SAFETY: the environment has no callbacks and no event enabled; nothing else knows it.
    if let Err(e) = unsafe { b.dispose_environment() } {
        log::debug!("disposing of the listing environment: {}", err_name(e));
    }
    r
}

/// Counts the live objects and their bytes with one heap iteration.
pub fn count_heap() -> Result<(jlong, jlong)> {
    unsafe extern "system" fn count(_ct: jlong, size: jlong, _tp: *mut jlong, _len: jint, ud: *mut c_void) -> jint {
        // SAFETY: `ud` is the `(jlong, jlong)` owned by the enclosing call, alive for the iteration.
        let acc = unsafe { &mut *(ud as *mut (jlong, jlong)) };
        acc.0 += 1;
        acc.1 += size;
        0
    }
    let mut acc: (jlong, jlong) = (0, 0);
    let cb = jvmti::jvmtiHeapCallbacks { heap_iteration_callback: Some(count), ..Default::default() };
    // SAFETY: callbacks and user data outlive the synchronous iteration.
    unsafe { env()?.iterate_through_heap(0, std::ptr::null_mut(), &cb, &mut acc as *mut _ as *const c_void)? };
    Ok(acc)
}

pub fn force_gc() -> Result<()> {
    env()?.force_garbage_collection()
}

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
fn made_locals(n: usize) {
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

// ---- threads ------------------------------------------------------------------------------------

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

pub fn current_thread() -> Result<jthread> {
    env()?.get_current_thread()
}

/// Every live thread, as local references of the current thread (see [`loaded_classes`]).
pub fn all_threads() -> Result<Vec<jthread>> {
    let all = env()?.get_all_threads()?;
    made_locals(all.len());
    Ok(all)
}

/// The thread's name alone (one JVMTI call, no group lookups).
pub fn thread_name(t: jthread) -> Result<String> {
    let j = env()?;
    // SAFETY: facade contract.
    let info = unsafe { j.get_thread_info(t)? };
    if let Some(jni) = Jni::current() {
        jni.delete_local_ref(info.context_class_loader);
        jni.delete_local_ref(info.thread_group);
    }
    Ok(info.name.unwrap_or_default())
}

/// (thread name, group name, parent group name).
pub fn thread_names(t: jthread) -> Result<(String, String, String)> {
    let j = env()?;
    let jni = Jni::current();
    let delete = |r: jobject| {
        if let Some(jni) = &jni {
            jni.delete_local_ref(r)
        }
    };
    // The group handles are local references of this thread, deleted once read.
    // SAFETY: facade contract; the handles come from the JVM.
    unsafe {
        let info = j.get_thread_info(t)?;
        delete(info.context_class_loader);
        let name = info.name.unwrap_or_default();
        let (mut group, mut parent) = (String::new(), String::new());
        if !info.thread_group.is_null() {
            let g = j.get_thread_group_info(info.thread_group);
            delete(info.thread_group);
            let g = g?;
            group = g.name.unwrap_or_default();
            if !g.parent.is_null() {
                let p = j.get_thread_group_info(g.parent);
                delete(g.parent);
                parent = p?.name.unwrap_or_default();
            }
        }
        Ok((name, group, parent))
    }
}

pub fn thread_state(t: jthread) -> Result<jint> {
    // SAFETY: facade contract.
    unsafe { env()?.get_thread_state(t) }
}

pub fn thread_cpu_time(t: jthread) -> Result<jlong> {
    // SAFETY: facade contract.
    unsafe { env()?.get_thread_cpu_time(t) }
}

pub fn current_thread_cpu_time() -> Result<jlong> {
    env()?.get_current_thread_cpu_time()
}

pub fn suspend(t: jthread) -> Result<()> {
    // SAFETY: facade contract.
    unsafe { env()?.suspend_thread(t) }
}

pub fn resume(t: jthread) -> Result<()> {
    // SAFETY: facade contract.
    unsafe { env()?.resume_thread(t) }
}

pub fn stack_trace(t: jthread, depth: jint) -> Result<Vec<(jmethodID, jlong)>> {
    // SAFETY: facade contract.
    let frames = unsafe { env()?.get_stack_trace(t, 0, depth)? };
    Ok(frames.into_iter().map(|f| (f.method, f.location)).collect())
}

pub type AgentThreadFn = unsafe extern "system" fn(*mut jvmti::jvmtiEnv, *mut JNIEnv, *mut c_void);

pub fn run_agent_thread(t: jthread, f: AgentThreadFn, arg: *const c_void, priority: jint) -> Result<()> {
    // SAFETY: `t` is a new, unstarted java.lang.Thread; `f` is a shim function that accepts `arg`.
    unsafe { env()?.run_agent_thread(t, f, arg, priority) }
}

// ---- system properties ------------------------------------------------------------------------

pub fn system_property(name: &str) -> Option<String> {
    env().ok()?.get_system_property(name).ok()
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

pub fn object_size(obj: jobject) -> Result<jlong> {
    // SAFETY: facade contract.
    unsafe { env()?.get_object_size(obj) }
}

// ---- JNI, in the current thread ---------------------------------------------------------------

/// The current thread's state that an event's hot path needs, in one thread-local (one
/// address computation): its flags ([`INTERNAL`], [`ANNOUNCED`]) and its in-flight counter.
struct Here {
    flags: std::cell::Cell<u8>,
    counter: std::cell::Cell<*const AtomicUsize>,
}

thread_local! {
    static HERE: Here = const { Here { flags: std::cell::Cell::new(0), counter: std::cell::Cell::new(std::ptr::null()) } };
}

/// The current thread's flags and its counter (see [`set_counter_here`]; None until set):
/// one thread-local read.
#[inline]
pub fn here_and_counter() -> (u8, Option<&'static AtomicUsize>) {
    HERE.with(|h| {
        let c = h.counter.get();
        // SAFETY: only `&'static` counters are ever stored (see `set_counter_here`).
        (h.flags.get(), unsafe { c.as_ref() })
    })
}

/// Gives the current thread a counter of its own (the gate's count of the events it is
/// delivering, see `events::send_fast`), or takes it away (None).
pub fn set_counter_here(c: Option<&'static AtomicUsize>) {
    HERE.with(|h| h.counter.set(c.map_or(std::ptr::null(), |c| c as *const AtomicUsize)));
}

/// Registers the process for [`heavy_barrier`] (Linux `membarrier`, private expedited). False
/// when the kernel does not offer it.
pub fn register_heavy_barrier() -> bool {
    const QUERY: libc::c_int = 0;
    const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
    // SAFETY: the membarrier system call with plain integer arguments; it touches no memory.
    unsafe {
        let cmds = libc::syscall(libc::SYS_membarrier, QUERY, 0);
        cmds >= 0
            && cmds & PRIVATE_EXPEDITED as libc::c_long != 0
            && libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0) == 0
    }
}

/// A full memory barrier in every running thread of the process (after
/// [`register_heavy_barrier`] said true): the other half of the compiler-only fences on the
/// event hot path. False if it failed.
pub fn heavy_barrier() -> bool {
    const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    // SAFETY: as in `register_heavy_barrier`.
    unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0) == 0 }
}

/// The thread is inside a JNI call the shim makes for itself.
pub const INTERNAL: u8 = 1;
/// The thread has been registered and (if the agent wants it) announced to the agent: events
/// sent in it need no THREAD_START first (kept by the threads room).
pub const ANNOUNCED: u8 = 2;
/// The thread has method activations whose METHOD_ENTRY was not sent (entered before it could
/// be announced): its method events take the general path, which holds back their exits
/// (kept by the methods room).
pub const UNSENT: u8 = 4;

/// Sets or clears [`UNSENT`] for the current thread.
pub fn set_unsent_here(on: bool) {
    HERE.with(|h| h.flags.set(if on { h.flags.get() | UNSENT } else { h.flags.get() & !UNSENT }));
}

/// The current thread's flags ([`INTERNAL`], [`ANNOUNCED`]): one thread-local read.
#[inline]
pub fn here() -> u8 {
    HERE.with(|h| h.flags.get())
}

/// Sets or clears the current thread's [`ANNOUNCED`] flag.
pub fn set_announced_here(on: bool) {
    HERE.with(|h| h.flags.set(if on { h.flags.get() | ANNOUNCED } else { h.flags.get() & !ANNOUNCED }));
}

fn set_internal(on: bool) -> bool {
    HERE.with(|h| {
        let old = h.flags.get();
        h.flags.set(if on { old | INTERNAL } else { old & !INTERNAL });
        old & INTERNAL != 0
    })
}

/// Marks JNI calls the shim makes for itself, so that neither the JNI hooks nor the allocation
/// tracker report what they allocate: the shim's own work is never charged to the application.
struct Internal(bool);
impl Internal {
    fn enter() -> Internal {
        Internal(set_internal(true))
    }
}
impl Drop for Internal {
    fn drop(&mut self) {
        set_internal(self.0);
    }
}

/// Runs `f` (a call into the agent) as the agent's own work, even when the shim delivers an
/// event from inside one of its JNI calls (a class linked by the shim posts ClassPrepare):
/// what the agent's handler allocates is reported as usual.
pub fn as_agent<R>(f: impl FnOnce() -> R) -> R {
    let saved = set_internal(false);
    let r = f();
    if saved {
        set_internal(true);
    }
    r
}

/// Whether the current thread is inside a JNI call the shim makes for itself.
pub fn shim_internal() -> bool {
    here() & INTERNAL != 0
}

/// JNI calls made by the shim in the current thread. Built from the current thread's JNIEnv;
/// not Send, like the JNIEnv itself.
pub struct Jni(JniEnv, *mut JNIEnv);

impl Jni {
    /// The JNI of the current thread, if it is attached.
    pub fn current() -> Option<Jni> {
        current_jni().map(Jni::of)
    }
    /// `env` must be the current thread's JNIEnv (a JVMTI callback argument or current_jni()).
    pub fn of(env: *mut JNIEnv) -> Jni {
        Jni(jni(env), env)
    }
    pub fn raw(&self) -> *mut JNIEnv {
        self.1
    }
    fn clear_exception(&self) -> bool {
        let had = self.0.exception_check();
        if had {
            self.0.exception_clear();
        }
        had
    }
    pub fn new_global_ref(&self, obj: jobject) -> jobject {
        let _i = Internal::enter();
        // SAFETY: facade contract: `obj` is a live reference.
        unsafe { self.0.new_global_ref(obj) }
    }
    pub fn delete_global_ref(&self, obj: jobject) {
        let _i = Internal::enter();
        // SAFETY: `obj` is a global reference the shim made and drops exactly once.
        unsafe { self.0.delete_global_ref(obj) }
    }
    /// Makes room for `n` more local references in the current frame. Asking for more than the
    /// JVM allows (`MaxJNILocalCapacity`) makes it throw; that is cleared (the references are
    /// there anyway, and only `-Xcheck:jni` counts).
    pub fn ensure_local_capacity(&self, n: usize) {
        let n = (n + 32).min(60_000) as jint;
        if self.0.ensure_local_capacity(n).is_err() {
            self.clear_exception();
        }
    }
    /// Runs `f` in a new frame of local references: those made meanwhile in this thread (by JNI
    /// or JVMTI) are freed when it returns. For the shim's own threads, which never return to
    /// the JVM and so never have their references freed otherwise.
    pub fn framed<R>(&self, f: impl FnOnce() -> R) -> R {
        self.framed_with(32, f)
    }
    /// [`Jni::framed`] with room for `capacity` local references.
    pub fn framed_with<R>(&self, capacity: i32, f: impl FnOnce() -> R) -> R {
        // SAFETY: the frame pushed here is popped below, on this thread, with no result.
        let pushed = unsafe { self.0.push_local_frame_raw(capacity.max(16)) }.is_ok();
        if !pushed {
            self.clear_exception();
        }
        let r = f();
        if pushed {
            // SAFETY: pops the frame pushed above.
            unsafe { self.0.pop_local_frame_raw(std::ptr::null_mut()) };
        }
        r
    }
    pub fn delete_local_ref(&self, obj: jobject) {
        if !obj.is_null() {
            // SAFETY: `obj` is a local reference of this thread that the caller no longer uses.
            unsafe { self.0.delete_local_ref(obj) }
        }
    }
    /// An instance of `k` made without a constructor (JNI `AllocObject`), as the shim's own
    /// work (never reported); None (exception cleared) if the JVM refuses.
    pub fn alloc_object(&self, k: jclass) -> Option<jobject> {
        let _i = Internal::enter();
        // SAFETY: facade contract: `k` is a live class reference.
        let o = unsafe { self.0.alloc_object(k) };
        if o.is_none() {
            self.clear_exception();
        }
        o
    }
    /// The method of a `java.lang.reflect.Method` or `Constructor` (JNI `FromReflectedMethod`).
    #[allow(clippy::wrong_self_convention, reason = "named after the JNI function")]
    pub fn from_reflected_method(&self, m: jobject) -> Option<jmethodID> {
        // SAFETY: facade contract: `m` is a live Method or Constructor reference.
        let id = unsafe { self.0.from_reflected_method(m) };
        (!id.is_null()).then_some(id)
    }
    pub fn object_class(&self, obj: jobject) -> jclass {
        // SAFETY: facade contract.
        unsafe { self.0.get_object_class(obj) }
    }
    fn method(&self, class: &str, name: &str, sig: &str, is_static: bool) -> Option<(jclass, jmethodID)> {
        let _i = Internal::enter();
        let k = self.0.find_class(class)?;
        // SAFETY: `k` is a live local class reference just returned by FindClass.
        let m = unsafe {
            if is_static { self.0.get_static_method_id(k, name, sig) } else { self.0.get_method_id(k, name, sig) }
        };
        if m.is_none() {
            self.clear_exception();
        }
        m.map(|m| (k, m))
    }
    /// The ID of a method of class `k` (a live reference); None (exception cleared) if absent.
    pub fn method_id_in(&self, k: jclass, name: &str, sig: &str, is_static: bool) -> Option<jmethodID> {
        let _i = Internal::enter();
        // SAFETY: `k` is a live class reference.
        let m = unsafe {
            if is_static { self.0.get_static_method_id(k, name, sig) } else { self.0.get_method_id(k, name, sig) }
        };
        if m.is_none() {
            self.clear_exception();
        }
        m
    }
    /// The ID of a method of the class named `class` (internal form).
    pub fn method_id(&self, class: &str, name: &str, sig: &str, is_static: bool) -> Option<jmethodID> {
        let (k, m) = self.method(class, name, sig, is_static)?;
        self.delete_local_ref(k);
        Some(m)
    }
    /// Whether `t` is a virtual thread (JDK 21+; always false before).
    pub fn is_virtual_thread(&self, t: jthread) -> bool {
        // SAFETY: facade contract: `t` is a live Thread reference.
        unsafe { self.0.is_virtual_thread(t) }.unwrap_or(false)
    }
    /// A weak global reference the shim keeps for itself.
    pub fn new_weak(&self, obj: jobject) -> jobject {
        let _i = Internal::enter();
        // SAFETY: facade contract: `obj` is a live reference.
        unsafe { self.0.new_weak_global_ref(obj) }
    }
    /// A local reference to what a (weak) global reference names; NULL once a weak one's
    /// object has been collected.
    pub fn new_local_ref(&self, r: jobject) -> jobject {
        // SAFETY: facade contract: `r` is a live (weak) global or local reference.
        unsafe { self.0.new_local_ref(r) }
    }
    pub fn delete_weak(&self, w: jobject) {
        let _i = Internal::enter();
        // SAFETY: `w` is a weak global reference the shim made and drops exactly once.
        unsafe { self.0.delete_weak_global_ref(w) }
    }
    /// Whether `obj` is a local reference of this thread, a global or a weak global reference.
    /// HotSpot answers `GetObjectRefType` by looking the address up in its handle blocks and
    /// storages (never reading through it), so garbage gives JNIInvalidRefType, no crash.
    pub fn is_valid_ref(&self, obj: jobject) -> bool {
        let _i = Internal::enter();
        // SAFETY: GetObjectRefType only looks the handle's address up (see above).
        let t = unsafe { self.0.get_object_ref_type(obj) };
        t != jvmti_bindings::sys::jni::jobjectRefType::JNIInvalidRefType
    }
    pub fn is_same(&self, a: jobject, b: jobject) -> bool {
        // SAFETY: facade contract: live (or weak) references.
        unsafe { self.0.is_same_object(a, b) }
    }
    /// Links a loaded class without initialising it: HotSpot links a class before listing its
    /// fields (`Class.getDeclaredFields0(true)`, the public ones only, so that little is
    /// allocated; `getDeclaredFields()` where that private method is missing). Errors (a class
    /// that fails verification) are cleared and logged.
    pub fn link_class(&self, k: jclass) {
        let _i = Internal::enter();
        let (c, m, args) = match self.method("java/lang/Class", "getDeclaredFields0", "(Z)[Ljava/lang/reflect/Field;", false) {
            Some((c, m)) => (c, m, vec![jni::jvalue { z: 1 }]),
            None => match self.method("java/lang/Class", "getDeclaredFields", "()[Ljava/lang/reflect/Field;", false) {
                Some((c, m)) => (c, m, Vec::new()),
                None => return,
            },
        };
        // SAFETY: `k` is a live Class reference; `m` is one of the Class methods above, `args` its arguments.
        let r = unsafe { self.0.call_object_method(k, m, &args) };
        let failed = self.clear_exception();
        self.delete_local_ref(r);
        self.delete_local_ref(c);
        if failed {
            log::info!("linking {} failed", class_signature(k).unwrap_or_default());
        }
    }
    /// `Class.getComponentType()` of an array class.
    pub fn component_type(&self, array_class: jclass) -> Option<jclass> {
        let _i = Internal::enter();
        let (k, m) = self.method("java/lang/Class", "getComponentType", "()Ljava/lang/Class;", false)?;
        // SAFETY: `array_class` is a live Class reference; `m` is Class.getComponentType.
        let r = unsafe { self.0.call_object_method(array_class, m, &[]) };
        self.delete_local_ref(k);
        (!self.clear_exception() && !r.is_null()).then_some(r)
    }
    /// The native thread address HotSpot keeps in `java.lang.Thread.eetop` (0 when the thread
    /// has not started or has ended).
    pub fn thread_eetop(&self, thread: jthread) -> Option<jlong> {
        let _i = Internal::enter();
        let k = self.0.find_class("java/lang/Thread")?;
        // JNI ignores Java access control for fields, so the private `eetop` can be read.
        // SAFETY: `k` is java.lang.Thread and `thread` a live Thread reference.
        let v = unsafe {
            let f = self.0.get_field_id(k, "eetop", "J");
            self.delete_local_ref(k);
            f.map(|f| self.0.get_long_field(thread, f))
        };
        self.clear_exception();
        v
    }
    /// `Runtime.getRuntime().totalMemory()`.
    pub fn total_memory(&self) -> Option<jlong> {
        let _i = Internal::enter();
        let (k, get) = self.method("java/lang/Runtime", "getRuntime", "()Ljava/lang/Runtime;", true)?;
        let (k2, total) = self.method("java/lang/Runtime", "totalMemory", "()J", false)?;
        // SAFETY: static Runtime.getRuntime() then Runtime.totalMemory() on its result.
        let v = unsafe {
            let rt = self.0.call_static_object_method(k, get, &[]);
            let v = if rt.is_null() || self.0.exception_check() { 0 } else { self.0.call_long_method(rt, total, &[]) };
            self.delete_local_ref(rt);
            v
        };
        self.delete_local_ref(k);
        self.delete_local_ref(k2);
        (!self.clear_exception()).then_some(v)
    }
    /// A new, unstarted `java.lang.Thread` with this name, in the JVM's "system" thread group
    /// (where the JVM's own service threads are) when it can be found.
    pub fn new_thread(&self, name: &str) -> Option<jthread> {
        let _i = Internal::enter();
        let system = env().ok().and_then(|j| j.get_top_thread_groups().ok()).and_then(|g| {
            g.iter().skip(1).for_each(|&o| self.delete_local_ref(o));
            g.into_iter().next()
        });
        let s = self.0.new_string_utf(name)?;
        let t = match system {
            Some(g) => {
                let (k, init) = self.method("java/lang/Thread", "<init>", "(Ljava/lang/ThreadGroup;Ljava/lang/String;)V", false)?;
                // SAFETY: Thread(ThreadGroup, String) constructor with a live group and String.
                let t = unsafe { self.0.new_object(k, init, &[jni::jvalue { l: g }, jni::jvalue { l: s }]) };
                self.delete_local_ref(g);
                self.delete_local_ref(k);
                t
            }
            None => {
                let (k, init) = self.method("java/lang/Thread", "<init>", "(Ljava/lang/String;)V", false)?;
                // SAFETY: Thread(String) constructor with a live String.
                let t = unsafe { self.0.new_object(k, init, &[jni::jvalue { l: s }]) };
                self.delete_local_ref(k);
                t
            }
        };
        self.delete_local_ref(s);
        if self.clear_exception() {
            return None;
        }
        t
    }
    /// Whether the JVM's shutdown has begun (its shutdown hooks run, or have): then
    /// `Runtime.removeShutdownHook` throws IllegalStateException. A `System.exit` now would wait
    /// for the exit under way for ever.
    pub fn shutdown_in_progress(&self) -> bool {
        let _i = Internal::enter();
        let Some((k, get)) = self.method("java/lang/Runtime", "getRuntime", "()Ljava/lang/Runtime;", true) else {
            return false;
        };
        let remove = self.method_id_in(k, "removeShutdownHook", "(Ljava/lang/Thread;)Z", false);
        let ise = self.0.find_class("java/lang/IllegalStateException");
        let me = current_thread().ok().filter(|t| !t.is_null());
        let mut in_progress = false;
        if let (Some(remove), Some(ise), Some(me)) = (remove, ise, me) {
            // Runtime.getRuntime(), then removeShutdownHook(the current thread, which is no hook:
            // false, or IllegalStateException once shutdown has begun).
            // SAFETY: method IDs and class looked up above with these signatures.
            unsafe {
                let rt = self.0.call_static_object_method(k, get, &[]);
                if !rt.is_null() && !self.0.exception_check() {
                    self.0.call_boolean_method(rt, remove, &[jni::jvalue { l: me }]);
                    if let Some(t) = self.0.exception_occurred() {
                        self.0.exception_clear();
                        in_progress = self.0.is_instance_of(t, ise);
                        self.delete_local_ref(t);
                    }
                }
                self.delete_local_ref(rt);
            }
        }
        self.clear_exception();
        for r in [ise, me].into_iter().flatten() {
            self.delete_local_ref(r);
        }
        self.delete_local_ref(k);
        in_progress
    }
    /// `System.exit(code)`; returns only if it could not be called.
    pub fn system_exit(&self, code: jint) {
        if let Some((k, m)) = self.method("java/lang/System", "exit", "(I)V", true) {
            // SAFETY: static System.exit(int).
            unsafe { self.0.call_static_void_method(k, m, &[jni::jvalue { i: code }]) };
            self.clear_exception();
        }
    }
}

// ---- class definition and retransformation ----------------------------------------------------

/// Retransforms every modifiable loaded class (in batches; a batch that fails is retried class
/// by class, and classes that still fail are logged and skipped). Returns how many were done.
pub fn retransform_all() -> usize {
    let Ok(j) = env() else { return 0 };
    let Ok(all) = loaded_classes() else { return 0 };
    let jni = Jni::current();
    // SAFETY: facade contract: local class references just listed by the JVM.
    let modifiable: Vec<jclass> = all.iter().copied().filter(|&k| unsafe { j.is_modifiable_class(k) }.unwrap_or(false)).collect();
    let mut done = 0;
    for batch in modifiable.chunks(64) {
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
    if let Some(jni) = jni {
        all.into_iter().for_each(|k| jni.delete_local_ref(k));
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

// ---- the JNI function table ------------------------------------------------------------------

/// A copy of the JVM's JNI function table, with room for the newest layout.
pub fn jni_table_copy() -> Result<Box<jni::JNINativeInterface_>> {
    let j = env()?;
    let t = j.get_jni_function_table()?;
    let len = t.known_byte_len().ok_or(jvmtiError::NOT_AVAILABLE)?;
    let size = std::mem::size_of::<jni::JNINativeInterface_>();
    if len > size {
        return Err(jvmtiError::NOT_AVAILABLE);
    }
    let mut buf = vec![0u8; size];
    // SAFETY: the JVM's table has `len` readable bytes (audited size for this JDK).
    unsafe { std::ptr::copy_nonoverlapping(t.as_ptr() as *const u8, buf.as_mut_ptr(), len) };
    // Slots past this JDK's table stay as the JVM's (unused by it); fill them from slot 0 so no
    // pointer is left zero in the typed copy.
    // `buf` holds one full JNINativeInterface_: slots copied from the JVM's table or padded.
    // SAFETY: every pointer-sized slot of `buf` is a JVM function pointer (or reserved NULL).
    unsafe {
        let words = buf.as_mut_ptr() as *mut usize;
        let first_fn = *words.add(4);
        for i in len / 8..size / 8 {
            *words.add(i) = first_fn;
        }
        Ok(Box::new(std::ptr::read(buf.as_ptr() as *const jni::JNINativeInterface_)))
    }
}

/// Installs a JNI function table in every current and future JNIEnv (the JVM copies it).
pub fn jni_table_install(t: &jni::JNINativeInterface_) -> Result<()> {
    // SAFETY: `t` is a complete table built from the JVM's own.
    unsafe { env()?.set_jni_function_table(t) }
}

// ---- JNI natives found in the legacy agent's library (the natives room) ----------------------

impl Jni {
    /// `RegisterNatives` with names and signatures known only at run time (modified UTF-8
    /// strings). On failure the pending exception is cleared and named in the error.
    pub fn register_natives_named(
        &self,
        k: jclass,
        natives: &[(CString, CString, *mut c_void)],
    ) -> std::result::Result<(), String> {
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
            (r, thrown) => Err(format!(
                "RegisterNatives returned {}{}",
                r.err().unwrap_or(0),
                thrown.map(|t| format!(" and threw {t}")).unwrap_or_default()
            )),
        }
    }
}

// ---- compiled code and Java monitors ------------------------------------------------------------

/// JVMTI `GenerateEvents(COMPILED_METHOD_LOAD)`: CompiledMethodLoad for every method compiled
/// now, in the calling thread, before this returns.
pub fn generate_compiled_method_loads() -> Result<()> {
    env()?.generate_events(jvmti::JVMTI_EVENT_COMPILED_METHOD_LOAD)
}

/// The thread that owns the monitor of `obj` (a local reference), if any (JVMTI
/// `GetObjectMonitorUsage`).
pub fn monitor_owner(obj: jobject) -> Result<Option<jthread>> {
    // SAFETY: facade contract: `obj` is a live reference.
    let u = unsafe { env()?.get_object_monitor_usage(obj)? };
    if let Some(jni) = Jni::current() {
        u.waiters.iter().chain(u.notify_waiters.iter()).for_each(|&t| jni.delete_local_ref(t));
    }
    Ok((!u.owner.is_null()).then_some(u.owner))
}

// ---- heap, object and monitor dumps (the dumps room) ------------------------------------------

/// Walks the heap graph with JVMTI `FollowReferences` (from the roots, or from `initial`). The
/// callbacks run in one VM operation, at a safepoint, before this returns.
///
/// # Safety
/// `cb`'s functions must accept `user_data` for the whole (synchronous) walk and may only use
/// the callback-safe JVMTI functions.
pub unsafe fn follow_references(initial: jobject, cb: &jvmti::jvmtiHeapCallbacks, user_data: *mut c_void) -> Result<()> {
    // SAFETY: the caller's contract; `initial` is NULL or a live reference.
    unsafe { env()?.follow_references(0, std::ptr::null_mut(), initial, cb, user_data as *const c_void) }
}

/// Suspends the listed threads (JVMTI `SuspendThreadList`); one result per thread.
pub fn suspend_list(threads: &[jthread]) -> Result<Vec<Error>> {
    // SAFETY: facade contract: live Thread references.
    unsafe { env()?.suspend_thread_list(threads) }
}

/// Resumes the listed threads (JVMTI `ResumeThreadList`).
pub fn resume_list(threads: &[jthread]) -> Result<Vec<Error>> {
    // SAFETY: facade contract: live Thread references.
    unsafe { env()?.resume_thread_list(threads) }
}

/// The direct superinterfaces of a class or interface (local references).
pub fn interfaces(k: jclass) -> Result<Vec<jclass>> {
    // SAFETY: facade contract.
    unsafe { env()?.get_implemented_interfaces(k) }
}

/// Number of fields (static and instance) a class declares, as `GetClassFields` lists them.
pub fn field_count(k: jclass) -> Result<usize> {
    // SAFETY: facade contract.
    unsafe { env()?.get_class_fields(k) }.map(|v| v.len())
}

/// (owner, entry count, threads waiting to enter, threads waiting to be notified) of an
/// object's monitor (JVMTI `GetObjectMonitorUsage`); threads are local references.
pub fn monitor_usage(obj: jobject) -> Result<(jthread, jint, Vec<jthread>, Vec<jthread>)> {
    // SAFETY: facade contract: `obj` is a live reference.
    let u = unsafe { env()?.get_object_monitor_usage(obj)? };
    Ok((u.owner, u.entry_count, u.waiters, u.notify_waiters))
}

/// The monitors a thread owns (local references).
pub fn owned_monitors(t: jthread) -> Result<Vec<jobject>> {
    // SAFETY: facade contract: `t` is a live Thread reference.
    unsafe { env()?.get_owned_monitor_info(t) }
}

/// The monitor a thread is blocked entering or waiting on, if any (a local reference).
pub fn contended_monitor(t: jthread) -> Result<Option<jobject>> {
    // SAFETY: facade contract: `t` is a live Thread reference.
    unsafe { env()?.get_current_contended_monitor(t) }.map(|o| (!o.is_null()).then_some(o))
}

impl Jni {
    /// The superclass of a class (NULL for java.lang.Object, interfaces and primitive types).
    pub fn superclass(&self, k: jclass) -> jclass {
        // SAFETY: facade contract: `k` is a live class reference.
        unsafe { self.0.get_superclass(k) }.unwrap_or(std::ptr::null_mut())
    }
    /// The length of a live array.
    pub fn array_length(&self, array: jobject) -> jint {
        // SAFETY: facade contract: `array` is a live array reference.
        unsafe { self.0.get_array_length(array) }
    }
}

// ---- method events (the methods room) ------------------------------------------------------------

/// The method running at `depth` frames below the current thread's top.
pub fn frame_method(depth: jint) -> Result<jmethodID> {
    // SAFETY: a NULL thread is the current thread.
    unsafe { env()?.get_frame_location(std::ptr::null_mut(), depth) }.map(|(m, _)| m)
}

/// The receiver (`this`) of the method at `depth` in `thread`'s stack; None for a static or
/// native method, or where JVMTI cannot tell. A local reference.
pub fn frame_receiver(thread: jthread, depth: jint) -> Option<jobject> {
    // SAFETY: facade contract: `thread` is a live thread reference (or NULL: the current thread).
    unsafe { env().ok()?.get_local_instance(thread, depth) }.ok().filter(|o| !o.is_null())
}

/// The capabilities of the JVMTI path for method events (`methods=jvmti`): MethodEntry and
/// MethodExit, and the receiver of a frame. Asked for only with that option: possessing them
/// can slow the JVM down even while the events are off.
/// Sets the prefix of the renamed native methods that the shim wraps (JVMTI
/// `SetNativeMethodPrefix`): the JVM then binds `<prefix>foo` to the implementation of `foo`.
pub fn set_native_method_prefix(prefix: &str) -> Result<()> {
    env()?.set_native_method_prefix(prefix)
}

pub fn add_method_event_capabilities() -> Result<()> {
    let j = env()?;
    let mut c = jvmti::jvmtiCapabilities::default();
    c.set_can_generate_method_entry_events(true);
    c.set_can_generate_method_exit_events(true);
    c.set_can_access_local_variables(true);
    j.add_capabilities(&c)
}
