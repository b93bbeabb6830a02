//! The JVM underneath: the JVMTI environments the shim owns, their capabilities, which JVMTI
//! events are switched on, and a safe facade over the JVMTI and JNI calls the rooms use.
//!
//! Every call into JVMTI or JNI made by the shim goes through this folder, so this is where the
//! `unsafe` surface of talking to the JVM is. This file holds the environments, attaching, the
//! JNI facade of the current thread ([`Jni`]) and the JNI function table; the JVMTI chapters are
//! its parts: [`threads`], [`heap`], [`classes`], [`events`], [`memory`], and [`startup`] (the
//! JVM before the shim has JVMTI). Their functions are re-exported here: `jvm::want`,
//! `jvm::class_signature`, … . The contract of the facade: JNI handles passed in
//! (`jobject`, `jclass`, `jthread`, `jmethodID`) are live handles that the JVM gave the shim
//! (callback arguments, local references made in the current thread, global references the
//! shim keeps, method IDs the JVM listed). IDs that come from an agent are never handed to the
//! JVM before the room that owns them has checked them against its own table.
//!
//! JVMTI events are reference-counted: a room asks for an event with [`want`] and gives it back
//! with [`unwant`]; the JVM is told only on the 0↔1 transitions, so an event no JVMPI event
//! needs costs nothing.

use jvmti_bindings::env::{JniEnv, Jvmti};
use jvmti_bindings::sys::jni::{self, jclass, jint, jlong, jmethodID, jobject, jthread, JNIEnv, JavaVM};
use jvmti_bindings::sys::jvmti::{self, jvmtiError, jvmtiEvent};
use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

mod classes;
mod error;
mod events;
mod heap;
mod memory;
pub(crate) mod startup;
mod threads;

pub use classes::*;
pub use events::*;
pub use heap::*;
pub use memory::*;
pub use threads::*;

/// The shim's JVMTI environment. JVMTI environments may be used from any thread.
struct Env(Jvmti);
// SAFETY: a jvmtiEnv is valid process-wide and JVMTI functions are thread-safe (JVMTI spec,
// "Environments"); the wrapper holds only the pointer.
unsafe impl Send for Env {}
// SAFETY: as above.
unsafe impl Sync for Env {}

/// The JVM's own `JavaVM*` and its real invoke table (before the loader hooked `GetEnv`).
#[derive(Clone, Copy)]
pub struct RealVm {
    pub vm: usize,
    pub get_env: unsafe extern "system" fn(*mut JavaVM, *mut *mut c_void, jint) -> jint,
    pub attach_daemon: unsafe extern "system" fn(*mut JavaVM, *mut *mut c_void, *mut c_void) -> jint,
    pub detach: unsafe extern "system" fn(*mut JavaVM) -> jint,
}

