//! JNI function interception: what native code does that JVMTI has no event for.
//!
//! The shim installs (JVMTI `SetJNIFunctionTable`) a copy of the JVM's JNI function table in
//! which a few functions report before returning:
//!
//! * objects made without a constructor or bytecode — `AllocObject`, `NewObjectArray`,
//!   `New<Primitive>Array`, `NewString`, `NewStringUTF` — go to the allocation room;
//! * `NewObjectA`, `NewObjectV` and (on x86-64) `NewObject` announce the object before the
//!   JVM's function makes it and runs its constructor, which binds the announced ID in the
//!   instrumented `Object.<init>` (elsewhere `NewObject`'s objects are reported from there);
//! * `NewGlobalRef`/`DeleteGlobalRef` and `NewWeakGlobalRef`/`DeleteWeakGlobalRef` send
//!   `JNI_GLOBALREF_ALLOC/FREE` and `JNI_WEAK_GLOBALREF_ALLOC/FREE`.
//!
//! The table is installed the first time one of those events is enabled and stays; each hook
//! first calls the JVM's own function, then tests whether its event is enabled. Global
//! references the shim makes for itself are not reported.

use crate::face::abi::*;
use crate::face::{events, ids};
use crate::rooms::alloc;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{self, jchar, jclass, jobject, jsize, jstring, JNIEnv, JNINativeInterface_};
use std::ffi::c_char;
use std::sync::{Mutex, OnceLock};

struct Table(Box<JNINativeInterface_>);
// SAFETY: an immutable table of function pointers after installation.
unsafe impl Sync for Table {}
// SAFETY: as above; the table is never written after installation.
unsafe impl Send for Table {}

/// The JNI door's state: one `static`, each field what it holds and who writes it (a field costs
/// what a separate `static` cost: the hooks read `original` directly).
struct JniState {
    /// The JVM's own functions, called by the hooks: set once by [`install`] (under `install`).
    original: OnceLock<Table>,
    /// Held by [`install`] while it copies and installs the table.
    install: Mutex<()>,
    /// The JVM's variadic `NewObject`, which the trampoline jumps to (its assembly reads the
    /// field at its offset in `STATE`): set by [`install`] before the table is installed.
    #[cfg(target_arch = "x86_64")]
    new_object_orig: std::sync::atomic::AtomicUsize,
}

static STATE: JniState = JniState {
    original: OnceLock::new(),
    install: Mutex::new(()),
    #[cfg(target_arch = "x86_64")]
    new_object_orig: std::sync::atomic::AtomicUsize::new(0),
};

fn orig() -> &'static JNINativeInterface_ {
    &STATE.original.get().expect("hooks run only after installation").0
}

pub fn install() -> Result<(), jvm::Error> {
    let _g = crate::vm::logger::lock(&STATE.install);
    if STATE.original.get().is_some() {
        return Ok(());
    }
    let original = jvm::jni_table_copy()?;
    let mut t = jvm::jni_table_copy()?;
    let _ = STATE.original.set(Table(original));
    t.AllocObject = alloc_object;
    t.NewObjectA = new_object_a;
    t.NewObjectV = new_object_v;
    #[cfg(target_arch = "x86_64")]
    {
        STATE.new_object_orig.store(original_new_object() as usize, std::sync::atomic::Ordering::SeqCst);
        let tramp = new_object_trampoline as *const ();
        // SAFETY: the trampoline has NewObject's signature and ends in a jump to the JVM's own.
        t.NewObject = unsafe { std::mem::transmute::<*const (), jni::JniNewObjectFn>(tramp) };
    }
    t.NewObjectArray = new_object_array;
    t.NewBooleanArray = new_boolean_array;
    t.NewByteArray = new_byte_array;
    t.NewCharArray = new_char_array;
    t.NewShortArray = new_short_array;
    t.NewIntArray = new_int_array;
    t.NewLongArray = new_long_array;
    t.NewFloatArray = new_float_array;
    t.NewDoubleArray = new_double_array;
    t.NewString = new_string;
    t.NewStringUTF = new_string_utf;
    t.NewGlobalRef = new_global_ref;
    t.DeleteGlobalRef = delete_global_ref;
    t.NewWeakGlobalRef = new_weak_global_ref;
    t.DeleteWeakGlobalRef = delete_weak_global_ref;
    jvm::jni_table_install(&t)?;
    log::info!("JNI function interception installed");
    Ok(())
}

