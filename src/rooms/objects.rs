//! Objects as the agent sees them: the `OBJECT_ALLOC` description of an object (class ID,
//! array kind, size, arena). Today it answers `RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id)` for
//! any live object the agent has an ID for — the paper's "partial profiling".
//!
//! Every chain "object → its class → that class's class" ends: a class object's class is
//! `java.lang.Class`, and the class object of `java.lang.Class` is described with
//! `class_id = NULL`, as HotSpot 1.5 did.

use crate::face::abi::*;
use crate::face::ids::ClassTag;
use crate::face::{events, ids};
use crate::rooms::classes;
use crate::rooms::error::RoomError;
use crate::vm::idhash::{IdMap, IdSet};
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jint, jlong, jobject};
use std::sync::LazyLock;

pub use crate::rooms::alloc::{array_kind, ARENA};

/// The `obj_alloc` fields describing a live object; announces its class first.
pub fn describe(env: *mut jvmti_bindings::sys::jni::JNIEnv, obj: jobject) -> Result<ObjAlloc, RoomError> {
    let jni = jvm::Jni::of(env);
    let klass = jni.object_class(obj);
    let sig = jvm::class_signature(klass).map_err(RoomError::Jvmti)?;
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
    let size = jvm::object_size(obj).map_err(RoomError::Jvmti)?;
    Ok(ObjAlloc {
        arena_id: ARENA,
        class_id,
        is_array,
        size: size.min(jint::MAX as i64) as jint,
        obj_id: ids::id_of(obj)?,
    })
}

/// The objects room's state.
struct ObjectsState {
    /// Objects defined to the agent by a requested OBJECT_ALLOC whose tag predates it (they get
    /// OBJECT_FREE like tracked ones), when their tag is outside the `ids` table (a bit there):
    /// entered by [`request`], taken out by [`forget_requested`] as their deaths are dealt with.
    requested: LazyLock<IdSet<jlong>>,
    /// What a class says about its instances in OBJECT_ALLOC: (`is_array`, tag of the class
    /// that `class_id` names, 0 for none), per class tag. Entered by [`shape`] on first need,
    /// taken out by [`forget_class`] when the class dies.
    shapes: LazyLock<IdMap<ClassTag, (jint, ClassTag)>>,
}

static STATE: ObjectsState =
    ObjectsState { requested: LazyLock::new(IdSet::default), shapes: LazyLock::new(IdMap::default) };

/// Whether `tag` was defined by a requested OBJECT_ALLOC (and forgets it).
pub fn forget_requested(tag: jlong) -> bool {
    ids::take_requested(tag) || (!STATE.requested.is_empty() && STATE.requested.remove(&tag).is_some())
}

fn shape(env: *mut jvmti_bindings::sys::jni::JNIEnv, ctag: ClassTag) -> Result<(jint, ClassTag), RoomError> {
    if let Some(s) = STATE.shapes.get(&ctag).map(|s| *s) {
        return Ok(s);
    }
    let jni = jvm::Jni::of(env);
    let klass = ids::object_of(ctag.id())?;
    let r = (|| -> Result<(jint, ClassTag), RoomError> {
        let sig = jvm::class_signature(klass).map_err(RoomError::Jvmti)?;
        Ok(match array_kind(&sig) {
            None => (JVMPI_NORMAL_OBJECT, ctag),
            Some(JVMPI_CLASS) => {
                let e = jni.component_type(klass).ok_or("an object array class without a component type")?;
                let t = ids::class_tag_of(e);
                jni.delete_local_ref(e);
                (JVMPI_CLASS, t?)
            }
            Some(prim) => (prim, ClassTag(0)),
        })
    })();
    jni.delete_local_ref(klass);
    let s = r?;
    keep_shape(ctag, s);
    Ok(s)
}

/// Keeps the shape of the class with tag `ctag`, marked first as a class key for the GC room.
fn keep_shape(ctag: ClassTag, s: (jint, ClassTag)) {
    ids::mark_class(ctag);
    STATE.shapes.insert(ctag, s);
}

/// Whether a shape is kept for class tag `ctag`, and keeps one (tests of the GC room).
#[cfg(test)]
pub fn test_shape(ctag: ClassTag, keep: bool) -> bool {
    if keep {
        keep_shape(ctag, (0, ClassTag(0)));
    }
    STATE.shapes.contains_key(&ctag)
}

/// A class died: its shape goes.
pub fn forget_class(ctag: ClassTag) {
    STATE.shapes.remove(&ctag);
}

/// The OBJECT_ALLOC description of the object with `tag`, from what a heap walk (or an earlier
/// request) recorded: no lookup of the object at all.
fn describe_kept(env: *mut jvmti_bindings::sys::jni::JNIEnv, tag: jlong) -> Option<Result<ObjAlloc, RoomError>> {
    let (ctag, size) = ids::described(ids::Tag(tag))?;
    Some((|| {
        let (is_array, idtag) = shape(env, ctag)?;
        // The Class object of java.lang.Class is its own class: class_id NULL (see `describe`).
        let class_id = if idtag == ClassTag(0) || (idtag == ctag && tag & !ids::DEFINED == ctag.0 & !ids::DEFINED) {
            std::ptr::null_mut()
        } else if classes::announced_to_all(idtag)
            || !(events::is_ready() || events::in_last())
            || !events::enabled(JVMPI_EVENT_CLASS_LOAD)
        {
            idtag.id()
        } else {
            let k = ids::object_of(idtag.id())?;
            let r = classes::ensure_announced_tagged(env, k, idtag);
            jvm::Jni::of(env).delete_local_ref(k);
            r?
        };
        Ok(ObjAlloc {
            arena_id: ARENA,
            class_id,
            is_array,
            size: size.min(jint::MAX as i64) as jint,
            obj_id: ids::to_id(tag),
        })
    })())
}

/// `RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, id)`.
pub fn request(id: jobjectID) -> Result<(), RoomError> {
    let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
    if let Some(info) = crate::rooms::alloc::pending_description(id) {
        // Announced by this thread's allocation hook, its constructor not yet run.
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_ALLOC, env);
        ev.u.obj_alloc = info;
        events::send_requested(&mut ev);
        return Ok(());
    }
    let tag = ids::to_tag(id);
    if !ids::plausible(tag) {
        return Err(format!("{id:p} is not a jobjectID this shim gave out").into());
    }
    let info = match describe_kept(env, tag) {
        Some(info) => info,
        None => {
            let obj = ids::object_of(id)?;
            let info = describe(env, obj);
            if info.is_ok() {
                let jni = jvm::Jni::of(env);
                let k = jni.object_class(obj);
                if let (Ok(ctag), Ok(size)) = (ids::class_tag_of(k), jvm::object_size(obj)) {
                    ids::remember(ids::Tag(tag), ctag, size);
                }
                jni.delete_local_ref(k);
            }
            jvm::Jni::of(env).delete_local_ref(obj);
            info
        }
    };
    if !ids::is_defined(tag) && !ids::mark_requested(tag) {
        STATE.requested.insert(tag);
    }
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_ALLOC, env);
    ev.u.obj_alloc = info?;
    events::send_requested(&mut ev);
    Ok(())
}
