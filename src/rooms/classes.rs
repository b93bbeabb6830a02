//! Classes: `CLASS_LOAD`, `CLASS_UNLOAD`, `CLASS_LOAD_HOOK`, and `GetMethodClass`.
//!
//! A class ID is the ID (tag) of its `java.lang.Class` object. The table `ANNOUNCED` holds the
//! classes the agent has been told about, with their method IDs; a class is entered the moment
//! its `CLASS_LOAD` is claimed, so it is announced exactly once however many threads race to
//! name it, and a thread that names a class another thread is still announcing waits for that
//! CLASS_LOAD to be delivered. `CLASS_LOAD` is built at JVMTI `ClassPrepare` (the first moment methods and fields
//! can be listed); classes that were prepared before the agent enabled the event are announced
//! by `announce_all` (the catch-up), and array classes when an event first names them.
//! A class unload is the death of its tagged `Class` object, which the GC room reports inside
//! its GC_START/GC_FINISH bracket.
//!
//! `METHODS` knows every method ID the shim has handed out or listed, so that an ID that comes
//! back from an agent can be checked before JVMTI sees it.

use crate::abi::*;
use crate::{events, ids, jvm, lines};
use dashmap::DashMap;
use jvmti_bindings::sys::jni::{jclass, jint, jlong, jmethodID, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

struct ClassRec {
    methods: Vec<usize>,
    /// The agents whose CLASS_LOAD for this class has been claimed by a thread (bit a = agent a).
    told: AtomicU32,
    /// The agents whose CLASS_LOAD has been delivered (the claimer's handler returned).
    sent: AtomicU32,
}

thread_local! {
    /// Classes whose CLASS_LOAD this thread is delivering.
    static SENDING: std::cell::RefCell<Vec<jlong>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Whether every agent that wants CLASS_LOAD now has heard of class `tag`. A class another
/// thread has claimed but whose CLASS_LOAD is still in the agent's handler is waited for (2 s at
/// most), as threads waited for a class being defined on HotSpot 1.5: an event naming the class
/// must not reach the agent before its CLASS_LOAD.
fn all_told(tag: jlong) -> bool {
    let want = events::listeners(JVMPI_EVENT_CLASS_LOAD);
    let (told, sent) = match ANNOUNCED.get(&tag) {
        Some(r) => (r.told.load(SeqCst), r.sent.load(SeqCst)),
        None => return false,
    };
    if told & want != want {
        return false;
    }
    if sent & want != want && !SENDING.with(|s| s.borrow().contains(&tag)) {
        let deadline = Instant::now() + Duration::from_secs(2);
        // Until it is delivered, or its claim is given back (the gate closed).
        while ANNOUNCED.get(&tag).is_some_and(|r| r.told.load(SeqCst) & want == want && r.sent.load(SeqCst) & want != want) {
            if Instant::now() >= deadline {
                log::debug!("a CLASS_LOAD handler of another thread has not returned within 2 s; going on");
                break;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        return ANNOUNCED.get(&tag).is_some_and(|r| r.told.load(SeqCst) & want == want);
    }
    true
}

static ANNOUNCED: LazyLock<DashMap<jlong, ClassRec>> = LazyLock::new(DashMap::new);
/// jmethodID → tag of its class (0 when not known yet).
static METHODS: LazyLock<DashMap<usize, jlong>> = LazyLock::new(DashMap::new);

/// `java/lang/String` → `java.lang.String`; `[Ljava/lang/String;` → `[Ljava.lang.String;`.
pub fn jvmpi_name(signature: &str) -> String {
    let s = signature.strip_prefix('L').and_then(|s| s.strip_suffix(';')).unwrap_or(signature);
    s.replace('/', ".")
}

/// Everything a CLASS_LOAD event points into, owned until the event has been sent.
struct ClassInfo {
    name: CString,
    /// `None`: no source file known (array classes, classes compiled without it): NULL, as
    /// HotSpot 1.5 sent it.
    source: Option<CString>,
    interfaces: jint,
    method_strings: Vec<(CString, CString)>,
    methods: Vec<JVMPI_Method>,
    field_strings: Vec<(CString, CString, bool)>,
    statics: Vec<JVMPI_Field>,
    instances: Vec<JVMPI_Field>,
}

impl ClassInfo {
    fn read(k: jclass, sig: &str) -> Result<ClassInfo, String> {
        let e = jvm::err_name;
        let is_array = sig.starts_with('[');
        let source = if is_array { String::new() } else { jvm::source_file(k).unwrap_or_default() };
        let mids = if is_array { Vec::new() } else { jvm::class_methods(k).map_err(e)? };
        let mut fields = if is_array { Vec::new() } else { jvm::class_fields(k).map_err(e)? };
        // JVMTI lists fields in declaration order; HotSpot 1.5 listed them in reverse, and its
        // heap dumps write field values in that same order (see `dumps`): old parsers pair the
        // two lists, so CLASS_LOAD keeps HotSpot's order.
        fields.reverse();
        // HotSpot 1.5 described an array class with no interfaces, methods or fields.
        let interfaces = if is_array { 0 } else { jvm::interface_count(k).map_err(e)? as jint };
        let mut method_strings = Vec::with_capacity(mids.len());
        let mut methods = Vec::with_capacity(mids.len());
        for &m in &mids {
            let (n, s) = jvm::method_name(m).map_err(e)?;
            if n.starts_with(crate::bci::NATIVE_PREFIX) {
                // A native the shim renamed when it wrapped it: the agent knows the method by
                // its wrapper, which has the native's name.
                continue;
            }
            method_strings.push((jvm::cstring(&n), jvm::cstring(&s)));
            let (lo, hi) = lines::range_of(m);
            let (n, s) = method_strings.last().map(|(n, s)| (n.as_ptr(), s.as_ptr())).unwrap_or_default();
            methods.push(JVMPI_Method {
                method_name: n as *mut _,
                method_signature: s as *mut _,
                start_lineno: lo,
                end_lineno: hi,
                method_id: m,
            });
        }
        let field_strings: Vec<_> =
            fields.iter().map(|(n, s, st)| (jvm::cstring(n), jvm::cstring(s), *st)).collect();
        let pick = |want_static: bool| -> Vec<JVMPI_Field> {
            field_strings
                .iter()
                .filter(|f| f.2 == want_static)
                .map(|(n, s, _)| JVMPI_Field { field_name: n.as_ptr() as *mut _, field_signature: s.as_ptr() as *mut _ })
                .collect()
        };
        let (statics, instances) = (pick(true), pick(false));
        Ok(ClassInfo {
            name: jvm::cstring(&jvmpi_name(sig)),
            source: (!source.is_empty()).then(|| jvm::cstring(&source)),
            interfaces,
            method_strings,
            methods,
            statics,
            instances,
            field_strings,
        })
    }

    fn event(&mut self, env: *mut JNIEnv, class_id: jobjectID) -> JVMPI_Event {
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_CLASS_LOAD, env);
        ev.u.class_load = ClassLoad {
            class_name: self.name.as_ptr() as *mut _,
            source_name: self.source.as_ref().map_or(std::ptr::null_mut(), |s| s.as_ptr() as *mut _),
            num_interfaces: self.interfaces,
            num_methods: self.methods.len() as jint,
            methods: self.methods.as_mut_ptr(),
            num_static_fields: self.statics.len() as jint,
            statics: self.statics.as_mut_ptr(),
            num_instance_fields: self.instances.len() as jint,
            instances: self.instances.as_mut_ptr(),
            class_id,
        };
        ev
    }
}

/// Announces a class (once, unless `requested`), in the current thread `env`. Returns its ID.
fn announce(env: *mut JNIEnv, k: jclass, requested: bool) -> Result<jobjectID, String> {
    announce_tagged(env, k, ids::tag_of(k)?, requested)
}

fn announce_tagged(env: *mut JNIEnv, k: jclass, tag: jlong, requested: bool) -> Result<jobjectID, String> {
    if !requested && all_told(tag) {
        return Ok(ids::to_id(tag));
    }
    let sig = jvm::class_signature(k).map_err(jvm::err_name)?;
    if !sig.starts_with('[') && !jvm::class_status(k).is_ok_and(|s| s & jvmti::JVMTI_CLASS_STATUS_PREPARED != 0) {
        // Named before it was linked (the element class of a new array): link it — without
        // initialising it — so its methods and fields can be listed. Linking posts ClassPrepare,
        // which announces the class; the claim below then finds it announced.
        jvm::Jni::of(env).link_class(k);
        if !requested && all_told(tag) {
            return Ok(ids::to_id(tag));
        }
    }
    let mut info = ClassInfo::read(k, &sig)?;
    let methods: Vec<usize> = info.methods.iter().map(|m| m.method_id as usize).collect();
    for &m in &methods {
        METHODS.insert(m, tag);
    }
    let mut to = 0;
    if !requested {
        // Claim: for each agent, only the thread that claims the class sends its CLASS_LOAD.
        let want = events::listeners(JVMPI_EVENT_CLASS_LOAD);
        let told = ANNOUNCED
            .entry(tag)
            .or_insert_with(|| ClassRec { methods, told: AtomicU32::new(0), sent: AtomicU32::new(0) })
            .told
            .fetch_or(want, SeqCst);
        to = want & !told;
        if to == 0 {
            // Claimed by another thread: its CLASS_LOAD must be delivered before this thread
            // goes on to name the class.
            all_told(tag);
            return Ok(ids::to_id(tag));
        }
    }
    let mut ev = info.event(env, ids::to_id(tag));
    if requested {
        events::send_requested(&mut ev);
    } else {
        /// Ends the claim however the delivery ends: delivered, the class is told; not (the
        /// gate closed meanwhile), the claim is given back, so that a later announcement (a
        /// last heap dump's, inside JVM_SHUT_DOWN) still sends it.
        struct Sending {
            tag: jlong,
            to: u32,
            delivered: bool,
        }
        impl Drop for Sending {
            fn drop(&mut self) {
                SENDING.with(|s| s.borrow_mut().retain(|&t| t != self.tag));
                if let Some(r) = ANNOUNCED.get(&self.tag) {
                    if self.delivered {
                        r.sent.fetch_or(self.to, SeqCst);
                    } else {
                        r.told.fetch_and(!self.to, SeqCst);
                    }
                }
            }
        }
        SENDING.with(|s| s.borrow_mut().push(tag));
        let mut sending = Sending { tag, to, delivered: false };
        sending.delivered = if events::is_ready() {
            events::send_to(to, &mut ev)
        } else {
            events::send_within_last(to, &mut ev)
        };
    }
    drop(info.method_strings);
    drop(info.field_strings);
    Ok(ids::to_id(tag))
}

/// The ID of class `k`, announcing it first if the agent wants CLASS_LOAD and has not had it.
pub fn ensure_announced(env: *mut JNIEnv, k: jclass) -> Result<jobjectID, String> {
    if events::is_ready() && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        announce(env, k, false)
    } else {
        ids::id_of(k)
    }
}

/// As [`ensure_announced`], for a class whose tag the caller has already read. Inside
/// JVM_SHUT_DOWN's handler too (the classes a last heap dump names).
pub fn ensure_announced_tagged(env: *mut JNIEnv, k: jclass, tag: jlong) -> Result<jobjectID, String> {
    if (events::is_ready() || events::in_last()) && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        announce_tagged(env, k, tag, false)
    } else {
        Ok(ids::to_id(tag))
    }
}

/// JVMTI ClassPrepare.
pub fn on_class_prepare(env: *mut JNIEnv, k: jclass) {
    if events::is_ready() && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        if let Err(e) = announce(env, k, false) {
            log::debug!("CLASS_LOAD: {e}");
        }
    }
}