/// The JVM module's state: one `static`, each field what it holds and who writes it (a field
/// costs what a separate `static` cost: `env()` and `current_jni()` read theirs directly).
struct JvmState {
    /// The shim's JVMTI environment, got once by [`connect`].
    env: OnceLock<Env>,
    /// A second environment, not retransformation-capable, that runs the agent's
    /// CLASS_LOAD_HOOK: the JVM applies its changes before the shim's own instrumentation and
    /// keeps them when the shim retransforms a class (JVMTI, "RetransformClasses"). Got once by
    /// [`connect`].
    hook_env: OnceLock<Env>,
    /// A third environment, retransformation-capable and created before the main one, that
    /// offers the classes loaded before the agent started to the agent's CLASS_LOAD_HOOK (see
    /// `hooks`). JVMTI calls ClassFileLoadHook in retransformation-incapable environments
    /// first, then in retransformation-capable ones in the order they were created: this one
    /// runs before the main environment's allocation instrumentation. Got once by [`connect`].
    early_env: OnceLock<Env>,
    /// The early environment has its capabilities and its callback: set by [`set_up_hook_env`].
    early_ready: AtomicBool,
    /// The JVM's own `JavaVM*` and invoke functions, kept once by [`connect`].
    real_vm: OnceLock<RealVm>,
    /// An environment that never tags anything, for heap counts ([`heap::count_heap`]): JVMTI
    /// looks up each visited object in the walking environment's tag map, which in the main
    /// environment holds every object the shim named. Made by the first count.
    count_env: OnceLock<Env>,
    /// The main environment's ObjectFree callback, kept by [`set_callbacks`]: the shim's other
    /// tagging environments pass on to it the deaths their heap walks take from the main
    /// environment's tag map ([`heap`], "deaths taken by a walk").
    object_free: OnceLock<jvmti::JvmtiObjectFreeFn>,
    /// The JNI function interception (`doors::jni`), handed down at start-up by `doors::entry`
    /// ([`set_jni_hooks`]): the facade installs it when a room asks, and a direct call would run
    /// up from vm to doors.
    jni_hooks: OnceLock<fn() -> std::result::Result<(), Error>>,
    /// How many rooms want each JVMTI event ([`want`]/[`unwant`], under `event_switch`; zeroed
    /// for the collection events by [`silence_for_exit`]).
    wanted: [AtomicU32; 100],
    /// Held while an event's count and its notification mode change together.
    event_switch: Mutex<()>,
    /// When the exit paths stop waiting for a held switch ([`set_exiting`]: 2 s after VM death
    /// or ProfilerExit began; one time limit for all of them, not 2 s each).
    exit_deadline: OnceLock<std::time::Instant>,
    /// Set by [`silence_for_exit`]: collections from then on may not be counted.
    gc_events_silenced: AtomicBool,
    /// One heap walk or suspension of other threads at a time in the process ([`heap::exclusive`]).
    snapshot: Reentrant,
    /// `retransform_all`s begun and ended ([`classes::retransforms`]).
    retransforms: (AtomicUsize, AtomicUsize),
}

static STATE: JvmState = JvmState {
    env: OnceLock::new(),
    hook_env: OnceLock::new(),
    early_env: OnceLock::new(),
    early_ready: AtomicBool::new(false),
    real_vm: OnceLock::new(),
    count_env: OnceLock::new(),
    object_free: OnceLock::new(),
    jni_hooks: OnceLock::new(),
    wanted: [const { AtomicU32::new(0) }; 100],
    event_switch: Mutex::new(()),
    exit_deadline: OnceLock::new(),
    gc_events_silenced: AtomicBool::new(false),
    snapshot: Reentrant::new(),
    retransforms: (AtomicUsize::new(0), AtomicUsize::new(0)),
};

/// A lock that its holder may take again (depth counted); other threads wait.
pub struct Reentrant {
    state: Mutex<(Option<std::thread::ThreadId>, usize)>,
    free: std::sync::Condvar,
}

