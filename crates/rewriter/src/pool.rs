//! The constant pool of a class being edited: the class's own entries, parsed by
//! `ristretto_classfile`, looked up without being built, and new entries appended (existing
//! entries are never moved, so every index in the original bytes stays valid). The other
//! modules of the editor read and extend the pool through [`Pool`]; this module depends on
//! none of them.

use super::BciError;
use ristretto_classfile::{Constant, ConstantPool, JavaStr, JavaString};
use std::borrow::Cow;

/// Keys of the constants the editor may add, for reuse of existing entries. A Utf8 is keyed by
/// a hash of its bytes (no copy of each string of the pool); a hit is checked against the bytes.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum Key {
    Utf8(u64),
    Class(u16),
    String(u16),
    Integer(i32),
    NameAndType(u16, u16),
    Field(u16, u16),
    Method(u16, u16),
    InterfaceMethod(u16, u16),
}

fn key_of(c: &Constant<'_>) -> Option<Key> {
    Some(match c {
        Constant::Utf8(s) => Key::Utf8(hash_bytes(s.as_bytes())),
        Constant::Class(i) => Key::Class(*i),
        Constant::String(i) => Key::String(*i),
        Constant::Integer(v) => Key::Integer(*v),
        Constant::NameAndType { name_index, descriptor_index } => Key::NameAndType(*name_index, *descriptor_index),
        Constant::FieldRef { class_index, name_and_type_index } => Key::Field(*class_index, *name_and_type_index),
        Constant::MethodRef { class_index, name_and_type_index } => Key::Method(*class_index, *name_and_type_index),
        Constant::InterfaceMethodRef { class_index, name_and_type_index } => {
            Key::InterfaceMethod(*class_index, *name_and_type_index)
        }
        _ => return None,
    })
}

const SEED: u64 = 0x517c_c1b7_2722_0a95;

/// A fast 64-bit hash of a string's bytes (class files are the JVM's, not an adversary's).
fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = (b.len() as u64).wrapping_mul(SEED);
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        h = (h.rotate_left(5) ^ u64::from_le_bytes(c.try_into().expect("8 bytes"))).wrapping_mul(SEED);
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(SEED)
}

/// The pool's index: key → the first entry with that key. Open addressing with linear probing
/// over (key, entry) slots, entry 0 marking an empty slot: built once per class over the whole
/// pool, it is the rewriter's largest fixed cost, and a general map spent three times as long.
struct Index {
    slots: Vec<(Key, u16)>,
    bits: u32,
    len: usize,
}

impl Index {
    fn with_capacity(n: usize) -> Index {
        let bits = (2 * n + 2).next_power_of_two().trailing_zeros().max(6);
        Index { slots: vec![(Key::Integer(0), 0); 1 << bits], bits, len: 0 }
    }

    fn slot(&self, k: &Key) -> usize {
        let (tag, v): (u64, u64) = match *k {
            Key::Utf8(h) => (1, h),
            Key::Class(a) => (2, u64::from(a)),
            Key::String(a) => (3, u64::from(a)),
            Key::Integer(v) => (4, u64::from(v as u32)),
            Key::NameAndType(a, b) => (5, u64::from(a) << 16 | u64::from(b)),
            Key::Field(a, b) => (6, u64::from(a) << 16 | u64::from(b)),
            Key::Method(a, b) => (7, u64::from(a) << 16 | u64::from(b)),
            Key::InterfaceMethod(a, b) => (8, u64::from(a) << 16 | u64::from(b)),
        };
        ((v ^ tag.rotate_right(4)).wrapping_mul(SEED) >> (64 - self.bits)) as usize
    }

    fn get(&self, k: &Key) -> Option<u16> {
        let mask = self.slots.len() - 1;
        let mut s = self.slot(k);
        loop {
            let (key, i) = &self.slots[s];
            if *i == 0 {
                return None;
            }
            if key == k {
                return Some(*i);
            }
            s = (s + 1) & mask;
        }
    }

    /// Records entry `i` under `k` unless an earlier entry has that key.
    fn insert_first(&mut self, k: Key, i: u16) {
        if (self.len + 1) * 2 > self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            self.bits += 1;
            self.slots = vec![(Key::Integer(0), 0); 1 << self.bits];
            self.len = 0;
            for (key, j) in old.into_iter().filter(|s| s.1 != 0) {
                self.insert_first(key, j);
            }
        }
        let mask = self.slots.len() - 1;
        let mut s = self.slot(&k);
        loop {
            let slot = &mut self.slots[s];
            if slot.1 == 0 {
                *slot = (k, i);
                self.len += 1;
                return;
            }
            if slot.0 == k {
                return;
            }
            s = (s + 1) & mask;
        }
    }
}

