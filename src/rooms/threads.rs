//! Threads. A JVMPI thread ID is the thread's `JNIEnv*`; this room keeps the table from that
//! pointer to the thread (a JNI global reference) and the per-thread JVMPI state: the agent's
//! thread-local word, whether the agent heard `THREAD_START`, and what `ThreadHasRun` needs.
//! With several agents, each has its own thread-local word and its own "heard THREAD_START" bit.
//!
//! Functions: `SuspendThread`, `ResumeThread`, `SuspendThreadList`, `ResumeThreadList`,
//! `GetThreadStatus`, `ThreadHasRun`, `Set/GetThreadLocalStorage`, `GetThreadObject`,
//! `CreateSystemThread`, `GetCurrentThreadCpuTime`. Events: `THREAD_START`, `THREAD_END`.
//!
//! Every thread that JVMTI reports with `ThreadStart` is entered with its own JNIEnv. Threads
//! that were already running when the shim started (the main thread, the JVM's system
//! threads) are found with `GetAllThreads`; their JNIEnv is HotSpot's `JavaThread` address
//! (`java.lang.Thread.eetop`) plus the JNIEnv's offset inside it, measured on a thread whose
//! JNIEnv is known and checked by comparing the JNI function table the computed JNIEnv points
//! to. An agent-supplied `JNIEnv*` is only ever used as a key into this table, never followed.
//!
//! Suspension and the end of a thread. JVMTI suspends a thread that runs native code (such as
//! the shim's ThreadEnd callback and the agent's THREAD_END handler) by a flag: it goes on
//! running and stops at its next entry into the VM — here, when the callback returns. HotSpot
//! 1.5 honoured such a request the same way and the agent's ResumeThread(env) still reached the
//! thread. So a thread's record outlives its THREAD_END: for ten seconds its `JNIEnv*` still
//! reaches it for ResumeThread (and only for that: the other thread functions answer as for a
//! thread that is gone). Once THREAD_END has been delivered the thread is marked ended and no
//! new suspension is accepted; if the agent suspended it before that mark (during or just before
//! its THREAD_END), the shim's "JVMPI thread resumer" resumes it at once, so no thread is ever
//! left suspended at its end, whatever the agent does afterwards (its ResumeThread is then a
//! quiet no-op). The mark and the suspension are serialised by the record's lock, which is never
//! held by the thread itself across a call into the VM (a suspended thread would stop there).
//! The resumer is the shim's own thread, not a JVMPI thread: no agent can suspend it. At VM
//! death, once JVM_SHUT_DOWN has been delivered, it resumes every thread the agent left
//! suspended: after the VMDeath callback JVMTI can resume nothing, and the exiting thread
//! itself may be one of them.

use crate::face::abi::*;
use crate::face::ids::Tag;
use crate::face::table::Agent;
use crate::face::table::MAX_AGENTS;
use crate::face::{events, ids, table};
use crate::rooms::error::RoomError;
use crate::vm::idhash::IdMap;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jboolean, jint, jlong, jthread, JNIEnv};
use jvmti_bindings::sys::jvmti;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicUsize, Ordering::*};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub struct ThreadRec {
    pub env: usize,
    /// JNI global reference to the java.lang.Thread.
    pub thread: usize,
    /// The tag (object ID) of the java.lang.Thread.
    tag: Tag,
    /// Each agent's thread-local word.
    tls: [AtomicUsize; MAX_AGENTS],
    /// The agents this thread's THREAD_START is (being) sent to (bit a = agent a): each once.
    announced: AtomicU32,
    /// The agents whose THREAD_START handler for this thread has returned: only these may be
    /// handed its env_id by another thread (a dump, a MONITOR_CONTENDED_EXIT, a stand-in).
    told: AtomicU32,
    /// Thread CPU time at the latest JVMPI SuspendThread (-1: never suspended).
    cpu_at_suspend: AtomicI64,
    has_run: AtomicBool,
    /// Events naming this thread from another thread, being delivered now (see [`Pinned`]).
    pins: AtomicUsize,
    /// Its THREAD_END is about to be delivered: no new pin.
    ending: AtomicBool,
    /// JVMPI's suspension of this thread, and whether its THREAD_END has been delivered.
    suspension: Mutex<Suspension>,
    /// A virtual thread's `env_id` (`env` is its address): owned by the record, so it stays
    /// valid as long as anything can name the thread.
    vt: Option<Box<jvm::VtEnv>>,
    /// A platform thread that has run virtual threads (a carrier; set at its first mount):
    /// not running work of its own for a sampler (see [`status`] and [`has_run`]).
    carrier: AtomicBool,
}

#[derive(Default)]
struct Suspension {
    /// Suspended through JVMPI (SuspendThread, SuspendThreadList) and not resumed since.
    by_jvmpi: bool,
    /// THREAD_END has been delivered: no new suspension.
    ended: bool,
}

/// A virtual thread's record holds a weak reference to its thread (see [`on_vthread_start`]),
/// deleted with the record: every user of it holds the record.
impl Drop for ThreadRec {
    fn drop(&mut self) {
        if self.vt.is_some() {
            if let Some(jni) = jvm::Jni::current() {
                jni.delete_weak(self.thread as jthread);
            }
        }
    }
}

impl ThreadRec {
    /// A fresh record: `env` its key (a JNIEnv, or a virtual thread's own), `global` a global
    /// reference to its `java.lang.Thread`, `tag` that object's tag.
    fn new(
        env: usize,
        global: jvmti_bindings::sys::jni::jobject,
        tag: Tag,
        vt: Option<Box<jvm::VtEnv>>,
    ) -> Arc<ThreadRec> {
        Arc::new(ThreadRec {
            env,
            thread: global as usize,
            tag,
            tls: [const { AtomicUsize::new(0) }; MAX_AGENTS],
            announced: AtomicU32::new(0),
            told: AtomicU32::new(0),
            cpu_at_suspend: AtomicI64::new(-1),
            has_run: AtomicBool::new(true),
            pins: AtomicUsize::new(0),
            ending: AtomicBool::new(false),
            suspension: Mutex::new(Suspension::default()),
            vt,
            carrier: AtomicBool::new(false),
        })
    }

    fn jthread(&self) -> jthread {
        self.thread as jthread
    }
    fn suspension(&self) -> std::sync::MutexGuard<'_, Suspension> {
        crate::vm::logger::lock(&self.suspension)
    }
}

/// The threads room's state, shared by every thread.
struct ThreadsState {
    /// JNIEnv → the record of the live thread: entered by [`register`] (ThreadStart, the
    /// catch-up, a thread's first event), taken out at its THREAD_END, when its JNIEnv is
    /// reused, or by [`retire_if_new`].
    threads: LazyLock<IdMap<usize, Arc<ThreadRec>>>,
    /// Thread object tag → JNIEnv: written with `threads`.
    by_tag: LazyLock<IdMap<Tag, usize>>,
    /// Records of threads that ended lately (put in by THREAD_END, kept ten seconds): a sampler
    /// that still names one gets HotSpot's quiet answer for a thread that is gone, not a
    /// warning, and its ResumeThread still reaches it.
    ended: LazyLock<IdMap<usize, (Instant, Arc<ThreadRec>)>>,
    /// Tags of the `java.lang.Thread`s of the shim's own threads ("JVMPI GC events", "JVMPI
    /// reset request", the resumer), added by [`mark_own`]: never entered in `threads`, never
    /// announced.
    own_tags: Mutex<Vec<Tag>>,
    /// Ended or retired records whose global references are deleted once no call can still be
    /// using them (THREAD_END, [`register`] and [`retire_if_new`] add; THREAD_END sweeps).
    graveyard: Mutex<Vec<(Instant, Arc<ThreadRec>)>>,
    /// Ended threads still suspended by the agent, for the resumer (THREAD_END, a suspension
    /// that lost the race with it, and VM death add; the resumer takes).
    owed: Mutex<Vec<Arc<ThreadRec>>>,
    /// The resumer thread, set by itself as it starts: unparked when `owed` grows.
    resumer: OnceLock<std::thread::Thread>,
    /// Set by the resumer while it works on what it took from `owed` (set under `owed`'s lock).
    resuming: AtomicBool,
    /// JVMPI suspensions under way (SuspendThread and the lists): VM death waits for them.
    suspending: AtomicUsize,
    /// Set at VM death ([`release_all`]): new JVMPI suspensions are refused.
    closed: AtomicBool,
    /// Set at VM death once no resumption is owed: the resumer thread returns.
    stop_resumer: AtomicBool,
    /// Offset of the JNIEnv inside HotSpot's JavaThread, measured once on a known thread (the
    /// first catch-up of threads that were there before the shim).
    env_offset: OnceLock<Option<jlong>>,
    /// The thread taking the JVM down, whose THREAD_END waits for VM death (its JNIEnv and a
    /// global reference to its `java.lang.Thread`): set by [`hold_end`], taken by [`end_exiting`].
    exiting: Mutex<Option<(usize, usize)>>,
    /// Virtual threads are JVMPI threads of their own (JDK 21+, `vthreads=own`): set at
    /// start-up once the JVM sends their events.
    virtual_own: AtomicBool,
    /// When (ms since `EPOCH`) a thread's end last swept `graveyard` and `ended`: at most every
    /// 50 ms, not at every end (a million virtual threads end in a few seconds).
    last_sweep: std::sync::atomic::AtomicU64,
    /// The virtual threads in `ended`, in the order they ended (written by their end, which
    /// takes out those ended a second ago, and the oldest while there are more than
    /// [`vt_ended_cap`]).
    vt_ended: Mutex<std::collections::VecDeque<(Instant, usize)>>,
    /// Virtual threads with a record in `threads` (started and not ended).
    vt_live: AtomicUsize,
}

