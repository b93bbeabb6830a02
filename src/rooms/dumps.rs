//! Dumps: `RequestEvent(JVMPI_EVENT_HEAP_DUMP)` at levels 0, 1 and 2,
//! `RequestEvent(JVMPI_EVENT_OBJECT_DUMP, id)` and `RequestEvent(JVMPI_EVENT_MONITOR_DUMP)`
//! (at the end of this file), in the byte formats of the JVMPI spec as HotSpot 1.5 wrote them.
//!
//! Format (HotSpot 1.5's `Dump`): record types and `ty` are one byte; u2/u4/u8 and every
//! primitive value big-endian; object IDs, `JNIEnv*` and the reserved words at native width in
//! native order. Field values follow the order in which CLASS_LOAD lists fields: each class's
//! fields in reverse declaration order, the class first, then its superclass, and so on
//! (`classes::ClassInfo::read` lists them that way too).
//!
//! Source: one JVMTI `FollowReferences` from the heap roots. HotSpot runs the whole walk as one
//! VM operation at a safepoint, so the graph it reports is one snapshot. Before the walk every
//! other thread is suspended (`SuspendThreadList`) and the thread stacks are read, so that the
//! frame numbers of the roots and the `traces` belong to the same moment; the threads are
//! resumed before the event is delivered (HotSpot 1.5 also delivered with the threads running,
//! so an agent that waits for another thread inside its handler does not deadlock).
//! One walk is the cheapest structure measured (docs/dumps.md, "Benchmark"): taking the object
//! records from `IterateThroughHeap` and only the references from `FollowReferences` costs
//! both walks, and the reference walk alone costs nearly as much as the one walk with values.
//! Nearly all of the walk's time is JVMTI's own (a tag-map lookup for referrer and referee of
//! every reference); the callbacks look classes up through a direct-mapped cache, read a small
//! per-class entry (kind, sizes, field offsets at the dump's level) rather than the layout behind
//! it, keep the class of the record being filled, and take tags from blocks reserved for the walk.
//!
//! IDs: an object's ID is its tag; objects first seen in the walk are tagged there (plain
//! tags, no "defined" bit: they get no OBJECT_FREE unless the agent requests their
//! OBJECT_ALLOC). The walk also records the class and size of each object it tags (and of each
//! defined one) with `ids::note_in_walk`, so that a requested OBJECT_ALLOC for an object of the
//! dump is answered without finding the object (an object tagged by an earlier walk keeps what
//! that walk recorded). Classes and threads named in the dump are announced (CLASS_LOAD,
//! THREAD_START, if enabled) before the event is sent; any other object ID in it can be
//! resolved with `RequestEvent(JVMPI_EVENT_OBJECT_ALLOC)` while the object lives.
//!
//! Records and roots emitted, as HotSpot 1.5 emitted them:
//! - level 0: `ty, id` per object; a class object is `JVMPI_NORMAL_OBJECT` (instance and
//!   array classes alike, as HotSpot did).
//! - levels 1/2: roots first, then `INSTANCE_DUMP`, `OBJ_ARRAY_DUMP`, `PRIM_ARRAY_DUMP` for the
//!   objects, `CLASS_DUMP` for every loaded instance class (array classes get no record at
//!   these levels: HotSpot 1.5 wrote none). Level 1 leaves out primitive field values and
//!   primitive array elements.
//! - `CLASS_DUMP`: class, super, loader, signers, protection domain, then the two reserved
//!   words written as NULL (HotSpot wrote the interned name String there when there was one,
//!   else NULL), the instance size in bytes, the direct interfaces (as many as CLASS_LOAD's
//!   `num_interfaces`), a constant pool of 0 entries (HotSpot wrote 0 too), the static values.
//! - root kinds: JVMTI JNI_GLOBAL → `JNI_GLOBAL` (the reference's value is not known to JVMTI:
//!   written as NULL), JNI_LOCAL → `JNI_LOCAL`, STACK_LOCAL → `JAVA_FRAME` (thread and frame
//!   number counted as HotSpot did: the top frame is the trace's length, the bottom frame 1,
//!   -1 for a thread without Java frames), SYSTEM_CLASS → `STICKY_CLASS`, THREAD →
//!   `THREAD_BLOCK`, MONITOR → `MONITOR_USED`, OTHER → `UNKNOWN`. `NATIVE_STACK` is never
//!   written: JVMTI reports native frames' references as JNI locals. `THREAD_OBJ` was never
//!   written by HotSpot either.
//! - `num_traces`/`traces`: one trace per thread (all frames), as HotSpot gave them.
//!
//! The dump holds the objects reachable from the roots (JVMTI has no walk of unreachable
//! objects with their references); HotSpot 1.5 walked the whole heap, garbage included.
//!
//! Memory: the dump buffer itself (its final size, grown by doubling; after the first dump its
//! address space is reserved at the last dump's size and an eighth), a table of the loaded
//! classes (field layouts, cached between dumps), the static values of classes, the traces, and
//! the lengths of object arrays seen but not yet visited by the walk. Nothing else per object.

use crate::face::abi::*;
use crate::face::ids::ClassTag;
use crate::face::{events, ids};
use crate::rooms::error::RoomError;
use crate::rooms::{calltrace, classes, threads};
use crate::vm::idhash::IdMap;
use crate::vm::jvm;
use jvmti_bindings::sys::jni::{jclass, jint, jlong, jobject, jvalue, JNIEnv};
use jvmti_bindings::sys::jvmti::{self, jvmtiHeapReferenceInfo, jvmtiHeapReferenceKind, jvmtiPrimitiveType};
use std::hash::{BuildHasherDefault, Hasher};