/// [`Reentrant`] held by the current thread, until dropped.
pub struct Held(&'static Reentrant);

impl Reentrant {
    const fn new() -> Reentrant {
        Reentrant { state: Mutex::new((None, 0)), free: std::sync::Condvar::new() }
    }
    fn lock(&'static self) -> Held {
        let me = std::thread::current().id();
        let mut g = crate::vm::logger::lock(&self.state);
        loop {
            match g.0 {
                Some(o) if o == me => break,
                None => {
                    g.0 = Some(me);
                    break;
                }
                Some(_) => g = self.free.wait(g).unwrap_or_else(|p| p.into_inner()),
            }
        }
        g.1 += 1;
        Held(self)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut g = crate::vm::logger::lock(&self.0.state);
        g.1 -= 1;
        if g.1 == 0 {
            g.0 = None;
            self.0.free.notify_one();
        }
    }
}

pub use error::VmError;

pub type Error = jvmtiError;
pub type Result<T> = std::result::Result<T, Error>;

fn env() -> Result<&'static Jvmti> {
    STATE.env.get().map(|e| &e.0).ok_or(jvmtiError::INVALID_ENVIRONMENT)
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
pub fn connect(vm: *mut JavaVM) -> std::result::Result<(), VmError> {
    if vm.is_null() {
        return Err(VmError::NoVm);
    }
    // SAFETY: `vm` is the JavaVM the JVM passed us; its first word is its process-lifetime invoke table.
    let table = unsafe { &**vm };
    let real = RealVm {
        vm: vm as usize,
        get_env: table.GetEnv,
        attach_daemon: table.AttachCurrentThreadAsDaemon,
        detach: table.DetachCurrentThread,
    };
    let _ = STATE.real_vm.set(real);
    // The early environment first: creation order is the order of retransformation-capable
    // environments' class-file hooks.
    let mut e: *mut c_void = std::ptr::null_mut();
    // SAFETY: calling the JVM's own GetEnv with its own JavaVM and a valid out-pointer.
    if unsafe { (real.get_env)(vm, &mut e, jvmti::JVMTI_VERSION_1_2) } == jni::JNI_OK && !e.is_null() {
        // SAFETY: `e` is a jvmtiEnv* just returned by GetEnv.
        let _ = STATE.early_env.set(Env(unsafe { Jvmti::from_raw(e as *mut jvmti::jvmtiEnv) }));
    }
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: calling the JVM's own GetEnv with its own JavaVM and a valid out-pointer.
    let rc = unsafe { (real.get_env)(vm, &mut p, jvmti::JVMTI_VERSION_1_2) };
    if rc != jni::JNI_OK || p.is_null() {
        return Err(VmError::NoJvmti(rc));
    }
    // SAFETY: `p` is a jvmtiEnv* just returned by GetEnv.
    let _ = STATE.env.set(Env(unsafe { Jvmti::from_raw(p as *mut jvmti::jvmtiEnv) }));
    let mut h: *mut c_void = std::ptr::null_mut();
    // SAFETY: as above, a second environment.
    if unsafe { (real.get_env)(vm, &mut h, jvmti::JVMTI_VERSION_1_2) } == jni::JNI_OK && !h.is_null() {
        // SAFETY: `h` is a jvmtiEnv* just returned by GetEnv.
        let _ = STATE.hook_env.set(Env(unsafe { Jvmti::from_raw(h as *mut jvmti::jvmtiEnv) }));
    }
    Ok(())
}

/// Sets up the class-hook environment (its one capability and its one callback, `cb`) and the
/// early environment (callback `early`). Without the early environment (a JVM that cannot
/// retransform) the classes loaded before the agent started are not offered; that is logged
/// when it matters, and is not an error here.
pub fn set_up_hook_env(cb: jvmti::JvmtiClassFileLoadHookFn, early: jvmti::JvmtiClassFileLoadHookFn) -> Result<()> {
    let h = &STATE.hook_env.get().ok_or(jvmtiError::INVALID_ENVIRONMENT)?.0;
    let mut c = jvmti::jvmtiCapabilities::default();
    c.set_can_generate_all_class_hook_events(true);
    h.add_capabilities(&c)?;
    let mut t = jvmti::jvmtiEventCallbacks::default();
    t.ClassFileLoadHook = Some(cb);
    h.set_event_callbacks(t)?;
    match set_up_early_env(early) {
        Ok(()) => STATE.early_ready.store(true, Ordering::Release),
        Err(e) => log::info!("the JVMTI environment for classes loaded before the agent started: {}", err_name(e)),
    }
    Ok(())
}

fn early_env() -> Result<&'static Jvmti> {
    STATE.early_env.get().map(|e| &e.0).ok_or(jvmtiError::INVALID_ENVIRONMENT)
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
    STATE.early_ready.load(Ordering::Acquire)
}

/// Switches the early environment's class-file hook on or off.
pub fn set_early_hook(on: bool) -> Result<()> {
    // SAFETY: NULL thread = all threads.
    unsafe {
        early_env()?.set_event_notification_mode(on, jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, std::ptr::null_mut())
    }
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
    let h = &STATE.hook_env.get().ok_or(jvmtiError::INVALID_ENVIRONMENT)?.0;
    // SAFETY: NULL thread = all threads.
    unsafe { h.set_event_notification_mode(on, jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, std::ptr::null_mut()) }
}

pub fn set_jni_hooks(install: fn() -> std::result::Result<(), Error>) {
    let _ = STATE.jni_hooks.set(install);
}

/// Installs the JNI function hooks (allocations by native code, JNI global references), once a
/// room needs them.
pub fn install_jni_hooks() -> std::result::Result<(), VmError> {
    match STATE.jni_hooks.get() {
        Some(install) => install().map_err(VmError::Jvmti),
        None => Err(VmError::JniHooks("the JNI function hooks are not registered".into())),
    }
}