// ---- classes that are loaded and not linked ---------------------------------------------------

/// Classes loaded (JVMTI ClassLoad) while CLASS_LOAD is on, not announced yet: global references
/// and when they were loaded. Almost all are prepared moments later and announced at their
/// ClassPrepare; those nothing links (a class only named by another one's code, such as
/// `java.lang.InterruptedException`) are linked by the shim and announced after `PENDING_AGE`.
static PENDING: Mutex<Vec<(usize, Instant)>> = Mutex::new(Vec::new());
/// The thread that announces pending classes (registered by the GC room's delivery thread).
static LINKER: OnceLock<std::thread::Thread> = OnceLock::new();
/// How long a loaded class may wait for the JVM to prepare it before the shim links it.
pub const PENDING_AGE: Duration = Duration::from_millis(50);

/// Registers the thread that calls [`flush_pending`] when woken.
pub fn set_linker(t: std::thread::Thread) {
    let _ = LINKER.set(t);
}

pub fn has_pending() -> bool {
    !PENDING.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
}

/// JVMTI ClassLoad, in the thread that defined the class. HotSpot 1.5 sent CLASS_LOAD when a
/// class was defined; JVMTI can list a class's methods only once it is prepared, so the class
/// waits for its ClassPrepare — which may come in another thread (the first to use the class),
/// or in the linker thread. While an agent has CLASS_LOAD_HOOK on, the class is linked and
/// announced here instead, so that its CLASS_LOAD follows its CLASS_LOAD_HOOK in the same
/// thread, as on HotSpot: agents pair the two per thread (JCOV keeps the class file it parsed
/// in the hook in a table of the hooking thread's, and takes it out in CLASS_LOAD).
pub fn on_class_load(env: *mut JNIEnv, k: jclass) {
    if !events::is_ready() || !events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        return;
    }
    if events::enabled(JVMPI_EVENT_CLASS_LOAD_HOOK) && !jvm::shim_internal() {
        match announce(env, k, false) {
            Ok(_) => return,
            Err(e) => log::debug!("CLASS_LOAD in the defining thread: {e}; the class waits for its ClassPrepare"),
        }
    }
    let g = jvm::Jni::of(env).new_global_ref(k);
    if g.is_null() {
        return;
    }
    let first = {
        let mut p = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        p.push((g as usize, Instant::now()));
        p.len() == 1
    };
    if first {
        if let Some(t) = LINKER.get() {
            t.unpark();
        }
    }
}

