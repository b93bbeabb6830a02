//! The JVMTI callbacks: thin doors from the JVM into the rooms. Each converts its raw
//! arguments once, catches panics, and calls safe code.

use crate::rooms::{alloc, classes, compiled, gc, hooks, javamonitors, lifecycle, methods, natives, threads};
use crate::vm::{jvm, logger::guard};
use jvmti_bindings::sys::jni::{jboolean, jclass, jint, jlong, jmethodID, jobject, jthread, jvalue, JNIEnv};
use jvmti_bindings::sys::jvmti::{self, jvmtiEnv};
use std::ffi::{c_char, c_uchar, c_void, CStr};

pub fn table() -> jvmti::jvmtiEventCallbacks {
    let mut t = jvmti::jvmtiEventCallbacks::default();
    t.VMInit = Some(vm_init);
    t.VMDeath = Some(vm_death);
    t.ThreadStart = Some(thread_start);
    t.ThreadEnd = Some(thread_end);
    t.VirtualThreadStart = Some(vthread_start);
    t.VirtualThreadEnd = Some(vthread_end);
    t.ClassLoad = Some(class_load);
    t.ClassPrepare = Some(class_prepare);
    t.ClassFileLoadHook = Some(class_file_load_hook);
    t.GarbageCollectionStart = Some(gc_start);
    t.GarbageCollectionFinish = Some(gc_finish);
    t.ObjectFree = Some(object_free);
    t.DataDumpRequest = Some(data_dump_request);
    t.VMObjectAlloc = Some(vm_object_alloc);
    t.CompiledMethodLoad = Some(compiled_method_load);
    t.CompiledMethodUnload = Some(compiled_method_unload);
    t.MonitorContendedEnter = Some(monitor_contended_enter);
    t.MonitorContendedEntered = Some(monitor_contended_entered);
    t.MonitorWait = Some(monitor_wait);
    t.MonitorWaited = Some(monitor_waited);
    t.MethodEntry = Some(method_entry);
    t.MethodExit = Some(method_exit);
    t
}

unsafe extern "system" fn method_entry(_j: *mut jvmtiEnv, env: *mut JNIEnv, thread: jthread, m: jmethodID) {
    guard("MethodEntry", (), || methods::on_jvmti_entry(env, thread, m))
}

unsafe extern "system" fn method_exit(
    _j: *mut jvmtiEnv,
    env: *mut JNIEnv,
    _thread: jthread,
    m: jmethodID,
    _by_exception: jboolean,
    _value: jvalue,
) {
    guard("MethodExit", (), || methods::on_jvmti_exit(env, m))
}

unsafe extern "system" fn vm_init(_j: *mut jvmtiEnv, env: *mut JNIEnv, thread: jthread) {
    guard("VMInit", (), || lifecycle::vm_init(env, thread))
}

unsafe extern "system" fn vm_death(_j: *mut jvmtiEnv, env: *mut JNIEnv) {
    guard("VMDeath", (), || lifecycle::vm_death(env))
}

unsafe extern "system" fn thread_start(_j: *mut jvmtiEnv, env: *mut JNIEnv, thread: jthread) {
    guard("ThreadStart", (), || threads::on_thread_start(env, thread))
}

unsafe extern "system" fn vthread_start(_j: *mut jvmtiEnv, env: *mut JNIEnv, thread: jthread) {
    guard("VirtualThreadStart", (), || threads::on_vthread_start(env, thread))
}

unsafe extern "system" fn vthread_end(_j: *mut jvmtiEnv, env: *mut JNIEnv, thread: jthread) {
    guard("VirtualThreadEnd", (), || threads::on_vthread_end(env, thread))
}

/// HotSpot's extension event VirtualThreadMount (see `jvm::enable_virtual_thread_events`).
pub unsafe extern "C" fn vthread_mount(_j: *mut jvmtiEnv, env: *mut JNIEnv, thread: jthread) {
    guard("VirtualThreadMount", (), || threads::on_vthread_mount(env, thread))
}