/// Ended virtual threads' records kept at least this many (if they ended less than a second
/// ago), or as many as there are live ones.
const VT_ENDED_MIN: usize = 4096;

/// How many ended virtual threads' records are kept: a program may end a hundred thousand of
/// them a second, and a second's worth of records was the shim's memory growing with the rate
/// of ends instead of the number alive (tens of MiB that the allocator then kept).
fn vt_ended_cap() -> usize {
    VT_ENDED_MIN.max(STATE.vt_live.load(Relaxed))
}

/// The clock of `last_sweep`.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

static STATE: ThreadsState = ThreadsState {
    threads: LazyLock::new(IdMap::default),
    by_tag: LazyLock::new(IdMap::default),
    ended: LazyLock::new(IdMap::default),
    own_tags: Mutex::new(Vec::new()),
    graveyard: Mutex::new(Vec::new()),
    owed: Mutex::new(Vec::new()),
    resumer: OnceLock::new(),
    resuming: AtomicBool::new(false),
    suspending: AtomicUsize::new(0),
    closed: AtomicBool::new(false),
    stop_resumer: AtomicBool::new(false),
    env_offset: OnceLock::new(),
    exiting: Mutex::new(None),
    virtual_own: AtomicBool::new(false),
    last_sweep: std::sync::atomic::AtomicU64::new(0),
    vt_ended: Mutex::new(std::collections::VecDeque::new()),
    vt_live: AtomicUsize::new(0),
};

fn lookup(env: *mut JNIEnv, what: &str) -> Option<Arc<ThreadRec>> {
    let r = STATE.threads.get(&(env as usize)).map(|r| r.clone());
    if r.is_none() {
        if env.is_null() {
            // The owner of a monitor nobody owns, as a MONITOR_DUMP writes it (NULL): tools
            // pass it on as they found it (a dump's reader suspending "each owner").
            log::debug!("{what}(NULL): no thread");
        } else if STATE.ended.contains_key(&(env as usize)) || events::is_dead() {
            // A thread that has just ended, or the VM is going away: HotSpot answered quietly.
            log::debug!("{what}({env:p}): the thread has ended");
        } else {
            crate::face::record::refused(what);
            log::warn!("{what}({env:p}): not the JNIEnv of a live thread known to the shim; ignored");
        }
    }
    r
}

/// Enters a thread in the table (idempotent). `jni` is the current thread's JNI, used only to
/// make the global reference; `env` is the subject thread's JNIEnv.
/// A JNIEnv is the address of a HotSpot JavaThread, and a new thread may be given the address of
/// one that has ended: an entry for `env` that belongs to another thread object is stale and is
/// replaced.
fn register(jni: &jvm::Jni, env: usize, thread: jthread) -> Option<Arc<ThreadRec>> {
    let tag = ids::indexed_tag_of(thread).ok()?;
    if let Some(r) = STATE.threads.get(&env).map(|r| r.clone()) {
        if r.tag == tag {
            return Some(r);
        }
        if STATE.threads.remove_if(&env, |_, cur| Arc::ptr_eq(cur, &r)).is_some() {
            log::debug!("JNIEnv {env:#x} now belongs to a new thread; the old record is retired");
            STATE.by_tag.remove_if(&r.tag, |_, e| *e == env);
            crate::vm::logger::lock(&STATE.graveyard).push((Instant::now(), r));
        }
    }
    if is_own(tag) {
        return None; // the shim's own helper: no JVMPI thread, never announced nor suspended
    }
    let global = jni.new_global_ref(thread);
    if global.is_null() {
        return None;
    }
    let rec = ThreadRec::new(env, global, tag, None);
    let entry = STATE.threads.entry(env).or_insert(rec.clone()).clone();
    if !Arc::ptr_eq(&entry, &rec) {
        jni.delete_global_ref(global);
    }
    STATE.by_tag.insert(tag, env);
    Some(entry)
}

/// Sends THREAD_START for `rec` once to each agent that wants it (or every time to the
/// requesting agent, when requested).
fn announce(rec: &ThreadRec, sender_env: *mut JNIEnv, requested: bool, started: bool) -> Result<(), RoomError> {
    let want = events::listeners(JVMPI_EVENT_THREAD_START);
    if !requested && want & !rec.announced.load(SeqCst) == 0 {
        return Ok(());
    }
    let (name, group, parent) = jvm::thread_names(rec.jthread()).map_err(jvm::err_name)?;
    if !requested && name.is_empty() && (group.is_empty() || !started) {
        // A thread attaching itself (DestroyJavaVM) is still running its Thread's constructor,
        // which sets the group before the name since JDK 19: it is announced with its name once
        // that is done (its JVMTI ThreadStart, after which an empty name is the thread's own).
        return Err(RoomError::Unnamed);
    }
    let to = if requested { 0 } else { want & !rec.announced.fetch_or(want, SeqCst) };
    if !requested && to == 0 {
        return Ok(());
    }
    let (name, group, parent) = (jvm::cstring(&name), jvm::cstring(&group), jvm::cstring(&parent));
    // HotSpot sent THREAD_START in the new thread itself: env_id is the thread's own JNIEnv, also
    // when the shim announces a thread that was running before the agent started. A requested
    // THREAD_START comes, as HotSpot sent it, from the requesting thread.
    let env_id = if requested { sender_env } else { rec.env as *mut JNIEnv };
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_THREAD_START, env_id);
    ev.u.thread_start = ThreadStart {
        thread_name: name.as_ptr() as *mut _,
        group_name: group.as_ptr() as *mut _,
        parent_name: parent.as_ptr() as *mut _,
        thread_id: ids::id_of(rec.jthread())?,
        thread_env_id: rec.env as *mut JNIEnv,
    };
    if requested {
        events::send_requested(&mut ev);
    } else {
        events::send_to(to, &mut ev);
        rec.told.fetch_or(to, SeqCst);
    }
    Ok(())
}

/// JVMTI ThreadStart (and VMInit for the main thread): the thread is running, on this thread.
pub fn on_thread_start(env: *mut JNIEnv, thread: jthread) {
    if jvm::temporarily_attached() {
        return; // an agent's thread, attached for one JVMPI call: not a JVMPI thread
    }
    let jni = jvm::Jni::of(env);
    if let Some(rec) = register(&jni, env as usize, thread) {
        if STATE.virtual_own.load(Relaxed)
            && (is_carrier_thread(&jni, thread) || jvm::thread_name(thread).is_ok_and(|n| is_vt_timer(&n)))
        {
            mark_scheduler(&rec);
        }
        if !events::is_ready() {
            return; // announced by the catch-up when the gate opens
        }
        jvm::set_announced_here(true);
        if events::enabled(JVMPI_EVENT_THREAD_START) {
            if let Err(e) = announce(&rec, env, false, true) {
                log::debug!("THREAD_START: {e}");
            }
        }
    }
}

