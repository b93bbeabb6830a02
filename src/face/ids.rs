//! JVMPI object IDs (`jobjectID`): every object, class and thread object the agent hears of is
//! named by a JVMTI object tag.
//!
//! A tag is set once and never changes while its object lives, so an ID is stable for the
//! object's whole life: the shim never has to send `OBJECT_MOVE`, and `DisableGC` has nothing to
//! protect. Tags are `slot × 16` (so that IDs look like aligned pointers to agents that hash
//! them, `id >> 3`), plus 8 for objects defined by OBJECT_ALLOC (below). An agent hashing IDs as
//! HotSpot's addresses, `(id >> 3) % size`, so finds classes (and other objects named without
//! OBJECT_ALLOC) in even buckets and OBJECT_ALLOC's objects in odd ones. That is on purpose:
//! HPROF looks up the class of every allocation in its object table, and a layout filling every
//! bucket with both (`slot × 8`, the flag at 2^30) made those lookups walk the object chains —
//! on javac with `heap=sites`, `hprof_objmap_lookup` went from 0.4 % to 2.6 % of the CPU while
//! the frees' walks saved only 1.3 % (2026-11-26, perf, one run each).
//!
//! **Slots are reused.** Agents of JVMPI's time keep IDs in 32-bit integers, as the 32-bit JVMs
//! they were written for allowed (addresses, reused after a collection). So a slot is given back
//! once its object's death has been dealt with in a GC bracket (its OBJECT_FREE delivered, or
//! dropped when the agent never heard of it as a defined object; `gc` calls [`release`]), into a
//! bitmap of free slots. Once 2^26 slots have been made (IDs up to 2^30), slots come from that
//! bitmap before new ones are made: every live object's ID stays unique, and below 2^31 while
//! fewer than 2^27 slots are in use (live objects, deaths not yet dealt with, and a few slots
//! cached per thread). Until then no ID is reused at all, which agents that match deaths to
//! allocations late rely on (NiagaraST). The JVMTI ObjectFree event is on from VM start for
//! that (`gc::start`). Threads take slots 64 at a time (one lock per 64 allocations); heap walks
//! take blocks of 4096 ([`TagBlock`]).
//!
//! **ID → object in O(1).** JVMTI can find an object by tag only with `GetObjectsWithTags`,
//! which scans the whole tag map (milliseconds at a million tagged objects). So the shim keeps an
//! index, slot → weak global reference, filled lazily:
//! * classes are indexed when the shim first needs their tag ([`indexed_tag_of`]); other
//!   objects when first looked up;
//! * objects tagged by a heap dump or by allocation tracking are not (that would cost every
//!   allocation a weak reference). A miss is answered with one `GetObjectsWithTags`; after a few
//!   misses the whole index is rebuilt at once ([`jvm::each_tagged_object`]: one heap
//!   iteration in a second JVMTI environment, one listing), so a run of requests pays about one
//!   heap iteration in all. When misses keep coming for objects allocation tracking tagged,
//!   allocation starts indexing the objects it tags ([`bind`]), so that such agents stay O(1).
//! * a heap walk also records, per slot, the object's class tag and size ([`note_in_walk`], for
//!   the objects it tags and the defined ones; an object keeps it for its life): what a
//!   requested OBJECT_ALLOC needs, without finding the object at all.
//!
//! Entries go when the slot is released. The index and the descriptions take 16 bytes per slot
//! of the chunks (65,536 slots) that have any entry; none for a program that never asks.

use crate::face::abi::jobjectID;
use crate::face::error::FaceError;
use crate::vm::jvm;
use crate::vm::safemem;
use jvmti_bindings::sys::jni::{jlong, jobject};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Mutex, OnceLock};

/// Set in the tag of objects defined to the agent by OBJECT_ALLOC.
pub const DEFINED: jlong = 8;
const SHIFT: u32 = 4;
/// Slots below this have tags (and so IDs) below 2^31.
pub const SMALL_SLOTS: u64 = 1 << 27;

/// How many slots a thread takes at a time.
const BATCH: usize = 64;
/// How many slots a heap walk takes at a time.
pub const BLOCK: usize = 4096;
/// Slots are reused only once this many have been made (IDs below 2^30 until then): an agent
/// that matches deaths to allocations late (NiagaraST keeps OBJECT_FREE's IDs in a list and
/// matches them when it writes its profile) sees no reuse in a run of fewer allocations. The
/// environment variable `JVMPI_SHIM_ID_REUSE_AFTER` sets it (tests).
const REUSE_AFTER: u64 = 1 << 26;

