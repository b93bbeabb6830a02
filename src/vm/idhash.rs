//! Maps keyed by the shim's own integers: tags, method IDs, JNIEnv and monitor addresses.
//!
//! What is here: a multiplicative hasher and the `DashMap`/`DashSet` types built on it. What is
//! not: maps keyed by anything an agent or a program chooses (strings, class names), which keep
//! the standard SipHash. The keys here are addresses and tags (distinct, aligned, never chosen
//! by an agent), so flooding is no concern, and SipHash was the dearest part of a lookup on the
//! per-event paths (a stack trace looks up every frame's method twice).

use dashmap::{DashMap, DashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply by the golden ratio and rotate, so that keys differing only above their alignment
/// bits spread over both hashbrown's bucket index (low bits) and its control byte and
/// dashmap's shard (high bits).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl IdHasher {
    #[inline]
    fn mix(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.mix(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.mix(v as u64);
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.mix(v);
    }
    #[inline]
    fn write_i64(&mut self, v: i64) {
        self.mix(v as u64);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.mix(v as u64);
    }
}

pub type IdBuild = BuildHasherDefault<IdHasher>;
/// A concurrent map keyed by one of the shim's integers.
pub type IdMap<K, V> = DashMap<K, V, IdBuild>;
/// A concurrent set of the shim's integers.
pub type IdSet<K> = DashSet<K, IdBuild>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn aligned_keys_spread_over_low_and_high_bits() {
        let b = IdBuild::default();
        let mut low = [0u32; 64];
        let mut high = [0u32; 64];
        for k in 1..=64 * 64u64 {
            let h = b.hash_one(k * 16);
            low[(h % 64) as usize] += 1;
            high[(h >> 58) as usize] += 1;
        }
        // 4 096 keys into 64 buckets: every bucket between a half and twice the mean.
        assert!(low.iter().chain(high.iter()).all(|&n| (32..=128).contains(&n)), "{low:?} {high:?}");
    }
}
