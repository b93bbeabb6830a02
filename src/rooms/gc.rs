//! Garbage collection: `GC_START`, `GC_FINISH`, the deaths of tagged objects (today: class
//! unloads), and `RunGC`, `DisableGC`, `EnableGC`.
//!
//! JVMTI's GC callbacks run inside the collection, where almost nothing may be called, and
//! since JDK 16 object deaths arrive later on another thread. So the JVMTI callbacks only
//! count collections and queue dead tags; one shim thread ("JVMPI GC events") delivers, after
//! each collection, the JVMPI bracket in order:
//!
//!   GC_START → (flush pending deaths) → CLASS_UNLOAD … → GC_FINISH(heap figures)
//!
//! Both ends of the bracket are sent by the same thread, so an agent that enters its raw
//! monitors in GC_START and leaves them in GC_FINISH (as the spec tells it to) cannot
//! deadlock, and every death is reported inside a bracket. Collections that end while a bracket
//! is being delivered are reported by the next bracket. `gc_info` is measured after the
//! collection with one heap iteration (which also makes JDK 16+ post pending deaths now); when
//! GC_FINISH is off there is no walk, and deaths the JVM posts late come with the next bracket
//! (or the last one, at VM death).
//!
//! Between brackets the same thread announces classes that were loaded and that nothing links
//! (see `classes::flush_pending`).
//!
//! `DisableGC`/`EnableGC` nest. HotSpot 1.5 held its GC locker between them: no collection
//! started until EnableGC, and a thread that needed one waited (or the heap grew). The shim does
//! it with the lever a JVMTI agent has: one of its own threads ("JVMPI GC locker") holds a JNI
//! critical section on a small array from the first DisableGC to the matching EnableGC (from any
//! thread), which the collectors with a GC locker honour (see compat-matrix.md, DisableGC, for
//! which collector on which JDK). As with HotSpot's locker, a thread that needs a collection
//! meanwhile waits; if that thread is the one that would call EnableGC, it would wait for ever, so
//! the critical section is given up after `disable-gc-max=` seconds (10 by default), said once;
//! the EnableGC that follows only balances the count. Where the collector ignores critical
//! sections (G1 from JDK 22, Shenandoah: they pin the array instead) nothing can hold the
//! collections off: said once in the log and in the migration report.

use crate::face::abi::*;
use crate::face::ids::Tag;
use crate::face::{events, ids};
use crate::rooms::error::RoomError;
use crate::rooms::{alloc, classes, deaths, objects, threads};
use crate::vm::jvm;
use jvmti_bindings::sys::jni::JNIEnv;
use jvmti_bindings::sys::jvmti;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::*};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::Duration;

/// The GC room's state, shared by every thread.
struct GcState {
    /// Collections finished (counted by JVMTI GarbageCollectionFinish): the delivery thread
    /// makes a bracket when it moves.
    finished: AtomicU64,
    /// When the last collection finished, in nanoseconds after [`GcState::epoch`] (0: none yet):
    /// VM death waits for the Service Thread's deaths only after a recent one.
    last_finish_ns: AtomicU64,
    /// The time [`start`] ran: the origin of `last_finish_ns` (an `Instant` cannot be atomic).
    epoch: OnceLock<std::time::Instant>,
    /// Set at VM death ([`stop`]): the delivery thread returns, no new bracket starts.
    stop: AtomicBool,
    /// The delivery thread (set by itself as it starts), woken with `unpark` (a futex wake:
    /// never blocks the GC).
    wake: OnceLock<std::thread::Thread>,
    /// `DisableGC` calls not matched by `EnableGC` yet.
    gc_disabled: AtomicI32,
    /// The GC locker: what DisableGC/EnableGC ask of its thread, and what it does (see [`Locker`]).
    locker: Mutex<Locker>,
    /// Signalled when `locker` changes.
    locker_cv: Condvar,
    /// How long the locker may hold collections off (`disable-gc-max=`, in ms).
    locker_max_ms: AtomicU64,
    /// What the migration report says of this run's DisableGC when it could not do what
    /// HotSpot's did (the collector ignores the lever, the time limit was reached), set once each.
    locker_note: Mutex<Option<String>>,
    /// Said once: the collector ignores the lever ([`say_if_unheld`]); the time limit was
    /// reached (the locker thread).
    said_unheld: AtomicBool,
    said_gave_up: AtomicBool,
    /// One bracket at a time: the GC thread's, or the last one at VM death.
    bracket: Mutex<()>,
    /// The thread inside the bracket under way is leaving the JVM from a handler (ProfilerExit,
    /// set by [`leaving`]): that bracket is never finished.
    abandoned: AtomicBool,
}