/// Tags are distinct multiples of 8: a multiplicative hash is enough and far cheaper than
/// SipHash, which was a visible share of the walk's own time.
#[derive(Default)]
struct TagHasher(u64);
impl Hasher for TagHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_i64(&mut self, v: i64) {
        self.0 = (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}
type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<TagHasher>>;
type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<TagHasher>>;
use std::ffi::c_void;
use std::sync::{Arc, LazyLock};

const W: usize = std::mem::size_of::<usize>();
/// The head of an INSTANCE_DUMP (type, object, class, size) or OBJ_ARRAY_DUMP (type, object,
/// length, element class) record.
const HEAD: usize = 1 + 2 * W + 4;
/// Value areas up to this size are zeroed with one store.
const SMALL_AREA: usize = 32;
/// Deepest stack read for frame numbers and traces.
const MAX_FRAMES: jint = 4096;

/// Record types and roots (jvmpi.h).
pub const GC_ROOT_UNKNOWN: u8 = 0xff;
pub const GC_ROOT_JNI_GLOBAL: u8 = 0x01;
pub const GC_ROOT_JNI_LOCAL: u8 = 0x02;
pub const GC_ROOT_JAVA_FRAME: u8 = 0x03;
pub const GC_ROOT_STICKY_CLASS: u8 = 0x05;
pub const GC_ROOT_THREAD_BLOCK: u8 = 0x06;
pub const GC_ROOT_MONITOR_USED: u8 = 0x07;
pub const GC_CLASS_DUMP: u8 = 0x20;
pub const GC_INSTANCE_DUMP: u8 = 0x21;
pub const GC_OBJ_ARRAY_DUMP: u8 = 0x22;
pub const GC_PRIM_ARRAY_DUMP: u8 = 0x23;

/// One field slot of a layout: where its value goes in the record's value area.
#[derive(Clone, Copy)]
struct Slot {
    /// Byte offset at level 2 and at level 1 (`u32::MAX`: not written at level 1).
    off2: u32,
    off1: u32,
}

const NO_SLOT: Slot = Slot { off2: u32::MAX, off1: u32::MAX };

/// A JVMTI field index counts every field of the class's superinterfaces and superclasses
/// before the class's own, in declaration order; so `total - 1 - index` counts from the class's
/// last declared field backwards, then the superclass's last field, … — the HotSpot 1.5 order.
#[derive(Default)]
struct Fields {
    /// JVMTI's field count for the class (superinterfaces, superclasses, own).
    total: i32,
    /// By `total - 1 - index`; NO_SLOT for fields of the other kind (static/instance).
    slots: Vec<Slot>,
    size2: u32,
    size1: u32,
}

impl Fields {
    fn slot(&self, index: jint) -> Option<Slot> {
        let rev = self.total - 1 - index;
        self.slots.get(usize::try_from(rev).ok()?).copied().filter(|s| s.off2 != u32::MAX)
    }
    fn size(&self, level: jint) -> u32 {
        if level == JVMPI_DUMP_LEVEL_2 {
            self.size2
        } else {
            self.size1
        }
    }
}

fn value_size(sig: u8) -> u32 {
    match sig {
        b'Z' | b'B' => 1,
        b'C' | b'S' => 2,
        b'I' | b'F' => 4,
        b'J' | b'D' => 8,
        _ => W as u32,
    }
}

/// What the shim knows about a loaded class, cached by class tag.
enum Kind {
    Instance { instance: Fields, statics: Fields, interfaces: usize },
    ObjArray { element: ClassTag },
    PrimArray { ty: u8 },
}

struct ClassLayout {
    kind: Kind,
}

/// The dumps room's state, shared by every thread.
struct DumpsState {
    /// The layouts of the classes dumped so far, by class tag (computed once by [`layout`],
    /// outside of any heap walk).
    layouts: LazyLock<IdMap<ClassTag, Arc<ClassLayout>>>,
    /// The size of the last heap dump (written by each heap dump): the next one's buffer
    /// starts at that size.
    last_size: std::sync::atomic::AtomicUsize,
    /// Whether a MONITOR_DUMP has said that it lists no monitor owned with nobody waiting
    /// (without `can_get_owned_monitor_info`; set by the first such dump).
    said_no_owned: std::sync::atomic::AtomicBool,
}

static STATE: DumpsState = DumpsState {
    layouts: LazyLock::new(IdMap::default),
    last_size: std::sync::atomic::AtomicUsize::new(0),
    said_no_owned: std::sync::atomic::AtomicBool::new(false),
};

fn prim_ty(sig: &str) -> Option<u8> {
    crate::rooms::objects::array_kind(sig).filter(|&k| k != JVMPI_CLASS).map(|k| k as u8)
}

/// Own fields of `k` in declaration order: (signature's first byte, is_static).
fn own_fields(k: jclass) -> Vec<(u8, bool)> {
    jvm::class_fields(k)
        .map(|v| v.into_iter().map(|(_, s, st)| (s.as_bytes().first().copied().unwrap_or(b'L'), st)).collect())
        .unwrap_or_default()
}

/// Field count of every superinterface (transitively) of `k` and its superclasses.
fn interface_fields(jni: &jvm::Jni, k: jclass, seen: &mut Vec<jlong>) -> i32 {
    let mut n = 0;
    let mut todo: Vec<jclass> = Vec::new();
    let mut c = k;
    while !c.is_null() {
        todo.extend(jvm::interfaces(c).unwrap_or_default());
        let s = jni.superclass(c);
        if c != k {
            jni.delete_local_ref(c);
        }
        c = s;
    }
    while let Some(i) = todo.pop() {
        let t = ids::tag_of(i).map_or(0, |t| t.0);
        if !seen.contains(&t) {
            seen.push(t);
            n += jvm::field_count(i).unwrap_or(0) as i32;
            todo.extend(jvm::interfaces(i).unwrap_or_default());
        }
        jni.delete_local_ref(i);
    }
    n
}

fn build_fields(chain: &[Vec<(u8, bool)>], iface_fields: i32, want_static: bool) -> Fields {
    let mut f = Fields { total: iface_fields, ..Default::default() };
    for own in chain {
        f.total += own.len() as i32;
        for &(sig, st) in own.iter().rev() {
            if st == want_static {
                let prim = !matches!(sig, b'L' | b'[');
                let off1 = if prim { u32::MAX } else { f.size1 };
                f.slots.push(Slot { off2: f.size2, off1 });
                f.size2 += value_size(sig);
                if !prim {
                    f.size1 += W as u32;
                }
            } else {
                f.slots.push(NO_SLOT);
            }
        }
    }
    f
}

/// The layout of a loaded class (computed once; outside of any heap walk).
fn layout(jni: &jvm::Jni, k: jclass, tag: ClassTag) -> Option<Arc<ClassLayout>> {
    if let Some(l) = STATE.layouts.get(&tag) {
        return Some(l.clone());
    }
    let sig = jvm::class_signature(k).ok()?;
    let kind = if let Some(ty) = prim_ty(&sig) {
        Kind::PrimArray { ty }
    } else if sig.starts_with('[') {
        let e = jni.component_type(k)?;
        let element = ids::class_tag_of(e).unwrap_or_default();
        jni.delete_local_ref(e);
        Kind::ObjArray { element }
    } else {
        let mut chain = Vec::new();
        let mut c = k;
        while !c.is_null() {
            chain.push(own_fields(c));
            let s = jni.superclass(c);
            if c != k {
                jni.delete_local_ref(c);
            }
            c = s;
        }
        let ifs = interface_fields(jni, k, &mut Vec::new());
        let statics = build_fields(&chain[..1], ifs + chain[1..].iter().map(|v| v.len() as i32).sum::<i32>(), true);
        // For statics only the class's own fields count at the end; the rest is the prefix.
        let instance = build_fields(&chain, ifs, false);
        Kind::Instance { instance, statics, interfaces: jvm::interface_count(k).unwrap_or(0) }
    };
    let l = Arc::new(ClassLayout { kind });
    STATE.layouts.insert(tag, l.clone());
    Some(l)
}

/// A class as the walk sees it.
struct ClassEntry {
    tag: ClassTag,
    layout: Arc<ClassLayout>,
    /// Global reference (released after the dump).
    class: jobject,
    sup: jlong,
    loader: jlong,
    signers: jlong,
    domain: jlong,
    interfaces: Vec<jlong>,
    statics: Vec<u8>,
    instance_size: u32,
}

/// Entries of the direct-mapped cache in front of the class index (a power of two).
const CLASS_CACHE: usize = 1024;

/// The loaded classes of a dump by class tag: the entries, an index, and a direct-mapped cache
/// in front of the index, since the walk asks about the same few classes millions of times.
struct ClassTable {
    list: Vec<ClassEntry>,
    index: HashMap<ClassTag, u32>,
    /// (class tag, its index, its `Hot::work`).
    cache: Vec<std::cell::Cell<(ClassTag, u32, u32)>>,
    /// By index in `list`, what the walk reads per callback (made by [`ClassTable::prepare`]):
    /// small and contiguous, so that it stays in the cache, unlike the entries.
    hot: Vec<Hot>,
    /// The instance field offsets of every class at the dump's level, one run per class
    /// (`Hot::start`, `Hot::len`), by `total - 1 - index` (see [`Fields`]); `u32::MAX`: not written.
    offs: Vec<u32>,
}

/// What the walk needs of a class per callback.
#[derive(Clone, Copy, Default)]
struct Hot {
    /// Its instance field offsets: `offs[start..start + len]`.
    start: u32,
    len: u32,
    /// JVMTI's field count for the class (see [`Fields::total`]).
    total: i32,
    /// What a reference to one of its instances must record: [`WORK_SIZE`], [`WORK_LENGTH`] or 0.
    work: u8,
    /// [`KIND_INSTANCE`], [`KIND_OBJ_ARRAY`] or [`KIND_PRIM_ARRAY`] (the layout's `Kind`).
    kind: u8,
    /// A primitive array's element type (JVMPI).
    ty: u8,
    /// An instance's value area at the dump's level.
    size: u32,
    /// An object array's element class.
    element: ClassTag,
}

const KIND_INSTANCE: u8 = 0;
const KIND_OBJ_ARRAY: u8 = 1;
const KIND_PRIM_ARRAY: u8 = 2;

/// An instance class whose instance size is not known yet (the first reference to one of its
/// instances gives it).
const WORK_SIZE: u8 = 1;
/// An object array class: the length of each array is taken from the first reference to it.
const WORK_LENGTH: u8 = 2;

impl ClassTable {
    fn with_capacity(n: usize) -> ClassTable {
        ClassTable {
            list: Vec::with_capacity(n),
            index: HashMap::with_capacity_and_hasher(n, Default::default()),
            cache: vec![std::cell::Cell::new((ClassTag(0), 0, 0)); CLASS_CACHE],
            hot: Vec::new(),
            offs: Vec::new(),
        }
    }
    /// Makes `hot` and `offs` for a dump at `level` (once the table is complete).
    fn prepare(&mut self, level: jint) {
        self.hot.clear();
        self.offs.clear();
        for c in &self.cache {
            c.set((ClassTag(0), 0, 0));
        }
        for c in &self.list {
            let start = self.offs.len() as u32;
            let mut h = Hot { start, ..Default::default() };
            match &c.layout.kind {
                Kind::Instance { instance, .. } => {
                    self.offs.extend(instance.slots.iter().map(|s| {
                        if level == JVMPI_DUMP_LEVEL_2 {
                            s.off2
                        } else {
                            s.off1
                        }
                    }));
                    h.len = instance.slots.len() as u32;
                    h.total = instance.total;
                    h.work = if c.instance_size == 0 { WORK_SIZE } else { 0 };
                    h.kind = KIND_INSTANCE;
                    h.size = instance.size(level);
                }
                &Kind::ObjArray { element } => {
                    h.work = WORK_LENGTH;
                    h.kind = KIND_OBJ_ARRAY;
                    h.element = element;
                }
                &Kind::PrimArray { ty } => {
                    h.kind = KIND_PRIM_ARRAY;
                    h.ty = ty;
                }
            }
            self.hot.push(h);
        }
    }
    fn insert(&mut self, e: ClassEntry) {
        self.index.insert(e.tag, self.list.len() as u32);
        self.list.push(e);
    }
    #[inline]
    fn cache_slot(&self, tag: ClassTag) -> &std::cell::Cell<(ClassTag, u32, u32)> {
        &self.cache[(tag.0 as u64 >> 4) as usize & (CLASS_CACHE - 1)]
    }
    /// The class's index in `list`, and its `Hot::work` (0 before [`ClassTable::prepare`]).
    #[inline]
    fn idx_work(&self, tag: ClassTag) -> Option<(usize, u8)> {
        let slot = self.cache_slot(tag);
        let (t, i, w) = slot.get();
        if t == tag && tag.0 != 0 {
            return Some((i as usize, w as u8));
        }
        let i = *self.index.get(&tag)?;
        let w = self.hot.get(i as usize).map_or(0, |h| h.work);
        slot.set((tag, i, w as u32));
        Some((i as usize, w))
    }
    #[inline]
    fn idx(&self, tag: ClassTag) -> Option<usize> {
        self.idx_work(tag).map(|(i, _)| i)
    }
    /// Class `tag` (at index `i`) needs nothing more from references to its instances.
    fn work_done(&mut self, tag: ClassTag, i: usize) {
        if let Some(h) = self.hot.get_mut(i) {
            h.work = 0;
        }
        let slot = self.cache_slot(tag);
        if slot.get().0 == tag {
            slot.set((tag, i as u32, 0));
        }
    }
    #[inline]
    fn get(&self, tag: ClassTag) -> Option<&ClassEntry> {
        self.idx(tag).map(|i| &self.list[i])
    }
    #[inline]
    fn get_mut(&mut self, tag: ClassTag) -> Option<&mut ClassEntry> {
        self.idx(tag).map(|i| &mut self.list[i])
    }
    fn contains(&self, tag: ClassTag) -> bool {
        self.idx(tag).is_some()
    }
}

struct State {
    level: jint,
    /// Object dump: follow nothing beyond the initial object.
    single: bool,
    out: Vec<u8>,
    classes: ClassTable,
    class_class: ClassTag,
    /// Where each CLASS_DUMP record of a level-2 heap dump is in `out` (class tag → range).
    class_records: HashMap<ClassTag, (usize, usize)>,
    /// java.lang.Object's tag: the superclass that JVMTI's walk never reports (HotSpot's
    /// FollowReferences leaves out a SUPERCLASS reference to java.lang.Object).
    object_class: ClassTag,
    /// Object array tag → length, for object arrays reported as referees and not visited yet
    /// (a primitive array's length comes with its values).
    lengths: HashMap<jlong, jint>,
    /// The record being filled: (object tag, start of its value area).
    cur: (jlong, usize),
    /// The index in `classes` of the class of the record being filled (usize::MAX: none).
    cur_class: usize,
    /// The instance field offsets of that class, if it is an instance class: its `Hot`'s
    /// (start, len, total); len 0 for none.
    cur_offs: (u32, u32, i32),
    /// A primitive array record whose length is written when its values come: (where its
    /// length is, element type).
    cur_prim: Option<(usize, u8)>,
    /// Tags for objects the walk meets untagged (taken in blocks; the rest go back).
    tags: ids::TagBlock,
    /// thread tag → (JNIEnv, number of frames shown).
    threads: HashMap<jlong, (usize, jint)>,
    /// thread tag → top-based indices of the JVM's frames that traces leave out (the shim's
    /// own, renamed natives), in order.
    left_out: HashMap<jlong, Vec<usize>>,
    unknown_classes: usize,
    /// Class objects named by the walk that are no loaded class (primitive types' classes,
    /// classes archived by CDS and not loaded yet): JVMTI reports nothing about them.
    mirrors: HashSet<jlong>,
}

impl State {
    fn u1(&mut self, v: u8) {
        self.out.push(v);
    }
    fn u4(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }
    fn id(&mut self, tag: jlong) {
        self.out.extend_from_slice(&(tag as usize).to_ne_bytes());
    }
    fn word(&mut self, w: usize) {
        self.out.extend_from_slice(&w.to_ne_bytes());
    }
    fn put_id(&mut self, at: usize, tag: jlong) {
        if let Some(b) = self.out.get_mut(at..at + W) {
            b.copy_from_slice(&(tag as usize).to_ne_bytes());
        }
    }
    /// Appends a record's head and `n` zero bytes (its value area); returns where the value
    /// area starts. One capacity check, and no call for a small value area.
    #[inline]
    fn record(&mut self, head: &[u8; HEAD], n: usize) -> usize {
        self.out.reserve(HEAD + n.max(SMALL_AREA));
        let at = self.out.len();
        // `reserve` made room for HEAD + max(n, SMALL_AREA) bytes from `at`.
        // SAFETY: every byte of [at, at + HEAD + n) is written, within that room, before the length covers it.
        unsafe {
            let p = self.out.as_mut_ptr().add(at);
            std::ptr::copy_nonoverlapping(head.as_ptr(), p, HEAD);
            if n <= SMALL_AREA {
                std::ptr::write_unaligned(p.add(HEAD) as *mut [u64; SMALL_AREA / 8], [0; SMALL_AREA / 8]);
            } else {
                std::ptr::write_bytes(p.add(HEAD), 0, n);
            }
            self.out.set_len(at + HEAD + n);
        }
        at + HEAD
    }
    /// `N` bytes at `at` (inside the record being filled).
    #[inline]
    fn put<const N: usize>(&mut self, at: usize, b: [u8; N]) {
        if let Some(d) = self.out.get_mut(at..at + N) {
            d.copy_from_slice(&b);
        }
    }
    fn zeros(&mut self, n: usize) -> usize {
        let at = self.out.len();
        self.out.resize(at + n, 0);
        at
    }