/// The ids room's state. Every field is what a separate `static` was: its address is fixed at
/// link time, so the hot paths (`slot`, `entry`, `bind`, `plausible`) read it as before.
struct IdsState {
    // -- slots --
    /// The next slot never given out (slot 0 is tag 0: "untagged"); advanced by [`take`] as
    /// slots are made, read by [`plausible`].
    high: AtomicU64,
    /// Slots given back, reused once `high` has reached the reuse threshold: put by
    /// [`give_back`] (deaths dealt with in a GC bracket, ended threads' caches, dropped
    /// [`TagBlock`]s), taken by [`take`].
    free: Mutex<FreeSet>,
    /// Slots handed out again, counted by [`take`] (for the report).
    reused: AtomicU64,
    /// The warning that IDs may exceed 2^31 was given (set once by [`take`]).
    warned_large: AtomicBool,
    /// The reuse threshold: [`REUSE_AFTER`], or `JVMPI_SHIM_ID_REUSE_AFTER`, read once by
    /// [`reuse_after`] (a unit test sets it first).
    reuse_after: OnceLock<u64>,
    /// Serialises tag assignment for objects others may be tagging at the same moment; held by
    /// [`tag_of`] and [`tag_of_while_others_suspended`] between reading and setting a tag.
    assign: Mutex<()>,
    // -- the index --
    /// Slot → index entries, in chunks of 65,536 slots: published (never freed) by [`entry`]
    /// when a chunk is first needed, read by every lookup.
    table: [AtomicPtr<Chunk>; CHUNKS],
    /// Chunks made, counted by [`entry`] (for the report).
    chunks_made: AtomicUsize,
    /// Groups of slots whose pages were given back, counted by [`forget_group`] (for the log).
    groups_forgotten: AtomicUsize,
    /// Misses counted by [`object_of`] since the last rebuild (reset by [`rebuild`]).
    misses: AtomicU64,
    /// Misses on allocation-tracked (defined) objects, counted by [`object_of`]; never reset.
    defined_misses: AtomicU64,
    /// Misses since the last rebuild on slots a heap walk described, counted by [`object_of`]
    /// (reset by [`rebuild`]).
    described_misses: AtomicU64,
    /// A heap walk has described objects since the last rebuild: set by [`note`] and [`noting`], cleared by
    /// [`rebuild`].
    noted: AtomicBool,
    /// Allocation tracking indexes what it tags (agents that resolve tracked objects): set once
    /// by [`object_of`], read by [`bind`] on every tracked allocation.
    index_allocations: AtomicBool,
    /// Held by [`rebuild`]: one rebuild at a time.
    rebuild: Mutex<()>,
    /// Rebuilds done, counted by [`rebuild`] (for the report and the benchmark; a thread that
    /// waited for another's rebuild sees it changed and does not rebuild again).
    rebuilds: AtomicU64,
}

static STATE: IdsState = IdsState {
    high: AtomicU64::new(1),
    free: Mutex::new(FreeSet { bits: Vec::new(), count: 0, cursor: 0 }),
    reused: AtomicU64::new(0),
    warned_large: AtomicBool::new(false),
    reuse_after: OnceLock::new(),
    assign: Mutex::new(()),
    table: [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS],
    chunks_made: AtomicUsize::new(0),
    groups_forgotten: AtomicUsize::new(0),
    misses: AtomicU64::new(0),
    defined_misses: AtomicU64::new(0),
    described_misses: AtomicU64::new(0),
    noted: AtomicBool::new(false),
    index_allocations: AtomicBool::new(false),
    rebuild: Mutex::new(()),
    rebuilds: AtomicU64::new(0),
};

fn reuse_after() -> u64 {
    *STATE.reuse_after.get_or_init(|| {
        std::env::var("JVMPI_SHIM_ID_REUSE_AFTER").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(REUSE_AFTER)
    })
}

/// A slot: a position in the ID index, the tag it gives shifted out (`tag = slot × 16`, the
/// flags in the low bits). Its own type, so that a slot is never taken for a tag, nor a tag for
/// a slot, where both travel between the functions of this file; the arithmetic on runs of
/// slots and on the bit sets stays on the integer inside.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Slot(u64);

impl Slot {
    /// The slot of `tag` (its flags dropped).
    #[inline]
    fn of(tag: jlong) -> Slot {
        Slot((tag as u64) >> SHIFT)
    }
    /// The tag the slot gives (no flags set).
    #[inline]
    fn tag(self) -> jlong {
        (self.0 << SHIFT) as jlong
    }
}

/// The slots given back: one bit per slot below 2^27 (16 MiB at most), found again with a
/// cursor that goes round.
struct FreeSet {
    bits: Vec<u64>,
    count: usize,
    cursor: usize,
}

impl FreeSet {
    /// Whether `slot` was not there yet.
    fn put(&mut self, Slot(slot): Slot) -> bool {
        if slot == 0 || slot >= SMALL_SLOTS {
            return false;
        }
        let (w, b) = ((slot / 64) as usize, slot % 64);
        if w >= self.bits.len() {
            // To the word needed, no further: the Vec's own growth spares the copies, and the
            // words past its length are not written (a power of two here wrote 16 MiB of zeros
            // once the slots made passed 2^26, where reuse begins, for slots that are never
            // given back).
            self.bits.resize(w + 1, 0);
        }
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.count += 1;
            return true;
        }
        false
    }
    /// Up to `n` slots (only when there are that many: a scan then always finds them).
    fn take(&mut self, n: usize, into: &mut Vec<Slot>) -> usize {
        if self.count < n || self.bits.is_empty() {
            return 0;
        }
        let mut got = 0;
        let words = self.bits.len();
        while got < n {
            let w = self.cursor % words;
            let mut x = self.bits[w];
            while x != 0 && got < n {
                let b = x.trailing_zeros() as u64;
                x &= x - 1;
                into.push(Slot(w as u64 * 64 + b));
                got += 1;
            }
            self.bits[w] = x;
            if x == 0 {
                self.cursor = (w + 1) % words;
            }
        }
        self.count -= got;
        got
    }
}

/// `n` slots into `into` (used from its end): given-back ones once reuse has begun, else new.
fn take(n: usize, into: &mut Vec<Slot>) {
    let start = into.len();
    if STATE.high.load(Relaxed) >= reuse_after() {
        let mut f = crate::vm::logger::lock(&STATE.free);
        let got = f.take(n, into);
        for &Slot(s) in &into[start..] {
            counted_out(s, s + 1);
        }
        drop(f);
        if got == n {
            STATE.reused.fetch_add(got as u64, Relaxed);
            into[start..].reverse(); // lowest first
            return;
        }
    }
    let (first, end) = new_run(n);
    // New slots are handed out lowest first.
    into.extend((first..end).rev().map(Slot));
}

