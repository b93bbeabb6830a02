//! JVMPI object IDs (`jobjectID`): every object, class and thread object the agent hears of is
//! named by a JVMTI object tag.
//!
//! A tag is set once and never changes, so an ID is stable for the object's whole life: the
//! shim never has to send `OBJECT_MOVE`, and `DisableGC` has nothing to protect. Tags come from
//! one counter, in steps of 8 so that IDs look like aligned pointers to agents that hash them
//! (`id >> 3`), and are never reused. Converting back (`jobjectID2jobject`) asks JVMTI for the
//! object with that tag; an ID the shim never gave out is refused before JVMTI sees it.
//!
//! Bit 3 of a tag marks an object the agent was told about with `OBJECT_ALLOC` (allocation
//! tracking, or a requested OBJECT_ALLOC): only those get `OBJECT_FREE`. So the shim keeps no
//! per-object state of its own: everything it knows about an object is in its tag.

use crate::abi::jobjectID;
use crate::jvm;
use jvmti_bindings::sys::jni::{jlong, jobject};
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::Mutex;

/// The distance between two tags.
pub const STEP: jlong = 16;
/// Set in the tag of objects defined to the agent by OBJECT_ALLOC.
pub const DEFINED: jlong = 8;
static NEXT: AtomicI64 = AtomicI64::new(1);
/// Serialises tag assignment for objects others may be tagging at the same moment.
static ASSIGN: Mutex<()> = Mutex::new(());

/// A fresh tag, never given out before.
pub fn fresh_tag() -> jlong {
    NEXT.fetch_add(1, Relaxed) * STEP
}

/// `n` fresh tags at once, for a heap walk that tags objects by the million: (first, end), the
/// tags being `first, first + STEP, …` up to `end` (exclusive). Tags of the block left unused
/// are never given out.
pub fn reserve_tags(n: jlong) -> (jlong, jlong) {
    let first = NEXT.fetch_add(n, Relaxed);
    (first * STEP, (first + n) * STEP)
}

/// A fresh tag for an object whose OBJECT_ALLOC is being sent.
pub fn fresh_defined_tag() -> jlong {
    fresh_tag() | DEFINED
}

/// Whether `tag` is one the shim could have given out.
pub fn plausible(tag: jlong) -> bool {
    tag > 0 && tag % 8 == 0 && tag < NEXT.load(Relaxed) * STEP
}

/// Whether the object with this tag was defined to the agent by OBJECT_ALLOC.
pub fn is_defined(tag: jlong) -> bool {
    tag & DEFINED != 0
}

pub fn to_id(tag: jlong) -> jobjectID {
    tag as usize as jobjectID
}

pub fn to_tag(id: jobjectID) -> jlong {
    id as usize as jlong
}

/// The tag of a live object, giving it one if it has none.
pub fn tag_of(obj: jobject) -> Result<jlong, String> {
    if obj.is_null() {
        return Err("NULL object".into());
    }
    let t = jvm::get_tag(obj).map_err(jvm::err_name)?;
    if t != 0 {
        return Ok(t);
    }
    let _g = ASSIGN.lock().unwrap_or_else(|p| p.into_inner());
    let t = jvm::get_tag(obj).map_err(jvm::err_name)?;
    if t != 0 {
        return Ok(t);
    }
    let t = fresh_tag();
    jvm::set_tag(obj, t).map_err(jvm::err_name)?;
    Ok(t)
}

/// The ID of a live object (NULL for a NULL reference).
pub fn id_of(obj: jobject) -> Result<jobjectID, String> {
    if obj.is_null() {
        return Ok(std::ptr::null_mut());
    }
    tag_of(obj).map(to_id)
}

/// The object an ID names, as a local reference of the current thread.
pub fn object_of(id: jobjectID) -> Result<jobject, String> {
    let tag = to_tag(id);
    if !plausible(tag) {
        return Err(format!("{id:p} is not a jobjectID this shim gave out"));
    }
    match jvm::object_with_tag(tag) {
        Ok(Some(o)) => Ok(o),
        Ok(None) => Err(format!("object {id:p} is no longer alive")),
        Err(e) => Err(jvm::err_name(e)),
    }
}
