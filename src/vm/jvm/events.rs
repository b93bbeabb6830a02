//! JVMTI events: the capabilities the shim adds, its callbacks, reference-counted event
//! switching ([`want`]/[`unwant`]), the phase, `GenerateEvents` for compiled methods, the owner of
//! a Java monitor, and the frames method events read. Not here: the callbacks themselves
//! (`doors::jvmti`).

use super::*;

// ---- capabilities and callbacks ---------------------------------------------------------------

/// Adds every capability the shim may need. Done once, in the OnLoad (or live) phase; none of
/// these changes how the JVM runs until an event that uses it is enabled, except
/// `can_get_owned_monitor_info`: before JDK 16 C2 compiles without escape analysis and lock
/// elimination while any environment has it (JDK-8227745), so it is taken only when
/// `owned_monitors` says so (the `owned-monitors=` option, by default from JDK 16 on); the same
/// holds for `can_access_local_variables`, taken when `locals` says so (the `locals=` option,
/// by default from JDK 16 on; C2 then also keeps every local of a method alive at its
/// safepoints). Returns whether `can_access_local_variables` was taken.
/// `virtual_threads`: take `can_support_virtual_threads` (JDK 21+, `vthreads=own`).
pub fn add_capabilities(
    owned_monitors: bool,
    locals: bool,
    virtual_threads: bool,
) -> std::result::Result<bool, VmError> {
    let j = env().map_err(VmError::Jvmti)?;
    let potential = j.get_potential_capabilities().map_err(VmError::Jvmti)?;
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
    if owned_monitors && potential.can_get_owned_monitor_info() {
        c.set_can_get_owned_monitor_info(true);
    }
    if virtual_threads && potential.can_support_virtual_threads() && vt_envs_supported() {
        c.set_can_support_virtual_threads(true);
    }
    let locals = locals && potential.can_access_local_variables();
    if locals {
        c.set_can_access_local_variables(true);
    }
    j.add_capabilities(&c).map_err(VmError::Jvmti)?;
    Ok(locals)
}

/// The JVMTI callbacks of a mounted virtual thread's events (JDK 21+): (JNIEnv, the virtual
/// thread). HotSpot calls its extension events with these arguments after the environment.
pub type VtCallback = unsafe extern "C" fn(*mut jvmti::jvmtiEnv, *mut JNIEnv, jthread);

/// Turns on the virtual-thread events (JDK 21+, with `can_support_virtual_threads`, taken by
/// [`add_capabilities`]): VirtualThreadStart / VirtualThreadEnd (their callbacks are in the
/// table of [`set_callbacks`]) and HotSpot's extension events VirtualThreadMount /
/// VirtualThreadUnmount, with `mount` and `unmount`. False when this JVM cannot.
pub fn enable_virtual_thread_events(mount: VtCallback, unmount: VtCallback) -> bool {
    let Ok(j) = env() else { return false };
    if !j.get_capabilities().is_ok_and(|c| c.can_support_virtual_threads()) {
        return false;
    }
    let Ok(exts) = j.get_extension_events() else { return false };
    let find = |id: &str| exts.iter().find(|e| e.id.as_deref() == Some(id)).map(|e| e.extension_event_index);
    let (Some(m), Some(u)) =
        (find("com.sun.hotspot.events.VirtualThreadMount"), find("com.sun.hotspot.events.VirtualThreadUnmount"))
    else {
        return false;
    };
    // HotSpot calls these extension events with (jvmtiEnv*, JNIEnv*, jthread), which is what a
    // `VtCallback` takes; the variadic type is only how JVMTI declares them.
    // SAFETY: the callbacks' real signature is the one HotSpot calls them with (above).
    let (mount, unmount) = unsafe {
        (
            std::mem::transmute::<VtCallback, jvmti::jvmtiExtensionEvent>(mount),
            std::mem::transmute::<VtCallback, jvmti::jvmtiExtensionEvent>(unmount),
        )
    };
    // An extension event is sent once it has a callback and is enabled like any event (HotSpot
    // numbers its extension events just below the standard ones).
    j.set_extension_event_callback(m, Some(mount)).is_ok()
        && j.set_extension_event_callback(u, Some(unmount)).is_ok()
        && set_mode(m as jvmtiEvent, true).is_ok()
        && set_mode(u as jvmtiEvent, true).is_ok()
        && want(jvmti::JVMTI_EVENT_VIRTUAL_THREAD_START).is_ok()
        && want(jvmti::JVMTI_EVENT_VIRTUAL_THREAD_END).is_ok()
}