/// `n` slots never handed out before, as a run (first, end).
fn new_run(n: usize) -> (u64, u64) {
    let first = STATE.high.fetch_add(n as u64, Relaxed);
    counted_out(first, first + n as u64);
    if first + n as u64 > SMALL_SLOTS && !STATE.warned_large.swap(true, Relaxed) {
        log::warn!("more than 2^27 object IDs in use at once: IDs from now on may exceed 2^31 (still unique)");
    }
    (first, first + n as u64)
}

/// `n` new slots as a run (first, end), when [`take`] would hand out new ones (reuse has not
/// begun); None when it would reuse given-back slots.
fn take_run(n: usize) -> Option<(u64, u64)> {
    (STATE.high.load(Relaxed) < reuse_after()).then(|| new_run(n))
}

fn give_back(slots: &[Slot]) {
    if slots.is_empty() {
        return;
    }
    let mut f = crate::vm::logger::lock(&STATE.free);
    for &s in slots {
        if f.put(s) {
            let g = s.0 / GROUP;
            // The last slot of a group whose slots are all made: its pages go back.
            if OUT[g as usize].fetch_sub(1, Relaxed) == 1 && (g + 1) * GROUP <= STATE.high.load(Relaxed) {
                forget_group(g);
            }
        }
    }
}

thread_local! {
    /// The ids room's only per-thread state, kept apart because it has a destructor (its slots
    /// go back when the thread ends): a thread-local with a destructor is registered on first
    /// use and is gone while the thread ends, where [`slot`] falls back to taking one slot.
    /// Taken and refilled by [`slot`].
    static CACHE: RefCell<TagBlock> = const { RefCell::new(TagBlock::per_thread()) };
}

/// Entries of [`RECENT`].
const RECENT_SLOTS: usize = 64;

/// A handle `jobjectID2jobject` gave this thread: its address, what its slot held then (the
/// object's address, read without the JVM) and the ID it was asked for.
struct Recent {
    handle: Cell<usize>,
    content: Cell<usize>,
    id: Cell<usize>,
}

thread_local! {
    /// The handles `jobjectID2jobject` gave this thread lately (direct-mapped by address; no
    /// destructor), so that `jobject2jobjectID` on one of them answers without asking the JVM:
    /// JNI's only check that a pointer is a reference of this thread, `GetObjectRefType`, walks
    /// every local-reference block of the current native frame (HotSpot), so an agent that
    /// resolves a dump's objects one by one without deleting its references paid for all of them
    /// at each call. Written by [`handed_out`], read by [`recent_id`].
    static RECENT: [Recent; RECENT_SLOTS] = const {
        [const { Recent { handle: Cell::new(0), content: Cell::new(0), id: Cell::new(0) } }; RECENT_SLOTS]
    };
}

fn recent_slot(h: usize) -> usize {
    (h >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - RECENT_SLOTS.trailing_zeros())
}

// ---- typed identities --------------------------------------------------------------------------

/// An object's JVMTI tag as the shim gives them out: a multiple of 8 (the slot, shifted), with
/// the [`DEFINED`] bit for an object OBJECT_ALLOC defined; its jobjectID is the same bits
/// ([`to_id`]). Zero cost: the `jlong` JVMTI reads and writes, `#[repr(transparent)]`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Tag(pub jlong);

impl Tag {
    /// The object's ID (the JVMPI side of the tag).
    #[inline]
    pub fn id(self) -> jobjectID {
        to_id(self.0)
    }
    /// The tag of the object whose ID is `id`.
    #[inline]
    pub fn of_id(id: jobjectID) -> Tag {
        Tag(to_tag(id))
    }
}

/// The tag of a class (its `java.lang.Class` object), where an object's tag and its class's go
/// side by side (what a heap walk records of an object: [`note`], [`described`]); a class is
/// an object too, so both come from the same slots, and the compiler keeps them apart.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct ClassTag(pub jlong);

impl ClassTag {
    /// The class's ID (the JVMPI side of the tag).
    #[inline]
    pub fn id(self) -> jobjectID {
        to_id(self.0)
    }
    /// The tag of the class whose ID is `id`.
    #[inline]
    pub fn of_id(id: jobjectID) -> ClassTag {
        ClassTag(to_tag(id))
    }
}

/// Notes that `jobjectID2jobject(id)` gave this thread the local reference `h`.
pub fn handed_out(h: jobject, id: jobjectID) {
    let a = h as usize;
    if a == 0 || !a.is_multiple_of(std::mem::align_of::<usize>()) {
        return;
    }
    // The slot of a reference the JVM just made: readable; what it holds is only compared.
    let Some(content) = safemem::read(a as *const usize) else { return };
    let _ = RECENT.try_with(|r| {
        let e = &r[recent_slot(a)];
        e.handle.set(a);
        e.content.set(content);
        e.id.set(id as usize);
    });
}

/// The ID of `h` if `jobjectID2jobject` gave it to this thread and its slot still holds the
/// same object: the answer `jobject2jobjectID` would get from the JVM, found without it.
///
/// While the slot holds what it held when the reference was made, the reference names the
/// same object: a deleted reference's slot is cleared, a reused one holds another object, and
/// a collection that moves the object rewrites a live slot; all three send the caller to the
/// JVM. A reference whose native frame has ended (the agent's error) gets the ID of the object
/// it named, where the JVM could have refused it; nothing is dereferenced either way.
pub fn recent_id(h: jobject) -> Option<jobjectID> {
    let a = h as usize;
    if a == 0 {
        return None;
    }
    RECENT
        .try_with(|r| {
            let e = &r[recent_slot(a)];
            (e.handle.get() == a && e.content.get() != 0).then(|| (e.content.get(), e.id.get()))
        })
        .ok()
        .flatten()
        .filter(|&(content, _)| safemem::read(a as *const usize) == Some(content))
        .map(|(_, id)| id as jobjectID)
}

