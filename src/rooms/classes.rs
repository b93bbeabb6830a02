//! Classes: `CLASS_LOAD`, `CLASS_UNLOAD`, `CLASS_LOAD_HOOK`, and `GetMethodClass`.
//!
//! A class ID is the ID (tag) of its `java.lang.Class` object. The table `STATE.announced` holds the
//! classes the agent has been told about, with their method IDs; a class is entered the moment
//! its `CLASS_LOAD` is claimed, so it is announced exactly once however many threads race to
//! name it, and a thread that names a class another thread is still announcing waits for that
//! CLASS_LOAD to be delivered. `CLASS_LOAD` is built at JVMTI `ClassPrepare` (the first moment methods and fields
//! can be listed); classes that were prepared before the agent enabled the event are announced
//! by `announce_all` (the catch-up), and array classes when an event first names them.
//! A class unload is the death of its tagged `Class` object, which the GC room reports inside
//! its GC_START/GC_FINISH bracket.
//!
//! `STATE.methods` knows every method ID the shim has handed out or listed, so that an ID that comes
//! back from an agent can be checked before JVMTI sees it.

use crate::face::abi::*;
use crate::face::ids::ClassTag;
use crate::face::{events, ids};
use crate::rooms::error::RoomError;
use crate::rooms::lines;
use crate::vm::idhash::IdMap;
use crate::vm::jvm;
use dashmap::DashMap;
use jvmti_bindings::sys::jni::{jclass, jint, jmethodID, jobject, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

struct ClassRec {
    methods: Vec<usize>,
    /// The agents whose CLASS_LOAD for this class has been claimed by a thread (bit a = agent a).
    told: AtomicU32,
    /// The agents whose CLASS_LOAD has been delivered (the claimer's handler returned).
    sent: AtomicU32,
}

/// The classes room's state, shared by every thread.
struct ClassesState {
    /// Tag → the class the agents have been told about (or are being told, claimed by one
    /// thread per agent in [`announce_tagged`]) and its method IDs; taken out by [`unloaded`].
    announced: LazyLock<IdMap<ClassTag, ClassRec>>,
    /// jmethodID → tag of its class (0 when not known yet): written by each CLASS_LOAD,
    /// [`note_method`] and the scan of [`known_method`]; emptied of a class's methods at its unload.
    methods: LazyLock<IdMap<usize, ClassTag>>,
    /// Every string a CLASS_LOAD has pointed to, interned by [`intern`] and never freed (a
    /// `Box<CStr>`'s bytes do not move when the map grows).
    strings: LazyLock<DashMap<Box<CStr>, ()>>,
    /// The descriptions of the classes described so far, by tag: built by [`Described::of`],
    /// taken out by [`unloaded`] (or moved to `untold`).
    described: LazyLock<IdMap<ClassTag, Arc<Described>>>,
    /// Classes loaded (JVMTI ClassLoad) while CLASS_LOAD is on, not announced yet: global
    /// references and when they were loaded (added by [`on_class_load`], taken by
    /// [`flush_pending`]). Almost all are prepared moments later and announced at their
    /// ClassPrepare; those nothing links (a class only named by another one's code, such as
    /// `java.lang.InterruptedException`) are linked by the shim and announced after `PENDING_AGE`.
    pending: Mutex<Vec<(usize, Instant)>>,
    /// Methods whose class a trace met before any CLASS_LOAD ([`announce_soon`]): each class
    /// queued once.
    soon: LazyLock<crate::vm::idhash::IdSet<usize>>,
    /// The thread that announces pending classes (registered by the GC room's delivery thread
    /// with [`set_linker`]).
    linker: OnceLock<std::thread::Thread>,
    /// Descriptions of classes that died with no CLASS_UNLOAD to tell the agent (moved here by
    /// [`forget`]): kept, never freed.
    untold: Mutex<Vec<Arc<Described>>>,
    /// Method IDs the JVM hands out that no CLASS_LOAD lists, each mapped by [`listed`] to the
    /// one its class lists (IDs that need no mapping map to themselves, so each ID costs JVMTI
    /// calls once).
    listed: LazyLock<IdMap<usize, usize>>,
    /// The number of loaded classes at the last scan of [`known_method`] (one scan per change).
    scanned_at: AtomicUsize,
}

static STATE: ClassesState = ClassesState {
    announced: LazyLock::new(IdMap::default),
    methods: LazyLock::new(IdMap::default),
    strings: LazyLock::new(DashMap::new),
    described: LazyLock::new(IdMap::default),
    pending: Mutex::new(Vec::new()),
    soon: LazyLock::new(Default::default),
    linker: OnceLock::new(),
    untold: Mutex::new(Vec::new()),
    listed: LazyLock::new(IdMap::default),
    scanned_at: AtomicUsize::new(usize::MAX),
};

/// This thread's side of the classes room.
struct Here {
    /// Classes whose CLASS_LOAD this thread is delivering (pushed and popped around the delivery).
    sending: std::cell::RefCell<Vec<ClassTag>>,
    /// Classes this thread loaded inside the shim's own work (global references), to announce
    /// in this thread once that work is done ([`on_class_load`] adds, [`flush_own`] takes).
    own_pending: std::cell::RefCell<Vec<usize>>,
    /// The class whose CLASS_UNLOAD this thread is delivering: its tag and description (set
    /// around the delivery in [`unloaded`]).
    unloading: std::cell::RefCell<Option<(ClassTag, Arc<Described>)>>,
}

thread_local! {
    static HERE: Here = const {
        Here {
            sending: std::cell::RefCell::new(Vec::new()),
            own_pending: std::cell::RefCell::new(Vec::new()),
            unloading: std::cell::RefCell::new(None),
        }
    };
}

/// Whether every agent that wants CLASS_LOAD now has heard of class `tag`. A class another
/// thread has claimed but whose CLASS_LOAD is still in the agent's handler is waited for (2 s at
/// most), as threads waited for a class being defined on HotSpot 1.5: an event naming the class
/// must not reach the agent before its CLASS_LOAD. Not from inside the agent's code (a handler,
/// a RequestEvent): the agent may hold the lock that other handler waits for (a heap dump
/// requested under the agent's lock while main's CLASS_LOAD handler waits for it stalled 2 s
/// per object of the class); there, as on HotSpot 1.5, whose dumps were taken at a safepoint,
/// the class may be named before its CLASS_LOAD, and the agent can request it.
fn all_told(tag: ClassTag) -> bool {
    let want = events::listeners(JVMPI_EVENT_CLASS_LOAD);
    let (told, sent) = match STATE.announced.get(&tag) {
        Some(r) => (r.told.load(SeqCst), r.sent.load(SeqCst)),
        None => return false,
    };
    if told & want != want {
        return false;
    }
    if sent & want != want && !HERE.with(|h| h.sending.borrow().contains(&tag)) && !events::in_agent_call() {
        let deadline = Instant::now() + Duration::from_secs(2);
        // Until it is delivered, or its claim is given back (the gate closed).
        while STATE
            .announced
            .get(&tag)
            .is_some_and(|r| r.told.load(SeqCst) & want == want && r.sent.load(SeqCst) & want != want)
        {
            if Instant::now() >= deadline {
                log::debug!("a CLASS_LOAD handler of another thread has not returned within 2 s; going on");
                break;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        return STATE.announced.get(&tag).is_some_and(|r| r.told.load(SeqCst) & want == want);
    }
    true
}

/// `java/lang/String` → `java.lang.String`; `[Ljava/lang/String;` → `[Ljava.lang.String;`.
pub fn jvmpi_name(signature: &str) -> String {
    let s = signature.strip_prefix('L').and_then(|s| s.strip_suffix(';')).unwrap_or(signature);
    s.replace('/', ".")
}

// ---- what a CLASS_LOAD points to ----------------------------------------------------------
//
// Agents keep the pointers a CLASS_LOAD hands them (class, source, method and field names and
// signatures) and read them long after the handler returned. Every string is interned once for
// the life of the process (`STATE.strings`: a name shared by many classes, such as `<init>` or `()V`,
// is stored once); the arrays of a class (`STATE.described`) are built once per class, shared by its
// delivered and requested CLASS_LOADs, and freed after its CLASS_UNLOAD.

/// The interned copy of `s`: valid, unchanged, for the life of the process.
fn intern(s: &str) -> *const c_char {
    let c = jvm::cstring(s);
    if let Some(e) = STATE.strings.get(c.as_c_str()) {
        return e.key().as_ptr();
    }
    let e = STATE.strings.entry(c.into_boxed_c_str()).or_insert(());
    e.key().as_ptr()
}

/// Everything a CLASS_LOAD of one class points to. Strings are interned; the arrays live as
/// long as this value, which lives as long as the class (and any delivery under way).
struct Described {
    /// A weak reference to the class, to tell a class from a later one given the same tag.
    class: usize,
    name: *const c_char,
    /// NULL: no source file known (array classes, classes compiled without it), as HotSpot
    /// 1.5 sent it.
    source: *const c_char,
    interfaces: jint,
    methods: Vec<JVMPI_Method>,
    statics: Vec<JVMPI_Field>,
    instances: Vec<JVMPI_Field>,
}

// SAFETY: the pointers are interned strings (immutable, never freed) and the weak reference is
// a JNI global handle; nothing in a `Described` is changed after it is built.
unsafe impl Send for Described {}
// SAFETY: as above.
unsafe impl Sync for Described {}

fn array_ptr<T>(v: &[T]) -> *mut T {
    if v.is_empty() {
        std::ptr::null_mut()
    } else {
        v.as_ptr() as *mut T
    }
}

impl Described {
    fn read(jni: &jvm::Jni, k: jclass, sig: &str) -> Result<Described, RoomError> {
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
        let mut methods = Vec::with_capacity(mids.len());
        for &m in &mids {
            let (n, s) = jvm::method_name(m).map_err(e)?;
            if n.starts_with(crate::vm::bci::NATIVE_PREFIX) {
                // A native the shim renamed when it wrapped it: the agent knows the method by
                // its wrapper, which has the native's name.
                continue;
            }
            let (lo, hi) = lines::range_of(m);
            methods.push(JVMPI_Method {
                method_name: intern(&n) as *mut _,
                method_signature: intern(&s) as *mut _,
                start_lineno: lo,
                end_lineno: hi,
                method_id: m,
            });
        }
        let pick = |want_static: bool| -> Vec<JVMPI_Field> {
            fields
                .iter()
                .filter(|f| f.2 == want_static)
                .map(|(n, s, _)| JVMPI_Field { field_name: intern(n) as *mut _, field_signature: intern(s) as *mut _ })
                .collect()
        };
        let (statics, instances) = (pick(true), pick(false));
        let weak = jni.new_weak(k) as usize;
        Ok(Described {
            class: weak,
            name: intern(&jvmpi_name(sig)),
            source: if source.is_empty() { std::ptr::null() } else { intern(&source) },
            interfaces,
            methods,
            statics,
            instances,
        })
    }

    /// The description kept under `tag` if it is of class `k`; if not, what is kept under `tag`
    /// (None, or another class's: one that died unreported, whose tag `k` has now).
    fn kept(jni: &jvm::Jni, tag: ClassTag, k: jclass) -> Result<Arc<Described>, Option<Arc<Described>>> {
        // Every JNI call here is made with no guard of the table held (IsSameObject enters the
        // VM, where an agent's SuspendThread stops the thread: the shard would stay locked).
        let seen = STATE.described.get(&tag).map(|d| d.clone());
        match seen {
            Some(d) if d.class != 0 && jni.is_same(d.class as jobject, k) => Ok(d),
            seen => Err(seen),
        }
    }

    /// The class's description: the one already built, or a new one.
    fn of(env: *mut JNIEnv, k: jclass, tag: ClassTag, sig: &str) -> Result<Arc<Described>, RoomError> {
        let jni = jvm::Jni::of(env);
        let seen = match Self::kept(&jni, tag, k) {
            Ok(d) => return Ok(d),
            Err(seen) => seen,
        };
        let d = Arc::new(Described::read(&jni, k, sig)?);
        let mut stale = None;
        ids::mark_class(tag);
        let kept = match STATE.described.entry(tag) {
            dashmap::mapref::entry::Entry::Occupied(mut o) => {
                if seen.as_ref().is_some_and(|s| Arc::ptr_eq(s, o.get())) || o.get().class == 0 {
                    // The description seen above, of another class (one that died unreported,
                    // whose tag this one has): replaced.
                    stale = Some(o.insert(d.clone()));
                    d
                } else {
                    // Another thread described it meanwhile (a tag names one live object, so
                    // its description is of this class): one description per class.
                    stale = Some(d);
                    o.get().clone()
                }
            }
            dashmap::mapref::entry::Entry::Vacant(v) => v.insert(d).clone(),
        };
        if let Some(s) = stale.filter(|s| s.class != 0) {
            jni.delete_weak(s.class as jobject);
        }
        Ok(kept)
    }

    fn event(&self, env: *mut JNIEnv, class_id: jobjectID) -> JVMPI_Event {
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_CLASS_LOAD, env);
        ev.u.class_load = ClassLoad {
            class_name: self.name as *mut _,
            source_name: self.source as *mut _,
            num_interfaces: self.interfaces,
            num_methods: self.methods.len() as jint,
            methods: array_ptr(&self.methods),
            num_static_fields: self.statics.len() as jint,
            statics: array_ptr(&self.statics),
            num_instance_fields: self.instances.len() as jint,
            instances: array_ptr(&self.instances),
            class_id,
        };
        ev
    }
}

/// Announces a class (once, unless `requested`), in the current thread `env`. Returns its ID.
fn announce(env: *mut JNIEnv, k: jclass, requested: bool) -> Result<jobjectID, RoomError> {
    announce_tagged(env, k, ids::class_tag_of(k)?, requested)
}

fn announce_tagged(env: *mut JNIEnv, k: jclass, tag: ClassTag, requested: bool) -> Result<jobjectID, RoomError> {
    if !requested && all_told(tag) {
        return Ok(tag.id());
    }
    let sig = jvm::class_signature(k).map_err(jvm::err_name)?;
    if !sig.starts_with('[') && !jvm::class_status(k).is_ok_and(|s| s & jvmti::JVMTI_CLASS_STATUS_PREPARED != 0) {
        // Named before it was linked (the element class of a new array): link it — without
        // initialising it — so its methods and fields can be listed. Linking posts ClassPrepare,
        // which announces the class; the claim below then finds it announced.
        crate::face::own_work::link_unseen(&jvm::Jni::of(env), k);
        if !requested && all_told(tag) {
            return Ok(tag.id());
        }
    }
    let info = Described::of(env, k, tag, &sig)?;
    let methods: Vec<usize> = info.methods.iter().map(|m| m.method_id as usize).collect();
    for &m in &methods {
        STATE.methods.insert(m, tag);
    }
    let mut to = 0;
    if !requested {
        // Claim: for each agent, only the thread that claims the class sends its CLASS_LOAD.
        let want = events::listeners(JVMPI_EVENT_CLASS_LOAD);
        ids::mark_class(tag);
        let told = STATE
            .announced
            .entry(tag)
            .or_insert_with(|| ClassRec { methods, told: AtomicU32::new(0), sent: AtomicU32::new(0) })
            .told
            .fetch_or(want, SeqCst);
        to = want & !told;
        if to == 0 {
            // Claimed by another thread: its CLASS_LOAD must be delivered before this thread
            // goes on to name the class.
            all_told(tag);
            return Ok(tag.id());
        }
    }
    let mut ev = info.event(env, tag.id());
    if requested {
        events::send_requested(&mut ev);
    } else {
        /// Ends the claim however the delivery ends: delivered, the class is told; not (the
        /// gate closed meanwhile), the claim is given back, so that a later announcement (a
        /// last heap dump's, inside JVM_SHUT_DOWN) still sends it.
        struct Sending {
            tag: ClassTag,
            to: u32,
            delivered: bool,
        }
        impl Drop for Sending {
            fn drop(&mut self) {
                HERE.with(|h| h.sending.borrow_mut().retain(|&t| t != self.tag));
                if let Some(r) = STATE.announced.get(&self.tag) {
                    if self.delivered {
                        r.sent.fetch_or(self.to, SeqCst);
                    } else {
                        r.told.fetch_and(!self.to, SeqCst);
                    }
                }
            }
        }
        HERE.with(|h| h.sending.borrow_mut().push(tag));
        let mut sending = Sending { tag, to, delivered: false };
        sending.delivered =
            if events::is_ready() { events::send_to(to, &mut ev) } else { events::send_within_last(to, &mut ev) };
    }
    drop(info);
    Ok(tag.id())
}

/// Whether every agent that wants CLASS_LOAD has had class `tag`'s.
pub fn announced_to_all(tag: ClassTag) -> bool {
    all_told(tag)
}

/// The ID of class `k`, announcing it first if the agent wants CLASS_LOAD and has not had it.
pub fn ensure_announced(env: *mut JNIEnv, k: jclass) -> Result<jobjectID, RoomError> {
    if events::is_ready() && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        announce(env, k, false)
    } else {
        Ok(ids::id_of(k)?)
    }
}

/// As [`ensure_announced`], for a class whose tag the caller has already read. Inside
/// JVM_SHUT_DOWN's handler too (the classes a last heap dump names).
pub fn ensure_announced_tagged(env: *mut JNIEnv, k: jclass, tag: ClassTag) -> Result<jobjectID, RoomError> {
    if (events::is_ready() || events::in_last()) && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        announce_tagged(env, k, tag, false)
    } else {
        Ok(tag.id())
    }
}

