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

// ---- virtual threads as threads of their own (JDK 21+) --------------------------------------------

/// The JNI function slots a [`VtEnv`] forwards: the JNI table of JDK 24/25 (4 reserved slots,
/// `GetVersion` … `GetStringUTFLengthAsLong`); older JDKs have fewer, and no caller names a
/// slot its JDK does not have.
const JNI_SLOTS: usize = 236;

/// The `env_id` of a virtual thread: a `JNIEnv` of its own, stable for the thread's life,
/// whichever carrier runs it. Laid out as a `JNIEnv` (its first word is a function table), so
/// an agent can make JNI calls with it while the virtual thread runs: each slot of the table is
/// a stub that puts the carrier's own `JNIEnv` (the second word, written at every mount) in
/// place of the first argument and jumps to the carrier's function (every other argument, and
/// the registers of a variadic call, untouched). x86-64 only; elsewhere [`VtEnv::new`] says
/// None and virtual threads keep their carrier's `env_id`.
#[repr(C)]
pub struct VtEnv {
    functions: *const usize,
    carrier: std::sync::atomic::AtomicPtr<JNIEnv>,
    /// The CPU time it used on its carriers up to its last unmount (ns).
    cpu_total: std::sync::atomic::AtomicI64,
    /// Its carrier's CPU time when it was last mounted (ns).
    cpu_at_mount: std::sync::atomic::AtomicI64,
    /// Mounted now.
    on_carrier: AtomicBool,
}

// SAFETY: the function table is immutable and shared; the carrier is an atomic.
unsafe impl Send for VtEnv {}
// SAFETY: as above.
unsafe impl Sync for VtEnv {}

impl VtEnv {
    /// A new virtual thread's `env_id`, running on the carrier whose JNIEnv is `carrier`.
    pub fn new(carrier: *mut JNIEnv) -> Option<Box<VtEnv>> {
        let functions = forwarding_table()?.as_ptr();
        Some(Box::new(VtEnv {
            functions,
            carrier: std::sync::atomic::AtomicPtr::new(carrier),
            cpu_total: std::sync::atomic::AtomicI64::new(0),
            cpu_at_mount: std::sync::atomic::AtomicI64::new(0),
            on_carrier: AtomicBool::new(false),
        }))
    }

    /// Mounted now, when its carrier's CPU clock reads `carrier_cpu`.
    pub fn mounted(&self, carrier_cpu: jlong) {
        self.cpu_at_mount.store(carrier_cpu, Ordering::Relaxed);
        self.on_carrier.store(true, Ordering::Relaxed);
    }

    /// Unmounted now, when its carrier's CPU clock reads `carrier_cpu`: returns the CPU time
    /// it used since it was mounted.
    pub fn unmounted(&self, carrier_cpu: jlong) -> jlong {
        let ran = (carrier_cpu - self.cpu_at_mount.load(Ordering::Relaxed)).max(0);
        self.cpu_total.fetch_add(ran, Ordering::Relaxed);
        self.on_carrier.store(false, Ordering::Relaxed);
        ran
    }

    /// Whether it is on a carrier now.
    pub fn is_mounted(&self) -> bool {
        self.on_carrier.load(Ordering::Relaxed)
    }

    /// Its own CPU time while mounted, its carrier's clock reading `carrier_cpu`: what it used
    /// on every carrier so far.
    pub fn cpu_time(&self, carrier_cpu: jlong) -> jlong {
        self.cpu_total.load(Ordering::Relaxed) + (carrier_cpu - self.cpu_at_mount.load(Ordering::Relaxed)).max(0)
    }

    /// It as the `JNIEnv*` the agent sees.
    pub fn as_env(&self) -> *mut JNIEnv {
        self as *const VtEnv as *mut JNIEnv
    }

    /// The virtual thread is mounted on the carrier whose JNIEnv is `carrier`.
    pub fn set_carrier(&self, carrier: *mut JNIEnv) {
        self.carrier.store(carrier, Ordering::Release);
    }