fn slot() -> Slot {
    CACHE.try_with(|c| c.borrow_mut().next_slot()).unwrap_or_else(|_| {
        let mut v = Vec::with_capacity(1);
        take(1, &mut v);
        v[0]
    })
}

/// A fresh tag: no live object has it, and its slot's last object (if any) has been reported
/// dead.
pub fn fresh_tag() -> jlong {
    slot().tag()
}

/// A fresh tag for an object whose OBJECT_ALLOC is being sent (the allocation room takes them
/// from its own [`TagBlock`]).
#[cfg(test)]
fn fresh_defined_tag() -> jlong {
    fresh_tag() | DEFINED
}

/// Tags `obj` with `tag` (a fresh or reserved one) and indexes it when allocation is indexing
/// (see the module comment). Returns false if JVMTI refused the tag.
pub fn bind(jni: &jvm::Jni, obj: jobject, tag: jlong) -> bool {
    if jvm::set_tag(obj, tag).is_err() {
        return false;
    }
    if STATE.index_allocations.load(Relaxed) {
        index(jni, tag, obj);
    }
    true
}

/// Fresh slots taken `refill` at a time (as [`slot`] takes them), those left unused given
/// back when dropped: a thread's own cache ([`per_thread`](TagBlock::per_thread): the ids
/// room's, and the allocation room's, which keeps its per-thread state in one place) or a heap
/// walk's, which tags objects by the million inside a JVMTI callback ([`new`](TagBlock::new)).
pub struct TagBlock {
    /// Slots given back before and taken again (used from the end).
    slots: Vec<Slot>,
    /// New slots, lowest first: `run.0..run.1` (a run needs no memory to read per tag).
    run: (u64, u64),
    refill: usize,
}

impl TagBlock {
    /// For a heap walk: [`BLOCK`] slots at a time.
    pub const fn new() -> TagBlock {
        TagBlock { slots: Vec::new(), run: (0, 0), refill: BLOCK }
    }
    /// For one thread: [`BATCH`] slots at a time.
    pub const fn per_thread() -> TagBlock {
        TagBlock { slots: Vec::new(), run: (0, 0), refill: BATCH }
    }
    #[inline]
    fn next_slot(&mut self) -> Slot {
        if self.run.0 < self.run.1 {
            self.run.0 += 1;
            return Slot(self.run.0 - 1);
        }
        if let Some(s) = self.slots.pop() {
            return s;
        }
        self.refill()
    }
    #[cold]
    fn refill(&mut self) -> Slot {
        if let Some(r) = take_run(self.refill) {
            self.run = (r.0 + 1, r.1);
            return Slot(r.0);
        }
        take(self.refill, &mut self.slots);
        self.slots.pop().unwrap_or(Slot(0))
    }
    /// A fresh tag.
    #[inline]
    pub fn next(&mut self) -> jlong {
        self.next_slot().tag()
    }
}

impl Default for TagBlock {
    fn default() -> Self {
        TagBlock::new()
    }
}

impl Drop for TagBlock {
    fn drop(&mut self) {
        give_back(&self.slots);
        give_back(&(self.run.0..self.run.1).map(Slot).collect::<Vec<Slot>>());
    }
}

/// Bits of the tags ever used as a key of a table of classes (bit `(tag >> 3)` modulo
/// [`MARK_BITS`]; never cleared): the class descriptions and announcements of `classes`, the
/// shapes of `alloc` and `objects`. A GC bracket asks those tables about every death, and a
/// death whose bit is clear is no class of theirs without the lookups (each a hash and a shard
/// lock: half of the GC events thread's samples in javac, where millions of objects die and a
/// few thousand classes are known). The GC room asks it (`gc::forget_class`) before it asks the
/// tables.
const MARK_BITS: usize = 1 << 17;
static CLASS_MARKS: [AtomicU64; MARK_BITS / 64] = [const { AtomicU64::new(0) }; MARK_BITS / 64];

fn mark_bit(tag: jlong) -> (usize, u64) {
    let k = (tag as u64 >> 3) as usize % MARK_BITS;
    (k / 64, 1 << (k % 64))
}

/// Marks `tag` as possibly a key of a table of classes, before it is entered in one.
pub fn mark_class(ClassTag(tag): ClassTag) {
    let (i, b) = mark_bit(tag);
    if CLASS_MARKS[i].load(Relaxed) & b == 0 {
        CLASS_MARKS[i].fetch_or(b, SeqCst);
    }
}

/// Whether `tag` may be a key of a table of classes (false: it is not). The class was marked
/// when it was entered, while it was alive; its death reaches the GC bracket only after the
/// collection that found it dead.
pub fn may_be_class(Tag(tag): Tag) -> bool {
    let (i, b) = mark_bit(tag);
    CLASS_MARKS[i].load(SeqCst) & b != 0
}

/// Whether `tag` is one the shim could have given out.
pub fn plausible(tag: jlong) -> bool {
    tag > 0 && tag % 8 == 0 && Slot::of(tag).0 < STATE.high.load(Relaxed)
}

/// Whether the object with this tag was defined to the agent by OBJECT_ALLOC.
pub fn is_defined(tag: jlong) -> bool {
    tag & DEFINED != 0
}