static STATE: GcState = GcState {
    finished: AtomicU64::new(0),
    last_finish_ns: AtomicU64::new(0),
    epoch: OnceLock::new(),
    stop: AtomicBool::new(false),
    wake: OnceLock::new(),
    gc_disabled: AtomicI32::new(0),
    locker: Mutex::new(Locker { want: false, held: false, started: false, failed: false, gave_up: false }),
    locker_cv: Condvar::new(),
    locker_max_ms: AtomicU64::new(10_000),
    locker_note: Mutex::new(None),
    said_unheld: AtomicBool::new(false),
    said_gave_up: AtomicBool::new(false),
    bracket: Mutex::new(()),
    abandoned: AtomicBool::new(false),
};

/// JVMTI GarbageCollectionStart: nothing to do until the collection ends.
pub fn on_gc_start() {}

/// JVMTI GarbageCollectionFinish (inside the collection: only raw monitors may be used).
pub fn on_gc_finish() {
    if let Some(e) = STATE.epoch.get() {
        // A clock read (vDSO) and a store: nothing that could block the collection.
        STATE.last_finish_ns.store((e.elapsed().as_nanos() as u64).max(1), SeqCst);
    }
    STATE.finished.fetch_add(1, SeqCst);
    if let Some(t) = STATE.wake.get() {
        t.unpark();
    }
}

pub use crate::rooms::deaths::{on_object_free, queue_peak};

fn wants_bracket() -> bool {
    [JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH, JVMPI_EVENT_CLASS_UNLOAD, JVMPI_EVENT_OBJECT_FREE]
        .iter()
        .any(|&e| events::enabled(e))
}

thread_local! {
    /// Set while this thread delivers a bracket.
    static IN_BRACKET: Cell<bool> = const { Cell::new(false) };
}

fn deliver_bracket(env: *mut JNIEnv) {
    let one = crate::vm::logger::lock(&STATE.bracket);
    if STATE.stop.load(SeqCst) {
        return; // the JVM is going down: what is owed goes in the last bracket
    }
    bracket(env, one);
}

/// Delivers a bracket; `_one` is the bracket lock, held until it is done.
fn bracket(env: *mut JNIEnv, _one: MutexGuard<'_, ()>) {
    if !events::is_ready() || !wants_bracket() {
        // No bracket: the deaths are forgotten (the tables keyed by tag first, so that a
        // reused tag finds nothing of its previous object) and their IDs given back.
        let dead = deaths::take();
        let mut done = Released::new(env);
        for tag in dead.into_tags().filter(|&t| ours(t)) {
            if !forget_class(tag, classes::forget) {
                objects::forget_requested(tag.0);
            }
            done.push(tag);
        }
        return;
    }
    struct Inside;
    impl Drop for Inside {
        fn drop(&mut self) {
            IN_BRACKET.with(|b| b.set(false));
        }
    }
    IN_BRACKET.with(|b| b.set(true));
    let _inside = Inside;
    if events::enabled(JVMPI_EVENT_GC_START) {
        events::send(&mut JVMPI_Event::new(JVMPI_EVENT_GC_START, env));
    }
    // For GC_FINISH: the heap walk measures the heap (and makes the JVM post deaths it has not
    // posted yet). Without GC_FINISH no walk: late deaths come with the next bracket.
    let finish = events::enabled(JVMPI_EVENT_GC_FINISH);
    // Not once the JVM is going down (a heap walk then waits for a safepoint the exit may hold
    // up): GC_FINISH then says the heap's figures are unknown (0).
    let walk = finish && !STATE.stop.load(SeqCst);
    let (objects, bytes) = if walk { jvm::count_heap().unwrap_or((0, 0)) } else { (0, 0) };
    events::progressed();
    // The queue's memory goes with the batch, so it is given back after each bracket.
    let dead = deaths::take();
    let mut done = Released::new(env);
    for tag in dead.into_tags().filter(|&t| ours(t)) {
        let class = forget_class(tag, |t| classes::unloaded(env, t));
        if !class
            && (ids::is_defined(tag.0) || objects::forget_requested(tag.0))
            && events::enabled(JVMPI_EVENT_OBJECT_FREE)
        {
            let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_FREE, env);
            ev.u.obj_free = ObjFree { obj_id: tag.id() };
            events::send(&mut ev);
        }
        // Its OBJECT_FREE (if owed) has been delivered: the ID may be reused.
        done.push(tag);
    }
    drop(done);
    if finish {
        let total = jvm::Jni::of(env).total_memory().unwrap_or(bytes);
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_GC_FINISH, env);
        ev.u.gc_info = GcInfo { used_objects: objects, used_object_space: bytes, total_object_space: total.max(bytes) };
        events::send(&mut ev);
    }
}