/// Announces the pending classes loaded at least `age` ago that are still unannounced (linking
/// those nothing has linked). Runs on the linker thread, and at VM death with `age` zero.
pub fn flush_pending(env: *mut JNIEnv, age: Duration) {
    let now = Instant::now();
    let due: Vec<usize> = {
        let mut p = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        let (due, keep): (Vec<_>, Vec<_>) = p.drain(..).partition(|&(_, when)| now.duration_since(when) >= age);
        *p = keep;
        due.into_iter().map(|(g, _)| g).collect()
    };
    let jni = jvm::Jni::of(env);
    for g in due {
        if events::is_ready() && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
            if let Err(e) = announce(env, g as jclass, false) {
                log::debug!("CLASS_LOAD (a class nothing linked): {e}");
            }
        }
        jni.delete_global_ref(g as jclass);
    }
}

/// Catch-up: every loaded class the agent has not heard of (HotSpot announced every class in
/// its dictionary; one that is loaded but not linked yet is linked first, see `announce`).
pub fn announce_all() {
    let Some(env) = jvm::current_jni() else { return };
    let jni = jvm::Jni::of(env);
    let Ok(all) = jvm::loaded_classes() else { return };
    for k in all {
        let is_class = jvm::class_status(k).is_ok_and(|s| {
            s & jvmti::JVMTI_CLASS_STATUS_ERROR == 0
                && s & (jvmti::JVMTI_CLASS_STATUS_ARRAY | jvmti::JVMTI_CLASS_STATUS_PRIMITIVE) == 0
        });
        if is_class {
            if let Err(e) = announce(env, k, false) {
                log::debug!("CLASS_LOAD (catch-up): {e}");
            }
        }
        jni.delete_local_ref(k);
    }
}