pub fn real_vm() -> Option<RealVm> {
    STATE.real_vm.get().copied()
}

/// The current thread's JNIEnv, if the thread is attached to the JVM.
pub fn current_jni() -> Option<*mut JNIEnv> {
    let real = STATE.real_vm.get()?;
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the real GetEnv with the real JavaVM and a valid out-pointer.
    let rc = unsafe { (real.get_env)(real.vm as *mut JavaVM, &mut p, jni::JNI_VERSION_1_2) };
    (rc == jni::JNI_OK && !p.is_null()).then_some(p as *mut JNIEnv)
}

/// [`current_jni`], kept in the thread once found: for GetCallTrace, whose every call asks (JNI
/// `GetEnv` costs a tenth of what the shim adds to the JVM's stack walk there). Only to compare
/// with a JNIEnv an agent names and to tell a thread the JVM knows, never to call JNI through,
/// and only for calls refused once VM death is over: what is kept is dropped
/// ([`forget_current_jni`]) wherever the thread may stop being attached while the JVM is alive
/// — its JVMTI ThreadEnd, which the JVM sends from every thread it knows that ends or detaches
/// (not from its hidden threads, which neither detach nor go on without the JVM), before and
/// after the shim handles it (the agent may call in meanwhile), and the end of a call the shim
/// attached the thread for. Were it ever stale, a trace would take the JVMTI call's refusal of
/// an unattached thread (no frames, one log line) instead of the shim's.
pub fn current_jni_kept() -> Option<*mut JNIEnv> {
    let kept = HERE.with(|h| h.env.get());
    if !kept.is_null() {
        return Some(kept);
    }
    let env = current_jni()?;
    HERE.with(|h| h.env.set(env));
    Some(env)
}

/// Drops what [`current_jni_kept`] kept for the current thread.
pub fn forget_current_jni() {
    HERE.with(|h| h.env.set(std::ptr::null_mut()));
}

/// The current thread's JNIEnv, attaching the thread (as a daemon) if it is not attached yet.
pub fn attach_current() -> Option<*mut JNIEnv> {
    if let Some(e) = current_jni() {
        return Some(e);
    }
    let real = STATE.real_vm.get()?;
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the real AttachCurrentThreadAsDaemon with the real JavaVM; NULL args are allowed.
    let rc = unsafe { (real.attach_daemon)(real.vm as *mut JavaVM, &mut p, std::ptr::null_mut()) };
    (rc == jni::JNI_OK && !p.is_null()).then_some(p as *mut JNIEnv)
}

/// Whether the current thread is attached to the JVM only for the JVMPI call it is making: an
/// agent's thread the JVM does not know. It is no JVMPI thread (no THREAD_START, no
/// THREAD_END) and the events it causes carry no `env_id`.
pub fn temporarily_attached() -> bool {
    HERE.with(|h| h.temporary.get())
}

/// Runs `f` in the current thread attached to the JVM: as it is when it is attached, otherwise
/// attached (as a daemon) for the call and detached after it. What the JVM allocates to attach
/// and detach the thread is the shim's own work, not reported. None if the thread cannot be
/// attached (the VM is going away).
pub fn attached<R>(f: impl FnOnce() -> R) -> Option<R> {
    attached_named(None, f)
}