/// Whether a dead tag is one the shim could have given out. HotSpot posts the deaths a heap walk
/// takes from every environment's tag map to the environment that walked (see `jvm::relay_free`):
/// another JVMTI agent's tags can arrive here. Those out of the shim's range are ignored (not
/// reported, not given back as slots); one inside it cannot be told from the shim's own.
fn ours(Tag(tag): Tag) -> bool {
    let ok = ids::plausible(tag);
    if !ok {
        log::debug!("a death of tag {tag:#x}, which the shim never gave out (another agent's?): ignored");
    }
    ok
}

/// A dead object that may have been a class ([`ids::may_be_class`]): `classes` deals with it
/// (`unload`: its CLASS_UNLOAD, or its silent removal), then the shapes that `alloc` and
/// `objects` keep by class tag go, whether `classes` knew the class or not (with CLASS_LOAD off
/// it may not have), so that a class that gets the tag later finds none of them. Returns
/// whether `classes` knew it as a class.
fn forget_class(tag: Tag, unload: impl FnOnce(ids::ClassTag) -> bool) -> bool {
    if !ids::may_be_class(tag) {
        return false;
    }
    // A class is an object too: its tag as a class's.
    let class = ids::ClassTag(tag.0);
    let was = unload(class);
    alloc::forget_class(class);
    objects::forget_class(class);
    was
}

/// Dead objects' tags whose deaths have been dealt with, given back to `ids` in batches.
struct Released {
    env: *mut JNIEnv,
    tags: Vec<Tag>,
}

impl Released {
    fn new(env: *mut JNIEnv) -> Released {
        Released { env, tags: Vec::new() }
    }
    fn push(&mut self, tag: Tag) {
        self.tags.push(tag);
        if self.tags.len() >= 4096 {
            self.flush();
        }
    }
    fn flush(&mut self) {
        ids::release(&jvm::Jni::of(self.env), &self.tags);
        self.tags.clear();
    }
}

impl Drop for Released {
    fn drop(&mut self) {
        self.flush();
    }
}

unsafe extern "system" fn gc_thread_main(_jvmti: *mut jvmti::jvmtiEnv, env: *mut JNIEnv, _arg: *mut c_void) {
    threads::own_thread_here();
    crate::vm::logger::guard("GC events thread", (), || {
        let _ = STATE.wake.set(std::thread::current());
        // Between brackets this thread also announces classes nothing else links.
        classes::set_linker(std::thread::current());
        let mut seen = 0;
        // This thread never returns to the JVM: each piece of work gets its own frame of local
        // references, so that none accumulate.
        let jni = jvm::Jni::of(env);
        loop {
            while STATE.finished.load(SeqCst) == seen && !STATE.stop.load(SeqCst) {
                if classes::has_pending() {
                    std::thread::park_timeout(classes::PENDING_AGE);
                    jni.framed(|| threads::with_stand_in(|| classes::flush_pending(env, classes::PENDING_AGE)));
                } else {
                    std::thread::park();
                }
            }
            if STATE.stop.load(SeqCst) {
                return;
            }
            seen = STATE.finished.load(SeqCst);
            // Its events carry the env_id of a thread the agent knows (this one is the shim's).
            jni.framed(|| threads::with_stand_in(|| deliver_bracket(env)));
        }
    })
}

