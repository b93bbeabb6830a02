//! Allocation tracking: `OBJECT_ALLOC` for every object and array, whoever allocates it, and
//! `ARENA_NEW` for the one arena.
//!
//! JVMTI has no event for allocations made by bytecode, and its sampled allocation event is not
//! exact before JDK 25. So the shim instruments bytecode (the `bci` room). HotSpot posted
//! OBJECT_ALLOC at the allocation, before any constructor ran, and agents depend on that order
//! (a leak finder charges each allocation to the method on top of the stack it keeps from
//! METHOD_ENTRY/EXIT; a site profiler reads the allocating line from GetCallTrace):
//!
//! * after every `new C`, `JvmpiShimTracker.newObject(C.class)`: the uninitialised object
//!   cannot be passed to a method, its class can. OBJECT_ALLOC is sent there with a fresh ID
//!   ([`reserve`]), kept in this thread's list of reservations;
//! * `java.lang.Object.<init>` calls `JvmpiShimTracker.objectInit(this)` first: the object
//!   takes the newest reservation of its class ([`init`]); constructions nest like brackets
//!   (`new A(new B())` reaches B's `Object.<init>` first), and reservations above it belong to
//!   constructions that threw before getting there (abandoned: OBJECT_FREE at a later GC
//!   bracket, as HotSpot's dead objects got). An object no hook announced (hidden classes,
//!   class files older than Java 5, allocations of the agent's own handler) is reported there;
//! * the JDK's own allocations for reflection and method handles are hooked where they happen:
//!   before the native reflective constructor call (`newInstance0`) a reservation for the
//!   constructor's class, after `Unsafe.allocateInstance` the object itself;
//! * every `newarray`/`anewarray`/`multianewarray` is followed by `JvmpiShimTracker.newArray(a)`;
//!   the sub-arrays a `multianewarray` makes are reported with their outer array;
//! * allocations without bytecode come from JVMTI `VMObjectAlloc` (reflective array creation,
//!   `clone`, …) and from the JNI function table (`AllocObject`, `New<Type>Array`,
//!   `NewObjectArray`, `NewString`, `NewStringUTF` after they return; `NewObject`,
//!   `NewObjectA`, `NewObjectV` reserve before they run the constructor; see the `doors::jni`
//!   room).
//!
//! The tracker is a class the shim generates and defines in the bootstrap loader, its natives
//! bound with `RegisterNatives` before anything calls them. Enabling OBJECT_ALLOC
//! instruments classes as they load (the class-file hook) and those already loaded
//! (`RetransformClasses`); disabling it switches the tracker's `on` flag off at once and then
//! retransforms every class back, so that nothing stays behind in the program's code (measured:
//! a call left in `Object.<init>` slowed allocation by 8–35% even switched off).
//!
//! An object gets its ID (a tag with the DEFINED bit) the first time one of these paths
//! sees it; the second path to see the same object finds the tag and stays silent, so each
//! object is reported once.

use crate::face::abi::*;
use crate::face::ids::ClassTag;
use crate::face::{events, ids};
use crate::rooms::error::RoomError;
use crate::rooms::{calltrace, classes, threads};
use crate::vm::idhash::IdMap;
use crate::vm::{bci, jvm, rewrites};
use jvmti_bindings::sys::jni::{jclass, jint, jlong, jmethodID, jobject, jvalue, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::{LazyLock, Mutex};

/// The one arena of the shim's heap model (the JVMPI "arena 1").
pub const ARENA: jint = 1;

/// `is_array` for an array class signature (`[I` → JVMPI_INT, `[Lx;`/`[[x` → JVMPI_CLASS).
pub fn array_kind(sig: &str) -> Option<jint> {
    let elem = sig.strip_prefix('[')?;
    Some(match elem.as_bytes().first()? {
        b'Z' => JVMPI_BOOLEAN,
        b'B' => JVMPI_BYTE,
        b'C' => JVMPI_CHAR,
        b'S' => JVMPI_SHORT,
        b'I' => JVMPI_INT,
        b'J' => JVMPI_LONG,
        b'F' => JVMPI_FLOAT,
        b'D' => JVMPI_DOUBLE,
        _ => JVMPI_CLASS,
    })
}

pub const TRACKER: &str = "JvmpiShimTracker";

/// What an allocation event needs to know about a class, computed once per class. Plain
/// words, no `bool` or `Option` inside: it is copied on every allocation, and bytes packed
/// around a flag were copied with overlapping loads that stalled on the stores before them
/// (`perf annotate`: a third of `shape_of`'s samples).
#[derive(Clone, Copy)]
#[repr(C)]
struct Shape {
    /// The ID for `obj_alloc.class_id` (the element class for object arrays; NULL for
    /// primitive arrays).
    class_id: usize,
    /// Instance size of a normal object (the same for every instance); 0 for arrays.
    size: jint,
    is_array: i16,
    /// An array whose elements are arrays (their sub-arrays may be fresh): 1, else 0.
    nested: i16,
}

impl Shape {
    /// Complete: an instance size known, or an array class (whose size is each array's own).
    fn complete(&self) -> bool {
        self.is_array as jint != JVMPI_NORMAL_OBJECT || self.size > 0
    }
    fn is_array(&self) -> jint {
        self.is_array as jint
    }
}

/// The tracker's table of shapes (`bci::shape_class`): one entry per slot, the slot at the
/// class's identity hash; a slot whose class is alive keeps it (a class colliding with it goes on
/// through the shim's per-thread caches).
struct Published {
    /// The `shapes` array (a global reference).
    table: usize,
    /// The shape class (a global reference) and its constructor.
    class: usize,
    ctor: usize,
    /// For each slot, a weak reference to the class of its entry; 0: empty.
    slots: Vec<usize>,
}

/// The allocation room's state, shared by every thread: one `static`, each field what it holds
/// and who writes it (a field costs what a separate `static` cost: the natives read them directly).
struct AllocState {
    /// The tracker class (a global reference), set once by [`define_tracker`] (under `switch`).
    tracker_class: AtomicUsize,
    /// Held by [`enable`] and [`disable`] while they switch the tracker and instrument classes.
    switch: Mutex<()>,
    /// Whether classes are (being) instrumented: set by [`enable`], cleared by [`disable`].
    instrumenting: AtomicBool,
    /// ARENA_NEW has been sent (set once, by [`announce_arena`]).
    arena_sent: AtomicBool,
    /// Class tag → what its allocation events need: entered by [`shape_of`] at the class's first
    /// allocation, its instance size filled in by the first one measured, taken out by
    /// [`forget_class`] when the GC room finds the class dead.
    shapes: LazyLock<IdMap<ClassTag, Shape>>,
    /// The tracker's table of shapes and what fills it (set by [`define_tracker`]; entries added
    /// by [`offer`]).
    published: Mutex<Option<Published>>,
    /// Whether the JVM registers finalizable objects at allocation
    /// (`-XX:-RegisterFinalizersAtInit`): read from the command line and the option variables
    /// the first time it is asked.
    finalizers_at_allocation: LazyLock<bool>,
    /// Whether the plan keeps each `new`'s object in a local during its hook (`keep_new` of
    /// [`bci::AllocHooks`]): set once at start-up when the shim holds JVMTI's
    /// `can_access_local_variables` ([`keep_new_objects`]).
    keep_new: AtomicBool,
}

static STATE: AllocState = AllocState {
    tracker_class: AtomicUsize::new(0),
    switch: Mutex::new(()),
    instrumenting: AtomicBool::new(false),
    arena_sent: AtomicBool::new(false),
    shapes: LazyLock::new(IdMap::default),
    published: Mutex::new(None),
    finalizers_at_allocation: LazyLock::new(finalizers_flag),
    keep_new: AtomicBool::new(false),
};

/// Says that the shim holds `can_access_local_variables`: from now on the allocation plan
/// keeps each `new`'s object where `jobjectID2jobject` can find it before its constructor runs
/// ([`pending_object`]). Called once, before any class is instrumented.
pub fn keep_new_objects(on: bool) {
    STATE.keep_new.store(on, SeqCst);
}

/// This thread's allocation state, in one thread-local (each thread-local of a shared library
/// costs a `__tls_get_addr` call to reach; the allocation path is the hottest there is), reached
/// through the thread pointer once the thread has kept its address in the facade ([`local`]).
struct Local {
    /// Set while this thread is inside an OBJECT_ALLOC delivery.
    reporting: Cell<bool>,
    /// Allocations of the agent's own OBJECT_ALLOC handler (global references), reported after it.
    deferred: Cell<Vec<usize>>,
    /// This thread's reservations, oldest first. Constructions nest like brackets (the inner
    /// `new` of `new A(new B())` reaches `Object.<init>` first), so the newest reservation of
    /// the object's class is the object's.
    pending: RefCell<Vec<Pending>>,
    /// The classes this thread allocated last, most recently used last. Comparing references
    /// is cheaper than reading a tag, and the shape kept here spares the shared table.
    classes: RefCell<Vec<Cached>>,
    /// The classes the tracker's Java code named with their identity hash: [`SETS`] sets of two
    /// entries, the set at the hash modulo [`SETS`], the one used last first (allocated at the
    /// first).
    direct: RefCell<Vec<Set>>,
    /// Normal objects this thread's VMObjectAlloc or JNI reported, whose constructor may still
    /// run (newest last).
    vm_made: RefCell<Vec<Made>>,
    /// This thread's fresh tags (the ids room's own per-thread cache is another thread-local).
    tags: RefCell<ids::TagBlock>,
}

impl Drop for Local {
    fn drop(&mut self) {
        // The thread's state goes: the facade must not lead to it any more.
        jvm::set_room_here(std::ptr::null_mut());
    }
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            reporting: Cell::new(false),
            deferred: Cell::new(Vec::new()),
            pending: RefCell::new(Vec::new()),
            classes: RefCell::new(Vec::new()),
            direct: RefCell::new(Vec::new()),
            vm_made: RefCell::new(Vec::new()),
            tags: RefCell::new(ids::TagBlock::per_thread()),
        }
    };
}