    fn thread(&self, tag: jlong) -> (usize, jint) {
        self.threads.get(&tag).copied().unwrap_or((0, -1))
    }

    fn root(&mut self, kind: jvmtiHeapReferenceKind, info: *const jvmtiHeapReferenceInfo, obj: jlong) {
        if self.level == JVMPI_DUMP_LEVEL_0 || self.single {
            return;
        }
        let frame = |st: &State, thread_tag: jlong, depth: jint| -> (usize, u32) {
            let (env, n) = st.thread(thread_tag);
            // The depth among the frames shown: a root in a frame left out (a renamed native's
            // JNI locals) belongs to the frame below it (its wrapper).
            let above = st.left_out.get(&thread_tag).map_or(0, |v| v.iter().filter(|&&i| (i as jint) < depth).count());
            let depth = depth - above as jint;
            let num = if n <= 0 { -1 } else { (n - depth).max(1) };
            (env, num as u32)
        };
        match kind {
            jvmti::JVMTI_HEAP_REFERENCE_JNI_GLOBAL => {
                self.u1(GC_ROOT_JNI_GLOBAL);
                self.id(obj);
                self.word(0);
            }
            jvmti::JVMTI_HEAP_REFERENCE_SYSTEM_CLASS => {
                self.u1(GC_ROOT_STICKY_CLASS);
                self.id(obj);
            }
            jvmti::JVMTI_HEAP_REFERENCE_MONITOR => {
                self.u1(GC_ROOT_MONITOR_USED);
                self.id(obj);
            }
            jvmti::JVMTI_HEAP_REFERENCE_STACK_LOCAL | jvmti::JVMTI_HEAP_REFERENCE_JNI_LOCAL => {
                // SAFETY: JVMTI passes the stack_local / jni_local member for these kinds.
                let (tt, depth) = unsafe {
                    if kind == jvmti::JVMTI_HEAP_REFERENCE_STACK_LOCAL {
                        ((*info).stack_local.thread_tag, (*info).stack_local.depth)
                    } else {
                        ((*info).jni_local.thread_tag, (*info).jni_local.depth)
                    }
                };
                let (env, num) = frame(self, tt, depth);
                self.u1(if kind == jvmti::JVMTI_HEAP_REFERENCE_STACK_LOCAL {
                    GC_ROOT_JAVA_FRAME
                } else {
                    GC_ROOT_JNI_LOCAL
                });
                self.id(obj);
                self.word(env);
                self.u4(num);
            }
            jvmti::JVMTI_HEAP_REFERENCE_THREAD => {
                let (env, _) = self.thread(obj);
                self.u1(GC_ROOT_THREAD_BLOCK);
                self.id(obj);
                self.word(env);
            }
            _ => {
                self.u1(GC_ROOT_UNKNOWN);
                self.id(obj);
            }
        }
    }