/// `RequestEvent(JVMPI_EVENT_CLASS_LOAD, class ID)`.
pub fn request(id: jobjectID) -> Result<(), String> {
    let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
    let obj = ids::object_of(id)?;
    let jni = jvm::Jni::of(env);
    let k = jni.object_class(obj);
    let is_class = jvm::class_signature(k).is_ok_and(|s| s == "Ljava/lang/Class;");
    jni.delete_local_ref(k);
    let r = if is_class { announce(env, obj, true).map(|_| ()) } else { Err(format!("{id:p} is not a class ID")) };
    jni.delete_local_ref(obj);
    r
}

/// A tagged object died: if it was an announced class, the class is unloaded. Returns whether
/// `tag` was a class. Runs on the GC room's thread, inside its GC bracket.
pub fn unloaded(env: *mut JNIEnv, tag: jlong) -> bool {
    let Some((_, rec)) = ANNOUNCED.remove(&tag) else { return false };
    lines::invalidate(&rec.methods);
    for m in &rec.methods {
        METHODS.remove(m);
    }
    if events::enabled(JVMPI_EVENT_CLASS_UNLOAD) {
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_CLASS_UNLOAD, env);
        ev.u.class_unload = ClassUnload { class_id: ids::to_id(tag) };
        events::send(&mut ev);
    }
    true
}