/// Runs `f` on this thread's [`Local`], found through the pointer the facade keeps for the
/// thread ([`jvm::here_and_room`]: no `__tls_get_addr` when the thread holds a slot), kept
/// there the first time (and after the thread-local went, the thread-local's own failure).
#[inline(always)]
fn local<R>(f: impl FnOnce(&Local) -> R) -> R {
    let p = jvm::here_and_room().1 as *const Local;
    if !p.is_null() {
        // Only `local` stores a pointer there, the address of this thread's LOCAL, and LOCAL's
        // destructor clears it before LOCAL goes.
        // SAFETY: `p` points to this thread's live LOCAL; only shared references are made.
        return f(unsafe { &*p });
    }
    local_keeping(f)
}

#[cold]
#[inline(never)]
fn local_keeping<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(|l| {
        jvm::set_room_here(l as *const Local as *mut c_void);
        f(l)
    })
}

/// The current thread's flags ([`jvm::INTERNAL`], [`jvm::ANNOUNCED`]), read as [`local`] reads.
#[inline(always)]
fn flags() -> u8 {
    jvm::here_and_room().0
}

fn reporting() -> bool {
    local(|l| l.reporting.get())
}

fn set_reporting(on: bool) -> bool {
    local(|l| l.reporting.replace(on))
}

/// A fresh tag with the DEFINED bit, from this thread's cache.
fn fresh_defined_tag() -> jlong {
    local(|l| l.tags.borrow_mut().next()) | ids::DEFINED
}

pub fn installed() -> bool {
    STATE.tracker_class.load(Acquire) != 0
}

/// `EnableEvent(OBJECT_ALLOC)`: instruments every class (the tracker is defined once) and turns
/// the tracker on.
pub fn enable() -> Result<(), RoomError> {
    let env = jvm::attach_current().ok_or("the calling thread cannot be attached to the JVM")?;
    let jni = jvm::Jni::of(env);
    let _g = crate::vm::logger::lock(&STATE.switch);
    if !installed() {
        define_tracker(&jni)?;
    }
    jvm::install_jni_hooks().map_err(|e| format!("JNI function interception: {e}"))?;
    set_on(&jni, true);
    if !STATE.instrumenting.swap(true, SeqCst) {
        jvm::want(jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK).map_err(jvm::err_name)?;
        jvm::want(jvmti::JVMTI_EVENT_VM_OBJECT_ALLOC).map_err(jvm::err_name)?;
        let t = std::time::Instant::now();
        let n = rewrites::retransform_all(events::before_gate());
        log::info!("allocation tracking on: {n} loaded classes instrumented in {:?}", t.elapsed());
    }
    Ok(())
}

/// `DisableEvent(OBJECT_ALLOC)`: the tracker is switched off at once, then every class is
/// retransformed back to its uninstrumented form, so the program runs at full speed again.
pub fn disable() {
    let Some(env) = jvm::attach_current() else { return };
    let _g = crate::vm::logger::lock(&STATE.switch);
    set_on(&jvm::Jni::of(env), false);
    if STATE.instrumenting.swap(false, SeqCst) {
        jvm::unwant(jvmti::JVMTI_EVENT_VM_OBJECT_ALLOC);
        if events::is_dead() {
            // Switched off at VM death (agents disable everything in JVM_SHUT_DOWN): no program
            // code runs any more, so nothing is restored. Retransforming every class now would
            // load classes no CLASS_LOAD can announce any more (JDK 21+: the JDK's event classes
            // call into JFR, ~200 classes), and a last heap dump would name them.
            log::debug!("allocation tracking off at VM death: classes left as they are");
            return;
        }
        let t = std::time::Instant::now();
        let n = jvm::retransform_all(events::before_gate());
        jvm::unwant(jvmti::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK);
        log::info!("allocation tracking off: {n} loaded classes restored in {:?}", t.elapsed());
    }
}

fn set_on(jni: &jvm::Jni, on: bool) {
    let k = STATE.tracker_class.load(Acquire);
    if k != 0 && !jni.set_static_boolean(k as jclass, "on", on) {
        log::error!("cannot switch the allocation tracker {}", if on { "on" } else { "off" });
    }
}