fn allocated(env: *mut JNIEnv, obj: jobject) -> jobject {
    crate::vm::logger::guard("JNI allocation hook", (), || alloc::report(env, obj, alloc::Source::VmOrJni));
    obj
}

unsafe extern "system" fn alloc_object(env: *mut JNIEnv, k: jclass) -> jobject {
    // SAFETY: the JVM's own AllocObject with the caller's arguments.
    allocated(env, unsafe { (orig().AllocObject)(env, k) })
}

/// Before a JNI constructor call: the announcement (see the allocation room).
fn constructing(env: *mut JNIEnv, k: jclass, sp: usize) -> Option<jni::jlong> {
    crate::vm::logger::guard("JNI NewObject hook", None, || alloc::jni_constructing(env, k, sp))
}

fn constructed(tag: Option<jni::jlong>) {
    crate::vm::logger::guard("JNI NewObject hook", (), || alloc::jni_constructed(tag))
}

fn stack_mark() -> usize {
    let x = 0u8;
    std::hint::black_box(&x) as *const u8 as usize
}

unsafe extern "system" fn new_object_a(
    env: *mut JNIEnv,
    k: jclass,
    m: jni::jmethodID,
    args: *const jni::jvalue,
) -> jobject {
    let tag = constructing(env, k, stack_mark());
    // SAFETY: the JVM's own NewObjectA with the caller's arguments.
    let r = unsafe { (orig().NewObjectA)(env, k, m, args) };
    constructed(tag);
    r
}

unsafe extern "system" fn new_object_v(env: *mut JNIEnv, k: jclass, m: jni::jmethodID, args: jni::va_list) -> jobject {
    let tag = constructing(env, k, stack_mark());
    // SAFETY: the JVM's own NewObjectV with the caller's arguments (the va_list passed on as is).
    let r = unsafe { (orig().NewObjectV)(env, k, m, args) };
    constructed(tag);
    r
}

#[cfg(target_arch = "x86_64")]
fn original_new_object() -> *const () {
    orig().NewObject as *const ()
}

/// Called by the trampoline with NewObject's first two arguments, every argument register saved.
#[cfg(target_arch = "x86_64")]
extern "C" fn new_object_pre(env: *mut JNIEnv, k: jclass) {
    // A constructor that throws leaves its reservation behind: the allocation room finds it
    // abandoned later (no code runs after the JVM's NewObject here to say so).
    let _ = constructing(env, k, stack_mark());
}

#[cfg(target_arch = "x86_64")]
extern "C" {
    /// `NewObject(env, clazz, methodID, ...)`: saves the argument registers (and `al`, the
    /// count of vector registers of a variadic call), calls [`new_object_pre`], restores them
    /// and jumps to the JVM's `NewObject` with the caller's stack untouched.
    fn jvmpi_shim_new_object_trampoline();
}

#[cfg(target_arch = "x86_64")]
use jvmpi_shim_new_object_trampoline as new_object_trampoline;

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.jvmpi_shim_new_object_trampoline,\"ax\",@progbits",
    ".p2align 4",
    ".hidden jvmpi_shim_new_object_trampoline",
    ".globl jvmpi_shim_new_object_trampoline",
    ".type jvmpi_shim_new_object_trampoline,@function",
    "jvmpi_shim_new_object_trampoline:",
    "push rbp",
    "mov rbp, rsp",
    "push rdi",
    "push rsi",
    "push rdx",
    "push rcx",
    "push r8",
    "push r9",
    "push rax",
    "sub rsp, 136",
    "movdqu [rsp], xmm0",
    "movdqu [rsp + 16], xmm1",
    "movdqu [rsp + 32], xmm2",
    "movdqu [rsp + 48], xmm3",
    "movdqu [rsp + 64], xmm4",
    "movdqu [rsp + 80], xmm5",
    "movdqu [rsp + 96], xmm6",
    "movdqu [rsp + 112], xmm7",
    "call {pre}",
    "movdqu xmm0, [rsp]",
    "movdqu xmm1, [rsp + 16]",
    "movdqu xmm2, [rsp + 32]",
    "movdqu xmm3, [rsp + 48]",
    "movdqu xmm4, [rsp + 64]",
    "movdqu xmm5, [rsp + 80]",
    "movdqu xmm6, [rsp + 96]",
    "movdqu xmm7, [rsp + 112]",
    "add rsp, 136",
    "pop rax",
    "pop r9",
    "pop r8",
    "pop rcx",
    "pop rdx",
    "pop rsi",
    "pop rdi",
    "pop rbp",
    "mov r11, qword ptr [rip + {state}@GOTPCREL]",
    "jmp qword ptr [r11 + {orig}]",
    ".size jvmpi_shim_new_object_trampoline, . - jvmpi_shim_new_object_trampoline",
    ".popsection",
    pre = sym new_object_pre,
    state = sym STATE,
    orig = const std::mem::offset_of!(JniState, new_object_orig),
);