/// [`attached`], the thread's `java.lang.Thread` named `name` if it has to be attached. Without a
/// name the JVM names it `Thread-<n>` and takes that number from the program's next thread.
pub fn attached_named<R>(name: Option<&CStr>, f: impl FnOnce() -> R) -> Option<R> {
    if current_jni().is_some() {
        return Some(f());
    }
    let real = *STATE.real_vm.get()?;
    struct Detach(RealVm);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _i = Internal::enter();
            // SAFETY: the real DetachCurrentThread, on the thread attached below.
            unsafe { (self.0.detach)(self.0.vm as *mut JavaVM) };
            HERE.with(|h| {
                h.temporary.set(false);
                h.env.set(std::ptr::null_mut());
            });
        }
    }
    HERE.with(|h| h.temporary.set(true));
    let mut p: *mut c_void = std::ptr::null_mut();
    let mut args = jni::JavaVMAttachArgs {
        version: jni::JNI_VERSION_1_2,
        name: name.map_or(std::ptr::null_mut(), |n| n.as_ptr() as *mut std::ffi::c_char),
        group: std::ptr::null_mut(),
    };
    let rc = {
        let _i = Internal::enter();
        // `args` holds a NULL or NUL-terminated name the JVM only reads, and a NULL group.
        // SAFETY: the real AttachCurrentThreadAsDaemon with the real JavaVM; `args` outlives the call.
        unsafe { (real.attach_daemon)(real.vm as *mut JavaVM, &mut p, &mut args as *mut _ as *mut c_void) }
    };
    if rc != jni::JNI_OK || p.is_null() {
        HERE.with(|h| h.temporary.set(false));
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

// ---- JNI, in the current thread ---------------------------------------------------------------

/// The current thread's part of this module, in one thread-local (one address computation;
/// `const`-initialised, no destructor): what an event's hot path needs, and whether the thread
/// is attached only for one call.
struct Here {
    /// [`INTERNAL`] (set by [`Internal`] and [`as_agent`]), [`ANNOUNCED`] (the threads room),
    /// [`UNSENT`] (the methods room).
    flags: std::cell::Cell<u8>,
    /// The gate's count of the events this thread is delivering ([`set_counter_here`]; null
    /// until set).
    counter: std::cell::Cell<*const AtomicUsize>,
    /// Set while the thread is attached only for one JVMPI call (by [`attached`]).
    temporary: std::cell::Cell<bool>,
    /// Its JNIEnv, once [`current_jni_kept`] found it (null: not kept).
    env: std::cell::Cell<*mut JNIEnv>,
    /// An opaque pointer a room keeps for the thread (the allocation room's per-thread state,
    /// see [`set_room_here`]); null until set.
    room: std::cell::Cell<*mut c_void>,
    /// The virtual thread mounted on this (carrier) thread now, as its `env_id` ([`VtEnv`]):
    /// set at its JVMTI VirtualThreadStart and VirtualThreadMount, cleared at its
    /// VirtualThreadUnmount and VirtualThreadEnd ([`set_vt_here`]); null: none.
    vt: std::cell::Cell<*const VtEnv>,
    /// The CPU time virtual threads used on this (carrier) thread so far (ns): not the
    /// carrier's own ([`add_vt_cpu_here`]).
    vt_cpu: std::cell::Cell<i64>,
}

thread_local! {
    static HERE: Here = const {
        Here {
            flags: std::cell::Cell::new(0),
            counter: std::cell::Cell::new(std::ptr::null()),
            temporary: std::cell::Cell::new(false),
            env: std::cell::Cell::new(std::ptr::null_mut()),
            room: std::cell::Cell::new(std::ptr::null_mut()),
            vt: std::cell::Cell::new(std::ptr::null()),
            vt_cpu: std::cell::Cell::new(0),
        }
    };
}

/// The current thread's flags and its counter (see [`set_counter_here`]; None until set).
///
/// The event hot path's read of them, without `__tls_get_addr`: a cdylib's thread-locals use
/// the general-dynamic TLS model (a call through the PLT per read; stable Rust cannot choose
/// another), which cost about 1.5 ns per method event. Instead the thread pointer (one register
/// read) finds the thread's [`Here`] in [`CLAIMS`], a table of slots each thread may claim
/// once; a thread whose slot another thread holds, or which has not claimed one yet, reads its
/// thread-local as before (and claims a free slot then).
#[inline(always)]
pub fn here_and_counter() -> (u8, Option<&'static AtomicUsize>) {
    let h = here_ptr();
    // `h` is this thread's HERE (see `here_ptr`). Only `&'static` counters are ever stored in
    // a HERE (see `set_counter_here`).
    // SAFETY: `h` points to this thread's HERE, alive as long as the thread.
    unsafe { ((*h).flags.get(), (*h).counter.get().as_ref()) }
}

/// The current thread's flags and the pointer its room keeps here ([`set_room_here`]; null
/// until set): the allocation path's one read of its per-thread state, without
/// `__tls_get_addr` when the thread holds a slot of [`CLAIMS`] (as [`here_and_counter`]).
#[inline(always)]
pub fn here_and_room() -> (u8, *mut c_void) {
    let h = here_ptr();
    // SAFETY: `h` points to this thread's HERE, alive as long as the thread (see `here_ptr`).
    unsafe { ((*h).flags.get(), (*h).room.get()) }
}

/// The current thread's flags, its counter (as [`here_and_counter`]) and the `env_id` its
/// events carry: `env` itself, or while a virtual thread is mounted on it, that virtual
/// thread's ([`set_vt_here`]). The method events' hot path: one more load than
/// [`here_and_counter`].
#[inline(always)]
pub fn here_counter_env(env: *mut JNIEnv) -> (u8, Option<&'static AtomicUsize>, *mut JNIEnv) {
    let h = here_ptr();
    // `h` points to this thread's HERE, alive as long as the thread (see `here_ptr`); a mounted
    // virtual thread's VtEnv outlives its mount (its record owns it).
    // SAFETY: both pointers are alive for this call (above).
    unsafe {
        let vt = (*h).vt.get();
        let env = if vt.is_null() { env } else { (*vt).event_env(env) };
        ((*h).flags.get(), (*h).counter.get().as_ref(), env)
    }
}

/// The `env_id` an event about the current thread carries: `env` (the thread's own JNIEnv), or
/// while a virtual thread is mounted on it, the virtual thread's [`VtEnv`].
#[inline]
pub fn event_env_here(env: *mut JNIEnv) -> *mut JNIEnv {
    here_counter_env(env).2
}

/// `f` of the virtual thread mounted on the current thread, if any.
pub fn with_vt_here<R>(f: impl FnOnce(&VtEnv) -> R) -> Option<R> {
    let vt = HERE.with(|h| h.vt.get());
    // A mounted virtual thread's VtEnv outlives its mount (its record owns it, and the record is
    // kept until after its end, which clears this first).
    (!vt.is_null()).then(|| {
        // SAFETY: `vt` is the mounted virtual thread's VtEnv, alive (above).
        f(unsafe { &*vt })
    })
}

/// Adds `ns` to the CPU time virtual threads used on the current (carrier) thread.
pub fn add_vt_cpu_here(ns: i64) {
    HERE.with(|h| h.vt_cpu.set(h.vt_cpu.get() + ns));
}

/// The CPU time virtual threads used on the current thread so far (ns).
pub fn vt_cpu_here() -> i64 {
    HERE.with(|h| h.vt_cpu.get())
}

/// Notes the virtual thread now mounted on the current (carrier) thread (null: none).
pub fn set_vt_here(vt: *const VtEnv) {
    HERE.with(|h| h.vt.set(vt));
}

/// Keeps an opaque pointer for the current thread (the allocation room's per-thread state),
/// read back by [`here_and_room`]. The room clears it before what it points to goes away.
pub fn set_room_here(p: *mut c_void) {
    HERE.with(|h| h.room.set(p));
}

/// The address of the current thread's [`Here`], through the thread pointer (one register
/// read) and the thread's slot of [`CLAIMS`]; a thread whose slot another thread holds, or which
/// has not claimed one yet, reads its thread-local (and claims a free slot then). `Here` has no
/// destructor: the address is valid as long as the thread runs.
#[inline(always)]
fn here_ptr() -> *const Here {
    let tp = thread_pointer();
    let claim = &CLAIMS[claim_slot(tp)];
    if tp != 0 && claim.key.load(Ordering::Relaxed) == tp {
        // The key is this thread's pointer, so this thread claimed the slot (only a thread
        // stores its own pointer there, and it clears it before it ends; no live thread shares
        // it), and `here` is this thread's HERE, stored by it after the claim.
        return claim.here.load(Ordering::Relaxed);
    }
    here_ptr_claiming(tp)
}

/// [`here_ptr`] through the thread-local, claiming a free slot for the thread if it has none
/// yet.
#[cold]
#[inline(never)]
fn here_ptr_claiming(tp: usize) -> *const Here {
    if tp != 0 {
        // Not while the thread's thread-locals are being destroyed (try_with fails then).
        let _ = CLAIMED.try_with(|mine| {
            if mine.0.get().is_none() {
                let i = claim_slot(tp);
                // A plain load first: a thread whose slot another holds comes here at every
                // event, and a failing compare-and-swap is a locked instruction.
                if CLAIMS[i].key.load(Ordering::Relaxed) == 0
                    && CLAIMS[i].key.compare_exchange(0, tp, Ordering::Acquire, Ordering::Relaxed).is_ok()
                {
                    CLAIMS[i].here.store(HERE.with(|h| h as *const Here as *mut Here), Ordering::Relaxed);
                    mine.0.set(Some(i));
                }
            }
        });
    }
    HERE.with(|h| h as *const Here)
}

/// A slot of [`CLAIMS`]: the thread pointer of the thread that holds it (0: free) and that
/// thread's [`Here`].
struct Claim {
    key: AtomicUsize,
    here: std::sync::atomic::AtomicPtr<Here>,
}

/// Slots of threads' [`Here`], by a hash of the thread pointer (threads that collide read their
/// thread-local). 4 KiB.
static CLAIMS: [Claim; 256] =
    [const { Claim { key: AtomicUsize::new(0), here: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) } }; 256];

