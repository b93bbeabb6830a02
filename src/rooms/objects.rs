//! Objects as the agent sees them: the `OBJECT_ALLOC` description of an object (class ID,
//! array kind, size, arena). Today it answers `RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id)` for
//! any live object the agent has an ID for — the paper's "partial profiling".
//!
//! Every chain "object → its class → that class's class" ends: a class object's class is
//! `java.lang.Class`, and the class object of `java.lang.Class` is described with
//! `class_id = NULL`, as HotSpot 1.5 did.

use crate::abi::*;
use crate::{classes, events, ids, jvm};
use dashmap::DashSet;
use jvmti_bindings::sys::jni::{jint, jlong, jobject};
use std::sync::LazyLock;

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

/// The `obj_alloc` fields describing a live object; announces its class first.
pub fn describe(env: *mut jvmti_bindings::sys::jni::JNIEnv, obj: jobject) -> Result<ObjAlloc, String> {
    let jni = jvm::Jni::of(env);
    let klass = jni.object_class(obj);
    let sig = jvm::class_signature(klass).map_err(jvm::err_name)?;
    let (is_array, class_for_id) = match array_kind(&sig) {
        // The Class object of java.lang.Class is its own class: HotSpot reported class_id NULL
        // there, so that an agent resolving "object → its class → that class's class" stops.
        None if jni.is_same(obj, klass) => (JVMPI_NORMAL_OBJECT, None),
        None => (JVMPI_NORMAL_OBJECT, Some(klass)),
        Some(JVMPI_CLASS) => (JVMPI_CLASS, jni.component_type(klass)),
        Some(prim) => (prim, None),
    };
    let class_id = match class_for_id {
        Some(k) => classes::ensure_announced(env, k)?,
        None => std::ptr::null_mut(),
    };
    if let Some(k) = class_for_id.filter(|&k| k != klass) {
        jni.delete_local_ref(k);
    }
    jni.delete_local_ref(klass);
    let size = jvm::object_size(obj).map_err(jvm::err_name)?;
    Ok(ObjAlloc {
        arena_id: ARENA,
        class_id,
        is_array,
        size: size.min(jint::MAX as i64) as jint,
        obj_id: ids::id_of(obj)?,
    })
}

/// Objects defined to the agent by a requested OBJECT_ALLOC whose tag predates it (they get
/// OBJECT_FREE like tracked ones).
static REQUESTED: LazyLock<DashSet<jlong>> = LazyLock::new(DashSet::new);

/// Whether `tag` was defined by a requested OBJECT_ALLOC (and forgets it).
pub fn forget_requested(tag: jlong) -> bool {
    REQUESTED.remove(&tag).is_some()
}

/// `RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id)`.
pub fn request(id: jobjectID) -> Result<(), String> {
    let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
    if let Some(info) = crate::alloc::pending_description(id) {
        // Announced by this thread's allocation hook, its constructor not yet run.
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_ALLOC, env);
        ev.u.obj_alloc = info;
        events::send_requested(&mut ev);
        return Ok(());
    }
    let obj = ids::object_of(id)?;
    let info = describe(env, obj);
    if !ids::is_defined(ids::to_tag(id)) {
        REQUESTED.insert(ids::to_tag(id));
    }
    jvm::Jni::of(env).delete_local_ref(obj);
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_ALLOC, env);
    ev.u.obj_alloc = info?;
    events::send_requested(&mut ev);
    Ok(())
}