fn define_tracker(jni: &jvm::Jni) -> Result<(), RoomError> {
    let shape_name = bci::shape_class_name(TRACKER);
    let shape = jni
        .define_boot_class(&shape_name, &bci::shape_class(TRACKER))
        .ok_or("cannot define the allocation tracker's shape class in the boot class loader")?;
    let k = jni
        .define_boot_class(TRACKER, &bci::tracker_class(TRACKER))
        .ok_or("cannot define the allocation tracker class in the boot class loader")?;
    // The descriptors of `bci::NATIVE_DESCRIPTORS`.
    let sig = c"(Ljava/lang/Object;)V";
    let with_class = c"(Ljava/lang/Object;Ljava/lang/Class;I)V";
    let with_hash = c"(Ljava/lang/Object;I)V";
    let natives = [
        jvm::Native { name: c"onInit", signature: with_class, f: on_init as *mut c_void },
        jvm::Native { name: c"onNew", signature: with_class, f: on_new as *mut c_void },
        jvm::Native { name: c"onNewObject", signature: with_hash, f: on_new_object as *mut c_void },
        jvm::Native { name: c"onMade", signature: sig, f: on_made as *mut c_void },
        jvm::Native { name: c"onReflectNew", signature: sig, f: on_reflect_new as *mut c_void },
        // bci::SHAPED_NATIVES
        jvm::Native {
            name: c"onInitShaped",
            signature: c"(Ljava/lang/Object;Ljava/lang/Class;JJII)V",
            f: on_init_shaped as *mut c_void,
        },
        jvm::Native {
            name: c"onNewShaped",
            signature: c"(Ljava/lang/Object;Ljava/lang/Class;JJII)V",
            f: on_new_shaped as *mut c_void,
        },
        jvm::Native {
            name: c"onNewObjectShaped",
            signature: c"(Ljava/lang/Object;JJI)V",
            f: on_new_object_shaped as *mut c_void,
        },
    ];
    if !jni.register_natives(k, &natives) {
        return Err("cannot bind the allocation tracker's native method".into());
    }
    if let Err(e) = jni.java_base_reads_module_of(k) {
        log::debug!("AddModuleReads(java.base → tracker): {}", jvm::err_name(e));
    }
    // No call trace shows the tracker; at allocations seen in Object.<init> traces begin at the
    // allocating method (the calltrace room).
    let hook = "(Ljava/lang/Object;)V";
    let own: Vec<_> = bci::ALLOC_HOOKS
        .iter()
        .zip(bci::NATIVE_DESCRIPTORS)
        .flat_map(|((h, n), d)| [(*h, hook), (*n, d)])
        .chain(bci::SHAPED_NATIVES)
        .filter_map(|(n, d)| jni.method_id_in(k, n, d, true))
        .collect();
    calltrace::hide(&own);
    if let Some(m) = jni.method_id_in(k, "objectInit", hook, true) {
        calltrace::set_init_hook(m);
    }
    if let Some(m) = jni.method_id("java/lang/Object", "<init>", "()V", false) {
        calltrace::set_object_init(m);
    }
    publish_table(jni, k, shape)?;
    STATE.tracker_class.store(k as usize, Release);
    Ok(())
}

/// Makes the tracker's table of shapes (`shapes`, empty) and keeps what [`offer`] needs.
fn publish_table(jni: &jvm::Jni, tracker: jclass, shape: jclass) -> Result<(), RoomError> {
    let ctor =
        jni.method_id_in(shape, "<init>", bci::SHAPE_INIT, false).ok_or("the shape class has no constructor")? as usize;
    let table = jni.new_object_array(bci::SHAPES as jint, shape).ok_or("cannot make the tracker's table of shapes")?;
    let sig = format!("[L{};", bci::shape_class_name(TRACKER));
    let set = jni.set_static_object(tracker, "shapes", &sig, table);
    let global = jni.new_global_ref(table);
    jni.delete_local_ref(table);
    if !set || global.is_null() {
        return Err("cannot set the tracker's table of shapes".into());
    }
    // The shape class is linked and initialised now, not in [`offer`] (no class loads under
    // its lock).
    let zero = [
        jvalue { l: std::ptr::null_mut() },
        jvalue { j: 0 },
        jvalue { j: 0 },
        jvalue { i: 0 },
        jvalue { i: 0 },
        jvalue { i: 0 },
    ];
    let probe = jni.new_object(shape, ctor as jmethodID, &zero).ok_or("cannot make a shape")?;
    jni.delete_local_ref(probe);
    *crate::vm::logger::lock(&STATE.published) =
        Some(Published { table: global as usize, class: shape as usize, ctor, slots: vec![0; bci::SHAPES] });
    Ok(())
}

/// The allocation plan while allocations are tracked (the class-file hook applies it together
/// with the other plans, see `methods::transform`).
pub fn plan() -> Option<bci::AllocHooks<'static>> {
    STATE
        .instrumenting
        .load(SeqCst)
        .then(|| bci::AllocHooks { tracker: TRACKER, keep_new: STATE.keep_new.load(Relaxed) })
}

/// Which path saw the allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The instrumented bytecode: `Object.<init>` or an array instruction. Such an object is
    /// new unless the VM or JNI reported it first (see [`Local::vm_made`]).
    Bytecode,
    /// JVMTI VMObjectAlloc or a JNI allocation function.
    VmOrJni,
}

/// What the caller knows of the class of an object.
#[derive(Clone, Copy)]
enum Hint {
    /// Nothing: the class is asked for.
    None,
    /// The class and its identity hash (which indexes this thread's class cache), as the
    /// tracker's Java code hands them over.
    Hashed(jclass, u32),
    /// The class with its tag and complete shape, from the tracker's table of shapes.
    Known(jclass, ClassTag, Shape),
}

impl Hint {
    fn hash(self) -> Option<u32> {
        match self {
            Hint::Hashed(_, h) => Some(h),
            _ => None,
        }
    }
}

/// A shape as the tracker's table keeps it (see `bci::shape_class`): `kind` is `is_array` and
/// `nested << 16`.
fn known(klass: jclass, tag: jlong, id: jlong, size: jint, kind: jint) -> Hint {
    Hint::Known(
        klass,
        ClassTag(tag),
        Shape { class_id: id as usize, size, is_array: kind as i16, nested: (kind >> 16) as i16 },
    )
}

/// The tracker's native `onInitShaped(Object, Class, long, long, int, int)`: [`on_init`] for an
/// object whose class the tracker's table of shapes knew.
unsafe extern "system" fn on_init_shaped(
    env: *mut JNIEnv,
    _tracker: jclass,
    obj: jobject,
    klass: jclass,
    tag: jlong,
    id: jlong,
    size: jint,
    kind: jint,
) {
    crate::vm::logger::guard("JvmpiShimTracker.onInitShaped", (), || init(env, obj, known(klass, tag, id, size, kind)))
}

/// The tracker's native `onNewShaped(Object, Class, long, long, int, int)`: [`on_new`] for an
/// array whose class the tracker's table of shapes knew.
unsafe extern "system" fn on_new_shaped(
    env: *mut JNIEnv,
    _tracker: jclass,
    obj: jobject,
    klass: jclass,
    tag: jlong,
    id: jlong,
    size: jint,
    kind: jint,
) {
    crate::vm::logger::guard("JvmpiShimTracker.onNewShaped", (), || {
        report_with(env, obj, Source::Bytecode, known(klass, tag, id, size, kind))
    })
}

/// The tracker's native `onNewObjectShaped(Class, long, long, int)`: [`on_new_object`] for a
/// class the tracker's table of shapes knew.
unsafe extern "system" fn on_new_object_shaped(
    env: *mut JNIEnv,
    _tracker: jclass,
    klass: jobject,
    tag: jlong,
    id: jlong,
    size: jint,
) {
    let sp = stack_mark();
    crate::vm::logger::guard("JvmpiShimTracker.onNewObjectShaped", (), || {
        reserve_with(env, klass, sp, false, true, known(klass, tag, id, size, JVMPI_NORMAL_OBJECT));
    })
}