pub fn to_id(tag: jlong) -> jobjectID {
    tag as usize as jobjectID
}

pub fn to_tag(id: jobjectID) -> jlong {
    id as usize as jlong
}

/// The tag of a live object, giving it one if it has none.
pub fn tag_of(obj: jobject) -> Result<Tag, FaceError> {
    if obj.is_null() {
        return Err(FaceError::Null);
    }
    let t = jvm::get_tag(obj).map_err(FaceError::Jvmti)?;
    if t != 0 {
        return Ok(Tag(t));
    }
    let _g = crate::vm::logger::lock(&STATE.assign);
    let t = jvm::get_tag(obj).map_err(FaceError::Jvmti)?;
    if t != 0 {
        return Ok(Tag(t));
    }
    let t = fresh_tag();
    jvm::set_tag(obj, t).map_err(FaceError::Jvmti)?;
    Ok(Tag(t))
}

/// [`tag_of`] for a thread that has suspended the others (a dump): one of them may be stopped
/// inside the assignment's lock, so it is only tried for a while (a thread that runs holds it
/// for two JVMTI calls); an error if the object has no tag and the lock stays held.
pub fn tag_of_while_others_suspended(obj: jobject) -> Result<Tag, FaceError> {
    if obj.is_null() {
        return Err(FaceError::Null);
    }
    let t = jvm::get_tag(obj).map_err(FaceError::Jvmti)?;
    if t != 0 {
        return Ok(Tag(t));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(20);
    let _g = loop {
        match STATE.assign.try_lock() {
            Ok(g) => break g,
            Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_micros(200))
            }
            Err(std::sync::TryLockError::WouldBlock) => {
                return Err(FaceError::Held);
            }
        }
    };
    let t = jvm::get_tag(obj).map_err(FaceError::Jvmti)?;
    if t != 0 {
        return Ok(Tag(t));
    }
    let t = fresh_tag();
    jvm::set_tag(obj, t).map_err(FaceError::Jvmti)?;
    Ok(Tag(t))
}

/// [`tag_of`] for an object that is also entered in the index: classes and threads (they are
/// few, and their IDs come back in requested OBJECT_ALLOC, CLASS_LOAD and THREAD_START).
pub fn indexed_tag_of(k: jobject) -> Result<Tag, FaceError> {
    let tag = tag_of(k)?;
    let t = tag.0;
    if let Some((c, i)) = entry(t, true) {
        if c.weak[i].load(Relaxed) == 0 {
            if let Some(jni) = jvm::Jni::current() {
                index(&jni, t, k);
            }
        }
    }
    Ok(tag)
}

/// [`indexed_tag_of`] for a class: its tag as a class's.
pub fn class_tag_of(k: jobject) -> Result<ClassTag, FaceError> {
    indexed_tag_of(k).map(|Tag(t)| ClassTag(t))
}

/// The ID of a live object (NULL for a NULL reference).
pub fn id_of(obj: jobject) -> Result<jobjectID, FaceError> {
    if obj.is_null() {
        return Ok(std::ptr::null_mut());
    }
    tag_of(obj).map(Tag::id)
}

// ---- the index: slot → weak reference, slot → (class, size) -------------------------------------

const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;
const CHUNKS: usize = (SMALL_SLOTS >> CHUNK_BITS) as usize;
/// In an index entry: the weak reference is for the defined variant of the slot's tag.
const WEAK_DEFINED: usize = 1 << 63;
/// In a description: set when there is one.
const DESC_SET: u64 = 1 << 63;

/// Laid out in this order (the index's pages of a [`GROUP`] of slots are whole pages: see
/// [`forget_group`]); made page-aligned by [`zeroed_chunk`].
#[repr(C)]
struct Chunk {
    weak: [AtomicUsize; CHUNK],
    desc: [AtomicU64; CHUNK],
    /// One bit per slot: defined to the agent by a requested OBJECT_ALLOC (owed OBJECT_FREE).
    requested: [AtomicU64; CHUNK / 64],
}

/// The chunk and index of `tag`'s slot; made if `make`.
#[inline]
fn entry(tag: jlong, make: bool) -> Option<(&'static Chunk, usize)> {
    let Slot(slot) = Slot::of(tag);
    if slot >= SMALL_SLOTS || tag <= 0 {
        return None;
    }
    let (c, i) = ((slot >> CHUNK_BITS) as usize, (slot as usize) & (CHUNK - 1));
    let mut p = STATE.table[c].load(Acquire);
    if p.is_null() {
        if !make {
            return None;
        }
        // All-zero bytes are valid atomics: empty entries.
        let raw = zeroed_chunk()?;
        match STATE.table[c].compare_exchange(std::ptr::null_mut(), raw, AcqRel, Acquire) {
            Ok(_) => {
                STATE.chunks_made.fetch_add(1, Relaxed);
                p = raw;
            }
            Err(other) => {
                // SAFETY: `raw` is the mapping made just above, never shared.
                unsafe { libc::munmap(raw.cast(), std::mem::size_of::<Chunk>()) };
                p = other;
            }
        }
    }
    // SAFETY: chunks are never freed once published.
    Some((unsafe { &*p }, i))
}

/// A chunk of zeroed pages of its own (all-zero bytes are valid atomics: empty entries),
/// page-aligned so that [`forget_group`] can give a group's pages back; None if the kernel
/// refuses the memory.
fn zeroed_chunk() -> Option<*mut Chunk> {
    // An anonymous private mapping of the chunk's size, asked of the kernel.
    // SAFETY: mmap with no address and no file; nothing else refers to the mapping.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            std::mem::size_of::<Chunk>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p.cast())
}