/// A requested CLASS_LOAD of `k` (tag `tag`) to the agent whose RequestEvent is under way in
/// this thread: a dump names a class the agent has not been told about while CLASS_LOAD is
/// off (see `dumps`).
pub fn describe_requested(env: *mut JNIEnv, k: jclass, tag: ClassTag) -> Result<jobjectID, RoomError> {
    announce_tagged(env, k, tag, true)
}

/// JVMTI ClassPrepare.
pub fn on_class_prepare(env: *mut JNIEnv, k: jclass) {
    if events::is_ready() && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        if let Err(e) = announce(env, k, false) {
            log::debug!("CLASS_LOAD: {e}");
        }
        flush_own(env);
    }
}

// ---- classes that are loaded and not linked ---------------------------------------------------

/// How long a loaded class may wait for the JVM to prepare it before the shim links it.
pub const PENDING_AGE: Duration = Duration::from_millis(50);
/// How long the linker thread leaves a class the shim's own work loaded to the thread that
/// did that work (see [`flush_own`]).
const OWN_GRACE: Duration = Duration::from_secs(2);

/// Registers the thread that calls [`flush_pending`] when woken.
pub fn set_linker(t: std::thread::Thread) {
    let _ = STATE.linker.set(t);
}

/// The class of `m`, which a trace names and the agent has not been told about (the JVM
/// loaded it without a ClassLoad event), is announced by the linker thread at its next round
/// (once per method).
pub fn announce_soon(m: jmethodID) {
    if !STATE.soon.insert(m as usize) {
        return;
    }
    let Some(jni) = jvm::Jni::current() else { return };
    let Ok(k) = jvm::method_class(m) else { return };
    let g = jni.new_global_ref(k);
    jni.delete_local_ref(k);
    if g.is_null() {
        return;
    }
    let due = Instant::now().checked_sub(PENDING_AGE).unwrap_or_else(Instant::now);
    crate::vm::logger::lock(&STATE.pending).push((g as usize, due));
    if let Some(t) = STATE.linker.get() {
        t.unpark();
    }
}