/// The tracker's native `onNew(Object, Class, int)`: an array (of that class, whose identity
/// hash is given) has just been made in this thread.
unsafe extern "system" fn on_new(env: *mut JNIEnv, _tracker: jclass, obj: jobject, klass: jclass, hash: jint) {
    let hint = if klass.is_null() { Hint::None } else { Hint::Hashed(klass, hash as u32) };
    crate::vm::logger::guard("JvmpiShimTracker.onNew", (), || report_with(env, obj, Source::Bytecode, hint))
}

/// The tracker's native `onInit(Object, Class, int)`, first thing in `java.lang.Object.<init>`:
/// the object takes the ID its `new` announced, or is reported now if no hook saw it being
/// allocated.
unsafe extern "system" fn on_init(env: *mut JNIEnv, _tracker: jclass, obj: jobject, klass: jclass, hash: jint) {
    let hint = if klass.is_null() { Hint::None } else { Hint::Hashed(klass, hash as u32) };
    crate::vm::logger::guard("JvmpiShimTracker.onInit", (), || init(env, obj, hint))
}

/// The tracker's native `onNewObject(Class, int)`, right after a `new` of that class (its
/// identity hash given): OBJECT_ALLOC now, with an ID the object takes in `Object.<init>`.
unsafe extern "system" fn on_new_object(env: *mut JNIEnv, _tracker: jclass, klass: jobject, hash: jint) {
    let sp = stack_mark();
    crate::vm::logger::guard("JvmpiShimTracker.onNewObject", (), || {
        reserve_with(env, klass, sp, false, true, Hint::Hashed(klass, hash as u32));
    })
}

/// The tracker's native `onMade(Object)`: `Unsafe.allocateInstance` has just made this object
/// (method handles and reflection do, before they run a constructor).
unsafe extern "system" fn on_made(env: *mut JNIEnv, _tracker: jclass, obj: jobject) {
    crate::vm::logger::guard("JvmpiShimTracker.onMade", (), || report(env, obj, Source::VmOrJni))
}

/// The tracker's native `onReflectNew(Constructor)`: the VM is about to make an instance of the
/// constructor's class and run the constructor on it (the JDK's native reflective call).
unsafe extern "system" fn on_reflect_new(env: *mut JNIEnv, _tracker: jclass, ctor: jobject) {
    let sp = stack_mark();
    crate::vm::logger::guard("JvmpiShimTracker.onReflectNew", (), || {
        if ctor.is_null() || !events::enabled(JVMPI_EVENT_OBJECT_ALLOC) {
            return;
        }
        let jni = jvm::Jni::of(env);
        let Some(m) = jni.from_reflected_method(ctor) else { return };
        let Ok(k) = jvm::method_class(m) else { return };
        reserve(env, k, sp, true);
        jni.delete_local_ref(k);
    })
}

/// Sends OBJECT_ALLOC for `obj` unless it has been reported (or given an ID) already.
pub fn report(env: *mut JNIEnv, obj: jobject, source: Source) {
    report_with(env, obj, source, Hint::None)
}

/// [`report`], with the object's class when the caller knows it.
fn report_with(env: *mut JNIEnv, obj: jobject, source: Source, hint: Hint) {
    if obj.is_null() || !events::enabled(JVMPI_EVENT_OBJECT_ALLOC) || !events::is_ready() {
        return;
    }
    if flags() & jvm::QUIET != 0 {
        // Made by the shim's own JNI call (or inside a virtual thread's mount transition) (linking a class, reading a figure): not the
        // application's allocation. It stays untagged; RequestEvent can still describe it.
        return;
    }
    if set_reporting(true) {
        // An allocation made by the agent's own OBJECT_ALLOC handler: reported after it.
        defer(env, obj);
        return;
    }
    report_one(env, obj, source, hint);
    drain_deferred(env);
    set_reporting(false);
}

fn defer(env: *mut JNIEnv, obj: jobject) {
    let g = jvm::Jni::of(env).new_global_ref(obj);
    if !g.is_null() {
        local(|l| {
            let mut v = l.deferred.take();
            v.push(g as usize);
            l.deferred.set(v);
        });
    }
}

fn drain_deferred(env: *mut JNIEnv) {
    loop {
        let v = local(|l| l.deferred.take());
        if v.is_empty() {
            return;
        }
        let jni = jvm::Jni::of(env);
        for g in v {
            report_one(env, g as jobject, Source::VmOrJni, Hint::None);
            jni.delete_global_ref(g as jobject);
        }
    }
}

fn report_one(env: *mut JNIEnv, obj: jobject, source: Source, hint: Hint) {
    let jni = jvm::Jni::of(env);
    if source == Source::VmOrJni && !matches!(jvm::get_tag(obj), Ok(0)) {
        return;
    }
    let shape = match hint {
        Hint::Known(klass, ctag, shape) => Some(known_shape(env, klass, ctag, shape)),
        Hint::Hashed(klass, hash) => shape_of(env, &jni, klass, Some(hash)),
        Hint::None => {
            let klass = jni.object_class(obj);
            let shape = shape_of(env, &jni, klass, None);
            jni.delete_local_ref(klass);
            shape
        }
    };
    let Some((ctag, shape)) = shape else {
        log::debug!("an allocation could not be described; not reported");
        return;
    };
    if shape.is_array() == JVMPI_NORMAL_OBJECT {
        match source {
            Source::VmOrJni => remember_vm_made(&jni, obj, ctag),
            // A bytecode allocation is new: only a normal object the VM or JNI made (and
            // reported) before its constructor ran can come back through Object.<init>.
            Source::Bytecode => {
                if was_vm_made(&jni, obj, ctag) && !matches!(jvm::get_tag(obj), Ok(0)) {
                    return;
                }
            }
        }
    }
    if flags() & jvm::ANNOUNCED == 0 {
        // A thread that attaches itself (JNI AttachCurrentThread: DestroyJavaVM, agents'
        // threads) runs its own java.lang.Thread's constructor before the agent has heard of
        // the thread. It is announced first, and its THREAD_START names that object, which is
        // from then on the thread's (not reported again: RequestEvent describes it).
        if !threads::ensure_current_announced(env) {
            // Not announced yet, or ended: its events are not sent, so the object gets no ID
            // (none is freed that was never allocated).
            return;
        }
        if !matches!(jvm::get_tag(obj), Ok(0)) {
            return;
        }
        // The thread's own object may still be waiting for its `Object.<init>` (the arguments
        // of its constructor, such as its "Thread-<n>" name, are evaluated first): it is tagged
        // now, so its constructor must not report it under a second ID.
        if let Ok(me) = jvm::current_thread() {
            if !me.is_null() {
                let k = jni.object_class(me);
                if let Some(t) = class_tag(&jni, k, None) {
                    remember_vm_made(&jni, me, t);
                }
                jni.delete_local_ref(k);
                jni.delete_local_ref(me);
            }
        }
    }
    // Tagged only now: a tag with the DEFINED bit always belongs to a reported object.
    let tag = fresh_defined_tag();
    if !ids::bind(&jni, obj, tag) {
        return;
    }
    let size = if shape.size > 0 {
        shape.size
    } else {
        let s = jvm::object_size(obj).map_or(0, |s| s.min(jint::MAX as i64) as jint);
        if shape.is_array() == JVMPI_NORMAL_OBJECT {
            // Every instance of a class has the same size: measure it once.
            if let Some(mut e) = STATE.shapes.get_mut(&ctag) {
                e.size = s;
                cache_shape(ctag, *e, hint.hash());
            }
        }
        s
    };
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_ALLOC, env);
    ev.u.obj_alloc = ObjAlloc {
        arena_id: ARENA,
        class_id: shape.class_id as jobjectID,
        is_array: shape.is_array(),
        size,
        obj_id: ids::to_id(tag),
    };
    let mut deliver = || {
        announce_arena(env);
        send(&mut ev);
    };
    if source == Source::Bytecode && shape.is_array() == JVMPI_NORMAL_OBJECT {
        // Seen in Object.<init>: traces taken now begin at the method that ran `new`.
        calltrace::at_object_init(deliver);
    } else {
        deliver();
    }
    if shape.nested != 0 {
        // Sub-arrays made together with their outer array (multianewarray).
        for e in jni.array_elements(obj) {
            if !e.is_null() {
                report_one(env, e, Source::VmOrJni, Hint::None);
                jni.delete_local_ref(e);
            }
        }
    }
}

