//! The life of the emulation: start-up from `Agent_OnLoad` (or from the shim's own
//! `JVM_OnLoad`), the legacy agent's `JVM_OnLoad`, `JVM_INIT_DONE`, `DATA_DUMP_REQUEST`,
//! `JVM_SHUT_DOWN`, and `ProfilerExit`.
//!
//! When the legacy `JVM_OnLoad` runs: at JVMTI VMInit, on the main thread. There the thread is
//! attached (on JDK 1.2–1.5 `JVM_OnLoad` ran on an attached thread, and agents that ask
//! `GetEnv` for a JNI version there get one), and nothing is lost: threads and classes that
//! appeared earlier are announced by the catch-up when the event gate opens, before
//! `JVM_INIT_DONE`. The shim's own JVMTI set-up happens earlier, in `Agent_OnLoad`, where every
//! capability can still be added.

use crate::abi::*;
use crate::{callbacks, events, gc, interface, jvm, loader, logger, options, threads};
use jvmti_bindings::sys::jni::{jint, jthread, JNIEnv, JavaVM, JNI_EDETACHED, JNI_ERR, JNI_OK};
use jvmti_bindings::sys::jvmti;
use std::ffi::c_void;
use std::io::Write;
use std::sync::OnceLock;

static VM: OnceLock<usize> = OnceLock::new();

/// Prints a one-line error and ends the process with status 1 (the agent cannot run).
fn fatal(msg: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "jvmpi-shim: error: {msg}");
    let _ = std::io::stderr().flush();
    let _ = std::io::stdout().flush();
    // SAFETY: ends the process without running the JVM's exit machinery mid-initialisation.
    unsafe { libc::_exit(1) }
}

/// Parses the options, loads the agent, sets up JVMTI. Errors are one-line messages.
fn set_up(vm: *mut JavaVM, raw_options: Option<Vec<u8>>) -> Result<(), String> {
    let opts = options::parse(raw_options.as_deref())?;
    logger::init(opts.log);
    jvm::connect(vm)?;
    let leg = loader::load(&opts)?;
    log::info!("legacy agent {} loaded", leg.path);
    jvm::add_capabilities().map_err(|e| format!("JVMTI capabilities: {e}"))?;
    jvm::set_callbacks(callbacks::table()).map_err(|e| format!("JVMTI callbacks: {}", jvm::err_name(e)))?;
    jvm::set_up_hook_env(callbacks::agent_class_file_load_hook)
        .map_err(|e| format!("JVMTI class-hook environment: {}", jvm::err_name(e)))?;
    for ev in [
        jvmti::JVMTI_EVENT_VM_INIT,
        jvmti::JVMTI_EVENT_VM_DEATH,
        jvmti::JVMTI_EVENT_THREAD_START,
        jvmti::JVMTI_EVENT_THREAD_END,
    ] {
        jvm::want(ev).map_err(|e| format!("JVMTI event {ev}: {}", jvm::err_name(e)))?;
    }
    let _ = VM.set(vm as usize);
    loader::hook_vm(vm);
    Ok(())
}

/// `Agent_OnLoad`: the OnLoad phase of a JVMTI-capable JVM.
pub fn agent_onload(vm: *mut JavaVM, raw_options: Option<Vec<u8>>) -> jint {
    logger::init(log::LevelFilter::Warn);
    match set_up(vm, raw_options) {
        Ok(()) => JNI_OK,
        Err(msg) => {
            log::error!("{msg}");
            JNI_ERR
        }
    }
}

/// JVMTI VMInit: run the legacy `JVM_OnLoad`, open the gate (catch-up), send JVM_INIT_DONE.
pub fn vm_init(env: *mut JNIEnv, thread: jthread) {
    threads::on_thread_start(env, thread);
    let (Some(leg), Some(&vm)) = (loader::legacy(), VM.get()) else { return };
    let rc = loader::call_onload(leg, vm as *mut JavaVM);
    if rc != JNI_OK {
        fatal(&format!("legacy agent {}: JVM_OnLoad returned {rc} (JNI_ERR): the JVM will not start", leg.path));
    }
    if interface::notify_event().is_none() {
        fatal(&format!(
            "legacy agent {}: JVM_OnLoad returned without setting NotifyEvent in its JVMPI interface \
             (did it call GetEnv with JVMPI_VERSION_1?)",
            leg.path
        ));
    }
    if let Err(e) = gc::start(env) {
        log::error!("GC events will not be delivered: {e}");
    }
    events::open_gate();
    if events::enabled(JVMPI_EVENT_JVM_INIT_DONE) {
        events::send(&mut JVMPI_Event::new(JVMPI_EVENT_JVM_INIT_DONE, env));
    }
}