pub fn set_callbacks(cb: jvmti::jvmtiEventCallbacks) -> Result<()> {
    if let Some(f) = cb.ObjectFree {
        let _ = STATE.object_free.set(f);
    }
    env()?.set_event_callbacks(cb)
}

// How many rooms want each event, and the lock they change under, are fields of the module's
// state (`STATE.wanted`, `STATE.event_switch`, in the parent module).

fn set_mode(ev: jvmtiEvent, on: bool) -> Result<()> {
    let j = env()?;
    // SAFETY: a NULL thread means "all threads"; the event number comes from the JVMTI constants.
    unsafe { j.set_event_notification_mode(on, ev, std::ptr::null_mut()) }
}

/// Makes the JVM post, in the calling thread, the ObjectFree events it still owes (JDK 16 and
/// later post them late, after a collection): setting ObjectFree's mode flushes them. One pass
/// over the tag map's entries, where a heap walk costs a tag-map lookup per object (seconds on
/// JDK 25 at a million tagged objects). Does nothing when nothing asked for ObjectFree. VM death
/// uses it on JDK 11 only: from 17 on it can hang HotSpot (see `jvm::post_owed_frees`).
///
/// For VM death: the event switch may be held by a thread an agent has suspended inside its
/// JVMTI call (see [`set_exiting`]); when it is still held at `deadline`, nothing is flushed
/// and `Ok(false)` says it.
pub fn flush_object_frees(deadline: std::time::Instant) -> Result<bool> {
    let Some(_g) = crate::vm::logger::lock_until(&STATE.event_switch, deadline) else { return Ok(false) };
    if STATE.wanted[jvmti::JVMTI_EVENT_OBJECT_FREE as usize].load(Ordering::Relaxed) == 0 {
        return Ok(true);
    }
    set_mode(jvmti::JVMTI_EVENT_OBJECT_FREE, true).map(|()| true)
}

/// How long the exit paths wait in all for a lock held by a thread that may be stopped.
const EXIT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// The least an exit path tries a lock once the common time limit has passed: a holder that is
/// running (not stopped) leaves it within this.
const EXIT_MIN_TRY: std::time::Duration = std::time::Duration::from_millis(20);

/// VM death has begun (or ProfilerExit is taking the JVM down): from now on the waits for the
/// event switch (here) and for the rooms' switches that make JVMTI calls under them end at one
/// common time limit, [`EXIT_PATIENCE`] from the first call, but each tries for
/// [`EXIT_MIN_TRY`] at least. Returns when the caller's wait ends.
///
/// Why bounded: the switch's holder makes a JVMTI call under it (the count and the JVM's
/// notification mode change together), and on JDK 17+ an agent's SuspendThread stops a thread
/// running native code at its next entry into the VM, that call included — a thread enabling
/// an event can sit there, switch held, until the agent resumes it, which an agent may do only
/// after JVM_SHUT_DOWN.
pub fn set_exiting() -> std::time::Instant {
    let now = std::time::Instant::now();
    let deadline = *STATE.exit_deadline.get_or_init(|| now + EXIT_PATIENCE);
    deadline.max(now + EXIT_MIN_TRY)
}

/// When a wait for a switch ends: never (None) while the JVM is not exiting.
fn exit_wait() -> Option<std::time::Instant> {
    STATE.exit_deadline.get().map(|_| set_exiting())
}

/// The event switch for [`want`] and [`unwant`]: waited for, or once the JVM is exiting tried
/// until [`set_exiting`]'s limit (None: still held).
fn switch() -> Option<std::sync::MutexGuard<'static, ()>> {
    match exit_wait() {
        None => Some(crate::vm::logger::lock(&STATE.event_switch)),
        Some(deadline) => crate::vm::logger::lock_until(&STATE.event_switch, deadline),
    }
}