/// A shape the tracker's table of shapes handed over, as [`shape_of`] answers for a cached one.
fn known_shape(env: *mut JNIEnv, klass: jclass, ctag: ClassTag, s: Shape) -> (ClassTag, Shape) {
    if s.is_array() == JVMPI_NORMAL_OBJECT {
        // As in `shape_of`: CLASS_LOAD may have been enabled since the shape was published.
        let _ = classes::ensure_announced_tagged(env, klass, ctag);
    }
    (ctag, s)
}

fn shape_of(env: *mut JNIEnv, jni: &jvm::Jni, klass: jclass, hash: Option<u32>) -> Option<(ClassTag, Shape)> {
    let (ctag, cached) = cached_class(jni, klass, hash)?;
    if let Some(s) = cached.or_else(|| STATE.shapes.get(&ctag).map(|s| *s)) {
        if s.is_array() == JVMPI_NORMAL_OBJECT {
            // The class must have been announced before its first instance (CLASS_LOAD may
            // have been enabled since the shape was cached).
            let _ = classes::ensure_announced_tagged(env, klass, ctag);
        }
        if cached.is_none() {
            cache_shape(ctag, s, hash);
        }
        if let Some(h) = hash {
            if s.complete() && !offered(ctag, h, false) && offer(jni, klass, h, ctag, s) {
                offered(ctag, h, true);
            }
        }
        return Some((ctag, s));
    }
    let sig = jvm::class_signature(klass).ok()?;
    let shape = match array_kind(&sig) {
        None => Shape {
            is_array: JVMPI_NORMAL_OBJECT as i16,
            class_id: classes::ensure_announced_tagged(env, klass, ctag).ok()? as usize,
            size: 0,
            nested: 0,
        },
        Some(JVMPI_CLASS) => {
            let elem = jni.component_type(klass)?;
            let id = classes::ensure_announced(env, elem).ok()? as usize;
            jni.delete_local_ref(elem);
            Shape { is_array: JVMPI_CLASS as i16, class_id: id, size: 0, nested: sig.starts_with("[[") as i16 }
        }
        Some(prim) => Shape { is_array: prim as i16, class_id: 0, size: 0, nested: 0 },
    };
    keep_shape(ctag, shape);
    cache_shape(ctag, shape, hash);
    Some((ctag, shape))
}

// ---- reservations: OBJECT_ALLOC at `new`, before any constructor runs ---------------------------

/// An object announced with OBJECT_ALLOC whose constructor chain has not reached
/// `Object.<init>` yet: its ID waits for it there.
#[derive(Clone, Copy)]
struct Pending {
    tag: jlong,
    /// The tag of its class.
    ctag: ClassTag,
    class_id: usize,
    size: jint,
    /// The native stack pointer at the hook (see [`stack_mark`]).
    sp: usize,
    /// Made by the hook after a `new` (not for reflection or JNI `NewObject`).
    from_new: bool,
    /// The object has its tag already: `jobjectID2jobject` found it in its frame
    /// ([`pending_object`]). Abandoned, it owes no OBJECT_FREE of its own making: its tag
    /// brings one when it dies.
    bound: bool,
}

/// More reservations than this waiting in one thread: the oldest is taken as abandoned.
const PENDING_MAX: usize = 4096;
/// A reservation made by a frame this much deeper than the current hook's is abandoned: the
/// frame that ran its `new` has returned or thrown (a frame's own hooks never run shallower
/// than its earlier ones by more than this).
const SP_SLACK: usize = 1024;

/// An address in the current native frame: how deep the thread's stack is.
#[inline(always)]
fn stack_mark() -> usize {
    let x = 0u8;
    std::hint::black_box(&x) as *const u8 as usize
}

/// The object of a reservation will never be constructed (its constructor, or the evaluation
/// of its arguments, threw): as on HotSpot, where that object was garbage, it gets OBJECT_FREE
/// at the next GC bracket.
fn abandon(p: Pending) {
    if !p.bound {
        crate::rooms::deaths::on_object_free(ids::Tag(p.tag));
    }
}

/// Announces the allocation of an instance of `klass` that is about to be constructed in this
/// thread (right after a `new`, or before the VM makes one for reflection or JNI `NewObject`):
/// OBJECT_ALLOC now, with a fresh ID that the object takes when its constructor chain reaches
/// `Object.<init>` ([`init`]). `sp` is [`stack_mark`] of the calling native. `checked`: the
/// class is not known to be instantiable and initialised (reflection, JNI), so it is checked.
/// Returns the reserved tag, or None when nothing was announced (the object is then reported
/// from `Object.<init>`).
pub fn reserve(env: *mut JNIEnv, klass: jclass, sp: usize, checked: bool) -> Option<jlong> {
    reserve_with(env, klass, sp, checked, false, Hint::None)
}

/// [`reserve`], with what the caller knows of the class (its identity hash, or its shape);
/// `from_new`: called by the hook after a `new`.
fn reserve_with(
    env: *mut JNIEnv,
    klass: jclass,
    sp: usize,
    checked: bool,
    from_new: bool,
    hint: Hint,
) -> Option<jlong> {
    if klass.is_null() || !events::enabled(JVMPI_EVENT_OBJECT_ALLOC) || !events::is_ready() {
        return None;
    }
    if flags() & (jvm::QUIET | jvm::ANNOUNCED) != jvm::ANNOUNCED || reporting() {
        // Allocations of the agent's own OBJECT_ALLOC handler, and of a thread not announced
        // yet, are reported from `Object.<init>` (after the handler, after THREAD_START).
        return None;
    }
    if checked {
        let m = jvm::class_modifiers(klass).ok()?;
        // ACC_INTERFACE | ACC_ABSTRACT: no instance will be made.
        if m & 0x0600 != 0 || jvm::class_status(klass).ok()? & jvmti::JVMTI_CLASS_STATUS_INITIALIZED == 0 {
            return None;
        }
    }
    let jni = jvm::Jni::of(env);
    let hash = hint.hash();
    let (ctag, shape) = match hint {
        Hint::Known(_, ctag, shape) => known_shape(env, klass, ctag, shape),
        _ => shape_of(env, &jni, klass, hash)?,
    };
    if shape.is_array() != JVMPI_NORMAL_OBJECT {
        return None;
    }
    let size = if shape.size > 0 { shape.size } else { instance_size(&jni, klass, ctag, hash)? };
    let tag = fresh_defined_tag();
    local(|l| {
        let mut p = l.pending.borrow_mut();
        // Reservations of frames that are gone (shallower code is running now); the newest
        // are the deepest, so the search stops at the first that may still be alive.
        while p.last().is_some_and(|e| e.sp.saturating_add(SP_SLACK) < sp) {
            if let Some(e) = p.pop() {
                abandon(e);
            }
        }
        if p.len() >= PENDING_MAX {
            abandon(p.remove(0));
        }
        p.push(Pending { tag, ctag, class_id: shape.class_id, size, sp, from_new, bound: false });
    });
    set_reporting(true);
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_ALLOC, env);
    ev.u.obj_alloc = ObjAlloc {
        arena_id: ARENA,
        class_id: shape.class_id as jobjectID,
        is_array: JVMPI_NORMAL_OBJECT,
        size,
        obj_id: ids::to_id(tag),
    };
    announce_arena(env);
    send(&mut ev);
    drain_deferred(env);
    set_reporting(false);
    Some(tag)
}

