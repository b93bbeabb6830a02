//! The deaths waiting for a GC bracket, kept in little memory.
//!
//! Since JDK 16 the JVM posts ObjectFree after the collection, so the deaths of one collection
//! wait for the next GC bracket — millions of them in an allocation-heavy program. They are the
//! only memory of the shim that grows with the number of objects, so they are stored compactly.
//! A tag is a multiple of 8; `tag >> 3` is its slot. Slots are grouped in spans of 65,536; a span
//! holds 2-byte offsets while few of its slots have died, and switches to a bitmap (8 KiB, one
//! bit per slot) when many have. Objects allocated together tend to die together, so most
//! deaths end up as single bits.

use crate::face::ids::Tag;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

const SPAN_BITS: u32 = 16;
const SPAN: u64 = 1 << SPAN_BITS;
/// A span with more entries than this uses a bitmap (8 KiB either way).
const DENSE_AT: usize = 4096;

enum Span {
    Sparse(Vec<u16>),
    Dense(Box<[u64; (SPAN / 64) as usize]>),
}

#[derive(Default)]
pub struct DeadQueue {
    spans: BTreeMap<u64, Span>,
    /// Tags that are not multiples of 8 (never made by the shim; kept as they are).
    odd: Vec<Tag>,
    len: usize,
}

impl DeadQueue {
    pub const fn new() -> Self {
        DeadQueue { spans: BTreeMap::new(), odd: Vec::new(), len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records a death (each tag dies once: JVMTI posts one ObjectFree per tagged object).
    pub fn push(&mut self, tag: Tag) {
        self.len += 1;
        if tag.0 <= 0 || tag.0 & 7 != 0 {
            self.odd.push(tag);
            return;
        }
        let slot = (tag.0 as u64) >> 3;
        let (key, off) = (slot >> SPAN_BITS, (slot & (SPAN - 1)) as u16);
        let span = self.spans.entry(key).or_insert_with(|| Span::Sparse(Vec::new()));
        match span {
            Span::Sparse(v) => {
                v.push(off);
                if v.len() > DENSE_AT {
                    let mut bits = Box::new([0u64; (SPAN / 64) as usize]);
                    for &o in v.iter() {
                        bits[(o >> 6) as usize] |= 1 << (o & 63);
                    }
                    *span = Span::Dense(bits);
                }
            }
            Span::Dense(bits) => bits[(off >> 6) as usize] |= 1 << (off & 63),
        }
    }

    /// Every recorded tag (in no particular order), consuming the queue and its memory.
    pub fn into_tags(self) -> impl Iterator<Item = Tag> {
        let tag = |key: u64, off: u64| Tag((((key << SPAN_BITS) | off) << 3) as i64);
        self.spans
            .into_iter()
            .flat_map(move |(key, span)| -> Box<dyn Iterator<Item = Tag>> {
                match span {
                    Span::Sparse(v) => Box::new(v.into_iter().map(move |o| tag(key, o as u64))),
                    Span::Dense(bits) => Box::new(
                        (0..SPAN)
                            .filter(move |&o| bits[(o >> 6) as usize] & (1 << (o & 63)) != 0)
                            .map(move |o| tag(key, o)),
                    ),
                }
            })
            .chain(self.odd)
    }

    /// Bytes held (approximately), for the shim's memory report.
    pub fn bytes(&self) -> usize {
        self.spans
            .values()
            .map(|s| match s {
                Span::Sparse(v) => v.capacity() * 2 + 48,
                Span::Dense(_) => (SPAN / 8) as usize + 48,
            })
            .sum::<usize>()
            + self.odd.capacity() * 8
    }
}

// ---- the queue of the process --------------------------------------------------------------

/// The deaths room's state.
struct DeathsState {
    /// Tags whose objects died, not yet reported: pushed by [`on_object_free`] (JVMTI
    /// ObjectFree), taken out whole by [`take`] for a GC bracket.
    dead_tags: Mutex<DeadQueue>,
    /// The most deaths ever waiting for a bracket (the shim's only memory that grows with
    /// objects), raised by [`on_object_free`], read by [`queue_peak`].
    peak_queued: AtomicUsize,
    /// The most bytes the waiting deaths ever took (sampled every 4096 deaths), raised by
    /// [`on_object_free`], read by [`queue_peak`].
    peak_bytes: AtomicUsize,
    /// Deaths received so far (counted by [`on_object_free`], under the queue's lock), for
    /// [`wait_until_quiet`].
    received: AtomicUsize,
}

static STATE: DeathsState = DeathsState {
    dead_tags: Mutex::new(DeadQueue::new()),
    peak_queued: AtomicUsize::new(0),
    peak_bytes: AtomicUsize::new(0),
    received: AtomicUsize::new(0),
};

/// Waits until no death has come in for `quiet` (checked every 10 ms, or every `quiet` if shorter), `most` at most: the JVM
/// posting deaths it owes (the Service Thread, after a collection, on JDK 16+) has done so.
/// Returns whether it got quiet.
pub fn wait_until_quiet(quiet: std::time::Duration, most: std::time::Duration) -> bool {
    let step = std::time::Duration::from_millis(10).min(quiet);
    let start = std::time::Instant::now();
    let mut seen = STATE.received.load(Relaxed);
    let mut since = std::time::Instant::now();
    while since.elapsed() < quiet {
        if start.elapsed() >= most {
            return false;
        }
        std::thread::sleep(step);
        let now = STATE.received.load(Relaxed);
        if now != seen {
            seen = now;
            since = std::time::Instant::now();
        }
    }
    true
}

/// (most deaths ever queued, their bytes) — the report's memory figure.
pub fn queue_peak() -> (usize, usize) {
    (STATE.peak_queued.load(Relaxed), STATE.peak_bytes.load(Relaxed))
}

/// JVMTI ObjectFree (inside the collection on JDK 11, later on the Service Thread since 16).
pub fn on_object_free(tag: Tag) {
    let mut q = crate::vm::logger::lock(&STATE.dead_tags);
    q.push(tag);
    STATE.received.store(STATE.received.load(Relaxed).wrapping_add(1), Relaxed);
    if q.len() & 0xFFF == 0 && q.bytes() > STATE.peak_bytes.load(Relaxed) {
        STATE.peak_bytes.store(q.bytes(), Relaxed);
    }
    if q.len() > STATE.peak_queued.load(Relaxed) {
        STATE.peak_queued.store(q.len(), Relaxed);
    }
}

/// Every death queued so far, taken out for a GC bracket.
pub fn take() -> DeadQueue {
    std::mem::replace(&mut *crate::vm::logger::lock(&STATE.dead_tags), DeadQueue::new())
}

/// Whether no death waits.
pub fn is_empty() -> bool {
    crate::vm::logger::lock(&STATE.dead_tags).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_comes_back_once_sparse_dense_and_odd() {
        let mut q = DeadQueue::new();
        let mut want: Vec<Tag> = Vec::new();
        // A dense run (one span turns into a bitmap), scattered tags, defined-bit tags, odd ones.
        for i in 1..20_000i64 {
            want.push(Tag(i * 16 + 8));
        }
        for i in 0..100i64 {
            want.push(Tag((i * 7_919_999 + 3) * 16));
        }
        want.push(Tag(5));
        want.push(Tag(-8));
        for &t in &want {
            q.push(t);
        }
        assert_eq!(q.len(), want.len());
        let dense_bytes = q.bytes();
        assert!(dense_bytes < 20_000 * 2, "clustered deaths are stored as bits: {dense_bytes} bytes");
        let mut got: Vec<Tag> = q.into_tags().collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
    }
}