pub fn has_pending() -> bool {
    !crate::vm::logger::lock(&STATE.pending).is_empty()
}

/// JVMTI ClassLoad, in the thread that defined the class. HotSpot 1.5 sent CLASS_LOAD there,
/// when the class was defined; JVMTI can list a class's methods only once it is prepared, so
/// the class is linked and announced here, in the defining thread, as on HotSpot:
/// - agents pair CLASS_LOAD_HOOK and CLASS_LOAD per thread (JCOV keeps the class file it
///   parsed in the hook in a table of the hooking thread's, and takes it out in CLASS_LOAD);
/// - agents that keep their method tables without a lock (NiagaraST) rely on a
///   single-threaded program getting its CLASS_LOADs in one thread: a class announced later
///   by whichever thread prepares it first, or by the linker thread, raced the program's own.
///
/// Only when that fails (or for the shim's own loads) does the class wait for its ClassPrepare,
/// or for the linker thread after `PENDING_AGE`.
pub fn on_class_load(env: *mut JNIEnv, k: jclass) {
    if !events::is_ready() || !events::enabled(JVMPI_EVENT_CLASS_LOAD) {
        return;
    }
    if !jvm::shim_internal() {
        match announce(env, k, false) {
            Ok(_) => return flush_own(env),
            Err(e) => log::debug!("CLASS_LOAD in the defining thread: {e}; the class waits for its ClassPrepare"),
        }
    }
    let jni = jvm::Jni::of(env);
    let g = jni.new_global_ref(k);
    if g.is_null() {
        return;
    }
    let mut loaded = Instant::now();
    if jvm::shim_internal() {
        // Loaded by the shim's own Java calls on this thread's behalf: announced by this
        // thread as soon as that work is done (`flush_own`), the linker thread standing by
        // for `OWN_GRACE` (that work may be a whole catch-up, with the agent's handlers).
        let own = jni.new_global_ref(k);
        if !own.is_null() {
            HERE.with(|h| h.own_pending.borrow_mut().push(own as usize));
            loaded += OWN_GRACE;
        }
    }
    let first = {
        let mut p = crate::vm::logger::lock(&STATE.pending);
        p.push((g as usize, loaded));
        p.len() == 1
    };
    if first {
        if let Some(t) = STATE.linker.get() {
            t.unpark();
        }
    }
}