/// HotSpot's extension event VirtualThreadUnmount.
pub unsafe extern "C" fn vthread_unmount(_j: *mut jvmtiEnv, env: *mut JNIEnv, thread: jthread) {
    guard("VirtualThreadUnmount", (), || threads::on_vthread_unmount(env, thread))
}

unsafe extern "system" fn thread_end(_j: *mut jvmtiEnv, env: *mut JNIEnv, thread: jthread) {
    // The thread's JNIEnv is not kept past its end (see `jvm::current_jni_kept`).
    jvm::forget_current_jni();
    guard("ThreadEnd", (), || lifecycle::on_thread_end(env, thread));
    jvm::forget_current_jni();
}

unsafe extern "system" fn class_load(_j: *mut jvmtiEnv, env: *mut JNIEnv, _t: jthread, k: jclass) {
    guard("ClassLoad", (), || classes::on_class_load(env, k))
}

unsafe extern "system" fn class_prepare(_j: *mut jvmtiEnv, env: *mut JNIEnv, _t: jthread, k: jclass) {
    guard("ClassPrepare (natives)", (), || natives::on_class_prepare(env, k));
    guard("ClassPrepare", (), || classes::on_class_prepare(env, k))
}

/// The class-file hook of the shim's main environment (allocation instrumentation).
#[allow(clippy::too_many_arguments)]
unsafe extern "system" fn class_file_load_hook(
    _j: *mut jvmtiEnv,
    _env: *mut JNIEnv,
    redefined: jclass,
    loader: jobject,
    _name: *const c_char,
    _pd: jobject,
    len: jint,
    data: *const c_uchar,
    new_len: *mut jint,
    new_data: *mut *mut c_uchar,
) {
    guard("ClassFileLoadHook", (), || {
        let Some(bytes) = hook_input(len, data, new_len, new_data) else { return };
        let redefined = (!redefined.is_null()).then_some(redefined);
        if let Some(k) = redefined {
            classes::on_redefine(k);
        }
        if let Some(out) = methods::transform(bytes, redefined, loader.is_null()) {
            if let Ok(p) = jvm::jvmti_copy(&out) {
                // SAFETY: JVMTI's out-parameters; `p` is JVMTI-allocated memory of `out.len()` bytes.
                unsafe {
                    *new_data = p;
                    *new_len = out.len() as jint;
                }
            }
        }
    })
}

/// The class-file hook of the class-hook environment: the agent's CLASS_LOAD_HOOK.
///
/// # Safety
/// Called by the JVM with a ClassFileLoadHook's arguments.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "system" fn agent_class_file_load_hook(
    _j: *mut jvmtiEnv,
    env: *mut JNIEnv,
    _redefined: jclass,
    _loader: jobject,
    name: *const c_char,
    _pd: jobject,
    len: jint,
    data: *const c_uchar,
    new_len: *mut jint,
    new_data: *mut *mut c_uchar,
) {
    guard("ClassFileLoadHook (agent)", (), || {
        let Some(bytes) = hook_input(len, data, new_len, new_data) else { return };
        // SAFETY: a non-NULL `name` is the JVM's NUL-terminated class name, valid during the callback.
        let name = (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) });
        if let Some((out, out_len)) = hooks::on_agent_class_hook(env, name, bytes) {
            // SAFETY: JVMTI's out-parameters; `out` is JVMTI-allocated memory of `out_len` bytes.
            unsafe {
                *new_data = out;
                *new_len = out_len;
            }
        }
    })
}

/// The class-file hook of the early environment: the agent's CLASS_LOAD_HOOK for the classes
/// loaded before the agent started, on their retransformation (nothing to do on a load).
///
/// # Safety
/// Called by the JVM with a ClassFileLoadHook's arguments.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "system" fn early_class_file_load_hook(
    _j: *mut jvmtiEnv,
    env: *mut JNIEnv,
    redefined: jclass,
    _loader: jobject,
    name: *const c_char,
    _pd: jobject,
    len: jint,
    data: *const c_uchar,
    new_len: *mut jint,
    new_data: *mut *mut c_uchar,
) {
    if redefined.is_null() {
        return;
    }
    guard("ClassFileLoadHook (early classes)", (), || {
        let Some(bytes) = hook_input(len, data, new_len, new_data) else { return };
        // SAFETY: a non-NULL `name` is the JVM's NUL-terminated class name, valid during the callback.
        let name = (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) });
        if let Some((out, out_len)) = hooks::on_early_class_hook(env, redefined, name, bytes) {
            // SAFETY: JVMTI's out-parameters; `out` is JVMTI-allocated memory of `out_len` bytes.
            unsafe {
                *new_data = out;
                *new_len = out_len;
            }
        }
    })
}