/// The constant pool: the class's own, parsed by ristretto, plus entries the editor appends.
/// Existing entries are never moved, so every index in the original bytes stays valid.
pub struct Pool<'a> {
    cp: ConstantPool<'a>,
    /// `cp.len()` before anything was added.
    original_len: usize,
    /// Built on the first lookup.
    index: Option<Index>,
    /// The member references already looked up: (tag, class, name, descriptor, index).
    members: Vec<(u8, String, String, String, u16)>,
}

impl<'a> Pool<'a> {
    pub(crate) fn new(cp: ConstantPool<'a>) -> Self {
        let original_len = cp.len();
        Pool { cp, original_len, index: None, members: Vec::new() }
    }

    /// The ristretto constant pool (read-only).
    pub fn constants(&self) -> &ConstantPool<'a> {
        &self.cp
    }

    fn build_index(&mut self) {
        if self.index.is_none() {
            let mut m = Index::with_capacity(self.cp.len());
            for i in 1..=self.cp.len() {
                let Ok(i) = u16::try_from(i) else { break };
                if let Some(k) = self.cp.get(i).and_then(key_of) {
                    m.insert_first(k, i);
                }
            }
            self.index = Some(m);
        }
    }

    /// The index [`Pool::find_or_add`] gives a `CONSTANT_Utf8` of these bytes when it needs to
    /// add nothing (so without making the constant first); `None`: it would add one.
    fn existing_utf8(&mut self, mutf8: &[u8]) -> Option<u16> {
        self.build_index();
        let i = self.index.as_ref().expect("built above").get(&Key::Utf8(hash_bytes(mutf8)))?;
        if self.cp.try_get_utf8(i).is_ok_and(|x| x.as_bytes() == mutf8) {
            return Some(i);
        }
        (1..=self.cp.len())
            .filter_map(|j| u16::try_from(j).ok())
            .find(|&j| matches!(self.cp.get(j), Some(Constant::Utf8(x)) if x.as_bytes() == mutf8))
    }

    fn find_or_add(&mut self, c: Constant<'a>) -> Result<u16, BciError> {
        let key = key_of(&c).expect("only keyed constants are added");
        self.build_index();
        let index = self.index.as_ref().expect("built above");
        if let Some(i) = index.get(&key) {
            match &c {
                Constant::Utf8(s) => {
                    if self.cp.try_get_utf8(i).is_ok_and(|x| x.as_bytes() == s.as_bytes()) {
                        return Ok(i);
                    }
                    // Two strings with one hash: the index names the first; look for ours.
                    let found = (1..=self.cp.len())
                        .filter_map(|j| u16::try_from(j).ok())
                        .find(|&j| matches!(self.cp.get(j), Some(Constant::Utf8(x)) if x.as_bytes() == s.as_bytes()));
                    if let Some(j) = found {
                        return Ok(j);
                    }
                }
                _ => return Ok(i),
            }
        }
        // constant_pool_count (len + 1) must fit in a u16.
        if self.cp.len() + 1 >= usize::from(u16::MAX) {
            return Err(BciError::ConstantPoolFull);
        }
        let i = self.cp.add(c).map_err(|_| BciError::ConstantPoolFull)?;
        self.index.as_mut().expect("built above").insert_first(key, i);
        Ok(i)
    }

    /// A `CONSTANT_Utf8` with this text (modified UTF-8 is produced as needed).
    pub fn utf8(&mut self, s: &str) -> Result<u16, BciError> {
        // Text without NUL and below U+0080 is its own modified UTF-8.
        if super::shortcuts() && s.bytes().all(|b| (1..0x80).contains(&b)) {
            if let Some(i) = self.existing_utf8(s.as_bytes()) {
                return Ok(i);
            }
        }
        self.find_or_add(Constant::Utf8(Cow::Owned(JavaString::from(s))))
    }

    fn utf8_bytes(&mut self, mutf8: &[u8]) -> Result<u16, BciError> {
        // Bytes found in the pool are valid modified UTF-8 (the pool was parsed).
        if super::shortcuts() {
            if let Some(i) = self.existing_utf8(mutf8) {
                return Ok(i);
            }
        }
        let s = JavaString::from_mutf8(mutf8.to_vec())
            .map_err(|e| BciError::Malformed(format!("bad modified UTF-8: {e}")))?;
        self.find_or_add(Constant::Utf8(Cow::Owned(s)))
    }

    /// A `CONSTANT_Class` of an internal name (`java/lang/String`) or array descriptor (`[I`).
    pub fn class(&mut self, name: &str) -> Result<u16, BciError> {
        let n = self.utf8(name)?;
        self.find_or_add(Constant::Class(n))
    }

    /// [`Pool::class`] of a name given as modified UTF-8 bytes.
    pub fn class_mutf8(&mut self, name: &[u8]) -> Result<u16, BciError> {
        let n = self.utf8_bytes(name)?;
        self.find_or_add(Constant::Class(n))
    }

    /// A CONSTANT_Integer.
    pub fn integer(&mut self, v: i32) -> Result<u16, BciError> {
        self.find_or_add(Constant::Integer(v))
    }

    /// A CONSTANT_String.
    pub fn string(&mut self, s: &str) -> Result<u16, BciError> {
        let n = self.utf8(s)?;
        self.find_or_add(Constant::String(n))
    }

    /// A CONSTANT_NameAndType.
    pub fn name_and_type(&mut self, name: &str, descriptor: &str) -> Result<u16, BciError> {
        let n = self.utf8(name)?;
        let d = self.utf8(descriptor)?;
        self.find_or_add(Constant::NameAndType { name_index: n, descriptor_index: d })
    }

    /// A `CONSTANT_Fieldref`.
    pub fn field_ref(&mut self, class: &str, name: &str, descriptor: &str) -> Result<u16, BciError> {
        let c = self.class(class)?;
        let nt = self.name_and_type(name, descriptor)?;
        self.find_or_add(Constant::FieldRef { class_index: c, name_and_type_index: nt })
    }

    /// A `CONSTANT_Methodref` (a method of a class, not an interface).
    pub fn method_ref(&mut self, class: &str, name: &str, descriptor: &str) -> Result<u16, BciError> {
        // Looked up once per class: the pool only grows, so the answer stays the same.
        let known = self.members.iter().find(|(t, c, n, d, _)| *t == 10 && c == class && n == name && d == descriptor);
        if let (Some(&(.., i)), true) = (known, super::shortcuts()) {
            return Ok(i);
        }
        let c = self.class(class)?;
        let nt = self.name_and_type(name, descriptor)?;
        let i = self.find_or_add(Constant::MethodRef { class_index: c, name_and_type_index: nt })?;
        self.members.push((10, class.to_string(), name.to_string(), descriptor.to_string(), i));
        Ok(i)
    }

    /// A `CONSTANT_InterfaceMethodref`.
    pub fn interface_method_ref(&mut self, class: &str, name: &str, descriptor: &str) -> Result<u16, BciError> {
        let c = self.class(class)?;
        let nt = self.name_and_type(name, descriptor)?;
        self.find_or_add(Constant::InterfaceMethodRef { class_index: c, name_and_type_index: nt })
    }

    /// The text of a `CONSTANT_Utf8`.
    pub fn get_utf8(&self, index: u16) -> Result<&JavaStr, BciError> {
        self.cp.try_get_utf8(index).map_err(|_| BciError::Malformed(format!("constant #{index} is not a Utf8")))
    }

    /// The name of a `CONSTANT_Class`.
    pub fn get_class_name(&self, index: u16) -> Result<&JavaStr, BciError> {
        self.cp.try_get_class(index).map_err(|_| BciError::Malformed(format!("constant #{index} is not a Class")))
    }

    /// Name and descriptor of a `CONSTANT_NameAndType`.
    pub fn get_name_and_type(&self, index: u16) -> Result<(&JavaStr, &JavaStr), BciError> {
        let (n, d) = self
            .cp
            .try_get_name_and_type(index)
            .map_err(|_| BciError::Malformed(format!("constant #{index} is not a NameAndType")))?;
        Ok((self.get_utf8(*n)?, self.get_utf8(*d)?))
    }

    /// Name and descriptor of a field/method/interface-method reference, or of the
    /// NameAndType of a (invoke)dynamic constant.
    pub fn get_member(&self, index: u16) -> Result<(&JavaStr, &JavaStr), BciError> {
        let nt = match self.cp.get(index) {
            Some(Constant::FieldRef { name_and_type_index, .. })
            | Some(Constant::MethodRef { name_and_type_index, .. })
            | Some(Constant::InterfaceMethodRef { name_and_type_index, .. })
            | Some(Constant::Dynamic { name_and_type_index, .. })
            | Some(Constant::InvokeDynamic { name_and_type_index, .. }) => *name_and_type_index,
            _ => return Err(BciError::Malformed(format!("constant #{index} is not a member reference"))),
        };
        self.get_name_and_type(nt)
    }

    /// The constant at `index`.
    pub fn get(&self, index: u16) -> Option<&Constant<'a>> {
        self.cp.get(index)
    }

    pub(crate) fn write_count_and_new(&self, out: &mut Vec<u8>, raw_entries: &[u8]) -> Result<(), BciError> {
        let count = u16::try_from(self.cp.len() + 1).map_err(|_| BciError::ConstantPoolFull)?;
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(raw_entries);
        for i in self.original_len + 1..=self.cp.len() {
            let i = u16::try_from(i).map_err(|_| BciError::ConstantPoolFull)?;
            if let Some(c) = self.cp.get(i) {
                c.to_bytes(out).map_err(|e| BciError::Malformed(format!("writing constant #{i}: {e}")))?;
            }
        }
        Ok(())
    }
}
