//! JNI function interception: what native code does that JVMTI has no event for.
//!
//! The shim installs (JVMTI `SetJNIFunctionTable`) a copy of the JVM's JNI function table in
//! which a few functions report before returning:
//!
//! * objects made without a constructor or bytecode — `AllocObject`, `NewObjectArray`,
//!   `New<Primitive>Array`, `NewString`, `NewStringUTF` — go to the allocation room
//!   (`NewObject` runs a constructor, which the instrumented `Object.<init>` reports);
//! * `NewGlobalRef`/`DeleteGlobalRef` and `NewWeakGlobalRef`/`DeleteWeakGlobalRef` send
//!   `JNI_GLOBALREF_ALLOC/FREE` and `JNI_WEAK_GLOBALREF_ALLOC/FREE`.
//!
//! The table is installed the first time one of those events is enabled and stays; each hook
//! first calls the JVM's own function, then tests whether its event is enabled. Global
//! references the shim makes for itself are not reported.

use crate::abi::*;
use crate::{alloc, events, ids, jvm};
use jvmti_bindings::sys::jni::{self, jchar, jclass, jobject, jsize, jstring, JNIEnv, JNINativeInterface_};
use std::ffi::c_char;
use std::sync::{Mutex, OnceLock};

struct Table(Box<JNINativeInterface_>);
// SAFETY: an immutable table of function pointers after installation.
unsafe impl Sync for Table {}
unsafe impl Send for Table {}

/// The JVM's own functions, called by the hooks.
static ORIGINAL: OnceLock<Table> = OnceLock::new();
static INSTALL: Mutex<()> = Mutex::new(());

fn orig() -> &'static JNINativeInterface_ {
    &ORIGINAL.get().expect("hooks run only after installation").0
}

pub fn install() -> Result<(), String> {
    let _g = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if ORIGINAL.get().is_some() {
        return Ok(());
    }
    let original = jvm::jni_table_copy().map_err(jvm::err_name)?;
    let mut t = jvm::jni_table_copy().map_err(jvm::err_name)?;
    let _ = ORIGINAL.set(Table(original));
    t.AllocObject = alloc_object;
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
    jvm::jni_table_install(&t).map_err(jvm::err_name)?;
    log::info!("JNI function interception installed");
    Ok(())
}

fn allocated(env: *mut JNIEnv, obj: jobject) -> jobject {
    crate::guard("JNI allocation hook", (), || alloc::report(env, obj, alloc::Source::VmOrJni));
    obj
}

unsafe extern "system" fn alloc_object(env: *mut JNIEnv, k: jclass) -> jobject {
    // SAFETY: the JVM's own AllocObject with the caller's arguments.
    allocated(env, unsafe { (orig().AllocObject)(env, k) })
}

unsafe extern "system" fn new_object_array(env: *mut JNIEnv, len: jsize, k: jclass, init: jobject) -> jni::jobjectArray {
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
    crate::guard("JNI global reference hook", (), || {
        let mut ev = JVMPI_Event::new(kind, env);
        ev.u.jni_globalref_alloc = JniGlobalrefAlloc { obj_id: ids::id_of(obj).unwrap_or(std::ptr::null_mut()), ref_id: r };
        events::send(&mut ev);
    })
}

fn ref_free(env: *mut JNIEnv, kind: i32, r: jobject) {
    if r.is_null() || jvm::shim_internal() || !events::enabled(kind) {
        return;
    }
    crate::guard("JNI global reference hook", (), || {
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