    /// The `env_id` of an event whose JNIEnv is `env`: this virtual thread's when `env` is its
    /// carrier's now.
    #[inline(always)]
    pub fn event_env(&self, env: *mut JNIEnv) -> *mut JNIEnv {
        if self.carrier.load(Ordering::Relaxed) == env {
            self.as_env()
        } else {
            env
        }
    }
}

/// Keeps the [`VtEnv`] of the virtual thread that is the current thread in its JVMTI
/// thread-local storage (the shim's main environment's, used for nothing else; null to clear).
pub fn set_vt_env_of_current(vt: *const VtEnv) -> Result<()> {
    // SAFETY: a NULL thread is the current thread; the pointer is only stored.
    unsafe { env()?.set_thread_local_storage(std::ptr::null_mut(), vt as *const c_void) }
}

/// `f` of the [`VtEnv`] kept by [`set_vt_env_of_current`] for the current thread, if any. One
/// JVMTI call that reads the current thread's own state: no lock, no wait for transitions.
/// The caller guarantees what keeps it alive: the record that owns it lives at least until the
/// virtual thread's end, which clears the storage first.
pub fn with_vt_env_of_current<R>(f: impl FnOnce(&VtEnv) -> R) -> Option<R> {
    // SAFETY: a NULL thread is the current thread.
    let p = unsafe { env().ok()?.get_thread_local_storage(std::ptr::null_mut()).ok()? } as *const VtEnv;
    // SAFETY: only `set_vt_env_of_current` stores there, a live VtEnv or null (see above).
    (!p.is_null()).then(|| f(unsafe { &*p }))
}

/// Whether this platform can give virtual threads a [`VtEnv`] (the forwarding stubs exist).
pub fn vt_envs_supported() -> bool {
    forwarding_table().is_some()
}

/// The function table of every [`VtEnv`]: one forwarding stub per JNI slot, made once in a
/// page of executable memory.
fn forwarding_table() -> Option<&'static [usize; JNI_SLOTS]> {
    static TABLE: OnceLock<Option<Box<[usize; JNI_SLOTS]>>> = OnceLock::new();
    TABLE.get_or_init(make_forwarding_table).as_deref()
}

#[cfg(target_arch = "x86_64")]
fn make_forwarding_table() -> Option<Box<[usize; JNI_SLOTS]>> {
    const STUB: usize = 16;
    let size = (JNI_SLOTS * STUB).next_multiple_of(4096);
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        return None;
    }
    let mut code = vec![0xCCu8; size];
    for i in 0..JNI_SLOTS {
        let disp = ((i * 8) as u32).to_le_bytes();
        let stub = [
            0x48, 0x8B, 0x7F, 0x08, // mov rdi, [rdi + 8]    the carrier's JNIEnv
            0x4C, 0x8B, 0x1F, // mov r11, [rdi]              its function table
            0x41, 0xFF, 0xA3, disp[0], disp[1], disp[2], disp[3], // jmp [r11 + 8*i]
        ];
        code[i * STUB..i * STUB + stub.len()].copy_from_slice(&stub);
    }
    // SAFETY: `page` is `size` writable bytes of our own; then made read-only and executable.
    let ok = unsafe {
        std::ptr::copy_nonoverlapping(code.as_ptr(), page as *mut u8, size);
        libc::mprotect(page, size, libc::PROT_READ | libc::PROT_EXEC) == 0
    };
    if !ok {
        return None;
    }
    let mut table = Box::new([0usize; JNI_SLOTS]);
    for (i, t) in table.iter_mut().enumerate() {
        *t = page as usize + i * STUB;
    }
    Some(table)
}

#[cfg(not(target_arch = "x86_64"))]
fn make_forwarding_table() -> Option<Box<[usize; JNI_SLOTS]>> {
    None
}