// ---- giving the index's memory back -----------------------------------------------------------
//
// Slots are made in increasing order, and reused only once `REUSE_AFTER` slots have been made:
// until then a chunk of the index, once its slots are all made and their objects dead, holds
// nothing but zeros. An agent that asks about IDs now and then (a requested OBJECT_ALLOC, a
// jobjectID2jobject) touches every chunk in turn, and allocation tracking that indexes what it
// tags touches them all: without this, the index's resident memory grew with the slots made
// (1 MiB per 65,536, up to 1 GiB before reuse began: the stress suite's RSS grew 370 -> 1,497
// MiB in 10 minutes). So each group of 512 slots (one page of weak references, one of
// descriptions) counts its slots handed out and not given back; when that count falls to zero
// in a group whose slots have all been made, its pages are given back to the kernel
// (`MADV_DONTNEED`: they read as zeros again, as their entries already were). Counting and
// giving back happen under the lock of the free slots, which also hands out reused slots: no
// slot of such a group can be handed out meanwhile, and no live object has its tag there.

/// Slots per group: one page of `AtomicUsize` (and of `AtomicU64`).
const GROUP: u64 = 512;

/// For each group of [`GROUP`] slots below [`SMALL_SLOTS`], its slots handed out and not given
/// back: raised by [`counted_out`], lowered by [`give_back`].
static OUT: [AtomicU32; (SMALL_SLOTS / GROUP) as usize] = [const { AtomicU32::new(0) }; (SMALL_SLOTS / GROUP) as usize];

/// Counts slots `first..end` as handed out.
fn counted_out(first: u64, end: u64) {
    let end = end.min(SMALL_SLOTS);
    let mut s = first;
    while s < end {
        let g = s / GROUP;
        let upto = ((g + 1) * GROUP).min(end);
        OUT[g as usize].fetch_add((upto - s) as u32, Relaxed);
        s = upto;
    }
}

/// Gives the pages of group `g` back to the kernel (see above). Called under the free slots' lock.
fn forget_group(g: u64) {
    let slot = g * GROUP;
    let (c, i) = ((slot >> CHUNK_BITS) as usize, (slot as usize) & (CHUNK - 1));
    let p = STATE.table[c].load(Acquire);
    if p.is_null() {
        return;
    }
    // Chunks are never freed once published; the group's entries are all zero and no thread may
    // write them until one of its slots is handed out again (see above).
    // SAFETY: the two ranges are this group's pages of a live chunk, which hold only zeros.
    unsafe {
        let weak = std::ptr::addr_of!((*p).weak[i]) as *mut libc::c_void;
        let desc = std::ptr::addr_of!((*p).desc[i]) as *mut libc::c_void;
        libc::madvise(weak, GROUP as usize * 8, libc::MADV_DONTNEED);
        libc::madvise(desc, GROUP as usize * 8, libc::MADV_DONTNEED);
    }
    STATE.groups_forgotten.fetch_add(1, Relaxed);
    // The page of requested bits this group shares with the others of its [`REQUESTED_PAGE`]
    // goes back too once they have all been forgotten: a requested OBJECT_ALLOC now and then
    // (an agent that checks IDs) touches every such page in turn, 8 KiB per chunk.
    let first = g - g % REQUESTED_PAGE;
    let high = STATE.high.load(Relaxed);
    if (first..first + REQUESTED_PAGE).all(|h| OUT[h as usize].load(Relaxed) == 0 && (h + 1) * GROUP <= high) {
        let word = (first * GROUP) as usize % CHUNK / 64;
        // The page holds the requested bits of the groups `first..first + REQUESTED_PAGE` of a
        // live chunk, all of whose slots are given back (no live object, no bit set).
        // SAFETY: no slot of theirs can be handed out meanwhile (the caller holds the free slots' lock).
        unsafe {
            let req = std::ptr::addr_of!((*p).requested[word]) as *mut libc::c_void;
            libc::madvise(req, 4096, libc::MADV_DONTNEED);
        }
    }
}

/// Groups whose requested bits share a page (4,096 bytes: 32,768 slots).
const REQUESTED_PAGE: u64 = 4096 * 8 / GROUP;

/// Enters `obj` (which has tag `tag`, and is alive: the caller holds a reference) in the index.
fn index(jni: &jvm::Jni, tag: jlong, obj: jobject) {
    let Some((c, i)) = entry(tag, true) else { return };
    if c.weak[i].load(Acquire) != 0 {
        return;
    }
    let w = jni.new_weak(obj) as usize;
    if w == 0 {
        return;
    }
    let v = w | if is_defined(tag) { WEAK_DEFINED } else { 0 };
    if c.weak[i].compare_exchange(0, v, AcqRel, Acquire).is_err() {
        jni.delete_weak(w as jobject);
    }
}

/// Records, from inside a heap walk, what a requested OBJECT_ALLOC says about the object with
/// `tag`: its class (tag) and size. Valid for the object's life (neither ever changes).
#[inline]
pub fn note(tag: Tag, class_tag: ClassTag, size: jlong) {
    note_in_walk(tag, class_tag, size);
    noting();
}

/// [`note`] for a heap walk, which calls [`noting`] once when it is done instead of once per object.
#[inline]
pub fn note_in_walk(Tag(tag): Tag, ClassTag(class_tag): ClassTag, size: jlong) {
    if class_tag <= 0 || (class_tag as u64) >> 3 >= 1 << 30 {
        return;
    }
    let Some((c, i)) = entry(tag, true) else { return };
    let v = DESC_SET | ((class_tag as u64 >> 3) << 32) | size.clamp(0, u32::MAX as jlong) as u64;
    c.desc[i].store(v, Relaxed);
}