/// JVMTI ThreadEnd: sends THREAD_END (the thread's own JNIEnv is the event's env_id) and forgets
/// the thread. If the same JNIEnv sends events later (the launcher's main thread becomes
/// `DestroyJavaVM`), it is a new thread to the agent and is announced again first; the events the
/// ending thread itself still sends (it wakes its joiners) go out with no new THREAD_START. A thread the
/// agent suspended before its end was marked is resumed by the resumer (see the head of this
/// file); its record stays reachable for ResumeThread.
pub fn on_thread_end(env: *mut JNIEnv, thread: jthread) {
    if jvm::temporarily_attached() {
        return;
    }
    jvm::set_announced_here(false);
    let Some(rec) = STATE.threads.get(&(env as usize)).map(|r| r.clone()) else { return };
    // Events about this thread that other threads are delivering (a MONITOR_CONTENDED_EXIT it
    // caused, a dump naming it) reach the agent before its THREAD_END; none starts from now.
    rec.ending.store(true, SeqCst);
    wait_unpinned(&rec);
    if events::enabled(JVMPI_EVENT_THREAD_END) {
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_THREAD_END, env);
        events::send(&mut ev);
    }
    jvm::set_announced_here(false);
    let Some(rec) = STATE.threads.get(&(env as usize)).map(|r| r.clone()) else { return };
    forget_ended(env, env, rec, thread);
}

/// The end of a thread once its THREAD_END has been sent: its record leaves the live table
/// (still reachable ten seconds for ResumeThread), a suspension the agent left is handed to
/// the resumer. `env_id` is the thread's (a virtual thread's own), `env` the JNIEnv of the
/// current thread.
fn forget_ended(env_id: *mut JNIEnv, env: *mut JNIEnv, rec: Arc<ThreadRec>, thread: jthread) {
    let now = Instant::now();
    let env_key = env_id as usize;
    // Reachable for ResumeThread before it leaves the table of live threads.
    STATE.ended.insert(env_key, (now, rec.clone()));
    STATE.threads.remove(&env_key);
    // No call into the VM from here on while this thread may be suspended: it would stop.
    let owed = {
        let mut s = rec.suspension();
        s.ended = true;
        s.by_jvmpi
    };
    if owed {
        resume_later(&rec);
    }
    if let Ok(tag) = ids::tag_of(thread) {
        STATE.by_tag.remove_if(&tag, |_, e| *e == env_key);
    }
    if rec.vt.is_some() {
        // A virtual thread's reference goes with its record (see `ThreadRec`'s `drop`), which
        // is kept one second, not ten, and only while there are fewer than `vt_ended_cap`
        // such records: a program may end a hundred thousand of them a second. They leave
        // `ended` in the order they came, from a queue (no walk over the table); the records
        // are dropped (their weak references deleted) after the queue's lock is let go.
        drop(rec);
        let cap = vt_ended_cap();
        let mut gone = Vec::new();
        {
            let mut q = crate::vm::logger::lock(&STATE.vt_ended);
            q.push_back((now, env_key));
            while let Some(&(when, key)) = q.front() {
                if q.len() <= cap && now.duration_since(when) < Duration::from_secs(1) {
                    break;
                }
                q.pop_front();
                if let Some(e) = STATE.ended.remove_if(&key, |_, (w, _)| *w == when) {
                    gone.push(e);
                }
            }
        }
        drop(gone);
        return;
    }
    let ms = now.duration_since(*EPOCH).as_millis() as u64;
    let last = STATE.last_sweep.load(Relaxed);
    let sweep = ms >= last + 50 && STATE.last_sweep.compare_exchange(last, ms, Relaxed, Relaxed).is_ok();
    if !sweep {
        crate::vm::logger::lock(&STATE.graveyard).push((now, rec));
        return;
    }
    // A JVMPI call racing this end may still hold the reference: delete it a while later, and
    // never while a resumption is owed.
    // The references are deleted after the graveyard's lock is dropped: DeleteGlobalRef enters
    // the VM, where this thread stops if it is suspended (by a suspension that was under way
    // as it ended, until the resumer gets to it), and `register` takes that lock too.
    let old: Vec<Arc<ThreadRec>> = {
        let mut grave = crate::vm::logger::lock(&STATE.graveyard);
        let mut old = Vec::new();
        grave.retain(|(when, r)| {
            let gone = now.duration_since(*when) > Duration::from_secs(2) && !r.suspension().by_jvmpi;
            if gone {
                old.push(r.clone());
            }
            !gone
        });
        grave.push((now, rec));
        old
    };
    let jni = jvm::Jni::of(env);
    for r in old {
        jni.delete_global_ref(r.jthread());
    }
    // Virtual threads' records leave through their queue (above).
    STATE.ended.retain(|_, (when, r)| r.vt.is_some() || now.duration_since(*when) < Duration::from_secs(10));
}

// ---- virtual threads (JDK 21+) -----------------------------------------------------------------

/// Start-up found the JVM able to send the virtual-thread events (`vthreads=own`, JDK 21+).
pub fn virtual_threads_on() {
    STATE.virtual_own.store(true, SeqCst);
}

/// JVMTI VirtualThreadStart, in the new virtual thread, mounted on the carrier whose JNIEnv is
/// `env`: the thread gets its own `env_id` (a [`jvm::VtEnv`]) and, if the agent wants it, its
/// THREAD_START (group `VirtualThreads`), sent by itself.
pub fn on_vthread_start(env: *mut JNIEnv, thread: jthread) {
    // The first mount's transition has ended (see `on_vthread_mount`).
    jvm::set_transit_here(false);
    mark_carrier(env);
    let Some(vt) = jvm::VtEnv::new(env) else { return };
    let Ok(tag) = ids::indexed_tag_of(thread) else { return };
    let jni = jvm::Jni::of(env);
    // Weak: a virtual thread is reachable while it lives, and its record, kept a while after
    // its end, must not keep a million ended threads' objects alive meanwhile.
    let global = jni.new_weak(thread);
    if global.is_null() {
        return;
    }
    let key = vt.as_env() as usize;
    let rec = ThreadRec::new(key, global, tag, Some(vt));
    STATE.threads.insert(key, rec.clone());
    STATE.by_tag.insert(tag, key);
    STATE.vt_live.fetch_add(1, Relaxed);
    if let Some(vt) = rec.vt.as_deref() {
        vt.mounted(crate::vm::cputime::thread_cpu_time());
        jvm::set_vt_here(vt);
        // Found again at each mount without a table lookup (see `on_vthread_mount`).
        if let Err(e) = jvm::set_vt_env_of_current(vt) {
            log::debug!("a virtual thread's storage: {}", jvm::err_name(e));
        }
    }
    if events::is_ready() && events::enabled(JVMPI_EVENT_THREAD_START) {
        if let Err(e) = announce(&rec, key as *mut JNIEnv, false, true) {
            log::debug!("THREAD_START of a virtual thread: {e}");
        }
    }
}

thread_local! {
    /// The JNIEnv whose record this thread marked as a carrier's ([`mark_carrier`]; 0: none).
    static MARKED_CARRIER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// A carrier's own CPU clock, stopped at its first mount (-1: not a carrier); see
    /// [`current_cpu_time`].
    static CARRIER_CLOCK: std::cell::Cell<jlong> = const { std::cell::Cell::new(-1) };
}

/// The current thread, whose JNIEnv is `env`, mounts a virtual thread: its record says it is a
/// carrier (looked up once per carrier, not at every mount), and its own CPU clock stops.
fn mark_carrier(env: *mut JNIEnv) {
    let _ = MARKED_CARRIER.try_with(|m| {
        if m.get() != env as usize {
            if let Some(r) = STATE.threads.get(&(env as usize)) {
                r.carrier.store(true, Relaxed);
                m.set(env as usize);
            }
            stop_own_clock();
        }
    });
}