/// Starts the delivery thread (at VM init, from a thread with `env`).
pub fn start(env: *mut JNIEnv) -> Result<(), RoomError> {
    let _ = STATE.epoch.set(std::time::Instant::now());
    // Deaths of tagged objects are always followed, so that their IDs can be reused (see
    // `ids`); a collection's end wakes the thread that deals with them.
    for e in [jvmti::JVMTI_EVENT_OBJECT_FREE, jvmti::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH] {
        if let Err(err) = jvm::want(e) {
            log::info!("object deaths are not followed ({}): object IDs are not reused", jvm::err_name(err));
        }
    }
    let jni = jvm::Jni::of(env);
    let t = jni.new_thread("JVMPI GC events").ok_or("cannot make the GC events thread")?;
    threads::mark_own(t);
    let r = jvm::run_agent_thread(t, gc_thread_main, std::ptr::null(), JVMPI_MAXIMUM_PRIORITY);
    jni.delete_local_ref(t);
    r.map_err(RoomError::Jvmti)
}

/// At VM death, before the gate closes: deaths the JVM has not reported yet (JDK 16+ posts them
/// late) are reported in a last bracket, so every tracked object that died gets its
/// OBJECT_FREE and every unloaded class its CLASS_UNLOAD. On JDK 17+ there is no flush (it can
/// hang HotSpot, see the body): the deaths the Service Thread posts until it is quiet.
///
/// A bracket under way is waited for with VM death's `patience` (while it delivers events). There is no last bracket when the JVM
/// is ending from inside one (ProfilerExit or System.exit in a GC_START..GC_FINISH handler, on
/// this thread or another): that bracket is never finished, and the deaths still owed are not
/// reported.
pub fn last_bracket(env: *mut JNIEnv, patience: &mut events::Patience) {
    let wants_deaths = events::enabled(JVMPI_EVENT_OBJECT_FREE) || events::enabled(JVMPI_EVENT_CLASS_UNLOAD);
    if !wants_deaths || !events::is_ready() {
        return;
    }
    let open = "the JVM exits while a GC bracket is open: no last bracket, deaths still owed are not reported";
    if IN_BRACKET.with(|b| b.get()) || STATE.abandoned.load(SeqCst) {
        log::info!("{open}");
        return;
    }
    let one = loop {
        match STATE.bracket.try_lock() {
            Ok(g) => break g,
            Err(TryLockError::Poisoned(p)) => break p.into_inner(),
            Err(TryLockError::WouldBlock) if STATE.abandoned.load(SeqCst) => {
                log::info!("{open}");
                return;
            }
            Err(TryLockError::WouldBlock) if patience.exhausted() => {
                log::warn!("the GC bracket under way made no progress for 2 s during VM death: no last bracket");
                return;
            }
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    if jvm::jdk_feature().is_some_and(|f| f >= FLUSH_WAITS_FROM_JDK) {
        // JDK 17+: no flush. A flush that finds the Service Thread posting deaths waits for it
        // inside the VM without a safepoint check; a safepoint requested meanwhile (a
        // collection the program's threads cause: they go on running during VM death) then
        // waits for this thread, and the Service Thread, back from the shim's ObjectFree
        // callback, waits for that safepoint — the JVM hangs (JDK 25: 1 exit in 150 with the
        // agent's sampler never sleeping; HotSpot's wait of docs/reliability.md's Runtime.halt
        // hang). Waiting for quiet first did not avoid it under load. Instead a heap iteration
        // that visits no object gathers the deaths still owed at its safepoint and posts them
        // here afterwards, waiting for nobody (the Service Thread does not post every death on
        // its own: a dead class's mirror, on JDK 21, waited for a flush); what the Service
        // Thread is posting meanwhile comes in until no death has come for a while (1 s at
        // most), and goes in the last bracket.
        match jvm::Jni::current() {
            Some(jni) => {
                if let Err(e) = jvm::post_owed_frees(&jni) {
                    log::debug!("posting the ObjectFree events owed at VM death: {}", jvm::err_name(e));
                }
            }
            None => log::debug!("VM death: no JNIEnv to post the ObjectFree events owed"),
        }
        if !deaths::wait_until_quiet(quiet_at_exit(), Duration::from_secs(1)) {
            log::info!("VM death: deaths kept coming for 1 s; the last bracket reports those received so far");
        }
        if !deaths::is_empty() {
            bracket(env, one);
        }
        return;
    }
    // The JVM posts the deaths it still owes (on this thread). Not if the event switch stays
    // held (by a thread suspended inside a JVMTI call): VM death waits for it for a while only.
    match jvm::flush_object_frees(jvm::set_exiting()) {
        Ok(true) => {}
        Ok(false) => log::info!(
            "VM death: the JVMTI event switch is held by another thread (suspended in a JVMTI call?); deaths the JVM still owes are not flushed"
        ),
        Err(e) => log::debug!("flushing ObjectFree at VM death: {}", jvm::err_name(e)),
    }
    if !deaths::is_empty() {
        bracket(env, one);
    }
}

/// From this JDK on, JVMTI's flush of the ObjectFree events owed can wait for the Service Thread
/// posting them without a safepoint check (`JvmtiTagMap::flush_object_free_events`: JDK 20, and
/// 17 from its update 17.0.6, which this machine's 17.0.15 has; the shim's own notes on
/// ProfilerExit saw JDK 17 hang this way): the last bracket does not flush.
const FLUSH_WAITS_FROM_JDK: u32 = 17;

/// How long without a death VM death takes for "the Service Thread has posted what it owed"
/// (JDK 17+), when a collection ended less than this long ago: the Service Thread, woken at its
/// end, may not have begun posting its deaths yet.
const DEATHS_QUIET: Duration = Duration::from_millis(50);
/// The same when no collection ended within [`DEATHS_QUIET`] (or none at all: a short program):
/// a batch the Service Thread is posting comes in death after death, microseconds apart. Every
/// exit with OBJECT_FREE or CLASS_UNLOAD on waited the full 50 ms before (a hello world: 55 ms of
/// its 62 ms from its last line to its exit).
const DEATHS_QUIET_IDLE: Duration = Duration::from_millis(5);

/// The quiet time VM death waits for (see [`DEATHS_QUIET`]).
fn quiet_at_exit() -> Duration {
    // No collection finished since VM init (GarbageCollectionFinish is followed from VM init
    // until ProfilerExit switches it off for the exit, and a collection under way when the heap
    // iteration before this was requested has finished and been counted by the time it
    // returns): no object died, the Service Thread owes no death.
    if STATE.finished.load(SeqCst) == 0 && !jvm::gc_events_silenced() {
        return Duration::ZERO;
    }
    let last = STATE.last_finish_ns.load(SeqCst);
    let recent = last != 0
        && STATE
            .epoch
            .get()
            .is_some_and(|e| (e.elapsed().as_nanos() as u64).saturating_sub(last) < DEATHS_QUIET.as_nanos() as u64);
    if recent {
        DEATHS_QUIET
    } else {
        DEATHS_QUIET_IDLE
    }
}

/// The current thread leaves the JVM from inside an event handler (ProfilerExit): a bracket it
/// is delivering will not be finished, and VM death must not wait for it.
pub fn leaving() {
    if IN_BRACKET.with(|b| b.get()) {
        STATE.abandoned.store(true, SeqCst);
    }
}

/// The current thread is taking the JVM down (its THREAD_END comes just before VM death): no
/// bracket starts from now on, and one under way in another thread is waited for (2 s at most),
/// so that no heap walk of the shim's requests a safepoint while VM death flushes the ObjectFree
/// events the JVM still owes (JDK 11). On JDK 17+ a safepoint requested during that flush deadlocks
/// HotSpot: the flushing thread, back from the ObjectFree callback, waits for the safepoint,
/// which waits for the Service Thread, which waits for the flush without a safepoint check.
pub fn quiesce_for_exit() {
    stop();
    if IN_BRACKET.with(|b| b.get()) || STATE.abandoned.load(SeqCst) {
        return; // leaving from inside a bracket: it is never finished
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        match STATE.bracket.try_lock() {
            Ok(_) | Err(TryLockError::Poisoned(_)) => return,
            Err(TryLockError::WouldBlock) if std::time::Instant::now() >= deadline => {
                log::info!("a GC bracket is still under way as the JVM goes down");
                return;
            }
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// Stops the delivery thread (at VM death). A bracket under way finishes; no new one starts.
pub fn stop() {
    let (peak, bytes) = queue_peak();
    if peak > 0 {
        log::info!("memory: at most {peak} deaths waited for a GC bracket, in about {} KiB", bytes / 1024);
    }
    STATE.stop.store(true, SeqCst);
    if let Some(t) = STATE.wake.get() {
        t.unpark();
    }
    // The GC locker thread gives up its critical section, if it holds one, and returns (taking
    // the lock orders the store above before its next look at `stop`).
    drop(locker());
    STATE.locker_cv.notify_all();
}

/// `RunGC`: a full collection, now. Its events follow from the delivery thread. Not once VM
/// death has begun: the JVM has stopped its concurrent GC threads by then, and the events
/// could not be delivered anyway.
pub fn run_gc() {
    if events::shutting_down() {
        log::debug!("RunGC during VM death: no collection");
        return;
    }
    if STATE.gc_disabled.load(SeqCst) > 0 {
        log::warn!("RunGC called while GC is disabled (JVMPI forbids it); collecting anyway");
    }
    if let Err(e) = jvm::force_gc() {
        log::warn!("RunGC: {}", jvm::err_name(e));
    }
}

/// The GC locker's state (under `GcState::locker`).
struct Locker {
    /// DisableGC is in force: the locker thread should hold its critical section.
    want: bool,
    /// The locker thread holds its critical section now.
    held: bool,
    /// The locker thread has been started.
    started: bool,
    /// The locker thread could not be started or refused (nothing holds collections off).
    failed: bool,
    /// The critical section was given up at `disable-gc-max=` while DisableGC was still in
    /// force: it is not taken again until EnableGC.
    gave_up: bool,
}

fn set_note(msg: String) {
    let mut n = crate::vm::logger::lock(&STATE.locker_note);
    *n = Some(match n.take() {
        Some(old) if !old.contains(&msg) => format!("{old} {msg}"),
        _ => msg,
    });
}

/// The report's note on DisableGC for this run (None: it did what HotSpot's did).
pub fn locker_note() -> Option<String> {
    crate::vm::logger::lock(&STATE.locker_note).clone()
}

/// `disable-gc-max=<seconds>`: how long DisableGC may hold collections off.
pub fn set_disable_max(d: Duration) {
    STATE.locker_max_ms.store(d.as_millis().max(1) as u64, SeqCst);
}

/// How long DisableGC and EnableGC wait for the locker thread to take or give up its critical
/// section (a collection under way finishes first).
const LOCKER_WAIT: Duration = Duration::from_secs(5);

fn locker() -> MutexGuard<'static, Locker> {
    crate::vm::logger::lock(&STATE.locker)
}

pub fn disable_gc() {
    if STATE.gc_disabled.fetch_add(1, SeqCst) > 0 {
        return; // nested: the locker holds already
    }
    if events::shutting_down() || STATE.stop.load(SeqCst) {
        return; // the JVM is going down: no collection is coming that would need holding off
    }
    say_if_unheld();
    let mut l = locker();
    // From the count, under the lock: an EnableGC racing this call leaves the right state.
    l.want = STATE.gc_disabled.load(SeqCst) > 0;
    l.gave_up = false;
    if !l.started && !l.failed {
        l.started = true;
        drop(l);
        if let Err(e) = start_locker() {
            log::warn!("DisableGC: the GC locker thread cannot start ({e}); collections are not held off");
            locker().failed = true;
            set_note("the GC locker thread could not start: collections went on".into());
            return;
        }
        l = locker();
    }
    STATE.locker_cv.notify_all();
    // HotSpot's DisableGC returned with the locker held: so does this one, once the locker
    // thread is inside its critical section (a collection under way finishes first).
    let (l, timeout) = STATE
        .locker_cv
        .wait_timeout_while(l, LOCKER_WAIT, |l| l.want && !l.held && !l.failed && !l.gave_up)
        .unwrap_or_else(|e| e.into_inner());
    if timeout.timed_out() && !l.held {
        log::warn!(
            "DisableGC: the GC locker did not get hold within {} s; collections may still run",
            LOCKER_WAIT.as_secs()
        );
    }
}

pub fn enable_gc() {
    let was = STATE.gc_disabled.fetch_sub(1, SeqCst);
    if was <= 0 {
        STATE.gc_disabled.fetch_add(1, SeqCst);
        log::warn!("EnableGC without a matching DisableGC; ignored");
        return;
    }
    if was > 1 {
        return; // still disabled by an outer DisableGC
    }
    let mut l = locker();
    l.want = STATE.gc_disabled.load(SeqCst) > 0;
    l.gave_up = false;
    STATE.locker_cv.notify_all();
    // Collections may run once EnableGC has returned: wait for the critical section's end.
    let _ =
        STATE.locker_cv.wait_timeout_while(l, LOCKER_WAIT, |l| l.held && !l.want).unwrap_or_else(|e| e.into_inner());
}

/// Which collector this JVM runs, from its command line (the JVM's own options and those of
/// `JAVA_TOOL_OPTIONS`, `JDK_JAVA_OPTIONS`, `_JAVA_OPTIONS`), else HotSpot's default choice
/// (G1 on a machine with 2 CPUs and 1792 MB or more, Serial below).
fn collector() -> &'static str {
    static GC: OnceLock<&'static str> = OnceLock::new();
    GC.get_or_init(|| {
        let mut words: Vec<String> = std::fs::read("/proc/self/cmdline")
            .map(|b| b.split(|&c| c == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect())
            .unwrap_or_default();
        for v in ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"] {
            if let Ok(s) = std::env::var(v) {
                words.extend(s.split_whitespace().map(str::to_string));
            }
        }
        let mut gc = None;
        for w in &words {
            gc = match w.as_str() {
                "-XX:+UseSerialGC" => Some("Serial"),
                "-XX:+UseParallelGC" | "-XX:+UseParallelOldGC" => Some("Parallel"),
                "-XX:+UseG1GC" => Some("G1"),
                "-XX:+UseZGC" => Some("ZGC"),
                "-XX:+UseShenandoahGC" => Some("Shenandoah"),
                "-XX:+UseEpsilonGC" => Some("Epsilon"),
                _ => gc,
            };
        }
        gc.unwrap_or_else(|| {
            // SAFETY: sysconf only reads system figures.
            let (cpus, pages, page) = unsafe {
                (
                    libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
                    libc::sysconf(libc::_SC_PHYS_PAGES),
                    libc::sysconf(libc::_SC_PAGESIZE),
                )
            };
            if cpus >= 2 && pages.saturating_mul(page) >= 1792 << 20 {
                "G1"
            } else {
                "Serial"
            }
        })
    })
}

/// Whether this JVM's collector holds collections off while a JNI critical section is held
/// (measured: compat-matrix.md, DisableGC): Serial, Parallel and ZGC on JDK 11-25, G1 up to
/// JDK 21 (from JDK 22 it pins the array's region instead); Shenandoah never (it pins);
/// Epsilon never collects.
fn critical_holds_gc() -> bool {
    match collector() {
        "G1" => jvm::jdk_feature().is_some_and(|f| f < 22),
        "Shenandoah" => false,
        _ => true,
    }
}

/// Said once: the collector of this JVM does not honour the lever, so DisableGC cannot hold
/// collections off.
fn say_if_unheld() {
    if critical_holds_gc() || STATE.said_unheld.swap(true, SeqCst) {
        return;
    }
    let jdk = jvm::jdk_feature().map_or_else(|| "?".into(), |f| f.to_string());
    let msg = format!(
        "DisableGC cannot hold collections off with the {} collector on JDK {jdk}: it ignores JNI critical sections \
         (the only lever a JVMTI agent has); collections go on between DisableGC and EnableGC (Serial, Parallel and ZGC hold them)",
        collector()
    );
    log::warn!("{msg}");
    set_note(msg.clone());
}

fn start_locker() -> Result<(), RoomError> {
    let go = || -> Result<(), RoomError> {
        let jni = jvm::Jni::current().ok_or("no JNIEnv")?;
        let t = jni.new_thread("JVMPI GC locker").ok_or("cannot make its thread")?;
        threads::mark_own(t);
        let r = jvm::run_agent_thread(t, locker_main, std::ptr::null(), JVMPI_MAXIMUM_PRIORITY);
        jni.delete_local_ref(t);
        r.map_err(RoomError::Jvmti)
    };
    if jvm::current_jni().is_some() {
        go()
    } else {
        jvm::attached(go).unwrap_or_else(|| Err("the calling thread cannot be attached".into()))
    }
}

/// The GC locker thread: holds a JNI critical section while DisableGC is in force.
unsafe extern "system" fn locker_main(_jvmti: *mut jvmti::jvmtiEnv, env: *mut JNIEnv, _arg: *mut c_void) {
    threads::own_thread_here();
    crate::vm::logger::guard("GC locker thread", (), || {
        let jni = jvm::Jni::of(env);
        let Some(array) = jni.new_int_array_global(1) else {
            log::warn!("DisableGC: the GC locker has no array to hold; collections are not held off");
            locker().failed = true;
            STATE.locker_cv.notify_all();
            return;
        };
        loop {
            let l = locker();
            let l = STATE
                .locker_cv
                .wait_while(l, |l| (!l.want || l.gave_up) && !STATE.stop.load(SeqCst))
                .unwrap_or_else(|e| e.into_inner());
            if STATE.stop.load(SeqCst) {
                return;
            }
            drop(l);
            // Inside the critical section no JNI or JVMTI call is made: only this room's lock,
            // its condition variable and the clock.
            let held = jni.with_critical(array, || {
                let mut l = locker();
                l.held = true;
                STATE.locker_cv.notify_all();
                let max = Duration::from_millis(STATE.locker_max_ms.load(SeqCst));
                let (mut l, t) = STATE
                    .locker_cv
                    .wait_timeout_while(l, max, |l| l.want && !STATE.stop.load(SeqCst))
                    .unwrap_or_else(|e| e.into_inner());
                if t.timed_out() && l.want {
                    l.gave_up = true;
                }
                l.gave_up
            });
            // Out of the critical section now: EnableGC, waiting for this, may return.
            locker().held = false;
            STATE.locker_cv.notify_all();
            match held {
                Some(true) => {
                    if !STATE.said_gave_up.swap(true, SeqCst) {
                        let msg = format!(
                            "DisableGC held collections off for {} ms without EnableGC: given up, so that a thread \
                             waiting for memory (perhaps the one that would call EnableGC) cannot wait for ever \
                             (disable-gc-max=; said once)",
                            STATE.locker_max_ms.load(SeqCst)
                        );
                        log::warn!("{msg}");
                        set_note(msg.clone());
                    }
                }
                Some(false) => {}
                None => {
                    log::warn!(
                        "DisableGC: the JVM refused the GC locker's critical section; collections are not held off"
                    );
                    locker().failed = true;
                    STATE.locker_cv.notify_all();
                    return;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A class that `classes` never knew (CLASS_LOAD off) dies: the shapes `alloc` and
    /// `objects` kept by its tag go all the same, so a class that gets the tag once it is reused
    /// is not given the dead class's size and kind. Other deaths touch neither table.
    #[test]
    fn a_dead_class_unknown_to_classes_loses_its_shapes() {
        use crate::face::ids::ClassTag;
        let (class, other) = (Tag(0x5_0000), Tag(0x5_0010));
        let shapes = ClassTag(class.0);
        assert!(alloc::test_shape(shapes, true) && objects::test_shape(shapes, true));
        assert!(!forget_class(other, |_| panic!("not a class key: no lookup")));
        assert!(alloc::test_shape(shapes, false) && objects::test_shape(shapes, false));
        let mut asked = false;
        assert!(!forget_class(class, |_| {
            asked = true;
            false
        }));
        assert!(asked, "classes is asked first");
        assert!(!alloc::test_shape(shapes, false) && !objects::test_shape(shapes, false));
    }
}