/// Says that a heap walk has described objects with [`note_in_walk`].
pub fn noting() {
    STATE.noted.store(true, Relaxed);
}

/// What a heap walk recorded about the object with `tag`: (class tag, size).
pub fn described(Tag(tag): Tag) -> Option<(ClassTag, jlong)> {
    if !plausible(tag) {
        return None;
    }
    let (c, i) = entry(tag, false)?;
    let v = c.desc[i].load(Relaxed);
    (v & DESC_SET != 0).then_some((ClassTag((((v & !DESC_SET) >> 32) << 3) as jlong), (v & 0xFFFF_FFFF) as jlong))
}

/// Marks the object with plain tag `tag` as defined by a requested OBJECT_ALLOC (it gets
/// OBJECT_FREE like a tracked one). False for a tag outside the table (the caller keeps it).
pub fn mark_requested(tag: jlong) -> bool {
    let Some((c, i)) = entry(tag, true) else { return false };
    c.requested[i / 64].fetch_or(1 << (i % 64), Relaxed);
    true
}

/// Whether `tag` was marked by [`mark_requested`] (and forgets it).
pub fn take_requested(tag: jlong) -> bool {
    let Some((c, i)) = entry(tag, false) else { return false };
    let bit = 1 << (i % 64);
    // Read first: a write would bring a page of zeros back into memory (see [`release`]).
    c.requested[i / 64].load(Relaxed) & bit != 0 && c.requested[i / 64].fetch_and(!bit, Relaxed) & bit != 0
}

/// Records what RequestEvent learnt about an object, so the next request finds it.
pub fn remember(tag: Tag, class_tag: ClassTag, size: jlong) {
    note(tag, class_tag, size);
}

/// Forgets the dead objects with these tags and gives their slots back for reuse. Called by the
/// GC room once each death has been dealt with (OBJECT_FREE delivered, or not owed).
pub fn release(jni: &jvm::Jni, tags: &[Tag]) {
    let mut slots = Vec::with_capacity(tags.len());
    for &Tag(t) in tags {
        if t <= 0 || t & 7 != 0 {
            continue;
        }
        if let Some((c, i)) = entry(t, false) {
            // Entries are read before they are cleared: almost all are empty already, and a
            // write, even of a zero, brings the page back into memory (a page given back, or
            // one never touched: each chunk's requested bits, 8 MiB for the chunks of the slots
            // made before reuse begins, were all brought in so by the deaths).
            if c.weak[i].load(Acquire) != 0 {
                let w = c.weak[i].swap(0, AcqRel) & !WEAK_DEFINED;
                if w != 0 {
                    jni.delete_weak(w as jobject);
                }
            }
            if c.desc[i].load(Relaxed) != 0 {
                c.desc[i].store(0, Relaxed);
            }
            let bit = 1 << (i % 64);
            if c.requested[i / 64].load(Relaxed) & bit != 0 {
                c.requested[i / 64].fetch_and(!bit, Relaxed);
            }
        }
        slots.push(Slot::of(t));
    }
    give_back(&slots);
}

/// Misses on objects a heap walk described answered one by one before the index is rebuilt.
const MISSES_BEFORE_REBUILD: u64 = 8;
/// Misses on objects no heap walk described before the index is rebuilt (a rebuild costs
/// about a heap iteration with tagging plus a `GetTag` per object; a miss one tag-map scan).
const SCATTERED_MISSES_BEFORE_REBUILD: u64 = 512;
/// Misses on allocation-tracked objects after which allocation indexes what it tags.
const DEFINED_MISSES_TO_INDEX: u64 = 256;

/// Looks `tag` up in the index: Some(local reference), Some(NULL) for a collected object, None
/// when the slot has no entry.
fn lookup(jni: &jvm::Jni, tag: jlong) -> Option<jobject> {
    let (c, i) = entry(tag, false)?;
    let v = c.weak[i].load(Acquire);
    if v == 0 {
        return None;
    }
    if (v & WEAK_DEFINED != 0) != is_defined(tag) {
        return Some(std::ptr::null_mut()); // the other variant of the slot's tag: no such object
    }
    Some(jni.new_local_ref((v & !WEAK_DEFINED) as jobject))
}

/// The object an ID names, as a local reference of the current thread.
pub fn object_of(id: jobjectID) -> Result<jobject, FaceError> {
    let tag = to_tag(id);
    if !plausible(tag) {
        return Err(FaceError::NotGiven(id));
    }
    let dead = || FaceError::Dead(id);
    let Some(jni) = jvm::Jni::current() else {
        return Err(FaceError::NotAttached);
    };
    match lookup(&jni, tag) {
        Some(o) if o.is_null() => return Err(dead()),
        Some(o) => return Ok(o),
        None => {}
    }
    // A miss. A run of them (an agent resolving the objects of a dump, or the objects
    // allocation tracking told it of) is served by rebuilding the whole index at once.
    let misses = STATE.misses.fetch_add(1, Relaxed) + 1;
    if is_defined(tag) && STATE.defined_misses.fetch_add(1, Relaxed) + 1 == DEFINED_MISSES_TO_INDEX {
        log::info!("the agent resolves many tracked objects' IDs: allocation tracking now indexes the objects it tags");
        STATE.index_allocations.store(true, Relaxed);
    }
    // Misses on objects a heap walk described (a dump's objects, all tagged at once) call for a
    // rebuild soon; scattered misses only when they have cost about as much as one.
    let described_misses =
        if described(Tag(tag)).is_some() { STATE.described_misses.fetch_add(1, Relaxed) + 1 } else { 0 };
    if (described_misses >= MISSES_BEFORE_REBUILD && STATE.noted.load(Relaxed))
        || misses >= SCATTERED_MISSES_BEFORE_REBUILD
    {
        rebuild(&jni);
        match lookup(&jni, tag) {
            Some(o) if o.is_null() => return Err(dead()),
            Some(o) => return Ok(o),
            None => return Err(dead()),
        }
    }
    match jvm::object_with_tag(tag) {
        Ok(Some(o)) => {
            index(&jni, tag, o);
            Ok(o)
        }
        Ok(None) => Err(dead()),
        Err(e) => Err(FaceError::Jvmti(e)),
    }
}