/// The class bytes of a ClassFileLoadHook call, if its pointers are usable.
fn hook_input<'a>(
    len: jint,
    data: *const c_uchar,
    new_len: *mut jint,
    new_data: *mut *mut c_uchar,
) -> Option<&'a [u8]> {
    if data.is_null() || len < 0 || new_len.is_null() || new_data.is_null() {
        return None;
    }
    // SAFETY: JVMTI passes `len` bytes of class file at `data`, valid during the callback.
    Some(unsafe { std::slice::from_raw_parts(data, len as usize) })
}

unsafe extern "system" fn vm_object_alloc(
    _j: *mut jvmtiEnv,
    env: *mut JNIEnv,
    _thread: jthread,
    object: jobject,
    _klass: jclass,
    _size: jlong,
) {
    guard("VMObjectAlloc", (), || alloc::on_vm_object_alloc(env, object))
}

unsafe extern "system" fn gc_start(_j: *mut jvmtiEnv) {
    gc::on_gc_start()
}

unsafe extern "system" fn gc_finish(_j: *mut jvmtiEnv) {
    gc::on_gc_finish()
}

unsafe extern "system" fn object_free(_j: *mut jvmtiEnv, tag: jlong) {
    gc::on_object_free(crate::face::ids::Tag(tag))
}

unsafe extern "system" fn data_dump_request(_j: *mut jvmtiEnv) {
    guard("DataDumpRequest", (), lifecycle::data_dump_request)
}

unsafe extern "system" fn compiled_method_load(
    _j: *mut jvmtiEnv,
    method: jmethodID,
    code_size: jint,
    code_addr: *const c_void,
    map_length: jint,
    map: *const jvmti::jvmtiAddrLocationMap,
    _compile_info: *const c_void,
) {
    guard("CompiledMethodLoad", (), || {
        let map: Vec<(usize, jlong)> = if map.is_null() || map_length <= 0 {
            Vec::new()
        } else {
            // SAFETY: JVMTI passes `map_length` entries at `map`, valid during the callback.
            unsafe { std::slice::from_raw_parts(map, map_length as usize) }
                .iter()
                .map(|e| (e.start_address as usize, e.location))
                .collect()
        };
        compiled::on_load(method, code_size, code_addr, &map)
    })
}

unsafe extern "system" fn compiled_method_unload(_j: *mut jvmtiEnv, method: jmethodID, code_addr: *const c_void) {
    guard("CompiledMethodUnload", (), || compiled::on_unload(method, code_addr))
}

unsafe extern "system" fn monitor_contended_enter(_j: *mut jvmtiEnv, env: *mut JNIEnv, _t: jthread, obj: jobject) {
    guard("MonitorContendedEnter", (), || javamonitors::on_contended_enter(env, obj))
}

unsafe extern "system" fn monitor_contended_entered(_j: *mut jvmtiEnv, env: *mut JNIEnv, _t: jthread, obj: jobject) {
    guard("MonitorContendedEntered", (), || javamonitors::on_contended_entered(env, obj))
}

unsafe extern "system" fn monitor_wait(_j: *mut jvmtiEnv, env: *mut JNIEnv, _t: jthread, obj: jobject, timeout: jlong) {
    guard("MonitorWait", (), || javamonitors::on_wait(env, obj, timeout))
}

unsafe extern "system" fn monitor_waited(
    _j: *mut jvmtiEnv,
    env: *mut JNIEnv,
    _t: jthread,
    obj: jobject,
    _timed_out: jboolean,
) {
    guard("MonitorWaited", (), || javamonitors::on_waited(env, obj))
}