/// Remembers a method ID the JVM handed out (stack traces), so it can be checked later.
pub fn note_method(m: jmethodID) {
    if !METHODS.contains_key(&(m as usize)) {
        METHODS.insert(m as usize, 0);
    }
}

/// Whether `m` is a method of a class described to the agent (CLASS_LOAD, requested or not).
pub fn described(m: jmethodID) -> bool {
    METHODS.get(&(m as usize)).is_some_and(|t| *t != 0)
}

static SCANNED_AT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Whether `m` is a method ID of a loaded class. Unknown IDs trigger one scan of the loaded
/// classes per change in their number, so a garbage ID costs little and never reaches JVMTI.
fn known_method(m: jmethodID) -> bool {
    if METHODS.contains_key(&(m as usize)) {
        return true;
    }
    let Ok(all) = jvm::loaded_classes() else { return false };
    let jni = jvm::Jni::current();
    if SCANNED_AT.swap(all.len(), Relaxed) != all.len() {
        for &k in &all {
            if let Ok(ms) = jvm::class_methods(k) {
                for x in ms {
                    note_method(x);
                }
            }
        }
    }
    if let Some(jni) = jni {
        all.into_iter().for_each(|k| jni.delete_local_ref(k));
    }
    METHODS.contains_key(&(m as usize))
}

/// `GetMethodClass`. A method of a class the agent has been told about is answered from the
/// table, which needs nothing from the JVM: in any thread and after JVM_SHUT_DOWN too.
pub fn method_class(m: jmethodID) -> jobjectID {
    if let Some(tag) = METHODS.get(&(m as usize)).map(|t| *t).filter(|&t| t != 0) {
        return ids::to_id(tag);
    }
    if !m.is_null() && (jvm::current_jni().is_none() || events::is_over()) {
        log::warn!(
            "GetMethodClass({m:p}): not a method of a class described to the agent, and the JVM cannot be asked {}; NULL",
            if events::is_over() { "after JVM_SHUT_DOWN" } else { "from a thread it does not know" }
        );
        return std::ptr::null_mut();
    }
    if m.is_null() || !known_method(m) {
        crate::face::record::refused("GetMethodClass");
        log::warn!("GetMethodClass({m:p}): not a method ID of a loaded class; NULL");
        return std::ptr::null_mut();
    }
    let r = jvm::method_class(m).map_err(jvm::err_name).and_then(|k| {
        let env = jvm::current_jni();
        let id = match env {
            Some(env) => ensure_announced(env, k),
            None => ids::id_of(k),
        };
        if let Some(env) = env {
            jvm::Jni::of(env).delete_local_ref(k);
        }
        id
    });
    r.unwrap_or_else(|e| {
        log::log!(events::edge_level(None), "GetMethodClass({m:p}): {e}");
        std::ptr::null_mut()
    })
}

// ---- CLASS_LOAD_HOOK ------------------------------------------------------------------------
// The agent's hook is the `hooks` room; here is the shim's own class-file hook.

/// A class is being redefined or retransformed: what the shim knows of its methods' bytecode
/// (line tables, constructor chains) is forgotten.
pub fn on_redefine(k: jclass) {
    if let Ok(ms) = jvm::class_methods(k) {
        lines::invalidate(&ms.iter().map(|&m| m as usize).collect::<Vec<_>>());
    }
}