/// Enters every tagged object in the index (one heap iteration; see the module comment).
fn rebuild(jni: &jvm::Jni) {
    let before = STATE.rebuilds.load(SeqCst);
    let _one = crate::vm::logger::lock(&STATE.rebuild);
    if STATE.rebuilds.load(SeqCst) != before {
        return; // another thread rebuilt it meanwhile
    }
    STATE.noted.store(false, Relaxed);
    STATE.misses.store(0, Relaxed);
    STATE.described_misses.store(0, Relaxed);
    let t = std::time::Instant::now();
    let r = jvm::each_tagged_object(jni, |tag, o| {
        if tag > 0 && tag & 7 == 0 {
            index(jni, tag, o)
        }
    });
    STATE.rebuilds.fetch_add(1, SeqCst);
    match r {
        Ok(n) => log::debug!("object index rebuilt: {n} tagged objects in {:?}", t.elapsed()),
        Err(e) => {
            log::info!("object index: the rebuild failed ({}); objects are looked up one by one", jvm::err_name(e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests share the ids room's state: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn slots_are_reused_after_release_and_blocks_give_back_the_rest() {
        let _one = crate::vm::logger::lock(&SERIAL);
        let _ = STATE.reuse_after.set(0);
        let a = fresh_tag();
        let b = fresh_defined_tag();
        assert_ne!(a, b & !DEFINED);
        assert!(plausible(a) && plausible(b));
        assert!(is_defined(b) && !is_defined(a));
        // Given-back slots are found again, lowest first from the cursor, once there are enough.
        let mut f = FreeSet { bits: Vec::new(), count: 0, cursor: 0 };
        for s in [900u64, 5, 70, 5, 4000] {
            f.put(Slot(s));
        }
        assert_eq!(f.count, 4);
        let mut v = Vec::new();
        assert_eq!(f.take(5, &mut v), 0, "not enough: none taken");
        assert_eq!(f.take(3, &mut v), 3);
        assert_eq!(v, vec![Slot(5), Slot(70), Slot(900)]);
        assert_eq!(f.take(1, &mut v), 1);
        assert_eq!(v[3], Slot(4000));
        let again = [fresh_tag()];
        // Descriptions.
        let t = again[0];
        note(Tag(t), ClassTag(0x1230), 24);
        assert_eq!(described(Tag(t)), Some((ClassTag(0x1230), 24)));
        note(Tag(t | DEFINED), ClassTag(0x1238), 1 << 20);
        assert_eq!(described(Tag(t | DEFINED)), Some((ClassTag(0x1238), 1 << 20)));
        assert!(mark_requested(t) && take_requested(t) && !take_requested(t));
    }

    /// A heap walk's block hands out new slots lowest first, one after the other, whether it
    /// holds them as a run or (once reuse has begun) as a vector, and takes a new block when one
    /// is used up.
    #[test]
    fn a_walk_block_hands_out_new_slots_in_order() {
        let _one = crate::vm::logger::lock(&SERIAL);
        let mut b = TagBlock::new();
        let tags: Vec<jlong> = (0..BLOCK + 3).map(|_| b.next()).collect();
        assert!(tags.iter().all(|&t| plausible(t) && t & DEFINED == 0));
        for w in tags[..BLOCK].windows(2) {
            assert_eq!(w[1], w[0] + (1 << SHIFT));
        }
        let mut sorted = tags.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), tags.len(), "a slot handed out twice");
    }

    /// Whether the page at `p` is in memory.
    fn resident(p: *const u64) -> bool {
        let page = (p as usize) & !4095;
        let mut v = [0u8; 1];
        // SAFETY: `page` starts a page of a live mapping (an index chunk); mincore writes 1 byte to `v`.
        let r = unsafe { libc::mincore(page as *mut libc::c_void, 4096, v.as_mut_ptr()) };
        r == 0 && v[0] & 1 != 0
    }

    /// A page of requested bits (32,768 slots) goes back to the kernel with the last of its
    /// groups, as the groups' own pages do: an agent that requests an OBJECT_ALLOC now and then
    /// no longer keeps 8 KiB per chunk of every slot ever made.
    #[test]
    fn the_requested_bits_of_slots_all_given_back_leave_memory() {
        let _one = crate::vm::logger::lock(&SERIAL);
        const PAGE: u64 = 32_768;
        let (first, end) = new_run(3 * PAGE as usize);
        let start = first.div_ceil(PAGE) * PAGE;
        let tag = Slot(start + 5).tag();
        assert!(mark_requested(tag));
        let (c, i) = entry(tag, false).unwrap();
        let bits = std::ptr::addr_of!(c.requested[i / 64]) as *const u64;
        assert!(resident(bits), "marked, so in memory");
        assert!(take_requested(tag));
        give_back(&(first..end).map(Slot).collect::<Vec<Slot>>());
        assert!(!resident(bits), "the page of requested bits stayed in memory after every slot of it was given back");
        assert!(!take_requested(tag), "a page given back reads as zeros");
    }
}