/// JVMTI VMDeath.
pub fn vm_death(env: *mut JNIEnv) {
    events::shut_down(env);
}

/// JVMTI DataDumpRequest (SIGQUIT, `jcmd <pid> Thread.print`).
pub fn data_dump_request() {
    if events::enabled(JVMPI_EVENT_DATA_DUMP_REQUEST) {
        let env = jvm::current_jni().unwrap_or(std::ptr::null_mut());
        events::send(&mut JVMPI_Event::new(JVMPI_EVENT_DATA_DUMP_REQUEST, env));
    }
}

/// `ProfilerExit(code)`: the JVM exits with that code (shutdown hooks and JVM_SHUT_DOWN run).
pub fn profiler_exit(code: jint) {
    log::info!("ProfilerExit({code})");
    if let Some(env) = jvm::attach_current() {
        jvm::Jni::of(env).system_exit(code);
    }
    // System.exit returns only if it could not run: end the process directly.
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

/// The shim's `JVM_OnLoad` (the "double agent"): a JVM that calls it instead of `Agent_OnLoad`.
/// With JVMTI reachable the emulation starts from the current phase; on a pre-JVMTI JVM, whose
/// JVMPI is native, the legacy agent is loaded and given the JVM's own `JavaVM`.
pub fn double_agent(vm: *mut JavaVM, raw_options: Option<Vec<u8>>, reserved: *mut c_void) -> jint {
    logger::init(log::LevelFilter::Warn);
    if vm.is_null() {
        log::error!("JVM_OnLoad called with a NULL JavaVM");
        return JNI_ERR;
    }
    // SAFETY: `vm` is the JavaVM the JVM passed; its table has GetEnv and AttachCurrentThread.
    let table = unsafe { &**vm };
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the JVM's GetEnv with a valid out-pointer.
    let mut rc = unsafe { (table.GetEnv)(vm, &mut p, jvmti::JVMTI_VERSION_1_2) };
    if rc == JNI_EDETACHED {
        let mut e: *mut c_void = std::ptr::null_mut();
        // SAFETY: attaching the calling thread with default arguments.
        if unsafe { (table.AttachCurrentThread)(vm, &mut e, std::ptr::null_mut()) } == JNI_OK {
            // SAFETY: as above.
            rc = unsafe { (table.GetEnv)(vm, &mut p, jvmti::JVMTI_VERSION_1_2) };
        }
    }
    if rc != JNI_OK {
        // No JVMTI: a JVM with native JVMPI. Hand the legacy agent the real thing.
        let opts = match options::parse(raw_options.as_deref()) {
            Ok(o) => o,
            Err(msg) => {
                log::error!("{msg}");
                return JNI_ERR;
            }
        };
        logger::init(opts.log);
        let leg = match loader::load(&opts) {
            Ok(l) => l,
            Err(msg) => {
                log::error!("{msg}");
                return JNI_ERR;
            }
        };
        log::info!("no JVMTI in this JVM: running {} on the JVM's own JVMPI", leg.path);
        let _ = reserved;
        return loader::call_onload(leg, vm);
    }
    if agent_onload(vm, raw_options) != JNI_OK {
        return JNI_ERR;
    }
    // Started late: if the VM is already live, do now what VMInit would have done.
    if jvm::phase().ok() == Some(jvmti::JVMTI_PHASE_LIVE) {
        if let (Some(env), Ok(t)) = (jvm::current_jni(), jvm::current_thread()) {
            vm_init(env, t);
        }
    }
    JNI_OK
}