/// The slot of [`CLAIMS`] the current thread holds; given back when the thread ends (its
/// thread-locals' destructors run before the thread's pointer can be another thread's).
struct Claimed(std::cell::Cell<Option<usize>>);
impl Drop for Claimed {
    fn drop(&mut self) {
        if let Some(i) = self.0.take() {
            CLAIMS[i].key.store(0, Ordering::Release);
        }
    }
}

thread_local! {
    static CLAIMED: Claimed = const { Claimed(std::cell::Cell::new(None)) };
}

/// The slot of [`CLAIMS`] for thread pointer `tp` (a multiplicative hash: the low bits of
/// threads' control blocks are alike, their page numbers may be too).
#[inline(always)]
fn claim_slot(tp: usize) -> usize {
    tp.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56
}

/// The current thread's thread pointer (the TCB's address: unique among live threads, and
/// another thread's only after this one ended); 0 where it is not read.
#[inline(always)]
fn thread_pointer() -> usize {
    #[allow(unused_mut)]
    let mut tp: usize = 0;
    // The thread control block's self pointer at %fs:0 (x86-64 TLS ABI).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    // SAFETY: one read of the thread's own control block; no memory is written.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags, pure));
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    // SAFETY: reads the thread pointer register; no memory is touched.
    unsafe {
        std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nostack, nomem, preserves_flags, pure));
    }
    tp
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