/// The instance size of a class (the same for every instance), measured once on an instance
/// made without a constructor (JNI `AllocObject`; HotSpot registers an object for
/// finalization when its `Object.<init>` returns, so that instance is never finalized). With
/// `-XX:-RegisterFinalizersAtInit` (registration at allocation) a class with its own
/// `finalize()` gets None instead: its first instance is measured when it is reported from
/// `Object.<init>`, and announced at `new` from then on.
fn instance_size(jni: &jvm::Jni, klass: jclass, ctag: ClassTag, hash: Option<u32>) -> Option<jint> {
    if finalizers_at_allocation() {
        if let Some(m) = jni.method_id_in(klass, "finalize", "()V", false) {
            let decl = jvm::method_class(m).ok()?;
            let sig = jvm::class_signature(decl);
            jni.delete_local_ref(decl);
            if sig.ok()? != "Ljava/lang/Object;" {
                return None;
            }
        }
    }
    let o = jni.alloc_object(klass)?;
    let s = jvm::object_size(o);
    jni.delete_local_ref(o);
    let s = s.ok()?.min(jint::MAX as i64) as jint;
    if let Some(mut e) = STATE.shapes.get_mut(&ctag) {
        e.size = s;
        cache_shape(ctag, *e, hash);
    }
    Some(s)
}

/// Whether the JVM registers finalizable objects when they are allocated rather than when
/// their `Object.<init>` returns (`-XX:-RegisterFinalizersAtInit` on its command line or in
/// the option variables it reads).
fn finalizers_at_allocation() -> bool {
    *STATE.finalizers_at_allocation
}

/// [`finalizers_at_allocation`] found out (once).
fn finalizers_flag() -> bool {
    let flag = "-XX:-RegisterFinalizersAtInit";
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    String::from_utf8_lossy(&cmdline).contains(flag)
        || ["JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"]
            .iter()
            .any(|v| std::env::var(v).is_ok_and(|s| s.contains(flag)))
}

/// `Object.<init>` of `obj` in this thread: it takes the newest reservation of its class (the
/// reservations above it were abandoned: their constructors threw before reaching here), or,
/// when no hook announced it, is reported now.
fn init(env: *mut JNIEnv, obj: jobject, hint: Hint) {
    if obj.is_null() {
        return;
    }
    let (any_pending, any_made) = local(|l| (!l.pending.borrow().is_empty(), !l.vm_made.borrow().is_empty()));
    if (any_pending || any_made) && flags() & jvm::QUIET == 0 && !reporting() {
        let jni = jvm::Jni::of(env);
        let ctag = match hint {
            Hint::Known(_, ctag, _) => Some(ctag),
            Hint::Hashed(klass, hash) => class_tag(&jni, klass, Some(hash)),
            Hint::None => {
                let klass = jni.object_class(obj);
                let ctag = class_tag(&jni, klass, None);
                jni.delete_local_ref(klass);
                ctag
            }
        };
        if let Some(ctag) = ctag {
            if any_made && was_vm_made(&jni, obj, ctag) {
                return; // reported when the VM or JNI made it
            }
            let hit = local(|l| {
                let mut p = l.pending.borrow_mut();
                let i = p.iter().rposition(|e| e.ctag == ctag)?;
                let above: Vec<Pending> = if i + 1 < p.len() { p.drain(i + 1..).collect() } else { Vec::new() };
                Some((p.pop()?, above))
            });
            if let Some((mine, above)) = hit {
                above.into_iter().for_each(abandon);
                if ids::bind(&jni, obj, mine.tag) {
                    return;
                }
                abandon(mine);
            }
        }
    }
    report_with(env, obj, Source::Bytecode, hint)
}

/// JNI `NewObject`/`NewObjectV`/`NewObjectA` are about to make an instance of `klass` and run a
/// constructor on it: announced now, before the constructor runs. Returns what
/// [`jni_constructed`] needs.
pub fn jni_constructing(env: *mut JNIEnv, klass: jclass, sp: usize) -> Option<jlong> {
    if !events::enabled(JVMPI_EVENT_OBJECT_ALLOC) {
        return None;
    }
    reserve(env, klass, sp, true)
}

/// The JNI call of [`jni_constructing`] has returned: a reservation its constructor did not
/// take (it threw, or the VM refused) is abandoned.
pub fn jni_constructed(tag: Option<jlong>) {
    let Some(tag) = tag else { return };
    let left = local(|l| {
        let mut p = l.pending.borrow_mut();
        let i = p.iter().position(|e| e.tag == tag)?;
        Some(p.drain(i..).collect::<Vec<_>>())
    });
    left.into_iter().flatten().for_each(abandon);
}

/// `RequestEvent(OBJECT_ALLOC)` for an ID announced in this thread whose object is still being
/// constructed (an agent asking from its OBJECT_ALLOC handler): its description, as announced.
/// The object behind `id` while it waits for its constructor in this thread: a local
/// reference, found in the frame of its `new` (the local the allocation plan keeps it in while
/// the hook runs, read with JVMTI `GetLocalObject`), and tagged with its ID there and then.
/// HotSpot's object existed from its allocation on, so `jobjectID2jobject` answered for it in
/// the OBJECT_ALLOC handler; this does the same for the object whose OBJECT_ALLOC is being
/// delivered. None when `id` is no such reservation, when its hook has returned (the local is
/// cleared), or when the plan does not keep objects (no `can_access_local_variables`).
pub fn pending_object(id: jobjectID) -> Option<jobject> {
    let tag = ids::to_tag(id);
    if !STATE.keep_new.load(Relaxed) || !ids::is_defined(tag) {
        return None;
    }
    let (ctag, bound) =
        local(|l| l.pending.borrow().iter().rev().find(|e| e.tag == tag && e.from_new).map(|e| (e.ctag, e.bound)))?;
    let jni = jvm::Jni::current()?;
    let Some(obj) = jvm::object_in_new_local(TRACKER) else {
        log::debug!("jobjectID2jobject: {id:p}: no object in the frame of its `new`");
        return None;
    };
    // The object of this reservation: untagged (or tagged by an earlier call), of its class.
    let t = jvm::get_tag(obj).unwrap_or(-1);
    let klass = jni.object_class(obj);
    let same_class = class_tag(&jni, klass, None) == Some(ctag);
    jni.delete_local_ref(klass);
    if !same_class || !(t == 0 || (bound && t == tag)) {
        log::debug!("jobjectID2jobject: {id:p}: the frame of its `new` holds another object (same class {same_class}, tag {t:#x})");
        jni.delete_local_ref(obj);
        return None;
    }
    if !bound {
        if !ids::bind(&jni, obj, tag) {
            jni.delete_local_ref(obj);
            return None;
        }
        local(|l| {
            if let Some(e) = l.pending.borrow_mut().iter_mut().rev().find(|e| e.tag == tag) {
                e.bound = true;
            }
        });
    }
    Some(obj)
}