unsafe extern "system" fn new_object_array(
    env: *mut JNIEnv,
    len: jsize,
    k: jclass,
    init: jobject,
) -> jni::jobjectArray {
    // SAFETY: the JVM's own NewObjectArray with the caller's arguments.
    allocated(env, unsafe { (orig().NewObjectArray)(env, len, k, init) })
}

macro_rules! prim_array_hooks {
    ($($name:ident => $field:ident),* $(,)?) => {$(
        unsafe extern "system" fn $name(env: *mut JNIEnv, len: jsize) -> jobject {
            // SAFETY: the JVM's own array constructor with the caller's arguments.
            allocated(env, unsafe { (orig().$field)(env, len) })
        }
    )*};
}
prim_array_hooks!(
    new_boolean_array => NewBooleanArray,
    new_byte_array => NewByteArray,
    new_char_array => NewCharArray,
    new_short_array => NewShortArray,
    new_int_array => NewIntArray,
    new_long_array => NewLongArray,
    new_float_array => NewFloatArray,
    new_double_array => NewDoubleArray,
);

unsafe extern "system" fn new_string(env: *mut JNIEnv, chars: *const jchar, len: jsize) -> jstring {
    // SAFETY: the JVM's own NewString with the caller's arguments.
    allocated(env, unsafe { (orig().NewString)(env, chars, len) })
}

unsafe extern "system" fn new_string_utf(env: *mut JNIEnv, utf: *const c_char) -> jstring {
    // SAFETY: the JVM's own NewStringUTF with the caller's arguments.
    allocated(env, unsafe { (orig().NewStringUTF)(env, utf) })
}

fn ref_alloc(env: *mut JNIEnv, kind: i32, obj: jobject, r: jobject) {
    if r.is_null() || jvm::shim_internal() || !events::enabled(kind) {
        return;
    }
    crate::vm::logger::guard("JNI global reference hook", (), || {
        let mut ev = JVMPI_Event::new(kind, env);
        ev.u.jni_globalref_alloc =
            JniGlobalrefAlloc { obj_id: ids::id_of(obj).unwrap_or(std::ptr::null_mut()), ref_id: r };
        events::send(&mut ev);
    })
}

fn ref_free(env: *mut JNIEnv, kind: i32, r: jobject) {
    if r.is_null() || jvm::shim_internal() || !events::enabled(kind) {
        return;
    }
    crate::vm::logger::guard("JNI global reference hook", (), || {
        let mut ev = JVMPI_Event::new(kind, env);
        ev.u.jni_globalref_free = JniGlobalrefFree { ref_id: r };
        events::send(&mut ev);
    })
}

unsafe extern "system" fn new_global_ref(env: *mut JNIEnv, obj: jobject) -> jobject {
    // SAFETY: the JVM's own NewGlobalRef with the caller's arguments.
    let r = unsafe { (orig().NewGlobalRef)(env, obj) };
    ref_alloc(env, JVMPI_EVENT_JNI_GLOBALREF_ALLOC, obj, r);
    r
}

unsafe extern "system" fn delete_global_ref(env: *mut JNIEnv, r: jobject) {
    // SAFETY: the JVM's own DeleteGlobalRef with the caller's arguments.
    unsafe { (orig().DeleteGlobalRef)(env, r) };
    ref_free(env, JVMPI_EVENT_JNI_GLOBALREF_FREE, r);
}

unsafe extern "system" fn new_weak_global_ref(env: *mut JNIEnv, obj: jobject) -> jobject {
    // SAFETY: the JVM's own NewWeakGlobalRef with the caller's arguments.
    let r = unsafe { (orig().NewWeakGlobalRef)(env, obj) };
    ref_alloc(env, JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC, obj, r);
    r
}

unsafe extern "system" fn delete_weak_global_ref(env: *mut JNIEnv, r: jobject) {
    // SAFETY: the JVM's own DeleteWeakGlobalRef with the caller's arguments.
    unsafe { (orig().DeleteWeakGlobalRef)(env, r) };
    ref_free(env, JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE, r);
}
