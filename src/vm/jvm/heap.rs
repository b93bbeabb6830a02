//! The heap: object tags, iterating over tagged objects, heap counts, forcing a collection, object
//! sizes, and what heap, object and monitor dumps read (`FollowReferences`, monitor usage, thread
//! lists suspended for a dump).

use super::*;

// ---- one snapshot at a time ------------------------------------------------------------------------

/// One heap walk or suspension of other threads at a time in the process, held until the
/// returned guard is dropped; re-entrant for its holder. A dump suspends every other thread
/// between its `SuspendThreadList` and its `ResumeThreadList`: a thread suspended inside a heap
/// walk of its own would hold what the resumption waits for (JDK 25: `ResumeThreadList` waited
/// for the virtual-thread transition lock that a `FollowReferences` suspended mid-way held, and
/// both threads stopped for good). So every heap walk here takes it, and a dump holds it from
/// the suspension to the resumption. Never held while the agent is called.
pub fn exclusive() -> Held {
    STATE.snapshot.lock()
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
            let n = &mut *(ud as *mut jlong);
            *tag = listing_mark(*n / LISTING_BATCH);
            *n += 1;
        }
        0
    }
    let _one = exclusive();
    let main = env()?;
    // Used by this call only, and disposed of below.
    let b = tagging_env()?;
    let r = (|| {
        let cb = jvmti::jvmtiHeapCallbacks { heap_iteration_callback: Some(mark), ..Default::default() };
        let mut marked: jlong = 0;
        // SAFETY: the callback touches only the tag slot JVMTI hands it and the counter.
        unsafe { b.iterate_through_heap(0, std::ptr::null_mut(), &cb, &mut marked as *mut jlong as *const c_void)? };
        // One local reference per object, a batch at a time, each in a frame with room for it:
        // JNI refuses a frame of more than 65536 references (`-XX:MaxJNILocalCapacity`), and
        // one of them all would leave them in the caller's frame. Objects made since the
        // iteration are not tagged in the listing environment.
        let mut n = 0;
        for batch in 0..=marked / LISTING_BATCH {
            jni.framed_with(LISTING_BATCH as i32 + 64, || -> Result<()> {
                let (objs, _) = {
                    let _i = Internal::enter();
                    b.get_objects_with_tags(&[listing_mark(batch)])?
                };
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
                Ok(())
            })?;
        }
        Ok(n)
    })();
    // SAFETY: the environment has no callbacks and no event enabled; nothing else knows it.
    if let Err(e) = unsafe { b.dispose_environment() } {
        log::debug!("disposing of the listing environment: {}", err_name(e));
    }
    r
}

/// Counts the live objects and their bytes with one heap iteration, in an environment of its
/// own that tags nothing ([`counting_env`]): in the main one, JVMTI would look up every object
/// in a tag map of millions of entries (4 % of all the CPU time of HPROF `heap=sites` on javac,
/// which counts at every GC_FINISH); in an empty one the lookup finds nothing at once.
pub fn count_heap() -> Result<(jlong, jlong)> {
    unsafe extern "system" fn count(_ct: jlong, size: jlong, _tp: *mut jlong, _len: jint, ud: *mut c_void) -> jint {
        // SAFETY: `ud` is the `(jlong, jlong)` owned by the enclosing call, alive for the iteration.
        let acc = unsafe { &mut *(ud as *mut (jlong, jlong)) };
        acc.0 += 1;
        acc.1 += size;
        0
    }
    let _one = exclusive();
    let mut acc: (jlong, jlong) = (0, 0);
    let cb = jvmti::jvmtiHeapCallbacks { heap_iteration_callback: Some(count), ..Default::default() };
    // SAFETY: callbacks and user data outlive the synchronous iteration.
    unsafe { counting_env()?.iterate_through_heap(0, std::ptr::null_mut(), &cb, &mut acc as *mut _ as *const c_void)? };
    Ok(acc)
}

/// Makes the JVM post the ObjectFree events of the main environment it still owes, without
/// JVMTI's flush (see [`flush_object_frees`], which can wait for the Service Thread inside the
/// VM, with no safepoint check, while a collection is requested: a hang): a heap iteration in
/// the main environment gathers the dead tags at its safepoint and posts them on this thread
/// afterwards, waiting for nobody. Filtered to an interface (`java.lang.Runnable`, which has no
/// instances): no object gets a callback or a tag lookup, so the walk costs what the GC
/// room's heap count costs, once. For VM death on JDK 17+.
pub fn post_owed_frees(jni: &Jni) -> Result<()> {
    let _i = Internal::enter();
    let none = jni.0.find_class("java/lang/Runnable").ok_or(jvmtiError::INTERNAL)?;
    unsafe extern "system" fn never(_ct: jlong, _size: jlong, _tp: *mut jlong, _len: jint, _ud: *mut c_void) -> jint {
        0
    }
    let cb = jvmti::jvmtiHeapCallbacks { heap_iteration_callback: Some(never), ..Default::default() };
    // SAFETY: a live local class reference as the filter; the callbacks outlive the synchronous iteration (no user data).
    let r = unsafe { env()?.iterate_through_heap(0, none, &cb, std::ptr::null()) };
    jni.delete_local_ref(none);
    r
}

/// The environment [`count_heap`] walks in: made once (under [`exclusive`], held by the caller)
/// with only `can_tag_objects`, no callbacks, no events; kept for the JVM's life. The main
/// environment if it cannot be made.
fn counting_env() -> Result<&'static Jvmti> {
    if let Some(e) = STATE.count_env.get() {
        return Ok(&e.0);
    }
    // Never disposed of.
    match tagging_env() {
        Ok(e) => Ok(&STATE.count_env.get_or_init(|| Env(e)).0),
        Err(e) => {
            log::debug!("no environment of its own for heap counts ({}): counting in the main one", err_name(e));
            env()
        }
    }
}