pub fn pending_description(id: jobjectID) -> Option<ObjAlloc> {
    let tag = ids::to_tag(id);
    local(|l| {
        l.pending.borrow().iter().rev().find(|e| e.tag == tag).map(|e| ObjAlloc {
            arena_id: ARENA,
            class_id: e.class_id as jobjectID,
            is_array: JVMPI_NORMAL_OBJECT,
            size: e.size,
            obj_id: id,
        })
    })
}

// ---- per-thread caches on the allocation path ---------------------------------------------------

const CACHED: usize = 4;
/// Sets of two entries of a thread's class cache indexed by the class's identity hash (256
/// direct-mapped entries missed 4 % of javac's lookups, each miss a GetTag, a weak reference
/// made and one dropped; 32 bytes an entry, a set one cache line, 64 KiB for a thread that
/// allocates).
const SETS: usize = 1024;

/// A class this thread allocated lately (the short list, for callers without the identity hash).
struct Cached {
    /// A weak reference to the class.
    weak: usize,
    ctag: ClassTag,
    /// Its shape once complete (an instance size known, or an array class).
    shape: Option<Shape>,
}

/// The bits of an identity hash that pick the set (`SETS` is a power of two), and so need not be
/// kept in the entry: [`Entry::key`] keeps the shape's kind there.
const SET_BITS: u32 = SETS.trailing_zeros();
const LOW: u32 = (1 << SET_BITS) - 1;
/// In [`Entry::key`]: the shape is not complete yet (no JVMPI `is_array` value is this big).
const KIND_NONE: u32 = 0xF;
/// In [`Entry::key`]: this thread has offered the class's shape to the tracker's table.
const OFFERED: u32 = 1 << (SET_BITS - 1);

/// An entry of the class cache indexed by identity hash: 32 bytes, so that a set of two is
/// one cache line (the first load of an entry was the hottest instruction of the lookup, a
/// memory miss, when a set took two lines).
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Entry {
    /// A weak reference to the class; 0: the entry is empty.
    weak: usize,
    ctag: ClassTag,
    /// The shape's class ID and size (when `key` says it is complete).
    class_id: usize,
    size: jint,
    /// The identity hash's bits above [`LOW`], and in [`LOW`]'s bits the shape's `is_array`
    /// ([`KIND_NONE`]: not complete yet) shifted by one and its `nested` flag in bit 0.
    key: u32,
}

impl Entry {
    fn shape(&self) -> Option<Shape> {
        let kind = (self.key >> 1) & KIND_NONE;
        (kind != KIND_NONE).then_some(Shape {
            class_id: self.class_id,
            size: self.size,
            is_array: kind as i16,
            nested: (self.key & 1) as i16,
        })
    }
    fn set_shape(&mut self, s: Shape) {
        self.class_id = s.class_id;
        self.size = s.size;
        self.key = (self.key & (!LOW | OFFERED)) | ((s.is_array as u32 & KIND_NONE) << 1) | (s.nested as u32 & 1);
    }
}

/// A set of the class cache: the entry used last first.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Set([Entry; 2]);

/// A normal object the VM or JNI made and reported in this thread.
struct Made {
    weak: usize,
    /// The tag of its class: only objects of the same class are compared with it.
    ctag: ClassTag,
}

/// JVMTI ThreadEnd, in the ending thread: its caches' weak references are given back (the
/// thread-locals themselves go only after the thread has left the JVM, too late for JNI).
pub fn on_thread_end(env: *mut JNIEnv) {
    local(|l| std::mem::take(&mut *l.pending.borrow_mut())).into_iter().for_each(abandon);
    let jni = jvm::Jni::of(env);
    for c in local(|l| std::mem::take(&mut *l.classes.borrow_mut())) {
        jni.delete_weak(c.weak as jobject);
    }
    for set in local(|l| std::mem::take(&mut *l.direct.borrow_mut())) {
        for e in set.0.iter().filter(|e| e.weak != 0) {
            jni.delete_weak(e.weak as jobject);
        }
    }
    for m in local(|l| std::mem::take(&mut *l.vm_made.borrow_mut())) {
        jni.delete_weak(m.weak as jobject);
    }
}

fn class_tag(jni: &jvm::Jni, klass: jclass, hash: Option<u32>) -> Option<ClassTag> {
    cached_class(jni, klass, hash).map(|(t, _)| t)
}

/// The tag of `klass` and its shape if this thread has it. With the class's identity hash
/// (the tracker's Java code computes it), the entry is found at its index in the direct-mapped
/// cache and confirmed with one comparison; without it, the short list is searched from the
/// class used last (in a loop that allocates one class, one comparison), and the class found
/// moves there.
fn cached_class(jni: &jvm::Jni, klass: jclass, hash: Option<u32>) -> Option<(ClassTag, Option<Shape>)> {
    let hit = local(|l| match hash {
        Some(h) => {
            let mut d = l.direct.borrow_mut();
            let set = &mut d.get_mut(h as usize % SETS)?.0;
            let hi = h & !LOW;
            let w = (0..2)
                .find(|&w| set[w].weak != 0 && set[w].key & !LOW == hi && jni.is_same(set[w].weak as jobject, klass))?;
            // The entry used last first (a hit in the second moves it there).
            if w != 0 {
                set.swap(0, w);
            }
            Some((set[0].ctag, set[0].shape()))
        }
        None => {
            let mut c = l.classes.borrow_mut();
            let i = c.iter().rposition(|e| jni.is_same(e.weak as jobject, klass))?;
            let r = (c[i].ctag, c[i].shape);
            if i + 1 != c.len() {
                let e = c.remove(i);
                c.push(e);
            }
            Some(r)
        }
    });
    if hit.is_some() {
        return hit;
    }
    let tag = ClassTag(ids::indexed_tag_of(klass).ok()?.0);
    let w = jni.new_weak(klass);
    if !w.is_null() {
        local(|l| match hash {
            Some(h) => {
                let mut d = l.direct.borrow_mut();
                if d.is_empty() {
                    d.resize(SETS, Set::default());
                }
                // The new entry first, the one used last second, the other one out.
                let set = &mut d[h as usize % SETS].0;
                let first = set[0];
                let old = std::mem::replace(&mut set[1], first);
                set[0] =
                    Entry { weak: w as usize, ctag: tag, class_id: 0, size: 0, key: (h & !LOW) | (KIND_NONE << 1) };
                if old.weak != 0 {
                    jni.delete_weak(old.weak as jobject);
                }
            }
            None => {
                let mut c = l.classes.borrow_mut();
                if c.len() == CACHED {
                    let old = c.remove(0);
                    jni.delete_weak(old.weak as jobject);
                }
                c.push(Cached { weak: w as usize, ctag: tag, shape: None });
            }
        });
    }
    Some((tag, None))
}