/// The current thread's own CPU clock stops (see [`current_cpu_time`]).
fn stop_own_clock() {
    let _ = CARRIER_CLOCK.try_with(|c| {
        if c.get() < 0 {
            c.set((crate::vm::cputime::thread_cpu_time() - jvm::vt_cpu_here()).max(0));
        }
    });
}

/// Whether a platform thread of this name is one of the virtual-thread scheduler's own, which
/// run no virtual thread and none of the program's code: its timer, which hands virtual threads
/// whose sleep or timed park is over back to the scheduler (JDK 21: `VirtualThread-unparker`;
/// JDK 25: the `ForkJoinPool-…-delayScheduler` of its pool), and JDK 24+'s
/// `VirtualThread-unblocker`, which hands back those blocked on monitors.
fn is_vt_timer(name: &str) -> bool {
    name == "VirtualThread-unparker"
        || name == "VirtualThread-unblocker"
        || (name.starts_with("ForkJoinPool") && name.ends_with("-delayScheduler"))
}

/// Whether `thread` is a carrier of the default virtual-thread scheduler
/// (`jdk.internal.misc.CarrierThread`, JDK 21+): known as one from its start, not only from its
/// first mount, so that a sampler never takes the scheduler's loop before that mount for work.
fn is_carrier_thread(jni: &jvm::Jni, thread: jthread) -> bool {
    let k = jni.object_class(thread);
    if k.is_null() {
        return false;
    }
    let carrier = jvm::class_signature(k).is_ok_and(|s| s == "Ljdk/internal/misc/CarrierThread;");
    jni.delete_local_ref(k);
    carrier
}

/// The current thread (record `rec`) is one of the virtual-thread scheduler's own
/// ([`is_vt_timer`]): it answers samplers as a carrier does, and its own clock stops.
fn mark_scheduler(rec: &ThreadRec) {
    rec.carrier.store(true, Relaxed);
    stop_own_clock();
}

/// The record of the virtual thread `thread` (by its object's tag), if the shim gave it one.
fn vthread_rec(thread: jthread) -> Option<Arc<ThreadRec>> {
    let tag = ids::tag_of(thread).ok()?;
    let env = STATE.by_tag.get(&tag).map(|e| *e)?;
    STATE.threads.get(&env).map(|r| r.clone()).filter(|r| r.tag == tag && r.vt.is_some())
}

/// HotSpot's VirtualThreadMount: the virtual thread runs again, on the carrier whose JNIEnv is
/// `env`; its events carry its own `env_id` from now on.
pub fn on_vthread_mount(env: *mut JNIEnv, thread: jthread) {
    mark_carrier(env);
    // The mount transition has ended: HotSpot posts this event right after. (From JDK 24 a
    // virtual thread that blocked on a monitor is mounted again by the JVM itself, whose end
    // of the transition no mark of the JDK's Java code tells.)
    jvm::set_transit_here(false);
    // Its VtEnv, kept in its JVMTI thread-local storage at its start (null: started before the
    // shim could see it, none at start-up; its events keep the carrier's env_id). The record
    // that owns it lives at least until the thread's end, which clears the storage first.
    let vt = jvm::with_vt_env_of_current(|v| {
        v.set_carrier(env);
        v.mounted(crate::vm::cputime::thread_cpu_time());
        v as *const jvm::VtEnv
    });
    let _ = thread;
    jvm::set_vt_here(vt.unwrap_or(std::ptr::null()));
}

/// HotSpot's VirtualThreadUnmount: the carrier runs its own code again.
pub fn on_vthread_unmount(_env: *mut JNIEnv, _thread: jthread) {
    vt_off_carrier();
}

/// The virtual thread mounted on the current carrier leaves it: its CPU time is its own, not
/// the carrier's.
fn vt_off_carrier() {
    if let Some(ran) = jvm::with_vt_here(|vt| vt.unmounted(crate::vm::cputime::thread_cpu_time())) {
        jvm::add_vt_cpu_here(ran);
    }
    jvm::set_vt_here(std::ptr::null());
}

/// JVMTI VirtualThreadEnd, in the ending virtual thread (still mounted): its THREAD_END, with
/// its own `env_id`, then its record is forgotten as a platform thread's is.
pub fn on_vthread_end(env: *mut JNIEnv, thread: jthread) {
    let Some(rec) = vthread_rec(thread) else {
        jvm::set_vt_here(std::ptr::null());
        return;
    };
    let env_id = rec.env as *mut JNIEnv;
    STATE.vt_live.fetch_sub(1, Relaxed);
    rec.ending.store(true, SeqCst);
    wait_unpinned(&rec);
    if events::enabled(JVMPI_EVENT_THREAD_END) {
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_THREAD_END, env_id);
        events::send(&mut ev);
    }
    vt_off_carrier();
    let _ = jvm::set_vt_env_of_current(std::ptr::null());
    forget_ended(env_id, env, rec, thread);
}

// ---- pins: events that name another thread -----------------------------------------------------

/// A live thread the agents were told about, named by an event (or a dump) that another thread
/// is delivering: until this is dropped the thread's THREAD_END waits, so the agent never gets
/// an env_id whose THREAD_END it has already had (HotSpot 1.5 sent such events with the thread
/// alive, at a safepoint or in the thread itself).
pub struct Pinned(Arc<ThreadRec>);

impl Pinned {
    pub fn env(&self) -> *mut JNIEnv {
        self.0.env as *mut JNIEnv
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        self.0.pins.fetch_sub(1, SeqCst);
    }
}

/// Pins `rec` if its THREAD_END has not begun (whether or not the agents heard its THREAD_START).
fn pin_live(rec: &Arc<ThreadRec>) -> Option<Pinned> {
    rec.pins.fetch_add(1, SeqCst);
    let p = Pinned(rec.clone());
    // The pin is counted before `ending` is read, and `on_thread_end` sets `ending` before it
    // reads the pins: either this sees the end begun, or that end waits for this pin.
    (!rec.ending.load(SeqCst) && !rec.suspension().ended).then_some(p)
}

fn pin_rec(rec: &Arc<ThreadRec>, agents: u32) -> Option<Pinned> {
    let p = pin_live(rec)?;
    // Each of `agents` that wants THREAD_START must have heard this thread's: its handler has
    // returned (the thread may be in it now, stopped by a dump, or still be sending it). The
    // thread itself, inside its own THREAD_START handler, is known to the agent already.
    let need = agents & events::listeners_of(JVMPI_EVENT_THREAD_START);
    let told = if jvm::current_jni() == Some(rec.env as *mut JNIEnv) { &rec.announced } else { &rec.told };
    (told.load(SeqCst) & need == need).then_some(p)
}

/// Pins the live thread of `env` if every agent of `agents` (bit a = agent a) that wants
/// THREAD_START was told about it and its THREAD_END has not begun; None otherwise (the event
/// or the entry that would name it is left out).
pub fn pin_known(env: usize, agents: u32) -> Option<Pinned> {
    let rec = STATE.threads.get(&env).map(|r| r.clone())?;
    pin_rec(&rec, agents)
}

/// [`pin_known`] for the thread whose `java.lang.Thread` has this tag.
pub fn pin_known_by_tag(tag: Tag, agents: u32) -> Option<Pinned> {
    let env = STATE.by_tag.get(&tag).map(|e| *e)?;
    // The JNIEnv of an ended thread may be a new thread's already.
    let rec = STATE.threads.get(&env).map(|r| r.clone()).filter(|r| r.tag == tag)?;
    pin_rec(&rec, agents)
}

/// This thread's pins. (Whether it is one of the shim's own threads is apart, in [`OWN`]: that
/// flag is read before every event and has no destructor; these do.)
struct Pins {
    /// Pins taken for the dump this thread is making ([`hold_pins`], [`known_env_by_tag`]).
    held: std::cell::RefCell<Vec<Pinned>>,
    /// The known thread whose env_id the events of this (own) thread carry, while pinned
    /// (set by [`with_stand_in`] for its duration).
    stand_in: std::cell::RefCell<Option<Pinned>>,
}

thread_local! {
    static PINS: Pins = const {
        Pins { held: std::cell::RefCell::new(Vec::new()), stand_in: std::cell::RefCell::new(None) }
    };
}

