//! Threads: the current thread, every thread, names and groups, state, CPU time,
//! suspend/resume, stack traces, and agent threads the shim starts.

use super::*;

// ---- threads ------------------------------------------------------------------------------------

pub fn current_thread() -> Result<jthread> {
    env()?.get_current_thread()
}

/// Every live thread, as local references of the current thread (see [`loaded_classes`]).
pub fn all_threads() -> Result<Vec<jthread>> {
    let all = env()?.get_all_threads()?;
    made_locals(all.len());
    Ok(all)
}

/// The thread's name alone (one JVMTI call, no group lookups).
pub fn thread_name(t: jthread) -> Result<String> {
    let j = env()?;
    // SAFETY: facade contract.
    let info = unsafe { j.get_thread_info(t)? };
    if let Some(jni) = Jni::current() {
        jni.delete_local_ref(info.context_class_loader);
        jni.delete_local_ref(info.thread_group);
    }
    Ok(info.name.unwrap_or_default())
}

/// (thread name, group name, parent group name).
pub fn thread_names(t: jthread) -> Result<(String, String, String)> {
    let j = env()?;
    let jni = Jni::current();
    let delete = |r: jobject| {
        if let Some(jni) = &jni {
            jni.delete_local_ref(r)
        }
    };
    // The group handles are local references of this thread, deleted once read.
    // SAFETY: facade contract; the handles come from the JVM.
    unsafe {
        let info = j.get_thread_info(t)?;
        delete(info.context_class_loader);
        let name = info.name.unwrap_or_default();
        let (mut group, mut parent) = (String::new(), String::new());
        if !info.thread_group.is_null() {
            let g = j.get_thread_group_info(info.thread_group);
            delete(info.thread_group);
            let g = g?;
            group = g.name.unwrap_or_default();
            if !g.parent.is_null() {
                let p = j.get_thread_group_info(g.parent);
                delete(g.parent);
                parent = p?.name.unwrap_or_default();
            }
        }
        Ok((name, group, parent))
    }
}

pub fn thread_state(t: jthread) -> Result<jint> {
    // SAFETY: facade contract.
    unsafe { env()?.get_thread_state(t) }
}

pub fn thread_cpu_time(t: jthread) -> Result<jlong> {
    // SAFETY: facade contract.
    unsafe { env()?.get_thread_cpu_time(t) }
}

pub fn suspend(t: jthread) -> Result<()> {
    // SAFETY: facade contract.
    unsafe { env()?.suspend_thread(t) }
}

pub fn resume(t: jthread) -> Result<()> {
    // SAFETY: facade contract.
    unsafe { env()?.resume_thread(t) }
}

pub fn stack_trace(t: jthread, depth: jint) -> Result<Vec<(jmethodID, jlong)>> {
    // SAFETY: facade contract.
    let frames = unsafe { env()?.get_stack_trace(t, 0, depth)? };
    Ok(frames.into_iter().map(|f| (f.method, f.location)).collect())
}

/// The top `buf.len()` frames of a thread's stack (the current thread: NULL), callee first,
/// written into `buf` without allocating (nor clearing it first); returns the frames written.
pub fn stack_trace_into(
    t: jthread,
    buf: &mut [std::mem::MaybeUninit<jvmti::jvmtiFrameInfo>],
) -> Result<&mut [jvmti::jvmtiFrameInfo]> {
    let raw = env()?.raw();
    // SAFETY: `raw` is the shim's live environment; its function table is the JVM's.
    let f = unsafe { (*(*raw).functions).GetStackTrace }.ok_or(jvmtiError::NOT_AVAILABLE)?;
    let mut n: jint = 0;
    let max = buf.len().min(i32::MAX as usize) as jint;
    // SAFETY: facade contract; `buf` holds `max` frames and the JVM writes at most that many.
    let e = unsafe { f(raw, t, 0, max, buf.as_mut_ptr() as *mut jvmti::jvmtiFrameInfo, &mut n) };
    if e != jvmtiError::NONE {
        return Err(e);
    }
    let n = (n.max(0) as usize).min(buf.len());
    // SAFETY: the JVM wrote the first `n` frames of `buf`.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut jvmti::jvmtiFrameInfo, n) })
}

pub type AgentThreadFn = unsafe extern "system" fn(*mut jvmti::jvmtiEnv, *mut JNIEnv, *mut c_void);

pub fn run_agent_thread(t: jthread, f: AgentThreadFn, arg: *const c_void, priority: jint) -> Result<()> {
    // SAFETY: `t` is a new, unstarted java.lang.Thread; `f` is a shim function that accepts `arg`.
    unsafe { env()?.run_agent_thread(t, f, arg, priority) }
}