/// Whether this thread has offered the class (tag `ctag`, identity hash `hash`) to the tracker's
/// table; `mark`: it has now. (No entry in this thread's cache: as if offered.)
fn offered(ctag: ClassTag, hash: u32, mark: bool) -> bool {
    local(|l| {
        let mut d = l.direct.borrow_mut();
        let Some(set) = d.get_mut(hash as usize % SETS) else { return true };
        let Some(e) = set.0.iter_mut().find(|e| e.weak != 0 && e.ctag == ctag) else { return true };
        if mark {
            e.key |= OFFERED;
        }
        e.key & OFFERED != 0
    })
}

/// Puts the complete shape of `klass` (tag `ctag`, identity hash `hash`) in the tracker's table,
/// if its slot is free (empty, or its class unloaded): from then on the class's allocations
/// reach the shim with their shape ([`Hint::Known`]). False: another thread is filling the
/// table, to be offered again later (the lock is never waited for: a thread holding it may be
/// suspended by the agent at its next JNI call).
fn offer(jni: &jvm::Jni, klass: jclass, hash: u32, ctag: ClassTag, s: Shape) -> bool {
    let Ok(mut g) = STATE.published.try_lock() else { return false };
    let Some(p) = g.as_mut() else { return true };
    let i = hash as usize & (bci::SHAPES - 1);
    let old = p.slots[i];
    if old != 0 && (jni.is_same(old as jobject, klass) || !jni.is_same(old as jobject, std::ptr::null_mut())) {
        return true; // there already, or the slot of another class that is still loaded
    }
    let kind = s.is_array as jint | (s.nested as jint) << 16;
    let args = [
        jvalue { l: klass },
        jvalue { j: ctag.0 },
        jvalue { j: s.class_id as jlong },
        jvalue { i: s.size },
        jvalue { i: kind },
        jvalue { i: hash as jint },
    ];
    // The shape class is initialised (`publish_table`) and its constructor calls only
    // WeakReference's: no class loads, and no event (the call is the shim's own); no trace
    // shows its frames.
    let Some(o) = crate::face::own_work::own_work(jni.raw(), p.ctor as jmethodID, || {
        jni.new_object(p.class as jclass, p.ctor as jmethodID, &args)
    }) else {
        return true;
    };
    let w = jni.new_weak(klass);
    if !w.is_null() && jni.set_array_element(p.table as jobject, i as jint, o) {
        if old != 0 {
            jni.delete_weak(old as jobject);
        }
        p.slots[i] = w as usize;
    } else if !w.is_null() {
        jni.delete_weak(w);
    }
    jni.delete_local_ref(o);
    true
}

/// Keeps a complete shape (instance size known, or an array) in this thread's cache entries of
/// its class.
fn cache_shape(ctag: ClassTag, s: Shape, hash: Option<u32>) {
    if !s.complete() {
        return;
    }
    local(|l| {
        if let Some(h) = hash {
            if let Some(set) = l.direct.borrow_mut().get_mut(h as usize % SETS) {
                for e in set.0.iter_mut().filter(|e| e.weak != 0 && e.ctag == ctag) {
                    e.set_shape(s);
                }
            }
        }
        if let Some(e) = l.classes.borrow_mut().iter_mut().rev().find(|e| e.ctag == ctag) {
            e.shape = Some(s);
        }
    });
}

fn remember_vm_made(jni: &jvm::Jni, obj: jobject, ctag: ClassTag) {
    let w = jni.new_weak(obj);
    if w.is_null() {
        return;
    }
    local(|l| {
        let mut v = l.vm_made.borrow_mut();
        if v.len() == CACHED {
            jni.delete_weak(v.remove(0).weak as jobject);
        }
        v.push(Made { weak: w as usize, ctag });
    });
}

/// Whether `obj` (of the class tagged `ctag`) is one the VM or JNI reported on this thread
/// (and forgets it). Objects of other classes are not compared.
fn was_vm_made(jni: &jvm::Jni, obj: jobject, ctag: ClassTag) -> bool {
    local(|l| {
        let mut v = l.vm_made.borrow_mut();
        match v.iter().position(|m| m.ctag == ctag && jni.is_same(m.weak as jobject, obj)) {
            Some(i) => {
                jni.delete_weak(v.remove(i).weak as jobject);
                true
            }
            None => false,
        }
    })
}

/// A tagged object died: if it was a class, its cached shape goes too.
pub fn forget_class(ctag: ClassTag) {
    STATE.shapes.remove(&ctag);
}

/// Keeps the shape of the class with tag `ctag`, marked first as a class key for the GC room.
fn keep_shape(ctag: ClassTag, shape: Shape) {
    ids::mark_class(ctag);
    STATE.shapes.insert(ctag, shape);
}

/// Whether a shape is kept for class tag `ctag`, and keeps one (tests of the GC room).
#[cfg(test)]
pub fn test_shape(ctag: ClassTag, keep: bool) -> bool {
    if keep {
        keep_shape(ctag, Shape { class_id: 0, size: 16, is_array: 0, nested: 0 });
    }
    STATE.shapes.contains_key(&ctag)
}

/// Sends an OBJECT_ALLOC made in this thread, on the gate's path for the trackers' events
/// (when only one agent listens and this thread is announced, its hot path, as method events
/// take it: no listener mask, no agent switch, the thread's own in-flight counter).
fn send(ev: &mut JVMPI_Event) {
    events::send_tracked(ev);
}

/// ARENA_NEW for arena 1, once, before the first OBJECT_ALLOC that follows its enabling.
fn announce_arena(env: *mut JNIEnv) {
    if STATE.arena_sent.load(Relaxed) || !events::enabled(JVMPI_EVENT_ARENA_NEW) || STATE.arena_sent.swap(true, SeqCst)
    {
        return;
    }
    {
        let name = c"Java heap";
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_ARENA_NEW, env);
        ev.u.new_arena = NewArena { arena_id: ARENA, arena_name: name.as_ptr() as *mut _ };
        events::send(&mut ev);
    }
}

/// JVMTI VMObjectAlloc: an object the VM made without bytecode.
pub fn on_vm_object_alloc(env: *mut JNIEnv, obj: jobject) {
    report(env, obj, Source::VmOrJni);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_cache_entry_keeps_its_hash_and_every_shape() {
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        assert_eq!(std::mem::size_of::<Set>(), 64);
        assert_eq!(std::mem::align_of::<Set>(), 64);
        let h: u32 = 0x7fff_fc00 | 0x2a5;
        let mut e = Entry { weak: 1, ctag: ClassTag(8), class_id: 0, size: 0, key: (h & !LOW) | (KIND_NONE << 1) };
        assert!(e.shape().is_none());
        let kinds = [
            JVMPI_NORMAL_OBJECT,
            JVMPI_CLASS,
            JVMPI_BOOLEAN,
            JVMPI_CHAR,
            JVMPI_FLOAT,
            JVMPI_DOUBLE,
            JVMPI_BYTE,
            JVMPI_SHORT,
            JVMPI_INT,
            JVMPI_LONG,
        ];
        for kind in kinds {
            for nested in [0i16, 1] {
                e.set_shape(Shape { class_id: 0x1234_5678_9abc, size: 24 + kind, is_array: kind as i16, nested });
                let s = e.shape().expect("complete");
                assert_eq!((s.class_id, s.size, s.is_array(), s.nested), (0x1234_5678_9abc, 24 + kind, kind, nested));
                assert_eq!(e.key & !LOW, h & !LOW, "the hash's bits above the set index stay");
            }
        }
    }
}