    /// The first report about `obj` as a referrer: writes its record's head.
    fn begin(&mut self, obj: jlong, class_tag: ClassTag) {
        self.cur = (obj, usize::MAX);
        self.cur_class = usize::MAX;
        self.cur_offs.1 = 0;
        self.cur_prim = None;
        if class_tag == self.class_class {
            if !self.mirrors.is_empty() {
                self.mirrors.remove(&obj);
            }
            // A class is an object too: its own tag as a class's.
            if self.classes.contains(ClassTag(obj)) {
                return; // a class: its CLASS_DUMP is written at the end
            }
        }
        let Some(ci) = self.classes.idx(class_tag) else {
            self.unknown_classes += 1;
            return;
        };
        self.cur_class = ci;
        let level = self.level;
        // The class's `hot` entry, not its layout: a few classes' entries stay in the cache, the
        // layouts behind their pointers do not.
        let Some(&hot) = self.classes.hot.get(ci) else { return };
        match hot.kind {
            KIND_INSTANCE => {
                if level == JVMPI_DUMP_LEVEL_0 {
                    self.u1(JVMPI_NORMAL_OBJECT as u8);
                    self.id(obj);
                    return;
                }
                let n = hot.size;
                self.cur_offs = (hot.start, hot.len, hot.total);
                let mut head = [0u8; HEAD];
                head[0] = GC_INSTANCE_DUMP;
                head[1..1 + W].copy_from_slice(&(obj as usize).to_ne_bytes());
                head[1 + W..1 + 2 * W].copy_from_slice(&(class_tag.0 as usize).to_ne_bytes());
                head[1 + 2 * W..].copy_from_slice(&n.to_be_bytes());
                self.cur.1 = self.record(&head, n as usize);
            }
            KIND_OBJ_ARRAY => {
                let element = hot.element;
                if level == JVMPI_DUMP_LEVEL_0 {
                    self.u1(JVMPI_CLASS as u8);
                    self.id(obj);
                    return;
                }
                let len = self.lengths.remove(&obj).unwrap_or(0).max(0);
                let mut head = [0u8; HEAD];
                head[0] = GC_OBJ_ARRAY_DUMP;
                head[1..1 + W].copy_from_slice(&(obj as usize).to_ne_bytes());
                head[1 + W..5 + W].copy_from_slice(&(len as u32).to_be_bytes());
                head[5 + W..].copy_from_slice(&(element.0 as usize).to_ne_bytes());
                self.cur.1 = self.record(&head, len as usize * W);
            }
            _ => {
                let ty = hot.ty;
                if level == JVMPI_DUMP_LEVEL_0 {
                    self.u1(ty);
                    self.id(obj);
                    return;
                }
                // The length (0 until then) and the values come with the array's values.
                self.u1(GC_PRIM_ARRAY_DUMP);
                self.id(obj);
                let len_at = self.out.len();
                self.u4(0);
                self.u1(ty);
                self.cur_prim = Some((len_at, ty));
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn reference(
        &mut self,
        kind: jvmtiHeapReferenceKind,
        info: *const jvmtiHeapReferenceInfo,
        class_tag: ClassTag,
        referrer_class_tag: ClassTag,
        size: jlong,
        tag: jlong,
        referrer: Option<jlong>,
        length: jint,
    ) {
        if class_tag == self.class_class && !self.single && !self.classes.contains(ClassTag(tag)) {
            self.mirrors.insert(tag);
        }
        if let Some((ci, work)) = self.classes.idx_work(class_tag) {
            if work != 0 {
                self.referee_work(ci, work, class_tag, tag, size, length);
            }
        }
        let Some(r) = referrer else {
            self.root(kind, info, tag);
            return;
        };
        if r != self.cur.0 {
            self.begin(r, referrer_class_tag);
        }
        if referrer_class_tag == self.class_class && self.cur_class == usize::MAX && self.classes.contains(ClassTag(r))
        {
            self.class_reference(ClassTag(r), kind, info, tag);
            return;
        }
        if self.cur.1 == usize::MAX {
            return;
        }
        match kind {
            jvmti::JVMTI_HEAP_REFERENCE_FIELD => {
                // SAFETY: JVMTI passes the `field` member for FIELD references.
                let index = unsafe { (*info).field.index };
                if let Some(slot) = self.instance_slot(index) {
                    self.put_id(self.cur.1 + slot as usize, tag);
                }
            }
            jvmti::JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT => {
                // SAFETY: JVMTI passes the `array` member for ARRAY_ELEMENT references.
                let index = unsafe { (*info).array.index };
                self.put_id(self.cur.1 + index as usize * W, tag);
            }
            _ => {}
        }
    }

    /// What a reference to an instance of class `ci` records once: its class's instance size
    /// (from the first), or an object array's length (until its record is written).
    #[cold]
    fn referee_work(&mut self, ci: usize, work: u8, class_tag: ClassTag, tag: jlong, size: jlong, length: jint) {
        if work == WORK_SIZE {
            if size > 0 {
                if let Some(c) = self.classes.list.get_mut(ci) {
                    c.instance_size = size as u32;
                }
                self.classes.work_done(class_tag, ci);
            }
        } else if work == WORK_LENGTH && length >= 0 && !self.single {
            self.lengths.entry(tag).or_insert(length);
        }
    }

    /// Where field `index` of the record being filled goes in its value area.
    #[inline]
    fn instance_slot(&self, index: jint) -> Option<u32> {
        let (start, len, total) = self.cur_offs;
        // Negative when `index` is past the class's fields: as u32, beyond `len`.
        let rev = total.wrapping_sub(1).wrapping_sub(index) as u32;
        if rev >= len {
            return None;
        }
        let off = *self.classes.offs.get((start + rev) as usize)?;
        (off != u32::MAX).then_some(off)
    }

    fn class_reference(
        &mut self,
        k: ClassTag,
        kind: jvmtiHeapReferenceKind,
        info: *const jvmtiHeapReferenceInfo,
        tag: jlong,
    ) {
        let level = self.level;
        let Some(c) = self.classes.get_mut(k) else { return };
        match kind {
            jvmti::JVMTI_HEAP_REFERENCE_SUPERCLASS => c.sup = tag,
            jvmti::JVMTI_HEAP_REFERENCE_CLASS_LOADER => c.loader = tag,
            jvmti::JVMTI_HEAP_REFERENCE_SIGNERS => c.signers = tag,
            jvmti::JVMTI_HEAP_REFERENCE_PROTECTION_DOMAIN => c.domain = tag,
            jvmti::JVMTI_HEAP_REFERENCE_INTERFACE => c.interfaces.push(tag),
            jvmti::JVMTI_HEAP_REFERENCE_STATIC_FIELD => {
                // SAFETY: JVMTI passes the `field` member for STATIC_FIELD references.
                let index = unsafe { (*info).field.index };
                if let Kind::Instance { statics, .. } = &c.layout.kind {
                    if let Some(s) = statics.slot(index) {
                        let off = if level == JVMPI_DUMP_LEVEL_2 { s.off2 } else { s.off1 } as usize;
                        if c.statics.len() < statics.size(level) as usize {
                            c.statics.resize(statics.size(level) as usize, 0);
                        }
                        if let Some(b) = c.statics.get_mut(off..off + W) {
                            b.copy_from_slice(&(tag as usize).to_ne_bytes());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    #[inline]
    fn primitive_field(
        &mut self,
        kind: jvmtiHeapReferenceKind,
        index: jint,
        class_tag: ClassTag,
        obj: jlong,
        v: jvalue,
        ty: jvmtiPrimitiveType,
    ) {
        if self.level != JVMPI_DUMP_LEVEL_2 {
            return;
        }
        if kind == jvmti::JVMTI_HEAP_REFERENCE_STATIC_FIELD {
            let (buf, n) = prim_bytes(v, ty);
            let bytes = &buf[..n];
            let Some(c) = self.classes.get_mut(ClassTag(obj)) else { return };
            let Kind::Instance { statics, .. } = &c.layout.kind else { return };
            let Some(s) = statics.slot(index) else { return };
            if c.statics.len() < statics.size2 as usize {
                c.statics.resize(statics.size2 as usize, 0);
            }
            let off = s.off2 as usize;
            if let Some(b) = c.statics.get_mut(off..off + bytes.len()) {
                b.copy_from_slice(bytes);
            }
            return;
        }
        if obj != self.cur.0 {
            self.begin(obj, class_tag);
        }
        if self.cur.1 == usize::MAX {
            return;
        }
        if let Some(off) = self.instance_slot(index) {
            let at = self.cur.1 + off as usize;
            // SAFETY: `ty` says which member of the union JVMTI filled.
            unsafe {
                match ty {
                    jvmti::JVMTI_PRIMITIVE_TYPE_BOOLEAN => self.put(at, [v.z]),
                    jvmti::JVMTI_PRIMITIVE_TYPE_BYTE => self.put(at, [v.b as u8]),
                    jvmti::JVMTI_PRIMITIVE_TYPE_CHAR => self.put(at, v.c.to_be_bytes()),
                    jvmti::JVMTI_PRIMITIVE_TYPE_SHORT => self.put(at, v.s.to_be_bytes()),
                    jvmti::JVMTI_PRIMITIVE_TYPE_INT => self.put(at, v.i.to_be_bytes()),
                    jvmti::JVMTI_PRIMITIVE_TYPE_FLOAT => self.put(at, v.f.to_bits().to_be_bytes()),
                    jvmti::JVMTI_PRIMITIVE_TYPE_LONG => self.put(at, v.j.to_be_bytes()),
                    _ => self.put(at, v.d.to_bits().to_be_bytes()),
                }
            }
        }
    }

    #[inline]
    fn array_values(
        &mut self,
        obj: jlong,
        class_tag: ClassTag,
        count: jint,
        elements: *const c_void,
        ty: jvmtiPrimitiveType,
    ) {
        if obj != self.cur.0 {
            self.begin(obj, class_tag);
        }
        // The record's length, and at level 2 its value area, now that the length is known.
        let Some((len_at, pty)) = self.cur_prim.take() else { return };
        let count = count.max(0);
        if let Some(b) = self.out.get_mut(len_at..len_at + 4) {
            b.copy_from_slice(&(count as u32).to_be_bytes());
        }
        if self.level != JVMPI_DUMP_LEVEL_2 || count == 0 {
            return;
        }
        let sz = jvmti_prim_size(ty);
        let n = count as usize * sz;
        let at = self.out.len();
        self.cur.1 = at;
        if sz != prim_size(pty) {
            self.zeros(count as usize * prim_size(pty));
            return;
        }
        // SAFETY: JVMTI passes `count` elements of type `ty`, alive during the callback.
        let src = unsafe { std::slice::from_raw_parts(elements as *const u8, n) };
        if sz == 1 {
            self.out.extend_from_slice(src);
        } else {
            self.out.resize(at + n, 0);
            let dst = &mut self.out[at..];
            for (d, s) in dst.chunks_exact_mut(sz).zip(src.chunks_exact(sz)) {
                d.copy_from_slice(s);
                if cfg!(target_endian = "little") {
                    d.reverse();
                }
            }
        }
    }

    /// Class records (CLASS_DUMP at levels 1/2; `NORMAL_OBJECT, id` at level 0), for every
    /// class in `only` or, when it is empty, every class of the table.
    fn write_classes(&mut self, only: Option<ClassTag>) {
        let mut order: Vec<(ClassTag, usize)> = match only {
            Some(t) => self.classes.idx(t).map(|i| (t, i)).into_iter().collect(),
            None => self.classes.list.iter().enumerate().map(|(i, c)| (c.tag, i)).collect(),
        };
        order.sort_unstable();
        let classes = std::mem::take(&mut self.classes.list);
        let whole = only.is_none() && self.level == JVMPI_DUMP_LEVEL_2;
        for (t, i) in order {
            let c = &classes[i];
            let start = self.out.len();
            if self.level == JVMPI_DUMP_LEVEL_0 {
                self.u1(JVMPI_NORMAL_OBJECT as u8);
                self.id(t.0);
            } else if let Kind::Instance { statics, interfaces, .. } = &c.layout.kind {
                // HotSpot 1.5 wrote the superclass of every class but Object, Object itself for
                // its direct subclasses and for interfaces (`super()` of an interface is Object
                // in HotSpot); JVMTI reports neither, so a class reported with none has Object.
                // hprof learns superclasses only from the OBJECT_DUMP of a class, and asks again
                // for every instance while a class other than Object has none.
                let sup = if c.sup == 0 && t != self.object_class { self.object_class.0 } else { c.sup };
                self.u1(GC_CLASS_DUMP);
                for v in [t.0, sup, c.loader, c.signers, c.domain, 0, 0] {
                    self.id(v);
                }
                self.u4(c.instance_size);
                for i in 0..*interfaces {
                    self.id(c.interfaces.get(i).copied().unwrap_or(0));
                }
                self.out.extend_from_slice(&0u16.to_be_bytes());
                let n = statics.size(self.level) as usize;
                let at = self.zeros(n);
                let m = c.statics.len().min(n);
                self.out[at..at + m].copy_from_slice(&c.statics[..m]);
                if whole {
                    self.class_records.insert(t, (start, self.out.len()));
                }
            }
        }
        self.classes.list = classes;
    }

    /// A tag for an object the walk meets untagged (from a block reserved for the walk).
    #[inline]
    fn fresh_tag(&mut self) -> jlong {
        self.tags.next()
    }
}

fn prim_size(ty: u8) -> usize {
    match ty as jint {
        JVMPI_BOOLEAN | JVMPI_BYTE => 1,
        JVMPI_CHAR | JVMPI_SHORT => 2,
        JVMPI_INT | JVMPI_FLOAT => 4,
        _ => 8,
    }
}

fn jvmti_prim_size(ty: jvmtiPrimitiveType) -> usize {
    match ty {
        jvmti::JVMTI_PRIMITIVE_TYPE_BOOLEAN | jvmti::JVMTI_PRIMITIVE_TYPE_BYTE => 1,
        jvmti::JVMTI_PRIMITIVE_TYPE_CHAR | jvmti::JVMTI_PRIMITIVE_TYPE_SHORT => 2,
        jvmti::JVMTI_PRIMITIVE_TYPE_INT | jvmti::JVMTI_PRIMITIVE_TYPE_FLOAT => 4,
        _ => 8,
    }
}

/// A primitive value, big-endian, at its JVMPI size: (bytes, length).
fn prim_bytes(v: jvalue, ty: jvmtiPrimitiveType) -> ([u8; 8], usize) {
    let mut b = [0u8; 8];
    // SAFETY: `ty` says which member of the union JVMTI filled.
    let n = unsafe {
        match ty {
            jvmti::JVMTI_PRIMITIVE_TYPE_BOOLEAN => {
                b[0] = v.z;
                1
            }
            jvmti::JVMTI_PRIMITIVE_TYPE_BYTE => {
                b[0] = v.b as u8;
                1
            }
            jvmti::JVMTI_PRIMITIVE_TYPE_CHAR => {
                b[..2].copy_from_slice(&v.c.to_be_bytes());
                2
            }
            jvmti::JVMTI_PRIMITIVE_TYPE_SHORT => {
                b[..2].copy_from_slice(&v.s.to_be_bytes());
                2
            }
            jvmti::JVMTI_PRIMITIVE_TYPE_INT => {
                b[..4].copy_from_slice(&v.i.to_be_bytes());
                4
            }
            jvmti::JVMTI_PRIMITIVE_TYPE_FLOAT => {
                b[..4].copy_from_slice(&v.f.to_bits().to_be_bytes());
                4
            }
            jvmti::JVMTI_PRIMITIVE_TYPE_LONG => {
                b = v.j.to_be_bytes();
                8
            }
            _ => {
                b = v.d.to_bits().to_be_bytes();
                8
            }
        }
    };
    (b, n)
}

// ---- the JVMTI heap callbacks (run in the VM operation; only tags and the state are touched) --

#[inline]
fn tag_here(st: &mut State, p: *mut jlong) -> jlong {
    tag_fresh(st, p).0
}

/// The object's tag, tagging it if it has none: (tag, whether this walk tagged it).
#[inline]
fn tag_fresh(st: &mut State, p: *mut jlong) -> (jlong, bool) {
    if p.is_null() {
        return (0, false);
    }
    // SAFETY: JVMTI passes a valid tag slot for the duration of the callback.
    unsafe {
        if *p == 0 {
            *p = st.fresh_tag();
            return (*p, true);
        }
        (*p, false)
    }
}

unsafe extern "system" fn on_reference(
    kind: jvmtiHeapReferenceKind,
    info: *const jvmtiHeapReferenceInfo,
    class_tag: jlong,
    referrer_class_tag: jlong,
    size: jlong,
    tag_ptr: *mut jlong,
    referrer_tag_ptr: *mut jlong,
    length: jint,
    ud: *mut c_void,
) -> jint {
    // SAFETY: `ud` is the State owned by `walk`, alive and used by this thread only.
    let st = unsafe { &mut *(ud as *mut State) };
    let (tag, fresh) = tag_fresh(st, tag_ptr);
    let referrer = (!referrer_tag_ptr.is_null()).then(|| tag_here(st, referrer_tag_ptr));
    // What a requested OBJECT_ALLOC of this object will say (see `ids`): written for the
    // objects this walk tags, at their first report, and for the objects allocation tracking
    // tagged (defined), at every report. An object a walk tagged before keeps what that walk
    // wrote (neither its class nor its size ever changes, and the entry goes with its slot);
    // the few others tagged before (IDs the agent asked for) are described by their first
    // request. Writing it for every reference was a store to a cold line per reference, a
    // tenth of the shim's own time in the walk.
    if fresh || tag & ids::DEFINED != 0 {
        ids::note_in_walk(ids::Tag(tag), ids::ClassTag(class_tag), size);
    }
    st.reference(kind, info, ClassTag(class_tag), ClassTag(referrer_class_tag), size, tag, referrer, length);
    if st.single {
        0
    } else {
        jvmti::JVMTI_VISIT_OBJECTS
    }
}

unsafe extern "system" fn on_primitive_field(
    kind: jvmtiHeapReferenceKind,
    info: *const jvmtiHeapReferenceInfo,
    class_tag: jlong,
    tag_ptr: *mut jlong,
    value: jvalue,
    ty: jvmtiPrimitiveType,
    ud: *mut c_void,
) -> jint {
    // SAFETY: as in `on_reference`.
    let st = unsafe { &mut *(ud as *mut State) };
    // SAFETY: JVMTI passes a valid `info` whose `field` member is set for field values.
    let index = unsafe { (*info).field.index };
    let obj = tag_here(st, tag_ptr);
    st.primitive_field(kind, index, ClassTag(class_tag), obj, value, ty);
    0
}

unsafe extern "system" fn on_array_values(
    class_tag: jlong,
    _size: jlong,
    tag_ptr: *mut jlong,
    count: jint,
    ty: jvmtiPrimitiveType,
    elements: *const c_void,
    ud: *mut c_void,
) -> jint {
    // SAFETY: as in `on_reference`.
    let st = unsafe { &mut *(ud as *mut State) };
    let obj = tag_here(st, tag_ptr);
    st.array_values(obj, ClassTag(class_tag), count, elements, ty);
    0
}

// ---- taking a dump ----------------------------------------------------------------------------

/// The loaded classes: tags, layouts, global references, and the tags of java.lang.Class and
/// java.lang.Object. Also tags them (so the walk sees
/// their tags as `class_tag`).
fn class_table(jni: &jvm::Jni) -> Result<(ClassTable, ClassTag, ClassTag), RoomError> {
    let all = jvm::loaded_classes().map_err(RoomError::Jvmti)?;
    let mut map = ClassTable::with_capacity(all.len());
    let mut class_class = ClassTag(0);
    let mut object_class = ClassTag(0);
    for k in all {
        if let Some(e) = class_entry(jni, k) {
            if class_class.0 == 0 || object_class.0 == 0 {
                match jvm::class_signature(k).as_deref() {
                    Ok("Ljava/lang/Class;") => class_class = e.tag,
                    Ok("Ljava/lang/Object;") => object_class = e.tag,
                    _ => {}
                }
            }
            map.insert(e);
        }
        jni.delete_local_ref(k);
    }
    Ok((map, class_class, object_class))
}

/// The table entry of a loaded class (None for a primitive type's class, or one that cannot be
/// prepared); links the class first if it is only loaded.
fn class_entry(jni: &jvm::Jni, k: jclass) -> Option<ClassEntry> {
    let tag = ClassTag(ids::indexed_tag_of(k).ok()?.0);
    let status = jvm::class_status(k).unwrap_or(0);
    if status & jvmti::JVMTI_CLASS_STATUS_PRIMITIVE != 0 {
        return None;
    }
    if status & (jvmti::JVMTI_CLASS_STATUS_PREPARED | jvmti::JVMTI_CLASS_STATUS_ARRAY) == 0 {
        // Loaded, not linked: its fields cannot be listed yet. Linking it (without
        // initialising it) is what announcing it does too (see `classes`).
        crate::face::own_work::link_unseen(jni, k);
    }
    let prepared = jvm::class_status(k)
        .is_ok_and(|s| s & (jvmti::JVMTI_CLASS_STATUS_PREPARED | jvmti::JVMTI_CLASS_STATUS_ARRAY) != 0);
    if !prepared {
        return None;
    }
    let layout = layout(jni, k, tag)?;
    Some(ClassEntry {
        tag,
        layout,
        class: jni.new_global_ref(k),
        sup: 0,
        loader: 0,
        signers: 0,
        domain: 0,
        interfaces: Vec::new(),
        statics: Vec::new(),
        instance_size: 0,
    })
}

/// The classes an OBJECT_DUMP of `obj` needs, and no others (a request costs what one object
/// costs, not what the loaded classes do: hprof asks for one per instance it prints): the
/// object's class, and what the record names as a class — for a class, itself, its superclass
/// and interfaces; for an object array, its element class. Those are announced after the walk.
/// Also (tag of java.lang.Class, tag of java.lang.Object).
fn object_classes(jni: &jvm::Jni, obj: jobject) -> Result<(ClassTable, ClassTag, ClassTag), RoomError> {
    // Local references the function deletes (the object itself is the caller's).
    let mut list: Vec<jclass> = Vec::new();
    let mut own = None;
    let k = jni.object_class(obj);
    let kk = jni.object_class(k);
    let object = jni.superclass(kk);
    // Their tags as classes' (tagged only: `class_entry` indexes the classes it enters).
    let class_class = ClassTag(ids::tag_of(kk)?.0);
    let object_class = ClassTag(ids::tag_of(object)?.0);
    if ClassTag(ids::tag_of(k)?.0) == class_class {
        own = Some(obj);
        let s = jni.superclass(obj);
        if !s.is_null() {
            list.push(s);
        }
        list.extend(jvm::interfaces(obj).unwrap_or_default());
    } else if let Some(e) = jvm::class_signature(k)
        .ok()
        .filter(|s| s.starts_with("[L") || s.starts_with("[["))
        .and_then(|_| jni.component_type(k))
    {
        list.push(e);
    }
    list.push(k);
    let mut map = ClassTable::with_capacity(list.len() + 1);
    for c in own.into_iter().chain(list.iter().copied()) {
        if let Some(e) = class_entry(jni, c) {
            if !map.contains(e.tag) {
                map.insert(e);
            } else {
                jni.delete_global_ref(e.class);
            }
        }
    }
    for c in list {
        jni.delete_local_ref(c);
    }
    jni.delete_local_ref(kk);
    jni.delete_local_ref(object);
    Ok((map, class_class, object_class))
}

/// Everything a dump event points into.
struct Snapshot {
    state: State,
    traces: Vec<JVMPI_CallTrace>,
    _frames: Vec<Vec<JVMPI_CallFrame>>,
}

/// Other live threads, suspended for the snapshot (global refs of those the shim suspended).
struct Suspended(Vec<jobject>);

fn suspend_others(jni: &jvm::Jni) -> Suspended {
    let me = jvm::current_thread().ok();
    let mut list = Vec::new();
    for t in jvm::all_threads().unwrap_or_default() {
        let mine = me.is_some_and(|m| jni.is_same(m, t));
        if !mine && !jni.is_virtual_thread(t) {
            list.push(jni.new_global_ref(t));
        }
        jni.delete_local_ref(t);
    }
    if let Some(m) = me {
        jni.delete_local_ref(m);
    }
    let res = jvm::suspend_list(&list).unwrap_or_default();
    // Threads that were suspended already (by the agent) or have ended stay as they are.
    let mut ours = Vec::new();
    for (t, r) in list.into_iter().zip(res.iter().copied().chain(std::iter::repeat(jvmti::jvmtiError::INTERNAL))) {
        if r == jvmti::jvmtiError::NONE {
            ours.push(t);
        } else {
            jni.delete_global_ref(t);
        }
    }
    Suspended(ours)
}

fn resume(jni: &jvm::Jni, s: Suspended) {
    let _ = jvm::resume_list(&s.0);
    for t in s.0 {
        jni.delete_global_ref(t);
    }
}

/// Announces (CLASS_LOAD, once the threads are resumed and before the dump is delivered) the
/// class of every frame of the dump's traces the agent has not been told about: JDK 21 loads
/// some classes inside its virtual-thread code's hidden frames without a ClassLoad event, and
/// an agent must be able to resolve every method a dump names (HPROF crashed on one it could
/// not).
///
/// As a CLASS_LOAD when the agent has it enabled, else (HPROF disables every event at
/// JVM_SHUT_DOWN and then asks for its last MONITOR_DUMP) as a requested one, to the agent
/// whose request this dump answers — only if CLASS_LOAD was ever enabled: an agent or library
/// that never asked for classes (Bhavaya's ThreadDump resolves each class it meets with its own
/// RequestEvent) gets no event it did not ask for, as on HotSpot.
fn announce_trace_classes(env: *mut JNIEnv, frames: &[Vec<JVMPI_CallFrame>]) {
    if !events::ever_enabled(JVMPI_EVENT_CLASS_LOAD) {
        return;
    }
    let sent = (events::is_ready() || events::in_last()) && events::enabled(JVMPI_EVENT_CLASS_LOAD);
    let Some(jni) = jvm::Jni::current() else { return };
    for f in frames.iter().flatten() {
        if f.method_id.is_null() || classes::described(f.method_id) {
            continue;
        }
        if let Ok(k) = jvm::method_class(f.method_id) {
            // Tagged here, with the threads running (a dump at VM death too: inside JVM_SHUT_DOWN).
            let r = ids::tag_of(k).map_err(RoomError::from).and_then(|tag| {
                if sent {
                    classes::ensure_announced_tagged(env, k, ids::ClassTag(tag.0))
                } else {
                    classes::describe_requested(env, k, ids::ClassTag(tag.0))
                }
            });
            if let Err(e) = r {
                log::debug!("dump: announcing the class of a frame: {e}");
            }
            jni.delete_local_ref(k);
        }
    }
}

/// Reads the stacks of all threads: (thread tag → (JNIEnv, frames)), and the traces.
type Stacks = (
    HashMap<jlong, (usize, jint)>,
    Vec<JVMPI_CallTrace>,
    Vec<Vec<JVMPI_CallFrame>>,
    Vec<jlong>,
    HashMap<jlong, Vec<usize>>,
);

/// Reads the stacks of all threads: (thread tag → (JNIEnv, frames)), the traces of the threads
/// the shim knows, their frames, and their thread tags (in the order of the traces).
fn stacks(jni: &jvm::Jni, with_traces: bool) -> Stacks {
    let mut map = HashMap::default();
    let mut traces = Vec::new();
    let mut frames = Vec::new();
    let mut tags = Vec::new();
    let mut left_out = HashMap::default();
    for t in jvm::all_threads().unwrap_or_default() {
        // Read, not assigned: the other threads are suspended, and one of them may be stopped
        // inside the assignment's lock (`ids::tag_of`). The threads the agent knows were tagged
        // when they were announced (`threads::announce_all` before the snapshot). Only threads
        // the requesting agent knows, pinned until the dump is delivered.
        let tag = jvm::get_tag(t).unwrap_or(0);
        let env = if tag == 0 { 0 } else { threads::known_env_by_tag(ids::Tag(tag)) };
        let st = jvm::stack_trace(t, MAX_FRAMES).unwrap_or_default();
        let (fs, out) = calltrace::shown_frames(&st);
        map.insert(tag, (env, if st.is_empty() { -1 } else { fs.len() as jint }));
        if !out.is_empty() {
            left_out.insert(tag, out);
        }
        if with_traces && env != 0 {
            traces.push((env, fs.len()));
            tags.push(tag);
            frames.push(fs);
        }
        jni.delete_local_ref(t);
    }
    let traces = traces
        .into_iter()
        .zip(frames.iter_mut())
        .map(|((env, n), fs)| JVMPI_CallTrace {
            env_id: env as *mut JNIEnv,
            num_frames: n as jint,
            frames: fs.as_mut_ptr(),
        })
        .collect();
    (map, traces, frames, tags, left_out)
}

fn walk(st: &mut State, initial: jobject) -> Result<(), RoomError> {
    let mut cb = jvmti::jvmtiHeapCallbacks { heap_reference_callback: Some(on_reference), ..Default::default() };
    if st.level == JVMPI_DUMP_LEVEL_2 {
        cb.primitive_field_callback = Some(on_primitive_field);
    }
    cb.array_primitive_value_callback = Some(on_array_values);
    // SAFETY: the callbacks above only touch tags and `st`, which outlives the synchronous walk.
    let r = unsafe { jvm::follow_references(initial, &cb, st as *mut State as *mut c_void) };
    // The walk described the objects it met (`ids::note_in_walk`).
    ids::noting();
    r.map_err(RoomError::Jvmti)
}

/// The state of a heap dump (`single`: None), or of the OBJECT_DUMP of one object.
fn new_state(jni: &jvm::Jni, level: jint, single: Option<jobject>) -> Result<State, RoomError> {
    let (classes, class_class, object_class) = match single {
        None => class_table(jni)?,
        Some(obj) => object_classes(jni, obj)?,
    };
    let single = single.is_some();
    let mut classes = classes;
    classes.prepare(level);
    Ok(State {
        level,
        single,
        out: Vec::new(),
        classes,
        class_class,
        object_class,
        class_records: HashMap::default(),
        lengths: HashMap::default(),
        cur: (0, usize::MAX),
        cur_class: usize::MAX,
        cur_offs: (0, 0, 0),
        cur_prim: None,
        tags: ids::TagBlock::new(),
        threads: HashMap::default(),
        left_out: HashMap::default(),
        unknown_classes: 0,
        mirrors: Default::default(),
    })
}

/// Announces the classes in the table (CLASS_LOAD, if the agent enabled it) and frees the table.
fn finish(env: *mut JNIEnv, jni: &jvm::Jni, st: &mut State) {
    for c in std::mem::take(&mut st.classes.list) {
        if (events::is_ready() || events::in_last()) && events::enabled(JVMPI_EVENT_CLASS_LOAD) {
            if let Err(e) = classes::ensure_announced_tagged(env, c.class, c.tag) {
                log::debug!("dump: announcing a class: {e}");
            }
        }
        jni.delete_global_ref(c.class);
    }
    if st.unknown_classes > 0 {
        log::info!("dump: {} objects of classes loaded during the dump were left out", st.unknown_classes);
    }
}

/// Takes a heap dump. What calls into the agent (THREAD_START and CLASS_LOAD of what the dump
/// names, and the CLASS_LOAD that linking a class may cause) happens before and after the
/// snapshot, never while `one` is held.
fn heap_snapshot(env: *mut JNIEnv, level: jint) -> Result<Snapshot, RoomError> {
    let jni = jvm::Jni::of(env);
    let t0 = std::time::Instant::now();
    threads::announce_all();
    let mut st = new_state(&jni, level, None)?;
    // One snapshot at a time (two threads suspending each other would both stop; see
    // `jvm::exclusive`), held from the suspension of the other threads until they are resumed.
    let one = jvm::exclusive();
    let t1 = t0.elapsed();
    // Untouched capacity costs no resident memory; it saves the copies of growing by doubling.
    // (The first dump grows by doubling; large blocks grow by remapping, not copying, so that
    // costs little. Asking Java for the heap's size to guess better would itself leave objects
    // in the heap: the class loader's lock for the name looked up.)
    let last = STATE.last_size.load(std::sync::atomic::Ordering::Relaxed);
    st.out.reserve(last + last / 8);
    let suspended = suspend_others(&jni);
    let (map, traces, frames, _, left_out) = stacks(&jni, level != JVMPI_DUMP_LEVEL_0);
    st.threads = map;
    st.left_out = left_out;
    let t2 = t0.elapsed();
    let r = walk(&mut st, std::ptr::null_mut());
    let t3 = t0.elapsed();
    resume(&jni, suspended);
    drop(one);
    announce_trace_classes(env, &frames);
    if let Err(e) = r {
        finish(env, &jni, &mut st);
        return Err(e);
    }
    // Class objects JVMTI named but never described get an instance record of
    // java.lang.Class with NULL/0 values, so that every ID of the dump has a record.
    for m in std::mem::take(&mut st.mirrors) {
        st.begin(m, st.class_class);
    }
    st.write_classes(None);
    st.lengths = HashMap::default();
    if level == JVMPI_DUMP_LEVEL_2 {
        STATE.last_size.store(st.out.len(), std::sync::atomic::Ordering::Relaxed);
    }
    finish(env, &jni, &mut st);
    log::debug!(
        "heap dump: classes {:?}, threads {:?}, walk {:?}, the rest {:?}; {} bytes",
        t1,
        t2 - t1,
        t3 - t2,
        t0.elapsed() - t3,
        st.out.len()
    );
    Ok(Snapshot { state: st, traces, _frames: frames })
}

/// Whether a dump may be taken now: not before the agent's `JVM_OnLoad` has returned (the
/// JVM has not finished starting for the agent; HotSpot 1.5 had not even created its heap).
fn may_dump() -> Result<(), RoomError> {
    if !events::is_ready() && !events::is_dead() {
        return Err(RoomError::TooEarly);
    }
    Ok(())
}

/// A dump taken after VM death (the gate closed: inside JVM_SHUT_DOWN) cannot be delivered.
fn delivered(sent: bool) -> Result<(), RoomError> {
    if sent {
        Ok(())
    } else {
        Err(RoomError::NotDelivered { closed: events::is_dead() })
    }
}

/// `RequestEvent(JVMPI_EVENT_HEAP_DUMP, arg)`. Any thread may request one from inside any
/// handler, a HEAP_DUMP's included, as HotSpot 1.5 allowed: nothing of the shim is held while
/// the event is delivered.
pub fn request_heap_dump(arg: *mut c_void) -> Result<(), RoomError> {
    may_dump()?;
    let level = if arg.is_null() {
        JVMPI_DUMP_LEVEL_2
    } else {
        crate::vm::safemem::read(arg as *const JVMPI_HeapDumpArg)
            .ok_or_else(|| format!("the JVMPI_HeapDumpArg at {arg:p} is not readable"))?
            .heap_dump_level
    };
    if !(JVMPI_DUMP_LEVEL_0..=JVMPI_DUMP_LEVEL_2).contains(&level) {
        return Err(format!("no dump level {level}").into());
    }
    let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
    let _pins = threads::hold_pins();
    let mut snap = heap_snapshot(env, level)?;
    let out = &mut snap.state.out;
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_HEAP_DUMP, env);
    ev.u.heap_dump = HeapDump {
        dump_level: level,
        begin: out.as_mut_ptr() as *mut _,
        // SAFETY: one past the end of the buffer.
        end: unsafe { out.as_mut_ptr().add(out.len()) } as *mut _,
        num_traces: snap.traces.len() as jint,
        traces: if snap.traces.is_empty() { std::ptr::null_mut() } else { snap.traces.as_mut_ptr() },
    };
    let records = std::mem::take(&mut snap.state.class_records);
    let sent = if records.is_empty() {
        events::send_requested(&mut ev)
    } else {
        DELIVERING.with(|d| d.borrow_mut().push((records, snap.state.out.as_ptr())));
        let sent = events::send_requested(&mut ev);
        DELIVERING.with(|d| d.borrow_mut().pop());
        sent
    };
    delivered(sent)?;
    Ok(())
}

thread_local! {
    /// The level-2 heap dumps being delivered in this thread (innermost last): where each
    /// class's CLASS_DUMP record is, and the dump's buffer (alive while it is delivered).
    static DELIVERING: std::cell::RefCell<Vec<(HashMap<ClassTag, (usize, usize)>, *const u8)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The CLASS_DUMP record of class `tag` in a level-2 heap dump this thread is delivering: an
/// OBJECT_DUMP of a class asked for from inside the HEAP_DUMP handler (hprof asks for one per
/// instance it prints) answers with the class as that dump shows it, the snapshot the agent is
/// reading, at the cost of a copy instead of a heap walk (a safepoint) each.
fn record_being_delivered(tag: ClassTag) -> Option<Vec<u8>> {
    DELIVERING.with(|d| {
        let d = d.borrow();
        let (map, buf) = d.last()?;
        let &(a, b) = map.get(&tag)?;
        // `buf` lives until its delivery returns, which pops it.
        // SAFETY: `buf` is the buffer of the heap dump being delivered in this thread; `a..b` is a record inside it.
        Some(unsafe { std::slice::from_raw_parts(buf.add(a), b - a) }.to_vec())
    })
}

/// `RequestEvent(JVMPI_EVENT_OBJECT_DUMP, id)`: one record at level 2. From any handler, an
/// OBJECT_DUMP's or a HEAP_DUMP's included (hprof asks for the OBJECT_DUMP of a class from
/// inside its HEAP_DUMP handler: that is how it learns a superclass). The walk of one object
/// suspends nobody: it takes no lock.
pub fn request_object_dump(id: jobjectID) -> Result<(), RoomError> {
    may_dump()?;
    let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
    let tag = ids::to_tag(id);
    // A class is an object too: its ID as a class's.
    if let Some(mut out) = record_being_delivered(ClassTag(tag)) {
        let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_DUMP, env);
        ev.u.object_dump = ObjectDump { data_len: out.len() as jint, data: out.as_mut_ptr() as *mut _ };
        return delivered(events::send_requested(&mut ev));
    }
    let jni = jvm::Jni::of(env);
    // No other dump may suspend this thread in the middle of its walk (see `jvm::exclusive`);
    // released before the agent is called.
    let one = jvm::exclusive();
    let obj = ids::object_of(id)?;
    let r = (|| {
        let mut st = new_state(&jni, JVMPI_DUMP_LEVEL_2, Some(obj))?;
        let k = jni.object_class(obj);
        let ktag = ids::class_tag_of(k).unwrap_or_default();
        jni.delete_local_ref(k);
        if matches!(st.classes.get(ktag).map(|c| &c.layout.kind), Some(Kind::ObjArray { .. })) {
            st.lengths.insert(tag, jni.array_length(obj));
        }
        let r = walk(&mut st, obj);
        if r.is_ok() {
            if ktag == st.class_class && st.classes.contains(ClassTag(tag)) {
                st.write_classes(Some(ClassTag(tag)));
            } else if st.cur.0 != tag {
                // An object that reported nothing: its record has no values.
                st.begin(tag, ktag);
            }
        }
        finish(env, &jni, &mut st);
        r.map(|()| st.out)
    })();
    jni.delete_local_ref(obj);
    drop(one);
    let mut out = r?;
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_OBJECT_DUMP, env);
    ev.u.object_dump = ObjectDump { data_len: out.len() as jint, data: out.as_mut_ptr() as *mut _ };
    delivered(events::send_requested(&mut ev))?;
    Ok(())
}

// ---- MONITOR_DUMP -----------------------------------------------------------------------------

/// Monitor dump record types (jvmpi.h).
pub const JVMPI_MONITOR_JAVA: u8 = 0x01;
pub const JVMPI_MONITOR_RAW: u8 = 0x02;

/// A Java monitor as the dump writes it: object tag, owner, waiting to enter, waiting to be
/// notified (JNIEnvs; 0 for a thread the shim does not know).
struct JavaMonitor {
    tag: jlong,
    owner: usize,
    enter: Vec<usize>,
    notify: Vec<usize>,
}

fn env_of_thread(t: jobject) -> usize {
    if t.is_null() {
        return 0;
    }
    // Read, not assigned (the other threads are suspended; see `stacks`): the threads the agent
    // knows were tagged when they were announced.
    jvm::get_tag(t).ok().filter(|&g| g != 0).map_or(0, |g| threads::known_env_by_tag(ids::Tag(g)))
}

/// Every Java monitor that is owned or has waiters. JVMTI has no list of monitors; every one
/// of them is owned by a thread or is the one a thread is blocked on or waits in, so the
/// threads' owned and contended monitors name them all. Each is then read with
/// `GetObjectMonitorUsage`. Before JDK 23 its `waiters` also held the threads in
/// `Object.wait` (JDK-8247972), so those in `notify_waiters` are taken out of it.
fn java_monitors(jni: &jvm::Jni) -> Result<Vec<JavaMonitor>, RoomError> {
    let mut objs: Vec<(jlong, jobject)> = Vec::new();
    for t in jvm::all_threads().map_err(RoomError::Jvmti)? {
        let mut found = match jvm::owned_monitors(t) {
            Ok(v) => v,
            Err(e) => {
                if e == jvmti::jvmtiError::MUST_POSSESS_CAPABILITY
                    && !STATE.said_no_owned.swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    log::info!(
                        "MONITOR_DUMP lists the monitors threads wait on, not those owned with nobody waiting \
                         (the shim's option owned-monitors=yes lists them, and turns C2's escape analysis off before JDK 16)"
                    );
                }
                Vec::new()
            }
        };
        match jvm::contended_monitor(t) {
            Ok(Some(c)) => found.push(c),
            // Since JDK 23 a thread in Object.wait has no contended monitor (JDK-8256314); the
            // object is the receiver of its Object.wait frame, readable only with
            // can_access_local_variables (held by default from JDK 16: `locals=`).
            _ if jvm::thread_state(t).is_ok_and(|s| s & jvmti::JVMTI_THREAD_STATE_IN_OBJECT_WAIT != 0) => {
                found.extend((0..3).find_map(|d| jvm::frame_receiver(t, d)));
            }
            _ => {}
        }
        for m in found {
            // The other threads are suspended: one may hold the tag assignment's lock.
            match ids::tag_of_while_others_suspended(m) {
                Ok(ids::Tag(tag)) if !objs.iter().any(|&(t, _)| t == tag) => objs.push((tag, m)),
                _ => jni.delete_local_ref(m),
            }
        }
        jni.delete_local_ref(t);
    }
    let mut out = Vec::with_capacity(objs.len());
    for (tag, m) in objs {
        let usage = jvm::monitor_usage(m);
        jni.delete_local_ref(m);
        let Ok((owner, _count, waiters, notify_waiters)) = usage else { continue };
        let notify_tags: Vec<jlong> = notify_waiters.iter().map(|&t| jvm::get_tag(t).unwrap_or(0)).collect();
        // Threads the agent does not know are left out of the lists.
        let notify: Vec<usize> = notify_waiters.iter().map(|&t| env_of_thread(t)).filter(|&e| e != 0).collect();
        let enter: Vec<usize> = waiters
            .iter()
            .filter(|&&t| !notify_tags.contains(&jvm::get_tag(t).unwrap_or(-1)))
            .map(|&t| env_of_thread(t))
            .filter(|&e| e != 0)
            .collect();
        let owner_env = env_of_thread(owner);
        for t in waiters.into_iter().chain(notify_waiters).chain((!owner.is_null()).then_some(owner)) {
            jni.delete_local_ref(t);
        }
        if owner_env != 0 || !enter.is_empty() || !notify.is_empty() {
            out.push(JavaMonitor { tag, owner: owner_env, enter, notify });
        }
    }
    Ok(out)
}

/// Writes the monitor records: HotSpot 1.5's layout, and its "entry count", which was the
/// number of threads waiting to enter plus those waiting to be notified (not the owner's
/// recursion count).
fn write_monitors(java: &[JavaMonitor], raw: &[crate::rooms::monitors::RawMonitorState]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * (java.len() + raw.len()));
    let word = |out: &mut Vec<u8>, w: usize| out.extend_from_slice(&w.to_ne_bytes());
    let tail = |out: &mut Vec<u8>, enter: &[usize], notify: &[usize]| {
        out.extend_from_slice(&((enter.len() + notify.len()) as u32).to_be_bytes());
        for list in [enter, notify] {
            out.extend_from_slice(&(list.len() as u32).to_be_bytes());
            for &e in list {
                out.extend_from_slice(&e.to_ne_bytes());
            }
        }
    };
    for m in java {
        out.push(JVMPI_MONITOR_JAVA);
        word(&mut out, m.tag as usize);
        word(&mut out, m.owner);
        tail(&mut out, &m.enter, &m.notify);
    }
    for m in raw {
        out.push(JVMPI_MONITOR_RAW);
        word(&mut out, m.name_ptr());
        word(&mut out, m.handle);
        word(&mut out, m.owner);
        tail(&mut out, &m.enter, &m.notify);
    }
    out
}

/// `RequestEvent(JVMPI_EVENT_MONITOR_DUMP, NULL)`: the Java monitors that are owned or have
/// waiters, every raw monitor of the agent's, and the traces and statuses of all threads, read
/// while the other threads are suspended; delivered after they are resumed.
pub fn request_monitor_dump() -> Result<(), RoomError> {
    may_dump()?;
    let env = jvm::current_jni().ok_or("the calling thread is not attached to the JVM")?;
    let jni = jvm::Jni::of(env);
    let _pins = threads::hold_pins();
    threads::announce_all();
    // One snapshot at a time (two threads suspending each other would both stop; see
    // `jvm::exclusive`), held from the suspension of the other threads until they are resumed.
    let one = jvm::exclusive();
    let suspended = suspend_others(&jni);
    let ours: Vec<jlong> = suspended.0.iter().filter_map(|&t| jvm::get_tag(t).ok().filter(|&g| g != 0)).collect();
    let java = java_monitors(&jni);
    let mut raw = crate::rooms::monitors::snapshot();
    for m in &mut raw {
        // Only threads the agent knows (pinned until the dump is delivered).
        m.owner = if m.owner == 0 { 0 } else { threads::known_env(m.owner) };
        for list in [&mut m.enter, &mut m.notify] {
            list.retain(|&e| threads::known_env(e) != 0);
        }
    }
    let (_, mut traces, frames, tags, _) = stacks(&jni, true);
    let mut status: Vec<jint> = traces
        .iter()
        .zip(&tags)
        .map(|(t, tag)| {
            let s = threads::status(t.env_id);
            // The shim's own suspension is not the thread's state.
            if ours.contains(tag) {
                s & !JVMPI_THREAD_SUSPENDED
            } else {
                s
            }
        })
        .collect();
    resume(&jni, suspended);
    drop(one);
    announce_trace_classes(env, &frames);
    let mut out = write_monitors(&java?, &raw);
    let mut ev = JVMPI_Event::new(JVMPI_EVENT_MONITOR_DUMP, env);
    ev.u.monitor_dump = MonitorDump {
        begin: out.as_mut_ptr() as *mut _,
        // SAFETY: one past the end of the buffer.
        end: unsafe { out.as_mut_ptr().add(out.len()) } as *mut _,
        num_traces: traces.len() as jint,
        traces: if traces.is_empty() { std::ptr::null_mut() } else { traces.as_mut_ptr() },
        threads_status: if status.is_empty() { std::ptr::null_mut() } else { status.as_mut_ptr() },
    };
    delivered(events::send_requested(&mut ev))?;
    drop((raw, frames));
    Ok(())
}