/// How many objects [`each_tagged_object`] lists at a time (below JNI's largest local frame).
const LISTING_BATCH: jlong = 60_000;

/// The tag [`each_tagged_object`]'s listing environment gives the objects of batch `batch`: an
/// odd number (the main environment's tags are multiples of 8, so it is never one of them).
fn listing_mark(batch: jlong) -> jlong {
    1 + 2 * batch
}

// ---- deaths taken by a walk ---------------------------------------------------------------------
//
// Since JDK 17's update 17.0.6 (JDK 20's JvmtiTagMap, JDK-8256811), a heap walk begins, at its
// safepoint, by removing the dead entries of EVERY environment's tag map that posts ObjectFree
// (`JvmtiTagMap::check_hashmaps_for_heapwalk`), and afterwards posts all their tags as
// ObjectFree events of the environment that walked (`post_dead_objects`). A walk in an
// environment of the shim's other than the main one (heap counts, the listing of tagged
// objects) that comes before the Service Thread has posted a collection's deaths so takes them
// from the main environment; an environment without ObjectFree drops them. It did: under load
// the GC room's count after a collection ran first about one time in twelve, and the
// collection's CLASS_UNLOADs were never reported (foundation.rs
// `class_unload_inside_a_gc_bracket`; `-Xlog:jvmti+table` showed "free object posted" on the
// shim's GC thread). So these environments have ObjectFree too, passed on to the main
// environment's callback ([`relay_free`]): the deaths arrive on the walking thread before the
// walk returns. Tags of another agent's environment arrive the same way — HotSpot posts them
// to whichever environment walks, the main one included (the GC room ignores those out of the
// shim's range).

/// ObjectFree of the shim's other tagging environments: the main environment's callback, minus
/// the listing environment's own mark.
unsafe extern "system" fn relay_free(j: *mut jvmti::jvmtiEnv, tag: jlong) {
    if tag & 1 == 1 {
        return; // a listing mark
    }
    if let Some(f) = STATE.object_free.get() {
        // The main environment's callback ignores the environment argument.
        // SAFETY: the main environment's ObjectFree callback, called as JVMTI calls it.
        unsafe { f(j, tag) }
    }
}

/// A new JVMTI environment of the shim's own with `can_tag_objects`, an empty tag map, and
/// ObjectFree passed on to the main environment's callback (see "deaths taken by a walk"
/// above; without it if the JVM refuses). The caller disposes of it or keeps it.
fn tagging_env() -> Result<Jvmti> {
    let real = STATE.real_vm.get().copied().ok_or(jvmtiError::INVALID_ENVIRONMENT)?;
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the JVM's own GetEnv with its own JavaVM and a valid out-pointer.
    if unsafe { (real.get_env)(real.vm as *mut JavaVM, &mut p, jvmti::JVMTI_VERSION_1_2) } != jni::JNI_OK || p.is_null()
    {
        return Err(jvmtiError::INVALID_ENVIRONMENT);
    }
    // SAFETY: `p` is a jvmtiEnv* just returned by GetEnv.
    let e = unsafe { Jvmti::from_raw(p as *mut jvmti::jvmtiEnv) };
    let mut c = jvmti::jvmtiCapabilities::default();
    c.set_can_tag_objects(true);
    if let Err(err) = e.add_capabilities(&c) {
        // SAFETY: the environment was just made here and nothing else knows it.
        let _ = unsafe { e.dispose_environment() };
        return Err(err);
    }
    if let Err(err) = relay_deaths(&e) {
        log::debug!(
            "a walking environment without ObjectFree ({}): deaths its walks take from the main one are lost",
            err_name(err)
        );
    }
    Ok(e)
}

/// Gives a new tagging environment ObjectFree, passed on by [`relay_free`].
fn relay_deaths(e: &Jvmti) -> Result<()> {
    STATE.object_free.get().ok_or(jvmtiError::NOT_AVAILABLE)?;
    let mut c = jvmti::jvmtiCapabilities::default();
    c.set_can_generate_object_free_events(true);
    e.add_capabilities(&c)?;
    let mut cb = jvmti::jvmtiEventCallbacks::default();
    cb.ObjectFree = Some(relay_free);
    e.set_event_callbacks(cb)?;
    // SAFETY: a NULL thread means "all threads"; ObjectFree is a global event.
    unsafe { e.set_event_notification_mode(true, jvmti::JVMTI_EVENT_OBJECT_FREE, std::ptr::null_mut()) }
}

pub fn force_gc() -> Result<()> {
    env()?.force_garbage_collection()
}

pub fn object_size(obj: jobject) -> Result<jlong> {
    // SAFETY: facade contract.
    unsafe { env()?.get_object_size(obj) }
}

// ---- heap, object and monitor dumps (the dumps room) ------------------------------------------

/// Walks the heap graph with JVMTI `FollowReferences` (from the roots, or from `initial`). The
/// callbacks run in one VM operation, at a safepoint, before this returns.
///
/// # Safety
/// `cb`'s functions must accept `user_data` for the whole (synchronous) walk and may only use
/// the callback-safe JVMTI functions.
pub unsafe fn follow_references(
    initial: jobject,
    cb: &jvmti::jvmtiHeapCallbacks,
    user_data: *mut c_void,
) -> Result<()> {
    let _one = exclusive();
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