/// Keeps the threads a dump names ([`known_env_by_tag`]) pinned until it is dropped (after the
/// dump has been delivered). Nested dumps keep their own.
pub struct HeldPins(usize);

impl Drop for HeldPins {
    fn drop(&mut self) {
        let _ = PINS.try_with(|h| h.held.borrow_mut().truncate(self.0));
    }
}

pub fn hold_pins() -> HeldPins {
    HeldPins(PINS.with(|h| h.held.borrow().len()))
}

/// The JNIEnv of the thread whose `java.lang.Thread` has this tag, for a dump (or a dump's
/// entry) that the requesting agent gets: only if it knows the thread ([`pin_known`]), which
/// stays pinned while the last [`hold_pins`] of this thread lasts. 0 otherwise.
pub fn known_env_by_tag(tag: Tag) -> usize {
    match pin_known_by_tag(tag, events::requester_mask()) {
        Some(p) => {
            let env = p.0.env;
            PINS.with(|h| h.held.borrow_mut().push(p));
            env
        }
        None => 0,
    }
}

/// [`known_env_by_tag`] for a JNIEnv.
pub fn known_env(env: usize) -> usize {
    match pin_known(env, events::requester_mask()) {
        Some(p) => {
            PINS.with(|h| h.held.borrow_mut().push(p));
            env
        }
        None => 0,
    }
}