/// Asks for a JVMTI event; the JVM is told to send it when the first asker arrives.
pub fn want(ev: jvmtiEvent) -> Result<()> {
    let Some(_g) = switch() else {
        log::info!("JVMTI event {ev} not switched on: the event switch is held up as the JVM exits");
        return Err(jvmtiError::WRONG_PHASE);
    };
    let n = &STATE.wanted[ev as usize];
    if n.load(Ordering::Relaxed) == 0 {
        set_mode(ev, true)?;
    }
    n.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Gives a JVMTI event back; the JVM stops sending it when the last asker leaves.
pub fn unwant(ev: jvmtiEvent) {
    let Some(_g) = switch() else {
        log::info!("JVMTI event {ev} left on: the event switch is held up as the JVM exits");
        return;
    };
    let n = &STATE.wanted[ev as usize];
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
///
/// The switch is tried until [`set_exiting`]'s limit: past that the events stay on, and the GC
/// room, which the caller stops next, starts no bracket anyway.
pub fn silence_for_exit() {
    STATE.gc_events_silenced.store(true, Ordering::SeqCst);
    let deadline = set_exiting();
    let Some(_g) = crate::vm::logger::lock_until(&STATE.event_switch, deadline) else {
        log::info!("ProfilerExit: the JVMTI event switch is held by another thread (suspended in a JVMTI call?); collection events left on");
        return;
    };
    for ev in [jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_START, jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH] {
        if STATE.wanted[ev as usize].swap(0, Ordering::Relaxed) > 0 {
            if let Err(e) = set_mode(ev, false) {
                log::debug!("disabling JVMTI event {ev} for the exit: {}", err_name(e));
            }
        }
    }
}

/// Whether [`silence_for_exit`] has switched (or tried to switch) the collection events off.
pub fn gc_events_silenced() -> bool {
    STATE.gc_events_silenced.load(Ordering::SeqCst)
}

pub fn phase() -> Result<jvmti::jvmtiPhase> {
    env()?.get_phase()
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

// ---- method events (the methods room) ------------------------------------------------------------

/// The method running at `depth` frames below the current thread's top.
pub fn frame_method(depth: jint) -> Result<jmethodID> {
    // SAFETY: a NULL thread is the current thread.
    unsafe { env()?.get_frame_location(std::ptr::null_mut(), depth) }.map(|(m, _)| m)
}

/// The object a `new` keeps in its local while the allocation tracker's hook runs (the
/// allocation plan's `keep_new`): the first frame of the current thread below the tracker's
/// (`tracker`: the tracker class's internal name) is the method that ran the `new`, and its
/// last local (the one the plan added) holds the object. A local reference; None when that
/// frame or its local holds none (JVMTI refuses, or the local is cleared). Needs
/// `can_access_local_variables`; called only while an agent asks for such an object.
pub fn object_in_new_local(tracker: &str) -> Option<jobject> {
    let j = env().ok()?;
    // SAFETY: a NULL thread is the current thread.
    let frames = unsafe { j.get_stack_trace(std::ptr::null_mut(), 0, 8) }.ok()?;
    let sig = format!("L{tracker};");
    for (depth, f) in frames.iter().enumerate() {
        let k = method_class(f.method).ok()?;
        let theirs = class_signature(k).is_ok_and(|s| s == sig);
        if let Some(jni) = Jni::current() {
            jni.delete_local_ref(k);
        }
        if theirs {
            continue;
        }
        // SAFETY: `f.method` is a method of a frame of this thread, alive while it runs.
        let max = unsafe { j.get_max_locals(f.method) }.ok()?;
        // SAFETY: a NULL thread is the current thread; depth and slot were just read from it.
        let o = unsafe { j.get_local_object(std::ptr::null_mut(), depth as jint, max - 1) };
        if let Err(e) = o {
            log::debug!(
                "GetLocalObject(depth {depth}, slot {}) of {}: {}",
                max - 1,
                method_name(f.method).map(|(n, s)| n + &s).unwrap_or_default(),
                err_name(e)
            );
        }
        let o = o.ok()?;
        return (!o.is_null()).then_some(o);
    }
    None
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
