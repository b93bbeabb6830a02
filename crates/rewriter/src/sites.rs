//! Reading allocation sites back from running code: which `invokespecial <init>` calls of a
//! constructor continue the construction of `this` (`super(…)` / `this(…)`), and which
//! initialise an object the method allocated with `new`.
//!
//! At an OBJECT_ALLOC posted from `java.lang.Object.<init>`, the stack holds the constructor
//! chain of the new object above the method that ran `new`. A constructor frame belongs to the
//! chain exactly when its caller is a constructor stopped at a chaining call. In code as
//! compilers emit it, `new` and the `invokespecial <init>` that initialises its object nest
//! like brackets in code order, so a linear walk that counts `new`s not yet initialised tells
//! the two kinds of `<init>` call apart: at a chaining call no `new` is open.

use super::BciError;
use ristretto_classfile::attributes::Instruction;
use ristretto_classfile::byte_reader::ByteReader;
use ristretto_classfile::{Constant, ConstantPool};

/// Byte offsets of the chaining `invokespecial <init>` calls in a constructor's `code`.
/// `pool` is the class's constant pool without its count, as JVMTI `GetConstantPool` returns
/// it (the indices in JVMTI `GetBytecodes` refer to that pool).
pub fn chaining_init_calls(code: &[u8], pool: &[u8]) -> Result<Vec<u32>, BciError> {
    let counted = counted_pool(pool)?;
    let pool = ConstantPool::from_bytes(&mut ByteReader::new(&counted))
        .map_err(|e| BciError::Malformed(format!("constant pool: {e}")))?;
    let is_init = |index: u16| -> bool {
        let nat =
            pool.try_get_method_ref(index).or_else(|_| pool.try_get_interface_method_ref(index)).map(|(_, nat)| *nat);
        nat.ok()
            .and_then(|nat| pool.try_get_name_and_type(nat).ok().map(|(name, _)| *name))
            .and_then(|name| pool.try_get_utf8(name).ok())
            .is_some_and(|name| name.as_bytes() == b"<init>")
    };
    let mut r = ByteReader::new(code);
    let mut open_news = 0usize;
    let mut out = Vec::new();
    while r.position() < code.len() {
        let at = r.position() as u32;
        let insn =
            Instruction::from_bytes(&mut r).map_err(|e| BciError::Malformed(format!("bytecode at {at}: {e}")))?;
        match insn {
            Instruction::New(_) => open_news += 1,
            Instruction::Invokespecial(index) if is_init(index) => {
                if open_news == 0 {
                    out.push(at);
                } else {
                    open_news -= 1;
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// JVMTI's pool bytes (entries only) with the entry count in front, as in a class file.
fn counted_pool(bytes: &[u8]) -> Result<Vec<u8>, BciError> {
    let mut r = ByteReader::new(bytes);
    let mut count: usize = 1;
    while r.position() < bytes.len() {
        let c = Constant::from_bytes(&mut r).map_err(|e| BciError::Malformed(format!("constant pool: {e}")))?;
        count += if matches!(c, Constant::Long(_) | Constant::Double(_)) { 2 } else { 1 };
    }
    let count = u16::try_from(count).map_err(|_| BciError::ConstantPoolFull)?;
    let mut counted = Vec::with_capacity(bytes.len() + 2);
    counted.extend_from_slice(&count.to_be_bytes());
    counted.extend_from_slice(bytes);
    Ok(counted)
}