/// Announces, in this thread, the classes its own shim work loaded (see [`on_class_load`]):
/// at the end of its ClassLoad and ClassPrepare callbacks and of the gate's opening, where
/// this thread holds no lock of the shim. Announcing may load more; they are announced too.
pub fn flush_own(env: *mut JNIEnv) {
    if jvm::shim_internal() {
        return;
    }
    let jni = jvm::Jni::of(env);
    loop {
        let Some(g) = HERE.with(|h| h.own_pending.borrow_mut().pop()) else { return };
        if events::is_ready() && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
            if let Err(e) = announce(env, g as jclass, false) {
                log::debug!("CLASS_LOAD (a class the shim's work loaded): {e}");
            }
        }
        jni.delete_global_ref(g as jclass);
    }
}

/// Announces the pending classes loaded at least `age` ago that are still unannounced (linking
/// those nothing has linked). Runs on the linker thread, and at VM death with `age` zero.
pub fn flush_pending(env: *mut JNIEnv, age: Duration) {
    let now = Instant::now();
    let due: Vec<usize> = {
        let mut p = crate::vm::logger::lock(&STATE.pending);
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
pub fn request(id: jobjectID) -> Result<(), RoomError> {
    if let Some(r) = request_unloading(id) {
        return r;
    }
    let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
    let obj = ids::object_of(id)?;
    let jni = jvm::Jni::of(env);
    // A class described before (announced, or requested once) answers from its description,
    // with no JVMTI call: a memory profiler asks for the class of every object of a dump.
    if let Ok(d) = Described::kept(&jni, ClassTag::of_id(id), obj) {
        let mut ev = d.event(env, id);
        events::send_requested(&mut ev);
        jni.delete_local_ref(obj);
        return Ok(());
    }
    let k = jni.object_class(obj);
    let is_class = jvm::class_signature(k).is_ok_and(|s| s == "Ljava/lang/Class;");
    jni.delete_local_ref(k);
    let r =
        if is_class { announce(env, obj, true).map(|_| ()) } else { Err(format!("{id:p} is not a class ID").into()) };
    jni.delete_local_ref(obj);
    r
}

/// A tagged object died with no GC bracket to report it in: if it was a described or announced
/// class, it is forgotten (so that its tag, once reused, names nothing of it). Returns whether
/// it was one.
pub fn forget(tag: ClassTag) -> bool {
    let described = STATE.described.remove(&tag).map(|(_, d)| d);
    let announced = STATE.announced.remove(&tag).map(|(_, r)| r);
    if described.is_none() && announced.is_none() {
        return false;
    }
    let mut methods: Vec<usize> = announced.map(|r| r.methods).unwrap_or_default();
    if let Some(d) = described {
        methods.extend(d.methods.iter().map(|m| m.method_id as usize));
        if d.class != 0 {
            if let Some(jni) = jvm::Jni::current() {
                jni.delete_weak(d.class as jobject);
            }
        }
        // No CLASS_UNLOAD will tell the agent: what its CLASS_LOADs pointed to stays readable
        // for good (the tag, once reused, names nothing of it).
        crate::vm::logger::lock(&STATE.untold).push(d);
    }
    lines::invalidate(&methods);
    for m in &methods {
        STATE.methods.remove(m);
    }
    true
}

/// A tagged object died: if it was a described or announced class, the class is unloaded.
/// Returns whether `tag` was a class. Runs on the GC room's thread, inside its GC bracket.
/// The class's strings stay (interned); its arrays are freed once its CLASS_UNLOAD has been
/// delivered. As in HotSpot 1.5, the CLASS_UNLOAD handler may still request the class's
/// CLASS_LOAD: it is answered from the description, with NULL method IDs.
pub fn unloaded(env: *mut JNIEnv, tag: ClassTag) -> bool {
    let described = STATE.described.remove(&tag).map(|(_, d)| d);
    let announced = STATE.announced.remove(&tag).map(|(_, r)| r);
    if described.is_none() && announced.is_none() {
        return false;
    }
    let mut methods: Vec<usize> = announced.map(|r| r.methods).unwrap_or_default();
    if let Some(d) = &described {
        methods.extend(d.methods.iter().map(|m| m.method_id as usize));
        if d.class != 0 {
            jvm::Jni::of(env).delete_weak(d.class as jobject);
        }
    }
    lines::invalidate(&methods);
    for m in &methods {
        STATE.methods.remove(m);
    }
    if events::enabled(JVMPI_EVENT_CLASS_UNLOAD) {
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_CLASS_UNLOAD, env);
        ev.u.class_unload = ClassUnload { class_id: tag.id() };
        let saved = HERE.with(|h| h.unloading.replace(described.map(|d| (tag, d))));
        events::send(&mut ev);
        HERE.with(|h| *h.unloading.borrow_mut() = saved);
    }
    true
}

/// `RequestEvent(CLASS_LOAD)` inside the CLASS_UNLOAD handler of that class: HotSpot 1.5 sent
/// the class's description, with NULL method IDs ("method_id doesn't mean much after class is
/// unloaded"). Whether this was such a request.
fn request_unloading(id: jobjectID) -> Option<Result<(), RoomError>> {
    let (tag, d) = HERE.with(|h| h.unloading.borrow().clone())?;
    if tag.id() != id {
        return None;
    }
    let env = jvm::current_jni()?;
    let mut methods: Vec<JVMPI_Method> =
        d.methods.iter().map(|m| JVMPI_Method { method_id: std::ptr::null_mut(), ..*m }).collect();
    let mut ev = d.event(env, id);
    ev.u.class_load.methods = if methods.is_empty() { std::ptr::null_mut() } else { methods.as_mut_ptr() };
    events::send_requested(&mut ev);
    drop(methods);
    Some(Ok(()))
}

/// Remembers a method ID the JVM handed out (stack traces), so it can be checked later.
pub fn note_method(m: jmethodID) {
    if !STATE.methods.contains_key(&(m as usize)) {
        STATE.methods.insert(m as usize, ClassTag(0));
    }
}

/// The method ID to hand the agent for `m`, an ID the JVM gave the shim (a stack frame's, a
/// piece of compiled code's): `m` itself, unless no CLASS_LOAD can list it, namely
///
/// * an obsolete version of a method: the class was retransformed (by the shim's own
///   instrumentation, e.g. `java.lang.Object` when OBJECT_ALLOC is enabled, or by another
///   agent) while that version ran or after it was compiled; JVMTI then gives the old code a
///   fresh ID of its own. It maps to the current method of the same name and descriptor, the
///   one CLASS_LOAD lists (retransformation never adds or removes methods);
/// * a native method the shim renamed when it wrapped it (`bci::NATIVE_PREFIX`): it maps to
///   its wrapper, which has the native's name and descriptor.
pub fn listed(m: jmethodID) -> jmethodID {
    if m.is_null() || described(m) {
        return m;
    }
    if let Some(x) = STATE.listed.get(&(m as usize)) {
        return *x as jmethodID;
    }
    let x = current_version(m).unwrap_or(m);
    if x != m {
        log::debug!("method {m:p} (an obsolete version, or a renamed native) is handed out as {x:p}");
    }
    STATE.listed.insert(m as usize, x as usize);
    x
}

fn current_version(m: jmethodID) -> Option<jmethodID> {
    let (name, sig) = jvm::method_name(m).ok()?;
    let renamed = name.strip_prefix(crate::vm::bci::NATIVE_PREFIX);
    if renamed.is_none() && !jvm::is_obsolete(m).unwrap_or(false) {
        return Some(m);
    }
    let want = renamed.unwrap_or(&name);
    let k = jvm::method_class(m).ok()?;
    let found = jvm::class_methods(k)
        .unwrap_or_default()
        .into_iter()
        .find(|&x| x != m && jvm::method_name(x).is_ok_and(|(n, s)| n == want && s == sig));
    if let Some(jni) = jvm::Jni::current() {
        jni.delete_local_ref(k);
    }
    found
}

/// Whether `m` is a method of a class described to the agent (CLASS_LOAD, requested or not).
pub fn described(m: jmethodID) -> bool {
    STATE.methods.get(&(m as usize)).is_some_and(|t| *t != ClassTag(0))
}

/// Whether `m` is a method ID of a loaded class. Unknown IDs trigger one scan of the loaded
/// classes per change in their number, so a garbage ID costs little and never reaches JVMTI.
fn known_method(m: jmethodID) -> bool {
    if STATE.methods.contains_key(&(m as usize)) {
        return true;
    }
    let Ok(all) = jvm::loaded_classes() else { return false };
    let jni = jvm::Jni::current();
    if STATE.scanned_at.swap(all.len(), Relaxed) != all.len() {
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
    STATE.methods.contains_key(&(m as usize))
}

/// `GetMethodClass`. A method of a class the agent has been told about is answered from the
/// table, which needs nothing from the JVM: in any thread and after JVM_SHUT_DOWN too.
pub fn method_class(m: jmethodID) -> jobjectID {
    if let Some(tag) = STATE.methods.get(&(m as usize)).map(|t| *t).filter(|&t| t != ClassTag(0)) {
        return tag.id();
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
    let r = jvm::method_class(m).map_err(RoomError::Jvmti).and_then(|k| {
        let env = jvm::current_jni();
        let id = match env {
            Some(env) => ensure_announced(env, k),
            None => ids::id_of(k).map_err(RoomError::from),
        };
        if let Some(env) = env {
            jvm::Jni::of(env).delete_local_ref(k);
        }
        id
    });
    r.unwrap_or_else(|e| {
        log::log!(events::edge_level(e.jvmti()), "GetMethodClass({m:p}): {e}");
        std::ptr::null_mut()
    })
}

// ---- CLASS_LOAD_HOOK ------------------------------------------------------------------------
// The agent's hook is the `hooks` room; here is the shim's own class-file hook.

/// A class is being redefined or retransformed: what the shim knows of its methods' bytecode
/// (line tables, constructor chains) is forgotten.
pub fn on_redefine(k: jclass) {
    // Nothing kept, nothing to drop: no GetClassMethods, which would also make the JVM give
    // every method of the class an ID, and so more to update in the redefinition (the start-up
    // retransformation's hundreds of classes).
    if lines::nothing_kept() {
        return;
    }
    if let Ok(ms) = jvm::class_methods(k) {
        lines::invalidate(&ms.iter().map(|&m| m as usize).collect::<Vec<_>>());
    }
}
