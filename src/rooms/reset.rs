//! `DATA_RESET_REQUEST` on its own: `kill -USR1 <pid>` asks the agent to reset its data without a
//! dump. (SIGQUIT still sends DATA_DUMP_REQUEST then DATA_RESET_REQUEST, as HotSpot 1.5 did; see
//! `lifecycle`.)
//!
//! HotSpot does not use SIGUSR1 on Linux (without a handler the signal ends the JVM), so the
//! shim installs its handler the first time the agent enables DATA_RESET_REQUEST, and only then;
//! if a handler is already installed (the application's, or a native library's), the shim leaves
//! it alone and says so. The handler only writes one byte to a pipe (async-signal-safe); a daemon
//! Java thread of the shim, `JVMPI reset request`, reads the pipe and sends the event, so the
//! agent's handler runs in an ordinary Java thread as other requests do.

use crate::face::abi::*;
use crate::face::events;
use crate::rooms::error::RoomError;
use crate::rooms::threads;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::JNIEnv;
use jvmti_bindings::sys::jvmti::jvmtiEnv;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, Ordering::SeqCst};
use std::sync::Mutex;

/// The signal that asks for a reset.
pub const SIGNAL: i32 = libc::SIGUSR1;

/// The reset room's state, shared by every thread (and the signal handler).
struct ResetState {
    /// The write end of the pipe to the reading thread (-1 until [`arm`] makes it): the signal
    /// handler writes a byte there, [`disarm`] too.
    pipe_w: AtomicI32,
    /// Whether [`arm`] has run (the thread and the handler are installed, or another handler
    /// was found); held while it runs.
    armed: Mutex<bool>,
}

static STATE: ResetState = ResetState { pipe_w: AtomicI32::new(-1), armed: Mutex::new(false) };

extern "C" fn on_signal(_sig: libc::c_int) {
    let fd = STATE.pipe_w.load(SeqCst);
    if fd >= 0 {
        let b = 1u8;
        // SAFETY: write(2) is async-signal-safe; `b` lives for the call.
        unsafe { libc::write(fd, &b as *const u8 as *const c_void, 1) };
    }
}

/// At VM death (the gate closed): the reading thread is woken and returns, so that the JVM's
/// exit does not wait for a thread of the shim's in native code.
pub fn disarm() {
    let fd = STATE.pipe_w.load(SeqCst);
    if fd >= 0 {
        let b = 0u8;
        // SAFETY: write(2) of one byte owned here to the pipe this room opened.
        unsafe { libc::write(fd, &b as *const u8 as *const c_void, 1) };
    }
}

/// Installs the trigger (once): the reading thread, then the signal handler.
pub fn arm() -> Result<(), RoomError> {
    let mut armed = crate::vm::logger::lock(&STATE.armed);
    if *armed {
        return Ok(());
    }
    // SAFETY: plain libc calls on memory owned here.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(SIGNAL, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction != libc::SIG_DFL
            && old.sa_sigaction != libc::SIG_IGN
        {
            log::warn!("SIGUSR1 already has a handler; DATA_RESET_REQUEST comes only with SIGQUIT's DATA_DUMP_REQUEST");
            *armed = true;
            return Ok(());
        }
        let mut fds = [0 as libc::c_int; 2];
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err("pipe2 failed".into());
        }
        let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
        let jni = jvm::Jni::of(env);
        let t = jni.new_thread("JVMPI reset request").ok_or("cannot make the reset request thread")?;
        threads::mark_own(t);
        let r = jvm::run_agent_thread(t, reader_main, fds[0] as usize as *const c_void, JVMPI_NORMAL_PRIORITY);
        jni.delete_local_ref(t);
        r.map_err(jvm::err_name)?;
        STATE.pipe_w.store(fds[1], SeqCst);
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(SIGNAL, &sa, std::ptr::null_mut()) != 0 {
            return Err("sigaction(SIGUSR1) failed".into());
        }
    }
    *armed = true;
    log::info!("kill -USR1 {} sends DATA_RESET_REQUEST", std::process::id());
    Ok(())
}

unsafe extern "system" fn reader_main(_j: *mut jvmtiEnv, env: *mut JNIEnv, arg: *mut c_void) {
    threads::own_thread_here();
    let fd = arg as usize as libc::c_int;
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: reads into a buffer owned here.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut c_void, buf.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 || events::is_dead() {
            return;
        }
        // Signals that arrive together ask for one reset.
        crate::vm::logger::guard("DATA_RESET_REQUEST", (), || {
            if events::enabled(JVMPI_EVENT_DATA_RESET_REQUEST) {
                // In a thread the agent knows of (this one is the shim's).
                threads::with_stand_in(|| events::send(&mut JVMPI_Event::new(JVMPI_EVENT_DATA_RESET_REQUEST, env)));
            }
        });
    }
}