/// Waits (20 s at most, without calling into the VM) until no event naming `rec` is being
/// delivered by another thread.
fn wait_unpinned(rec: &ThreadRec) {
    let mine = PINS.with(|s| s.stand_in.borrow().as_ref().is_some_and(|p| std::ptr::eq(&*p.0, rec))) as usize;
    let deadline = Instant::now() + Duration::from_secs(20);
    while rec.pins.load(SeqCst) > mine {
        if Instant::now() >= deadline {
            log::warn!(
                "THREAD_END of {:#x}: an event naming the thread has been in the agent for 20 s; sent anyway",
                rec.env
            );
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

// ---- the shim's own threads --------------------------------------------------------------------

fn is_own(tag: Tag) -> bool {
    crate::vm::logger::lock(&STATE.own_tags).contains(&tag)
}

/// Marks a thread object the shim made for itself, before it starts (its JVMTI ThreadStart).
pub fn mark_own(t: jthread) {
    if let Ok(tag) = ids::tag_of(t) {
        crate::vm::logger::lock(&STATE.own_tags).push(tag);
    }
}

thread_local! {
    /// Set in the shim's own threads (at the start of their bodies).
    static OWN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Called first in the body of each of the shim's own threads.
pub fn own_thread_here() {
    OWN.with(|o| o.set(true));
}

/// Runs `f` in one of the shim's own threads with the events it sends carrying the env_id of a
/// thread every agent knows (HotSpot's GC events carried the thread that triggered the
/// collection): the main thread while it lives, else the longest-known live thread. It stays
/// pinned for the whole of `f` (a GC bracket's START and FINISH name the same thread). With no
/// such thread, the events of `f` are not sent.
pub fn with_stand_in<R>(f: impl FnOnce() -> R) -> R {
    if PINS.with(|s| s.stand_in.borrow().is_some()) {
        return f();
    }
    let agents = !0u32;
    let mut best: Option<(Tag, Pinned)> = None;
    for r in STATE.threads.iter() {
        if best.as_ref().is_some_and(|(t, _)| *t <= r.tag) {
            continue;
        }
        if let Some(p) = pin_rec(r.value(), agents) {
            best = Some((r.tag, p));
        }
    }
    PINS.with(|s| *s.stand_in.borrow_mut() = best.map(|b| b.1));
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            let _ = PINS.try_with(|s| s.stand_in.borrow_mut().take());
        }
    }
    let _clear = Clear;
    f()
}

// ---- the resumer -------------------------------------------------------------------------------

/// Hands an ended thread that is still suspended to the resumer (no call into the VM: the
/// calling thread may be the suspended one).
fn resume_later(rec: &Arc<ThreadRec>) {
    crate::vm::logger::lock(&STATE.owed).push(rec.clone());
    match STATE.resumer.get() {
        Some(t) => t.unpark(),
        None => log::warn!("a thread suspended at its end waits for the agent's ResumeThread (no resumer thread)"),
    }
}

unsafe extern "system" fn resumer_main(_jvmti: *mut jvmti::jvmtiEnv, _env: *mut JNIEnv, _arg: *mut c_void) {
    own_thread_here();
    crate::vm::logger::guard("JVMPI thread resumer", (), || {
        let _ = STATE.resumer.set(std::thread::current());
        loop {
            let owed = {
                let mut o = crate::vm::logger::lock(&STATE.owed);
                STATE.resuming.store(!o.is_empty(), SeqCst);
                std::mem::take(&mut *o)
            };
            if owed.is_empty() {
                if STATE.stop_resumer.load(SeqCst) {
                    return;
                }
                std::thread::park();
                continue;
            }
            for rec in owed {
                // The flag is taken under the lock, the call made without it (this thread may be
                // suspended in the call by the agent).
                let owed = std::mem::take(&mut rec.suspension().by_jvmpi);
                if owed {
                    match jvm::resume(rec.jthread()) {
                        Ok(()) => {
                            log::debug!("a thread suspended by the agent ({:#x}) was resumed by the shim", rec.env)
                        }
                        Err(e) => refused("resuming a thread suspended at its end", e),
                    }
                }
            }
            STATE.resuming.store(false, SeqCst);
        }
    })
}

/// Starts the resumer thread (at VM init, from a thread with `env`). It is the shim's own: not
/// a JVMPI thread, so no agent can suspend it.
pub fn start(env: *mut JNIEnv) -> Result<(), RoomError> {
    let jni = jvm::Jni::of(env);
    let t = jni.new_thread("JVMPI thread resumer").ok_or("cannot make the resumer thread")?;
    mark_own(t);
    let r = jvm::run_agent_thread(t, resumer_main, std::ptr::null(), JVMPI_MAXIMUM_PRIORITY);
    jni.delete_local_ref(t);
    r.map_err(RoomError::Jvmti)
}

/// At VM death, once JVM_SHUT_DOWN has been delivered (JVMTI still live): no new JVMPI
/// suspension is accepted, and every thread the agent left suspended is resumed — by the
/// resumer, since the calling thread may be one of them (suspended while it ran the agent's
/// handlers; it would stop at its first call into the VM). After this callback returns JVMTI
/// can resume nothing, and a thread left suspended (the exiting one, a non-daemon thread) would
/// hold up the JVM's exit for ever. Waits (at most 5 s, on a loaded machine) without calling
/// into the VM; when nothing is suspended it returns at once.
pub fn release_all() {
    release_suspended();
    // The resumer's work is done: it ends, so that the JVM's exit does not wait for a thread
    // of the shim's in native code (HotSpot waits up to 300 ms for such threads).
    STATE.stop_resumer.store(true, SeqCst);
    if let Some(r) = STATE.resumer.get() {
        r.unpark();
    }
}

fn release_suspended() {
    STATE.closed.store(true, SeqCst);
    let deadline = Instant::now() + Duration::from_secs(5);
    while STATE.suspending.load(SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let held: Vec<Arc<ThreadRec>> = STATE
        .threads
        .iter()
        .map(|r| r.value().clone())
        .chain(STATE.ended.iter().map(|e| e.value().1.clone()))
        .filter(|r| r.suspension().by_jvmpi)
        .collect();
    if held.is_empty() {
        return;
    }
    let Some(resumer) = STATE.resumer.get() else {
        log::warn!("{} threads suspended by the agent stay suspended at VM death (no resumer thread)", held.len());
        return;
    };
    log::debug!("VM death: {} threads suspended by the agent are resumed", held.len());
    crate::vm::logger::lock(&STATE.owed).extend(held);
    resumer.unpark();
    loop {
        let done = crate::vm::logger::lock(&STATE.owed).is_empty() && !STATE.resuming.load(SeqCst);
        if done || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Before an event is sent in the current thread: the thread must be registered (so that its
/// thread-local storage works) and, if the agent wants THREAD_START, announced — once, and
/// again after its THREAD_END if its JNIEnv is reused.
/// False if the thread may send no event now (its `Thread` object is still being constructed,
/// or it is finishing after its THREAD_END).
pub fn ensure_current_announced(env: *mut JNIEnv) -> bool {
    ensure_announced(env, false)
}

/// The gate's announcer (see `events::set_announcer`): before an event with `env` is sent in
/// the current thread. In one of the shim's own threads the event's own env_id becomes the
/// stand-in's ([`with_stand_in`]), or the event is not sent; elsewhere the thread is announced
/// first, and an event sent by a thread after its THREAD_END (it wakes its joiners) is not sent.
pub fn before_send(env: &mut *mut JNIEnv) -> bool {
    // A mounted virtual thread's events carry its own env_id (announced at its start).
    *env = jvm::event_env_here(*env);
    if OWN.with(|o| o.get()) {
        if env.is_null() || jvm::current_jni() != Some(*env) {
            return true;
        }
        return match PINS.with(|s| s.stand_in.borrow().as_ref().map(|p| p.env())) {
            Some(e) => {
                *env = e;
                true
            }
            None => {
                log::debug!("an event from the shim's own thread with no known thread to name: not sent");
                false
            }
        };
    }
    ensure_announced(*env, false)
}

/// The env_id for an event the current thread sends about itself: its own, or in one of the
/// shim's own threads the stand-in's ([`with_stand_in`]; NULL without one).
pub fn event_env(env: *mut JNIEnv) -> *mut JNIEnv {
    if !OWN.with(|o| o.get()) {
        return env;
    }
    PINS.with(|s| s.stand_in.borrow().as_ref().map_or(std::ptr::null_mut(), |p| p.env()))
}

/// The thread taking the JVM down (`DestroyJavaVM`, or the one in `System.exit`) has had its
/// JVMTI ThreadEnd before VM death (JDK 11+), but what VM death sends (classes owed, the last GC
/// bracket, JVM_SHUT_DOWN) comes from it: its THREAD_END is held back ([`end_exiting`]), so it
/// is announced once and stays the agent's known thread to the end. Kept here: its JNIEnv and a
/// global reference to its `java.lang.Thread`.
pub fn hold_end(env: *mut JNIEnv, thread: jthread) {
    let jni = jvm::Jni::of(env);
    let g = jni.new_global_ref(thread);
    if g.is_null() {
        on_thread_end(env, thread);
        return;
    }
    // Two threads taking the JVM down: the later one is kept (VM death comes in it); the earlier
    // one's end stays unrecorded (its JNIEnv is another thread's: no JNI call through it here).
    let _ = crate::vm::logger::lock(&STATE.exiting).replace((env as usize, g as usize));
}

/// VM death, after JVM_SHUT_DOWN (the gate closed, so no THREAD_END reaches the agent): the end
/// of the thread taking the JVM down ([`hold_end`]) is recorded.
pub fn end_exiting() {
    let Some((e, t)) = crate::vm::logger::lock(&STATE.exiting).take() else { return };
    // Only in that thread itself (VM death comes in it): its JNIEnv is used for JNI calls.
    if jvm::current_jni() == Some(e as *mut JNIEnv) {
        on_thread_end(e as *mut JNIEnv, t as jthread);
    }
}

/// Announces the current thread if it has not been; false if it may send no event (it is
/// finishing after its THREAD_END).
fn ensure_announced(env: *mut JNIEnv, even_after_end: bool) -> bool {
    if env.is_null() || jvm::here() & jvm::ANNOUNCED != 0 || jvm::temporarily_attached() {
        return true;
    }
    if jvm::current_jni() != Some(env) {
        return true; // an event about another thread (catch-up); that thread is announced by its sender
    }
    let mut after_end = false;
    let rec = match STATE.threads.get(&(env as usize)).map(|r| r.clone()) {
        // Entered again by another thread's `announce_all` while this one finishes after its
        // THREAD_END (that record is about to be retired): the agent may hear no more of it.
        Some(r) if !even_after_end && has_ended(&r) => {
            after_end = true;
            None
        }
        Some(r) => Some(r),
        None => jvm::current_thread().ok().filter(|t| !t.is_null()).and_then(|t| {
            let jni = jvm::Jni::of(env);
            // The thread is finishing after its THREAD_END (it takes its own Thread object's lock
            // to wake its joiners): the agent may hear no more of it.
            let ended = STATE.ended.get(&(env as usize)).map(|e| e.1.tag);
            if !even_after_end && ended.is_some() && ended == ids::tag_of(t).ok() {
                jni.delete_local_ref(t);
                after_end = true;
                return None;
            }
            // A virtual thread borrows its carrier's JNIEnv: it is not a JVMPI thread.
            let rec = if jni.is_virtual_thread(t) { None } else { register(&jni, env as usize, t) };
            jni.delete_local_ref(t);
            rec
        }),
    };
    if let Some(rec) = rec {
        if even_after_end {
            // Live again for the agent (before its THREAD_START goes out, which checks this).
            STATE.ended.remove(&(env as usize));
        }
        if events::enabled(JVMPI_EVENT_THREAD_START)
            && announce(&rec, env, false, false).is_err_and(|e| matches!(e, RoomError::Unnamed))
        {
            // Not announced yet, so its events are not sent (HotSpot announced an attaching
            // thread once its Thread object existed).
            return false;
        }
        jvm::set_announced_here(true);
        STATE.ended.remove(&(env as usize));
    }
    !after_end
}

// ---- threads that were there before the shim -------------------------------------------------

fn env_offset(jni: &jvm::Jni) -> Option<jlong> {
    if let Some(off) = STATE.env_offset.get() {
        return *off;
    }
    // Measured outside the cell (not in `get_or_init`): the calls enter the VM, where an agent
    // may suspend this thread, and no other thread may wait for it there. Every thread that
    // measures finds the same offset; the first one kept is the answer.
    let measured = (|| {
        let me = jvm::current_thread().ok()?;
        let eetop = jni.thread_eetop(me)?;
        jni.delete_local_ref(me);
        let off = jni.raw() as jlong - eetop;
        (eetop != 0 && (0..65536).contains(&off)).then_some(off)
    })();
    *STATE.env_offset.get_or_init(|| measured)
}

/// The JNIEnv of a running thread the shim has not seen start.
fn env_of_running_thread(jni: &jvm::Jni, thread: jthread) -> Option<usize> {
    let off = env_offset(jni)?;
    let eetop = jni.thread_eetop(thread).filter(|&e| e != 0)?;
    let env = (eetop + off) as usize;
    // The first word of a JNIEnv is its function table: the same as the current thread's.
    // SAFETY: `eetop` is the live JavaThread of a listed thread and `off` lies inside it.
    let same_table = unsafe { *(env as *const usize) == *(jni.raw() as *const usize) };
    same_table.then_some(env)
}

/// Enters every live thread (catch-up at start, and when THREAD_START is enabled late) and
/// announces those the agent has not heard of.
pub fn announce_all() {
    let Some(env) = jvm::current_jni() else { return };
    let jni = jvm::Jni::of(env);
    let Ok(all) = jvm::all_threads() else { return };
    for t in all {
        if ids::tag_of(t).is_ok_and(is_own) {
            jni.delete_local_ref(t);
            continue;
        }
        let known = ids::tag_of(t).ok().and_then(|tag| STATE.by_tag.get(&tag).map(|e| *e));
        let target = known.or_else(|| env_of_running_thread(&jni, t));
        match target.and_then(|e| register(&jni, e, t)) {
            Some(rec) if has_ended(&rec) => {
                // Still listed while it finishes after its THREAD_END (it wakes its joiners): not
                // a new thread. A record `register` has just made for it again is dropped.
                retire_if_new(&rec);
            }
            Some(rec) => {
                // Pinned while it is announced from this thread: its THREAD_END, if it is ending
                // now, comes after this THREAD_START; one whose end has begun is not announced.
                if let Some(_pin) = pin_live(&rec) {
                    let _ = announce(&rec, env, false, true);
                }
            }
            None => log::info!("a running thread's JNIEnv could not be found; it is announced when it sends an event"),
        }
        jni.delete_local_ref(t);
    }
    // Virtual threads are not in JVMTI's list: those the shim follows are announced from here.
    let live: Vec<Arc<ThreadRec>> =
        STATE.threads.iter().filter(|r| r.vt.is_some()).map(|r| r.value().clone()).collect();
    for rec in live {
        if let Some(_pin) = pin_live(&rec) {
            let _ = announce(&rec, env, false, true);
        }
    }
}

/// Whether the thread of `rec`'s `java.lang.Thread` has had its THREAD_END: the VM still lists a
/// thread after its JVMTI ThreadEnd, while it wakes its joiners. (`on_thread_end` enters the
/// record in `ended` before it leaves `threads`, so a record [`register`] made after that sees it.)
fn has_ended(rec: &ThreadRec) -> bool {
    STATE.ended.get(&rec.env).is_some_and(|e| e.1.tag == rec.tag)
}

/// Takes a record made again for an ended thread out of the tables (not the ended record itself).
fn retire_if_new(rec: &Arc<ThreadRec>) {
    if STATE.ended.get(&rec.env).is_some_and(|e| Arc::ptr_eq(&e.1, rec)) {
        return;
    }
    if STATE.threads.remove_if(&rec.env, |_, cur| Arc::ptr_eq(cur, rec)).is_some() {
        log::debug!("a thread listed after its THREAD_END ({:#x}) is not entered again", rec.env);
        STATE.by_tag.remove_if(&rec.tag, |_, e| *e == rec.env);
        crate::vm::logger::lock(&STATE.graveyard).push((Instant::now(), rec.clone()));
    }
}

/// `RequestEvent(JVMPI_EVENT_THREAD_START, thread object ID)`.
pub fn request(id: jobjectID) -> Result<(), RoomError> {
    let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
    let jni = jvm::Jni::of(env);
    let known = STATE.by_tag.get(&Tag::of_id(id)).map(|e| *e);
    let rec = match known.and_then(|e| STATE.threads.get(&e).map(|r| r.clone())) {
        Some(r) => r,
        None => {
            let t = ids::object_of(id)?;
            let rec = env_of_running_thread(&jni, t).and_then(|e| register(&jni, e, t));
            jni.delete_local_ref(t);
            rec.ok_or_else(|| format!("{id:p} is not a running thread"))?
        }
    };
    announce(&rec, env, true, true)
}

// ---- JVMPI functions ---------------------------------------------------------------------------

/// `GetThreadObject`: from the table, so it answers in any thread and after JVM_SHUT_DOWN.
pub fn get_thread_object(env: *mut JNIEnv) -> jobjectID {
    lookup(env, "GetThreadObject").map_or(std::ptr::null_mut(), |rec| rec.tag.id())
}

/// `SetThreadLocalStorage` of agent `a`.
pub fn set_tls(Agent(a): Agent, env: *mut JNIEnv, p: *mut c_void) {
    if let Some(rec) = lookup(env, "SetThreadLocalStorage") {
        rec.tls[a].store(p as usize, Release);
    }
}

/// `GetThreadLocalStorage` of agent `a`.
pub fn get_tls(Agent(a): Agent, env: *mut JNIEnv) -> *mut c_void {
    lookup(env, "GetThreadLocalStorage").map_or(std::ptr::null_mut(), |r| r.tls[a].load(Acquire) as *mut c_void)
}

/// Whether an agent's SuspendThread (or list) is inside JVMTI now (see `events::set_holder`).
pub fn suspension_under_way() -> bool {
    STATE.suspending.load(SeqCst) > 0
}

fn suspend_rec(rec: &Arc<ThreadRec>) -> Result<(), jvm::Error> {
    if events::draining() {
        // VM death waits for the handlers in flight, and a suspension can hold one up for
        // seconds (JDK 11, see `events::set_holder`). No event reaches the agent any more and
        // the JVM stops every thread soon after JVM_SHUT_DOWN: the suspension is refused, as
        // for a thread that is going away (SuspendThreadList says JVMPI_FAIL for it). Not
        // counted below: a refused call keeps nobody waiting.
        return Err(jvmti_bindings::sys::jvmti::jvmtiError::THREAD_NOT_ALIVE);
    }
    // Counted while under way, so that VM death can wait for it (see `release_all`).
    STATE.suspending.fetch_add(1, SeqCst);
    let r = if STATE.closed.load(SeqCst) || rec.suspension().ended {
        Err(jvmti_bindings::sys::jvmti::jvmtiError::THREAD_NOT_ALIVE)
    } else {
        // No lock is held across the call: the caller may be suspended in it by another thread.
        jvm::suspend(rec.jthread())
    };
    if let Err(e) = r {
        STATE.suspending.fetch_sub(1, SeqCst);
        return Err(e);
    }
    let owed = {
        let mut s = rec.suspension();
        s.by_jvmpi = true;
        // The thread was marked ended, or VM death closed suspensions, while this one was under
        // way: nobody else will see that it is owed a resumption.
        s.ended || STATE.closed.load(SeqCst)
    };
    STATE.suspending.fetch_sub(1, SeqCst);
    if owed {
        resume_later(rec);
        return Ok(());
    }
    // ThreadHasRun: did the thread burn CPU between the previous suspension and this one? A
    // virtual thread: is it on a carrier now (one that waits for a carrier is not running,
    // whatever it did before); a carrier never (see `has_run`).
    if let Some(vt) = rec.vt.as_deref() {
        // Mounted, and not stopped inside the JDK's mount or unmount code: a sampler's
        // suspension of a virtual thread that is being mounted or unmounted waits for the
        // switch to end and stops it right there (at the end of a mount, or with the unmount
        // just begun), where it runs none of the program's work; its trace would show the
        // call that switched (`Thread.yield`, `LockSupport.park`) as where it ran.
        rec.has_run.store(vt.is_mounted() && !crate::rooms::calltrace::switching_now(rec.jthread()), SeqCst);
    } else if rec.carrier.load(Relaxed) {
        rec.has_run.store(false, SeqCst);
    } else if let Ok(cpu) = jvm::thread_cpu_time(rec.jthread()) {
        let before = rec.cpu_at_suspend.swap(cpu, SeqCst);
        rec.has_run.store(before < 0 || cpu > before, SeqCst);
    }
    Ok(())
}

fn resume_rec(rec: &ThreadRec) -> Result<(), jvm::Error> {
    {
        let mut s = rec.suspension();
        if s.ended && !s.by_jvmpi {
            // Ended, and resumed already (by the resumer): nothing to do.
            return Ok(());
        }
        s.by_jvmpi = false;
    }
    jvm::resume(rec.jthread())
}

/// The record a ResumeThread names: a live thread's, or one that ended in the last seconds.
fn lookup_for_resume(env: *mut JNIEnv, what: &str) -> Option<Arc<ThreadRec>> {
    if let Some((_, rec)) = STATE.ended.get(&(env as usize)).map(|e| e.clone()) {
        if !STATE.threads.contains_key(&(env as usize)) {
            return Some(rec);
        }
    }
    lookup(env, what)
}

/// Logs a JVMTI refusal of a thread call: quietly when it is one of the shim's states (the VM
/// is going away, the thread is ending or already in the asked state), as a warning otherwise.
fn refused(what: &str, e: jvm::Error) {
    use jvmti_bindings::sys::jvmti::jvmtiError as E;
    let level = if matches!(e, E::THREAD_NOT_ALIVE | E::THREAD_SUSPENDED | E::THREAD_NOT_SUSPENDED) {
        log::Level::Debug
    } else {
        events::edge_level(Some(e))
    };
    log::log!(level, "{what}: {}", jvm::err_name(e));
}

pub fn suspend(env: *mut JNIEnv) {
    if jvm::current_jni().is_some_and(|me| me == env || jvm::event_env_here(me) == env) {
        // HotSpot ignored self-suspension: the sampler must keep running to resume the others.
        log::debug!("SuspendThread({env:p}): the calling thread itself; ignored as HotSpot did");
        return;
    }
    if let Some(rec) = lookup(env, "SuspendThread") {
        if let Err(e) = suspend_rec(&rec) {
            refused("SuspendThread", e);
        }
    }
}

pub fn resume(env: *mut JNIEnv) {
    if let Some(rec) = lookup_for_resume(env, "ResumeThread") {
        if let Err(e) = resume_rec(&rec) {
            refused("ResumeThread", e);
        }
    }
}

/// `SuspendThreadList` / `ResumeThreadList`: one result per entry (JVMPI_SUCCESS / JVMPI_FAIL).
pub fn for_list(envs: &[*mut JNIEnv], results: &mut [jint], suspend: bool) {
    let what = if suspend { "SuspendThreadList" } else { "ResumeThreadList" };
    for (env, res) in envs.iter().zip(results.iter_mut()) {
        let rec = if suspend { lookup(*env, what) } else { lookup_for_resume(*env, what) };
        *res = match rec {
            Some(rec) => {
                let r = if suspend { suspend_rec(&rec) } else { resume_rec(&rec) };
                if r.is_ok() {
                    JVMPI_SUCCESS
                } else {
                    JVMPI_FAIL
                }
            }
            None => JVMPI_FAIL,
        };
    }
}

/// `ThreadHasRun`: whether the thread ran between its two latest JVMPI suspensions (its CPU
/// clock moved). A virtual thread: whether it was mounted at the latest one. A carrier: never.
/// The work a carrier runs is its virtual threads', each sampled as itself while mounted; its
/// own work, the scheduler's (finding the next virtual thread, mounting it), is the runtime's,
/// as the operating system's scheduling of HotSpot 1.5's threads was: a sampler that took it
/// for a thread of the program at work counted the scheduler's frames (`ForkJoinPool`'s) as
/// the program's, a second running thread beside the virtual thread it was running.
pub fn has_run(env: *mut JNIEnv) -> jboolean {
    lookup(env, "ThreadHasRun").is_some_and(|r| !r.carrier.load(Relaxed) && r.has_run.load(SeqCst)) as jboolean
}

/// `GetThreadStatus`. HotSpot answered JVMPI_THREAD_RUNNABLE for a thread it could not find or
/// read; so does the shim (a garbage JNIEnv is still logged).
pub fn status(env: *mut JNIEnv) -> jint {
    let Some(rec) = lookup(env, "GetThreadStatus") else { return JVMPI_THREAD_RUNNABLE };
    let st = match jvm::thread_state(rec.jthread()) {
        Ok(s) => s,
        Err(e) => {
            refused("GetThreadStatus", e);
            return JVMPI_THREAD_RUNNABLE;
        }
    };
    let mut r = if rec.carrier.load(Relaxed) {
        // A carrier waits for virtual threads to run, and runs them (see `has_run`): the work
        // is theirs, each with its own status.
        JVMPI_THREAD_CONDVAR_WAIT
    } else if st & jvmti::JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER != 0 {
        JVMPI_THREAD_MONITOR_WAIT
    } else if st & jvmti::JVMTI_THREAD_STATE_WAITING != 0 {
        JVMPI_THREAD_CONDVAR_WAIT
    } else {
        JVMPI_THREAD_RUNNABLE
    };
    // JVMPI: the SUSPENDED bit is java.lang.Thread.suspend's, not JVMPI SuspendThread's.
    if st & jvmti::JVMTI_THREAD_STATE_SUSPENDED != 0 && !rec.suspension().by_jvmpi {
        r |= JVMPI_THREAD_SUSPENDED;
    }
    if st & jvmti::JVMTI_THREAD_STATE_INTERRUPTED != 0 {
        r |= JVMPI_THREAD_INTERRUPTED;
    }
    r
}

/// `GetCurrentThreadCpuTime`: the OS thread's CPU time, the clock JVMTI's
/// `GetCurrentThreadCpuTime` and HotSpot 1.5 read, mostly without a system call (see
/// `vm::cputime`); for a virtual thread that is a JVMPI thread of its own, its own: the CPU time
/// its carriers spent while it was mounted (JVMTI has no CPU clock for virtual threads).
///
/// A carrier's own clock stops at its first mount: what it does besides running virtual
/// threads is mounting and unmounting them (the JDK's continuation code, JVMTI's transitions,
/// the shim's following of them) and finding the next one, the runtime's work, as the
/// operating system's switching and scheduling of HotSpot 1.5's threads was. With its clock
/// running, HPROF `cpu=times` charged that to the carriers' `ForkJoinTask…exec` frames, under
/// which the virtual threads run: three quarters of all CPU time of a program whose virtual
/// threads park often (tests/java/VtTasks.java).
pub fn current_cpu_time() -> jlong {
    let now = crate::vm::cputime::thread_cpu_time();
    // A mounted virtual thread's own: what it used on every carrier that ran it; a carrier's,
    // stopped; any other thread's (a carrier before its first mount, `vthreads=carrier`) its
    // clock, without what the virtual threads it ran used.
    jvm::with_vt_here(|vt| vt.cpu_time(now))
        .or_else(|| CARRIER_CLOCK.try_with(|c| c.get()).ok().filter(|&c| c >= 0))
        .unwrap_or_else(|| now - jvm::vt_cpu_here())
}

/// The body of a thread made by `CreateSystemThread`.
pub type SystemThreadFn = unsafe extern "C" fn(*mut c_void);

unsafe extern "system" fn system_thread_main(_jvmti: *mut jvmti::jvmtiEnv, _jni: *mut JNIEnv, arg: *mut c_void) {
    // create_system_thread (below) passes the agent's number and function through JVMTI's `void*`.
    // SAFETY: `arg` is that box, handed over to this thread.
    let (a, f) = *unsafe { Box::from_raw(arg as *mut (Agent, SystemThreadFn)) };
    // SAFETY: the agent asked for `f` to be run in a new thread; JVMPI passes it no argument.
    table::within(a, || unsafe { f(std::ptr::null_mut()) });
}

/// `CreateSystemThread` of agent `a` (the thread runs on its behalf: its `GetEnv` answers `a`'s table).
pub fn create_system_thread(a: Agent, name: &str, priority: jint, f: Option<SystemThreadFn>) -> jint {
    use jvmti_bindings::sys::jni::{JNI_ERR, JNI_OK};
    let Some(f) = f else {
        log::warn!("CreateSystemThread({name}): NULL function; JNI_ERR");
        return JNI_ERR;
    };
    if !events::is_ready() && jvm::phase().ok() != Some(jvmti::JVMTI_PHASE_LIVE) {
        log::warn!("CreateSystemThread({name}): the VM is not initialised yet (wait for JVM_INIT_DONE); JNI_ERR");
        return JNI_ERR;
    }
    let Some(env) = jvm::attach_current() else {
        log::warn!("CreateSystemThread({name}): cannot attach the calling thread; JNI_ERR");
        return JNI_ERR;
    };
    let jni = jvm::Jni::of(env);
    let Some(t) = jni.new_thread(name) else {
        log::warn!("CreateSystemThread({name}): could not make a java.lang.Thread; JNI_ERR");
        return JNI_ERR;
    };
    let prio = priority.clamp(JVMPI_MINIMUM_PRIORITY, JVMPI_MAXIMUM_PRIORITY);
    let arg = Box::into_raw(Box::new((a, f)));
    let r = jvm::run_agent_thread(t, system_thread_main, arg as *const c_void, prio);
    if r.is_err() {
        // SAFETY: the thread did not start, so the box is still ours.
        drop(unsafe { Box::from_raw(arg) });
    }
    jni.delete_local_ref(t);
    match r {
        Ok(()) => JNI_OK,
        Err(e) => {
            log::warn!("CreateSystemThread({name}): {}; JNI_ERR", jvm::err_name(e));
            JNI_ERR
        }
    }
}

/// The thread (a global reference) behind a JNIEnv, or None (logged) for an unknown one.
pub fn jthread_of(env: *mut JNIEnv, what: &str) -> Option<jthread> {
    lookup(env, what).map(|r| r.jthread())
}

/// The JNIEnv of a live thread (a reference the caller owns), if the shim can find it.
pub fn env_of(thread: jthread) -> Option<*mut JNIEnv> {
    let jni = jvm::Jni::current()?;
    let known = ids::tag_of(thread).ok().and_then(|tag| STATE.by_tag.get(&tag).map(|e| *e));
    known.or_else(|| env_of_running_thread(&jni, thread)).map(|e| e as *mut JNIEnv)
}