/// The thread (a carrier) is inside a virtual thread's mount or unmount transition (JDK 19+;
/// set and cleared by the marks the method plan puts into the JDK's `java.lang.VirtualThread`,
/// see `bci::is_transition_code`): no event is sent and no JVMTI call is made on its behalf,
/// as inside the shim's own JNI calls. On JDK 21 a JVMTI function that waits for transitions
/// to end (GetFrameLocation, GetStackTrace, SuspendThread, …), called from inside one, never
/// returns, and every other thread that makes one waits with it.
pub const TRANSIT: u8 = 8;
/// [`INTERNAL`] or [`TRANSIT`]: the thread sends no event now.
pub const QUIET: u8 = INTERNAL | TRANSIT;

/// Sets or clears [`TRANSIT`] for the current thread.
#[inline]
pub fn set_transit_here(on: bool) {
    HERE.with(|h| h.flags.set(if on { h.flags.get() | TRANSIT } else { h.flags.get() & !TRANSIT }));
}

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

/// Whether the current thread is inside a JNI call the shim makes for itself, or inside a
/// virtual thread's mount or unmount transition ([`TRANSIT`]): no event is sent from it now.
pub fn shim_internal() -> bool {
    here() & QUIET != 0
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
            if is_static {
                self.0.get_static_method_id(k, name, sig)
            } else {
                self.0.get_method_id(k, name, sig)
            }
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
            if is_static {
                self.0.get_static_method_id(k, name, sig)
            } else {
                self.0.get_method_id(k, name, sig)
            }
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
    /// A handle whose slot cannot be read, or holds nothing (a deleted local reference, a
    /// cleared weak one), is refused before JNI is asked: under `-Xcheck:jni` the checked
    /// `GetObjectRefType` ends the JVM with a fatal error on a deleted reference.
    pub fn is_valid_ref(&self, obj: jobject) -> bool {
        // A handle's low bits tag its kind (weak, global) on some JDKs; the slot is aligned.
        let slot = (obj as usize) & !7;
        if crate::vm::safemem::read(slot as *const usize).is_none_or(|v| v == 0) {
            return false;
        }
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
        let (c, m, args) =
            match self.method("java/lang/Class", "getDeclaredFields0", "(Z)[Ljava/lang/reflect/Field;", false) {
                Some((c, m)) => (c, m, vec![jni::jvalue { z: 1 }]),
                None => {
                    match self.method("java/lang/Class", "getDeclaredFields", "()[Ljava/lang/reflect/Field;", false) {
                        Some((c, m)) => (c, m, Vec::new()),
                        None => return,
                    }
                }
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
    /// A new `int[n]` as a global reference (the shim's own, never reported); None if refused.
    pub fn new_int_array_global(&self, n: i32) -> Option<jobject> {
        let _i = Internal::enter();
        let a = self.0.new_int_array(n)?;
        let g = self.new_global_ref(a);
        self.delete_local_ref(a);
        self.clear_exception();
        (!g.is_null()).then_some(g)
    }
    /// Runs `f` inside a JNI critical section on the primitive array `array`
    /// (`GetPrimitiveArrayCritical` … `ReleasePrimitiveArrayCritical`): while it runs, the
    /// collectors that honour JNI critical sections with a GC locker (HotSpot's `GCLocker`) start
    /// no collection. `f` must make no JNI or JVMTI call and must not wait for a Java thread.
    /// None if the JVM refused the array.
    pub fn with_critical<R>(&self, array: jobject, f: impl FnOnce() -> R) -> Option<R> {
        // `array` is a live primitive array (the caller's global reference); the guard is
        // released exactly once, when it drops at the end of this block, and `f` obeys the
        // critical section's rules (the caller's contract).
        // SAFETY: a live primitive array, released once (above).
        let held = unsafe { self.0.get_primitive_array_critical(array as jni::jarray) }?;
        let r = f();
        drop(held);
        Some(r)
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
                let (k, init) =
                    self.method("java/lang/Thread", "<init>", "(Ljava/lang/ThreadGroup;Ljava/lang/String;)V", false)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread claims a slot at its first read, reads its own flags through it, and gives it
    /// back when it ends: threads started one after another (glibc hands the next one the same
    /// stack, so the same thread pointer) never find the slot still held, nor a flag of the one
    /// before.
    #[test]
    fn threads_claim_a_slot_read_their_own_flags_and_give_it_back() {
        for _ in 0..50 {
            let tp = std::thread::spawn(|| {
                let tp = thread_pointer();
                assert_ne!(tp, 0);
                let slot = &CLAIMS[claim_slot(tp)];
                assert_ne!(slot.key.load(Ordering::Relaxed), tp, "a slot still held by an ended thread");
                assert_eq!(here_and_counter().0 & ANNOUNCED, 0);
                assert_eq!(slot.key.load(Ordering::Relaxed), tp, "the first read claims the slot");
                set_announced_here(true);
                assert_ne!(here_and_counter().0 & ANNOUNCED, 0);
                set_announced_here(false);
                assert_eq!(here_and_counter().0 & ANNOUNCED, 0);
                set_announced_here(true);
                // The room's pointer: this thread's own, through the slot as through the
                // thread-local, never the thread before's.
                assert!(here_and_room().1.is_null(), "a room pointer left by an ended thread");
                let mine = Box::into_raw(Box::new(7u32));
                set_room_here(mine as *mut c_void);
                assert_eq!(here_and_room(), (ANNOUNCED, mine as *mut c_void));
                assert_eq!(here_ptr_claiming(0), here_ptr(), "the slot leads to the thread-local");
                set_room_here(std::ptr::null_mut());
                // SAFETY: made by Box::into_raw above, no longer kept anywhere.
                drop(unsafe { Box::from_raw(mine) });
                set_room_here(std::ptr::dangling_mut::<c_void>());
                tp
            })
            .join()
            .unwrap();
            assert_ne!(CLAIMS[claim_slot(tp)].key.load(Ordering::Relaxed), tp, "given back when the thread ended");
        }
    }
}
