//! The method level of the editor: bytecode with every offset turned into an instruction
//! index, insertions, and the re-encoding that turns indices back into bytes (widening branches
//! that no longer reach, re-encoding stack map frames, and checking the 64 KiB limit).
//!
//! Index conventions (those of `ristretto_classfile`'s `Instruction`, with one correction):
//! short branches (`ifeq` … `goto`, `jsr`, `ifnull`, `ifnonnull`) hold the absolute index of
//! their target; `goto_w` and `jsr_w` also hold the absolute index (ristretto's documentation
//! says "relative", its code reads and writes absolute positions); `tableswitch` and
//! `lookupswitch` hold targets relative to their own index.

pub(crate) use super::frames::MethodContext;
use super::frames::{self, Frame, SimContext, State};
use super::pool::Pool;
use super::BciError;
use ristretto_classfile::attributes::Instruction;
use ristretto_classfile::byte_reader::ByteReader;
use std::collections::BTreeMap;
use std::io::Cursor;
use std::ops::Range;

type I = Instruction;

fn bad(msg: impl Into<String>) -> BciError {
    BciError::Malformed(msg.into())
}

/// One attribute of a `Code` attribute, as found in the class file.
#[derive(Clone, Debug)]
pub(crate) struct RawAttr {
    pub name_index: u16,
    /// Byte range of the attribute's info (after the 6-byte header) in the class file.
    pub info: Range<usize>,
}

/// A method's `Code` attribute, as found in the class file.
#[derive(Clone, Debug)]
pub(crate) struct RawCode {
    /// Byte range of the whole attribute (header included) in the class file.
    pub span: Range<usize>,
    pub name_index: u16,
    pub max_stack: u16,
    pub max_locals: u16,
    /// Byte range of the bytecode in the class file.
    pub code: Range<usize>,
    /// start_pc, end_pc, handler_pc, catch_type: byte offsets exactly as stored.
    pub exceptions: Vec<[u16; 4]>,
    pub attributes: Vec<RawAttr>,
}

// ---------------------------------------------------------------------------------------------
// Instruction properties

/// The absolute target index of a (short or wide) branch; `None` for other instructions
/// (switches included).
pub fn branch_target(insn: &Instruction) -> Option<usize> {
    match insn {
        I::Ifeq(t)
        | I::Ifne(t)
        | I::Iflt(t)
        | I::Ifge(t)
        | I::Ifgt(t)
        | I::Ifle(t)
        | I::If_icmpeq(t)
        | I::If_icmpne(t)
        | I::If_icmplt(t)
        | I::If_icmpge(t)
        | I::If_icmpgt(t)
        | I::If_icmple(t)
        | I::If_acmpeq(t)
        | I::If_acmpne(t)
        | I::Goto(t)
        | I::Jsr(t)
        | I::Ifnull(t)
        | I::Ifnonnull(t) => Some(usize::from(*t)),
        I::Goto_w(t) | I::Jsr_w(t) => usize::try_from(*t).ok(),
        _ => None,
    }
}

fn is_short_branch(insn: &Instruction) -> bool {
    !matches!(insn, I::Goto_w(_) | I::Jsr_w(_)) && branch_target(insn).is_some()
}

/// Every target of `insn` at index `at` (branch targets and switch cases).
pub fn targets(insn: &Instruction, at: usize) -> Vec<usize> {
    let rel = |r: i32| (at as i64 + i64::from(r)) as usize;
    match insn {
        I::Tableswitch(s) => std::iter::once(s.default).chain(s.offsets.iter().copied()).map(rel).collect(),
        I::Lookupswitch(s) => std::iter::once(s.default).chain(s.pairs.values().copied()).map(rel).collect(),
        _ => branch_target(insn).into_iter().collect(),
    }
}

/// Calls `f` with every target of `insn` at index `at`, as [`targets`] lists them.
fn for_each_target(insn: &Instruction, at: usize, mut f: impl FnMut(usize)) {
    let rel = |r: i32| (at as i64 + i64::from(r)) as usize;
    match insn {
        I::Tableswitch(s) => std::iter::once(s.default).chain(s.offsets.iter().copied()).for_each(|r| f(rel(r))),
        I::Lookupswitch(s) => std::iter::once(s.default).chain(s.pairs.values().copied()).for_each(|r| f(rel(r))),
        _ => {
            if let Some(t) = branch_target(insn) {
                f(t)
            }
        }
    }
}

/// True if execution never continues with the next instruction.
pub fn is_unconditional(insn: &Instruction) -> bool {
    matches!(
        insn,
        I::Goto(_)
            | I::Goto_w(_)
            | I::Tableswitch(_)
            | I::Lookupswitch(_)
            | I::Ireturn
            | I::Lreturn
            | I::Freturn
            | I::Dreturn
            | I::Areturn
            | I::Return
            | I::Athrow
            | I::Ret(_)
            | I::Ret_w(_)
    )
}

/// Sets the target of a branch (absolute index).
fn set_target(insn: &mut Instruction, t: usize) -> Result<(), BciError> {
    let t16 = || u16::try_from(t).map_err(|_| BciError::CodeTooLarge { length: t });
    match insn {
        I::Ifeq(x)
        | I::Ifne(x)
        | I::Iflt(x)
        | I::Ifge(x)
        | I::Ifgt(x)
        | I::Ifle(x)
        | I::If_icmpeq(x)
        | I::If_icmpne(x)
        | I::If_icmplt(x)
        | I::If_icmpge(x)
        | I::If_icmpgt(x)
        | I::If_icmple(x)
        | I::If_acmpeq(x)
        | I::If_acmpne(x)
        | I::Goto(x)
        | I::Jsr(x)
        | I::Ifnull(x)
        | I::Ifnonnull(x) => *x = t16()?,
        I::Goto_w(x) | I::Jsr_w(x) => *x = i32::try_from(t).map_err(|_| BciError::CodeTooLarge { length: t })?,
        _ => {}
    }
    Ok(())
}

/// Rewrites every target of `insn`, now at index `new_at`, through `f` (old absolute index →
/// new absolute index); switch targets are relative to `old_at` before and `new_at` after.
fn remap_targets(
    insn: &mut Instruction,
    old_at: usize,
    new_at: usize,
    f: &dyn Fn(usize) -> usize,
) -> Result<(), BciError> {
    let rel = |r: i32| -> Result<i32, BciError> {
        let old = (old_at as i64 + i64::from(r)) as usize;
        i32::try_from(f(old) as i64 - new_at as i64).map_err(|_| BciError::Internal("switch offset".into()))
    };
    match insn {
        I::Tableswitch(s) => {
            s.default = rel(s.default)?;
            for o in &mut s.offsets {
                *o = rel(*o)?;
            }
        }
        I::Lookupswitch(s) => {
            s.default = rel(s.default)?;
            for o in s.pairs.values_mut() {
                *o = rel(*o)?;
            }
        }
        _ => {
            if let Some(t) = branch_target(insn) {
                set_target(insn, f(t))?;
            }
        }
    }
    Ok(())
}

/// The conditional branch with the opposite condition (same target).
fn inverted(insn: &Instruction) -> Option<Instruction> {
    Some(match *insn {
        I::Ifeq(t) => I::Ifne(t),
        I::Ifne(t) => I::Ifeq(t),
        I::Iflt(t) => I::Ifge(t),
        I::Ifge(t) => I::Iflt(t),
        I::Ifgt(t) => I::Ifle(t),
        I::Ifle(t) => I::Ifgt(t),
        I::If_icmpeq(t) => I::If_icmpne(t),
        I::If_icmpne(t) => I::If_icmpeq(t),
        I::If_icmplt(t) => I::If_icmpge(t),
        I::If_icmpge(t) => I::If_icmplt(t),
        I::If_icmpgt(t) => I::If_icmple(t),
        I::If_icmple(t) => I::If_icmpgt(t),
        I::If_acmpeq(t) => I::If_acmpne(t),
        I::If_acmpne(t) => I::If_acmpeq(t),
        I::Ifnull(t) => I::Ifnonnull(t),
        I::Ifnonnull(t) => I::Ifnull(t),
        _ => return None,
    })
}

/// Encoded size of `insn` at byte offset `pos` (switches are padded to a multiple of 4).
pub fn encoded_size(insn: &Instruction, pos: u32) -> u32 {
    let pad = |p: u32| (4 - (p + 1) % 4) % 4;
    match insn {
        I::Tableswitch(s) => 1 + pad(pos) + 12 + 4 * s.offsets.len() as u32,
        I::Lookupswitch(s) => 1 + pad(pos) + 8 + 8 * s.pairs.len() as u32,
        I::Bipush(_)
        | I::Ldc(_)
        | I::Iload(_)
        | I::Lload(_)
        | I::Fload(_)
        | I::Dload(_)
        | I::Aload(_)
        | I::Istore(_)
        | I::Lstore(_)
        | I::Fstore(_)
        | I::Dstore(_)
        | I::Astore(_)
        | I::Ret(_)
        | I::Newarray(_) => 2,
        I::Sipush(_)
        | I::Ldc_w(_)
        | I::Ldc2_w(_)
        | I::Iinc(..)
        | I::Getstatic(_)
        | I::Putstatic(_)
        | I::Getfield(_)
        | I::Putfield(_)
        | I::Invokevirtual(_)
        | I::Invokespecial(_)
        | I::Invokestatic(_)
        | I::New(_)
        | I::Anewarray(_)
        | I::Checkcast(_)
        | I::Instanceof(_) => 3,
        _ if is_short_branch(insn) => 3,
        I::Multianewarray(..)
        | I::Iload_w(_)
        | I::Lload_w(_)
        | I::Fload_w(_)
        | I::Dload_w(_)
        | I::Aload_w(_)
        | I::Istore_w(_)
        | I::Lstore_w(_)
        | I::Fstore_w(_)
        | I::Dstore_w(_)
        | I::Astore_w(_)
        | I::Ret_w(_) => 4,
        I::Invokeinterface(..) | I::Invokedynamic(_) | I::Goto_w(_) | I::Jsr_w(_) => 5,
        I::Iinc_w(..) => 6,
        _ => 1,
    }
}

/// Byte offset of every instruction, plus the code length at the end.
pub(crate) fn layout(insns: &[Instruction]) -> Vec<u32> {
    let mut pos = Vec::with_capacity(insns.len() + 1);
    let mut p = 0u32;
    for i in insns {
        pos.push(p);
        p += encoded_size(i, p);
    }
    pos.push(p);
    pos
}

// ---------------------------------------------------------------------------------------------
// The editor

/// The bytecode of one method, decoded for editing.
///
/// Indices given to [`MethodEditor::insert_before`] / [`MethodEditor::insert_after`] are
/// indices into [`MethodEditor::instructions`] (the original code); several insertions at one
/// place run in the order they were made. Inserted code must be straight-line — no branches,
/// switches, returns, `athrow`, `jsr`/`ret` — and must leave the locals and the operand stack
/// as it found them (it may push and pop in between; `max_stack` is recomputed), so the stack
/// map frames of the original code stay valid.
///
/// * `insert_before(i, …)` runs as part of instruction `i`: branches to `i`, exception
///   handlers starting at `i` and line-number entries of `i` move to the inserted code; a
///   protected range that starts at `i` covers it, one that ends at `i` does not.
/// * `insert_after(i, …)` runs when `i` completes normally and falls through: branches to
///   `i + 1` skip it; protected ranges covering `i` cover it. `i` must not be an unconditional
///   transfer (`goto`, `return`, `athrow`, switches).
#[derive(Debug, Clone)]
pub struct MethodEditor {
    method: usize,
    insns: Vec<Instruction>,
    offsets: Vec<u32>,
    prologue: Vec<Instruction>,
    before: BTreeMap<usize, Vec<Instruction>>,
    after: BTreeMap<usize, Vec<Instruction>>,
    catch_all: Option<Vec<Instruction>>,
    /// Locals added after the method's own (see [`MethodEditor::add_local`]): the constant-pool
    /// indices of each one's name and descriptor.
    new_locals: Vec<(u16, u16)>,
}

/// Byte offset → instruction index, exactly.
fn exact(offsets: &[u32], byte: u32) -> Option<usize> {
    offsets.binary_search(&byte).ok()
}

/// Byte offset → index of the instruction containing it.
fn containing(offsets: &[u32], byte: u32) -> Option<usize> {
    if byte >= *offsets.last()? {
        return None;
    }
    Some(offsets.partition_point(|&o| o <= byte) - 1)
}

impl MethodEditor {
    pub(crate) fn decode(method: usize, code: &[u8]) -> Result<Self, BciError> {
        let mut r = ByteReader::new(code);
        // At most one instruction per byte: no growing on the way.
        let mut insns = Vec::with_capacity(code.len());
        let mut offsets = Vec::with_capacity(code.len() + 1);
        while r.position() < code.len() {
            offsets.push(r.position() as u32);
            let i = Instruction::from_bytes(&mut r)
                .map_err(|e| bad(format!("bytecode at {}: {e}", offsets.last().copied().unwrap_or(0))))?;
            insns.push(i);
        }
        if r.position() != code.len() {
            return Err(bad("the last instruction runs past the end of the code"));
        }
        offsets.push(code.len() as u32);
        // ristretto gives absolute byte offsets for branches and relative byte offsets for
        // switches: turn them into instruction indices.
        for (k, insn) in insns.iter_mut().enumerate() {
            let here = offsets[k];
            let to_index = |b: i64| -> Result<usize, BciError> {
                u32::try_from(b)
                    .ok()
                    .and_then(|b| exact(&offsets[..offsets.len() - 1], b))
                    .ok_or_else(|| bad(format!("branch at {here} to byte {b}, not an instruction")))
            };
            match insn {
                I::Tableswitch(s) => {
                    s.default = (to_index(i64::from(here) + i64::from(s.default))? as i64 - k as i64) as i32;
                    for o in &mut s.offsets {
                        *o = (to_index(i64::from(here) + i64::from(*o))? as i64 - k as i64) as i32;
                    }
                }
                I::Lookupswitch(s) => {
                    s.default = (to_index(i64::from(here) + i64::from(s.default))? as i64 - k as i64) as i32;
                    for o in s.pairs.values_mut() {
                        *o = (to_index(i64::from(here) + i64::from(*o))? as i64 - k as i64) as i32;
                    }
                }
                _ => {
                    if let Some(b) = branch_target(insn) {
                        set_target(insn, to_index(b as i64)?)?;
                    } else if let I::Goto_w(b) | I::Jsr_w(b) = insn {
                        // A negative absolute offset.
                        return Err(bad(format!("branch at {here} to byte {b}")));
                    }
                }
            }
        }
        Ok(MethodEditor {
            method,
            insns,
            offsets,
            prologue: Vec::new(),
            before: BTreeMap::new(),
            after: BTreeMap::new(),
            catch_all: None,
            new_locals: Vec::new(),
        })
    }

    /// Index of the method in its class.
    pub fn method_index(&self) -> usize {
        self.method
    }

    /// The original instructions (targets as instruction indices).
    pub fn instructions(&self) -> &[Instruction] {
        &self.insns
    }

    /// The number of instructions.
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    /// Whether there is no instruction.
    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    /// Byte offset (bytecode index) of instruction `index` in the original code.
    pub fn original_offset(&self, index: usize) -> u32 {
        self.offsets[index]
    }

    /// True once something was inserted.
    pub fn has_edits(&self) -> bool {
        !self.prologue.is_empty() || !self.before.is_empty() || !self.after.is_empty() || self.catch_all.is_some()
    }

    fn check(&self, index: usize, code: &[Instruction]) -> Result<(), BciError> {
        if index >= self.insns.len() {
            return Err(BciError::InvalidEdit(format!("instruction index {index} of {}", self.insns.len())));
        }
        for i in code {
            let ok = targets(i, 0).is_empty()
                && !is_unconditional(i)
                && !matches!(i, I::Jsr(_) | I::Jsr_w(_) | I::Wide | I::Breakpoint | I::Impdep1 | I::Impdep2);
            if !ok {
                return Err(BciError::InvalidEdit(format!("inserted code must be straight-line, not {i}")));
            }
        }
        Ok(())
    }

    /// Inserts `code` to run as part of instruction `index`, before it.
    pub fn insert_before(&mut self, index: usize, code: &[Instruction]) -> Result<(), BciError> {
        self.check(index, code)?;
        if !code.is_empty() {
            self.before.entry(index).or_default().extend_from_slice(code);
        }
        Ok(())
    }

    /// Inserts `code` to run once when the method is entered, before everything else (the code
    /// inserted before instruction 0 included). Unlike `insert_before(0, …)`, it is not part of
    /// instruction 0: a branch to instruction 0 (a loop whose head is the method's first
    /// instruction, as javac compiles `while (c) {…}` at the start of a method) lands after it,
    /// no exception handler covers it, and the stack map frame of instruction 0 moves with
    /// instruction 0 (the prologue runs under the method's implicit initial frame). Line-number
    /// and local-variable entries of instruction 0 start at the prologue. Several prologues run
    /// in the order they were made.
    pub fn prologue(&mut self, code: &[Instruction]) -> Result<(), BciError> {
        if self.insns.is_empty() {
            return Err(BciError::InvalidEdit("no code to enter".into()));
        }
        self.check(0, code)?;
        self.prologue.extend_from_slice(code);
        Ok(())
    }

    /// Adds a handler for any exception (catch type 0) that covers the whole original code and
    /// everything inserted into it, except the prologue and the code inserted before
    /// instruction 0 (so that a method-entry hook placed there is not covered). The handler is the last entry of the
    /// exception table (the method's own handlers are tried first) and is placed after the last
    /// instruction: `code` runs with the exception on the stack (it must be straight-line and
    /// leave the stack as it found it), then `athrow` rethrows it. Its stack map frame (class
    /// files of version 50 and later) has no locals and `java/lang/Throwable` on the stack. In
    /// a constructor the range is split around the `super(…)`/`this(…)` call, which stays
    /// uncovered: before it a second handler whose frame has `uninitializedThis` in local 0
    /// (HotSpot's verifier wants the handler's frame to have `flagThisUninit` wherever the
    /// code's has it), after it the first. Replaces an earlier catch-all.
    pub fn catch_all(&mut self, code: &[Instruction]) -> Result<(), BciError> {
        if self.insns.is_empty() {
            return Err(BciError::InvalidEdit("no code to cover".into()));
        }
        self.check(0, code)?;
        self.catch_all = Some(code.to_vec());
        Ok(())
    }

    /// Adds a local variable after the method's own (`max_locals` is the method's; see
    /// `ClassEditor::max_locals`) and returns its slot, or None when the slot would not fit a
    /// `u16`. The new local is Top in every stack map frame of the original code, so inserted
    /// code may store into it (an uninitialised object included) without touching the frames;
    /// where the method has a LocalVariableTable, the local gets an entry over the whole code
    /// with `name` and `descriptor` (constant-pool indices), so that JVMTI's local-variable
    /// functions, which check a slot against that table, can read it.
    pub fn add_local(&mut self, max_locals: u16, name: u16, descriptor: u16) -> Option<u16> {
        let slot = u16::try_from(usize::from(max_locals) + self.new_locals.len()).ok()?;
        slot.checked_add(1)?;
        self.new_locals.push((name, descriptor));
        Some(slot)
    }

    /// Inserts `code` to run after instruction `index` completes and falls through.
    pub fn insert_after(&mut self, index: usize, code: &[Instruction]) -> Result<(), BciError> {
        self.check(index, code)?;
        if is_unconditional(&self.insns[index]) {
            return Err(BciError::InvalidEdit(format!(
                "cannot insert after {} (instruction {index}): it never falls through",
                self.insns[index]
            )));
        }
        if !code.is_empty() {
            self.after.entry(index).or_default().extend_from_slice(code);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The full model of a Code attribute

#[derive(Clone, Debug)]
struct Handler {
    start: usize,
    end: usize,
    handler: usize,
    catch_type: u16,
}

/// An entry of LocalVariableTable / LocalVariableTypeTable.
#[derive(Clone, Debug)]
struct LocalVar {
    start: usize,
    end: usize,
    /// name, descriptor or signature, slot.
    rest: [u16; 3],
}

#[derive(Clone, Debug)]
enum TaTarget {
    /// localvar_target / resource_variable: (start, end, slot).
    LocalVar(Vec<(usize, usize, u16)>),
    /// offset_target: the instruction.
    Offset(usize),
    /// type_argument_target: the instruction and the argument index.
    TypeArgument(usize, u8),
    /// A target without code offsets, kept as is.
    Raw(Vec<u8>),
}

#[derive(Clone, Debug)]
struct TypeAnnotation {
    target_type: u8,
    target: TaTarget,
    /// type_path and the annotation proper, unchanged.
    rest: Vec<u8>,
}

#[derive(Clone, Debug)]
enum SubAttr {
    Lines(u16, Vec<(usize, u16)>),
    LocalVars(u16, Vec<LocalVar>),
    StackMap(u16),
    TypeAnnotations(u16, Vec<TypeAnnotation>),
    Other(u16, Vec<u8>),
}

struct Model {
    insns: Vec<Instruction>,
    handlers: Vec<Handler>,
    /// Sorted by index.
    frames: Vec<(usize, Frame)>,
    attrs: Vec<SubAttr>,
}

/// Insertions, replacements and new frames, all keyed by index in the model they apply to.
#[derive(Default)]
struct Edits {
    /// Runs once at entry; branches to instruction 0 land after it.
    prologue: Vec<Instruction>,
    before: BTreeMap<usize, Vec<Instruction>>,
    after: BTreeMap<usize, Vec<Instruction>>,
    replace: BTreeMap<usize, Instruction>,
    frames: Vec<(usize, Frame)>,
}

fn read_u16(d: &[u8], at: &mut usize) -> Result<u16, BciError> {
    let b = d.get(*at..*at + 2).ok_or_else(|| bad("attribute too short"))?;
    *at += 2;
    Ok(u16::from_be_bytes([b[0], b[1]]))
}

fn read_u8(d: &[u8], at: &mut usize) -> Result<u8, BciError> {
    let b = *d.get(*at).ok_or_else(|| bad("attribute too short"))?;
    *at += 1;
    Ok(b)
}

/// Skips one element_value (JVMS 4.7.16.1).
fn skip_element_value(d: &[u8], at: &mut usize, depth: usize) -> Result<(), BciError> {
    if depth > 256 {
        return Err(bad("annotation nesting too deep"));
    }
    match read_u8(d, at)? {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' | b's' | b'c' => {
            read_u16(d, at)?;
        }
        b'e' => {
            read_u16(d, at)?;
            read_u16(d, at)?;
        }
        b'@' => skip_annotation(d, at, depth + 1)?,
        b'[' => {
            for _ in 0..read_u16(d, at)? {
                skip_element_value(d, at, depth + 1)?;
            }
        }
        t => return Err(bad(format!("annotation element tag {t}"))),
    }
    Ok(())
}

fn skip_annotation(d: &[u8], at: &mut usize, depth: usize) -> Result<(), BciError> {
    read_u16(d, at)?;
    for _ in 0..read_u16(d, at)? {
        read_u16(d, at)?;
        skip_element_value(d, at, depth)?;
    }
    Ok(())
}

fn decode_type_annotations(
    d: &[u8],
    start: &dyn Fn(u16) -> Result<usize, BciError>,
    end: &dyn Fn(u32) -> Result<usize, BciError>,
) -> Result<Vec<TypeAnnotation>, BciError> {
    let mut at = 0;
    let n = read_u16(d, &mut at)?;
    let mut v = Vec::with_capacity(usize::from(n));
    for _ in 0..n {
        let target_type = read_u8(d, &mut at)?;
        let raw_start = at;
        let target = match target_type {
            0x40 | 0x41 => {
                let k = read_u16(d, &mut at)?;
                let mut t = Vec::with_capacity(usize::from(k));
                for _ in 0..k {
                    let s = read_u16(d, &mut at)?;
                    let len = read_u16(d, &mut at)?;
                    let slot = read_u16(d, &mut at)?;
                    t.push((start(s)?, end(u32::from(s) + u32::from(len))?, slot));
                }
                TaTarget::LocalVar(t)
            }
            0x43..=0x46 => TaTarget::Offset(start(read_u16(d, &mut at)?)?),
            0x47..=0x4B => {
                let o = read_u16(d, &mut at)?;
                TaTarget::TypeArgument(start(o)?, read_u8(d, &mut at)?)
            }
            0x00 | 0x01 | 0x16 => {
                at += 1;
                TaTarget::Raw(d.get(raw_start..at).ok_or_else(|| bad("type annotation"))?.to_vec())
            }
            0x10 | 0x17 | 0x42 => {
                at += 2;
                TaTarget::Raw(d.get(raw_start..at).ok_or_else(|| bad("type annotation"))?.to_vec())
            }
            0x11 | 0x12 => {
                at += 2;
                TaTarget::Raw(d.get(raw_start..at).ok_or_else(|| bad("type annotation"))?.to_vec())
            }
            0x13..=0x15 => TaTarget::Raw(Vec::new()),
            t => return Err(bad(format!("type annotation target type 0x{t:02x}"))),
        };
        let rest_start = at;
        let path_len = read_u8(d, &mut at)?;
        at += 2 * usize::from(path_len);
        skip_annotation(d, &mut at, 0)?;
        let rest = d.get(rest_start..at).ok_or_else(|| bad("type annotation"))?.to_vec();
        v.push(TypeAnnotation { target_type, target, rest });
    }
    if at != d.len() {
        return Err(bad("type annotations: length mismatch"));
    }
    Ok(v)
}

fn decode_model(
    raw: &[u8],
    rc: &RawCode,
    editor: &MethodEditor,
    initial: &Frame,
    pool: &Pool<'_>,
) -> Result<Model, BciError> {
    let offsets = &editor.offsets;
    let n = editor.insns.len();
    let code_len = *offsets.last().expect("offsets end with the code length");
    let start = |b: u16| exact(offsets, u32::from(b)).filter(|&i| i < n);
    // An end offset may be the code length (one past the last instruction).
    let end = |b: u32| exact(offsets, b);
    let mut handlers = Vec::with_capacity(rc.exceptions.len());
    for [s, e, h, t] in &rc.exceptions {
        let (Some(s), Some(e), Some(h)) = (start(*s), end(u32::from(*e)), start(*h)) else {
            return Err(bad(format!("exception table entry {s}..{e} → {h} is not at instruction boundaries")));
        };
        handlers.push(Handler { start: s, end: e, handler: h, catch_type: *t });
    }
    let mut frames = Vec::new();
    let mut attrs = Vec::with_capacity(rc.attributes.len());
    // Lenient mapping for debug attributes: an offset inside an instruction is taken as that
    // instruction; an end past the code is clamped to it.
    let dbg_start = |b: u16| -> Result<usize, BciError> {
        containing(offsets, u32::from(b)).ok_or_else(|| bad(format!("debug attribute offset {b} past the code")))
    };
    let dbg_end =
        |b: u32| -> Result<usize, BciError> { Ok(if b >= code_len { n } else { containing(offsets, b).unwrap_or(n) }) };
    for a in &rc.attributes {
        let d = &raw[a.info.clone()];
        let name = pool.get_utf8(a.name_index)?.as_bytes();
        let attr = match name {
            b"LineNumberTable" => {
                let mut at = 0;
                let k = read_u16(d, &mut at)?;
                let mut v = Vec::with_capacity(usize::from(k));
                for _ in 0..k {
                    let pc = read_u16(d, &mut at)?;
                    let line = read_u16(d, &mut at)?;
                    v.push((dbg_start(pc)?, line));
                }
                if at != d.len() {
                    return Err(bad("LineNumberTable: length mismatch"));
                }
                SubAttr::Lines(a.name_index, v)
            }
            b"LocalVariableTable" | b"LocalVariableTypeTable" => {
                let mut at = 0;
                let k = read_u16(d, &mut at)?;
                let mut v = Vec::with_capacity(usize::from(k));
                for _ in 0..k {
                    let s = read_u16(d, &mut at)?;
                    let len = read_u16(d, &mut at)?;
                    let rest = [read_u16(d, &mut at)?, read_u16(d, &mut at)?, read_u16(d, &mut at)?];
                    v.push(LocalVar { start: dbg_start(s)?, end: dbg_end(u32::from(s) + u32::from(len))?, rest });
                }
                if at != d.len() {
                    return Err(bad("LocalVariableTable: length mismatch"));
                }
                SubAttr::LocalVars(a.name_index, v)
            }
            b"StackMapTable" => {
                if !frames.is_empty() {
                    return Err(bad("two StackMapTable attributes"));
                }
                frames = frames::decode_stack_map(d, initial, pool, &|b| exact(offsets, b).filter(|&i| i < n))?;
                SubAttr::StackMap(a.name_index)
            }
            b"RuntimeVisibleTypeAnnotations" | b"RuntimeInvisibleTypeAnnotations" => {
                SubAttr::TypeAnnotations(a.name_index, decode_type_annotations(d, &dbg_start, &dbg_end)?)
            }
            _ => SubAttr::Other(a.name_index, d.to_vec()),
        };
        attrs.push(attr);
    }
    // The instructions are the caller's to give (moved, not copied).
    Ok(Model { insns: Vec::new(), handlers, frames, attrs })
}

/// Applies `edits` to `m`: the new instruction list, with every index reference moved.
/// `spare`: room for that many more instructions after the result's (for the catch-all).
fn apply(m: Model, edits: &Edits, spare: usize) -> Result<Model, BciError> {
    let n = m.insns.len();
    let extra: usize =
        edits.before.values().chain(edits.after.values()).map(Vec::len).sum::<usize>() + edits.prologue.len();
    let mut head = vec![0usize; n + 1];
    let mut at = vec![0usize; n + 1];
    let mut insns: Vec<Instruction> = Vec::with_capacity(n + extra + spare);
    // The old index each new instruction belongs to (its anchor), for those with targets.
    let mut anchors: Vec<(usize, usize)> = Vec::new();
    // The prologue is no instruction's: `head[0]`, where branches to instruction 0 land, is
    // after it. Debug ranges that start at instruction 0 start at the prologue (`dbg`).
    insns.extend(edits.prologue.iter().cloned());
    let dbg = |head: &[usize], i: usize| if i == 0 { 0 } else { head[i] };
    // The edits' keys are distinct old indices below n, met in order.
    let mut before = edits.before.iter().peekable();
    let mut after = edits.after.iter().peekable();
    let mut replace = edits.replace.iter().peekable();
    let push = |insns: &mut Vec<Instruction>, anchors: &mut Vec<(usize, usize)>, i: Instruction, j: usize| {
        if matches!(i, I::Tableswitch(_) | I::Lookupswitch(_)) || branch_target(&i).is_some() {
            anchors.push((insns.len(), j));
        }
        insns.push(i);
    };
    for (j, insn) in m.insns.into_iter().enumerate() {
        head[j] = insns.len();
        if let Some((_, b)) = before.next_if(|(k, _)| **k == j) {
            for i in b {
                push(&mut insns, &mut anchors, i.clone(), j);
            }
        }
        at[j] = insns.len();
        let insn = match replace.next_if(|(k, _)| **k == j) {
            Some((_, r)) => r.clone(),
            None => insn,
        };
        push(&mut insns, &mut anchors, insn, j);
        if let Some((_, a)) = after.next_if(|(k, _)| **k == j) {
            for i in a {
                push(&mut insns, &mut anchors, i.clone(), j);
            }
        }
    }
    head[n] = insns.len();
    at[n] = insns.len();
    let h = |i: usize| head[i];
    for (k, anchor) in anchors {
        remap_targets(&mut insns[k], anchor, k, &h)?;
    }
    let handlers = m
        .handlers
        .into_iter()
        .map(|x| Handler { start: head[x.start], end: head[x.end], handler: head[x.handler], ..x })
        .collect();
    let mut frames = m.frames;
    if !edits.frames.is_empty() {
        frames.extend(edits.frames.iter().cloned());
        frames.sort_by_key(|f| f.0);
    }
    for w in frames.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(BciError::Internal(format!("two stack map frames at instruction {}", w[0].0)));
        }
    }
    for (i, f) in &mut frames {
        *i = head[*i];
        f.map_uninit(|u| at[u]);
    }
    let attrs = m
        .attrs
        .into_iter()
        .map(|a| match a {
            SubAttr::Lines(nm, v) => SubAttr::Lines(nm, v.into_iter().map(|(i, l)| (dbg(&head, i), l)).collect()),
            SubAttr::LocalVars(nm, v) => SubAttr::LocalVars(
                nm,
                v.into_iter().map(|x| LocalVar { start: dbg(&head, x.start), end: head[x.end], ..x }).collect(),
            ),
            SubAttr::TypeAnnotations(nm, v) => SubAttr::TypeAnnotations(
                nm,
                v.into_iter()
                    .map(|t| TypeAnnotation {
                        target: match t.target {
                            TaTarget::LocalVar(r) => {
                                TaTarget::LocalVar(r.into_iter().map(|(s, e, x)| (dbg(&head, s), head[e], x)).collect())
                            }
                            TaTarget::Offset(i) => TaTarget::Offset(at[i]),
                            TaTarget::TypeArgument(i, k) => TaTarget::TypeArgument(at[i], k),
                            raw @ TaTarget::Raw(_) => raw,
                        },
                        ..t
                    })
                    .collect(),
            ),
            other => other,
        })
        .collect();
    Ok(Model { insns, handlers, frames, attrs })
}

/// The state on entry to instruction `at` when it is reached by falling through from `at - 1`
/// (computed from the nearest frame before `at`).
fn state_falling_into(m: &Model, at: usize, initial: &Frame, cx: &SimContext<'_, '_>) -> Result<Frame, BciError> {
    let k = m.frames.partition_point(|f| f.0 < at);
    let (from, frame) = if k == 0 { (0, initial) } else { (m.frames[k - 1].0, &m.frames[k - 1].1) };
    let mut st = State::of(frame);
    for (i, insn) in m.insns.iter().enumerate().take(at).skip(from) {
        if matches!(insn, I::Jsr(_) | I::Jsr_w(_) | I::Ret(_) | I::Ret_w(_)) || (i + 1 < at && is_unconditional(insn)) {
            return Err(BciError::Unsupported(format!(
                "no stack map frame can be computed at instruction {at} (code from {from} is not straight-line)"
            )));
        }
        frames::step(&mut st, i, insn, cx)?;
    }
    Ok(st.frame())
}

/// The index of a constructor's chaining `invokespecial <init>` (`super(…)`/`this(…)`): the
/// first one that initialises no object the method made with `new` (they nest like brackets).
fn chaining_call(insns: &[Instruction], pool: &Pool<'_>) -> Option<usize> {
    let mut open = 0usize;
    for (k, i) in insns.iter().enumerate() {
        match i {
            I::New(_) => open += 1,
            I::Invokespecial(ix) if pool.get_member(*ix).is_ok_and(|(n, _)| n.as_bytes() == b"<init>") => {
                if open == 0 {
                    return Some(k);
                }
                open -= 1;
            }
            _ => {}
        }
    }
    None
}

/// Widens every short branch whose target is out of reach, until all reach.
fn widen(mut m: Model, initial: &Frame, ctx: &MethodContext, pool: &Pool<'_>) -> Result<(Model, Vec<u32>), BciError> {
    loop {
        let pos = layout(&m.insns);
        let code_len = *pos.last().expect("layout ends with the length");
        if code_len > 65535 {
            return Err(BciError::CodeTooLarge { length: code_len as usize });
        }
        let mut edits = Edits::default();
        for (k, insn) in m.insns.iter().enumerate() {
            if !is_short_branch(insn) {
                continue;
            }
            let t = branch_target(insn).expect("a branch");
            let rel = i64::from(pos[t]) - i64::from(pos[k]);
            if i16::try_from(rel).is_ok() {
                continue;
            }
            match insn {
                I::Goto(_) => {
                    edits.replace.insert(k, I::Goto_w(t as i32));
                }
                I::Jsr(_) => {
                    edits.replace.insert(k, I::Jsr_w(t as i32));
                }
                _ => {
                    // if<cond> far  →  if<!cond> next; goto_w far; next:
                    let mut inv = inverted(insn).expect("a conditional branch");
                    set_target(&mut inv, k + 1)?;
                    edits.replace.insert(k, inv);
                    edits.after.insert(k, vec![I::Goto_w(t as i32)]);
                    let has_frame = m.frames.binary_search_by_key(&(k + 1), |f| f.0).is_ok();
                    if ctx.major >= 50 && !has_frame {
                        let cx = SimContext { pool, class_name: &ctx.class_name, insns: &m.insns };
                        edits.frames.push((k + 1, state_falling_into(&m, k + 1, initial, &cx)?));
                    }
                }
            }
        }
        if edits.replace.is_empty() {
            return Ok((m, pos));
        }
        m = apply(m, &edits, 0)?;
    }
}

/// Maximum operand-stack depth, by data flow over the control-flow graph; `None` if the
/// depths do not agree somewhere (the caller then falls back to a safe bound).
fn max_depth(m: &Model, cx: &SimContext<'_, '_>) -> Option<usize> {
    let n = m.insns.len();
    let mut depth: Vec<i32> = vec![-1; n];
    let mut work = Vec::with_capacity(n);
    let set = |i: usize, d: usize, depth: &mut Vec<i32>, work: &mut Vec<usize>| -> bool {
        if i >= n {
            return false;
        }
        if depth[i] < 0 {
            depth[i] = d as i32;
            work.push(i);
            true
        } else {
            depth[i] == d as i32
        }
    };
    if n == 0 || !set(0, 0, &mut depth, &mut work) {
        return None;
    }
    for h in &m.handlers {
        if !set(h.handler, 1, &mut depth, &mut work) {
            return None;
        }
    }
    let mut max = 1usize.min(m.handlers.len());
    let counting = super::shortcuts();
    let mut scratch = State::default();
    while let Some(i) = work.pop() {
        let d = depth[i] as usize;
        let insn = &m.insns[i];
        let after = if counting {
            frames::depth_after(d, insn, cx).ok()?
        } else {
            frames::depth_after_by_simulation(d, i, insn, cx, &mut scratch).ok()?
        };
        max = max.max(d).max(after);
        match insn {
            I::Jsr(t) => {
                if !set(usize::from(*t), d + 1, &mut depth, &mut work) || !set(i + 1, d, &mut depth, &mut work) {
                    return None;
                }
                continue;
            }
            I::Jsr_w(t) => {
                if !set(*t as usize, d + 1, &mut depth, &mut work) || !set(i + 1, d, &mut depth, &mut work) {
                    return None;
                }
                continue;
            }
            _ => {}
        }
        let mut agree = true;
        for_each_target(insn, i, |t| agree &= set(t, after, &mut depth, &mut work));
        if !agree {
            return None;
        }
        if !is_unconditional(insn) && !set(i + 1, after, &mut depth, &mut work) && i + 1 < n {
            return None;
        }
    }
    Some(max)
}

/// Appends the bytes of an instruction whose encoding does not depend on its position (an
/// opcode alone, or with one index or local-variable operand), as ristretto writes them; false
/// for the others (branches, switches, wide forms, …), which ristretto encodes.
fn encode_simple(insn: &Instruction, out: &mut Vec<u8>) -> bool {
    match insn {
        I::Getstatic(i)
        | I::Putstatic(i)
        | I::Getfield(i)
        | I::Putfield(i)
        | I::Invokevirtual(i)
        | I::Invokespecial(i)
        | I::Invokestatic(i)
        | I::New(i)
        | I::Anewarray(i)
        | I::Checkcast(i)
        | I::Instanceof(i)
        | I::Ldc_w(i)
        | I::Ldc2_w(i) => {
            out.push(insn.code());
            out.extend_from_slice(&i.to_be_bytes());
        }
        I::Ldc(n)
        | I::Iload(n)
        | I::Lload(n)
        | I::Fload(n)
        | I::Dload(n)
        | I::Aload(n)
        | I::Istore(n)
        | I::Lstore(n)
        | I::Fstore(n)
        | I::Dstore(n)
        | I::Astore(n) => out.extend_from_slice(&[insn.code(), *n]),
        I::Bipush(v) => out.extend_from_slice(&[insn.code(), *v as u8]),
        I::Sipush(v) => {
            out.push(insn.code());
            out.extend_from_slice(&v.to_be_bytes());
        }
        I::Wide | I::Breakpoint | I::Impdep1 | I::Impdep2 => return false,
        _ if branch_target(insn).is_none() && encoded_size(insn, 0) == 1 => out.push(insn.code()),
        _ => return false,
    }
    true
}

/// Turns index-form instructions into bytes at the positions of `pos`.
fn encode_code(insns: &[Instruction], pos: &[u32]) -> Result<Vec<u8>, BciError> {
    let len = *pos.last().expect("layout ends with the length") as usize;
    let mut cur = Cursor::new(Vec::with_capacity(len));
    let to_byte = |t: usize| pos[t];
    for (k, insn) in insns.iter().enumerate() {
        let here = pos[k];
        if encode_simple(insn, cur.get_mut()) {
            let p = cur.get_ref().len() as u64;
            cur.set_position(p);
            if p != u64::from(pos[k + 1]) {
                return Err(BciError::Internal(format!("{insn} at byte {here} encoded to an unexpected size")));
            }
            continue;
        }
        let byte_form = match insn {
            I::Tableswitch(s) => {
                let mut s = s.clone();
                let rel = |r: i32| (i64::from(to_byte((k as i64 + i64::from(r)) as usize)) - i64::from(here)) as i32;
                s.default = rel(s.default);
                for o in &mut s.offsets {
                    *o = rel(*o);
                }
                Some(I::Tableswitch(s))
            }
            I::Lookupswitch(s) => {
                let mut s = s.clone();
                let rel = |r: i32| (i64::from(to_byte((k as i64 + i64::from(r)) as usize)) - i64::from(here)) as i32;
                s.default = rel(s.default);
                for o in s.pairs.values_mut() {
                    *o = rel(*o);
                }
                Some(I::Lookupswitch(s))
            }
            _ => match branch_target(insn) {
                Some(t) => {
                    let mut b = insn.clone();
                    set_target(&mut b, to_byte(t) as usize)?;
                    Some(b)
                }
                None => None,
            },
        };
        byte_form
            .as_ref()
            .unwrap_or(insn)
            .to_bytes(&mut cur)
            .map_err(|e| BciError::Internal(format!("encoding {insn} at byte {here}: {e}")))?;
        if cur.position() != u64::from(pos[k + 1]) {
            return Err(BciError::Internal(format!("{insn} at byte {here} encoded to an unexpected size")));
        }
    }
    Ok(cur.into_inner())
}

fn put_u16(out: &mut Vec<u8>, v: usize) -> Result<(), BciError> {
    let v = u16::try_from(v).map_err(|_| BciError::CodeTooLarge { length: v })?;
    out.extend_from_slice(&v.to_be_bytes());
    Ok(())
}

fn put_attr(out: &mut Vec<u8>, name: u16, body: &[u8]) {
    out.extend_from_slice(&name.to_be_bytes());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
}

/// Rewrites one method: decodes its whole `Code` attribute, applies the editor's insertions,
/// widens branches, recomputes `max_stack`, and returns the new attribute (header included).
pub(crate) fn rewrite(
    raw: &[u8],
    rc: &RawCode,
    editor: MethodEditor,
    ctx: &MethodContext,
    pool: &mut Pool<'_>,
) -> Result<Vec<u8>, BciError> {
    let initial = frames::initial_frame(ctx)?;
    let mut model = decode_model(raw, rc, &editor, &initial, pool)?;
    // A constructor's chaining call, for the catch-all's ranges (found before the instructions
    // move into the model).
    let chain = (editor.catch_all.is_some() && ctx.name == b"<init>" && ctx.class_name != b"java/lang/Object")
        .then(|| chaining_call(&editor.insns, pool));
    model.insns = editor.insns;
    let inserted_peak = editor
        .before
        .values()
        .chain(editor.after.values())
        .chain(std::iter::once(&editor.prologue))
        .map(|c| c.len()) // every instruction pushes at most 2 slots; see the fallback below
        .max()
        .unwrap_or(0);
    // The catch-all range begins after the prologue and the code inserted before instruction 0.
    let covered_from = editor.prologue.len() + editor.before.get(&0).map_or(0, Vec::len);
    let catch_all = editor.catch_all;
    let new_locals = editor.new_locals;
    let max_locals = u16::try_from(usize::from(rc.max_locals) + new_locals.len())
        .map_err(|_| BciError::Unsupported("max_locals above 65535".into()))?;
    let entry = editor.prologue.len();
    let edits = Edits { prologue: editor.prologue, before: editor.before, after: editor.after, ..Edits::default() };
    // Each catch-all range gets a handler: its code and an athrow.
    let spare = catch_all.as_ref().map_or(0, |c| 2 * (c.len() + 1));
    let mut model = apply(model, &edits, spare)?;
    if let Some(code) = catch_all {
        // Where instruction j of the original code is in the new code.
        let at = |j: usize| -> usize {
            entry
                + j
                + edits.before.range(..=j).map(|(_, v)| v.len()).sum::<usize>()
                + edits.after.range(..j).map(|(_, v)| v.len()).sum::<usize>()
        };
        let throwable = || vec![frames::VType::object(b"java/lang/Throwable")];
        // In a constructor, no handler may cover the `super(…)`/`this(…)` call: HotSpot's
        // verifier (JDK 11 to 25) checks a handler there against the frame before the call and
        // against the frame after it, with `flagThisUninit` in both, and only a local holding
        // `uninitializedThis` gives a stack map frame that flag, which the frame after the call
        // cannot match. One handler covers the code before it, with `this` uninitialised, one
        // the code after it; an exception the call throws is the callee's, whose exit hook ends
        // this frame too (`initThrow`, see the method plan).
        let mut ranges = Vec::new();
        if let Some(chain) = chain {
            let chain =
                chain.ok_or_else(|| BciError::Unsupported("a constructor without a super(…)/this(…) call".into()))?;
            if at(chain) > covered_from {
                ranges.push((covered_from, at(chain), vec![frames::VType::UninitThis]));
            }
            ranges.push((at(chain) + 1, model.insns.len(), Vec::new()));
        } else {
            ranges.push((covered_from, model.insns.len(), Vec::new()));
        }
        for (start, end, locals) in ranges {
            let handler = model.insns.len();
            model.insns.extend(code.iter().cloned());
            model.insns.push(I::Athrow);
            model.handlers.push(Handler { start, end, handler, catch_type: 0 });
            if ctx.major >= 50 {
                model.frames.push((handler, Frame { locals, stack: throwable() }));
            }
        }
    }
    if !new_locals.is_empty() {
        // The added locals' entries, over the whole code, in each LocalVariableTable (not in a
        // LocalVariableTypeTable: they have no generic signature).
        let end = model.insns.len();
        for a in &mut model.attrs {
            if let SubAttr::LocalVars(nm, v) = a {
                if pool.get_utf8(*nm)?.as_bytes() == b"LocalVariableTable" {
                    for (k, &(name, descriptor)) in new_locals.iter().enumerate() {
                        let slot = rc.max_locals + k as u16;
                        v.push(LocalVar { start: 0, end, rest: [name, descriptor, slot] });
                    }
                }
            }
        }
    }
    let (model, pos) = widen(model, &initial, ctx, pool)?;
    let cx = SimContext { pool, class_name: &ctx.class_name, insns: &model.insns };
    let max_stack = match max_depth(&model, &cx) {
        Some(d) => usize::from(rc.max_stack).max(d),
        None => usize::from(rc.max_stack) + 2 * inserted_peak,
    };
    let max_stack = u16::try_from(max_stack).map_err(|_| BciError::Unsupported("max_stack above 65535".into()))?;
    let code = encode_code(&model.insns, &pos)?;
    let p = |i: usize| pos[i] as usize;

    // The attribute is written in place: each length is patched in once its contents are.
    let patch = |out: &mut Vec<u8>, len_at: usize| {
        let n = (out.len() - len_at - 4) as u32;
        out[len_at..len_at + 4].copy_from_slice(&n.to_be_bytes());
    };
    let mut out = Vec::with_capacity(rc.span.len() + code.len() + 8 * model.frames.len() + 64);
    out.extend_from_slice(&rc.name_index.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&max_stack.to_be_bytes());
    out.extend_from_slice(&max_locals.to_be_bytes());
    out.extend_from_slice(&(code.len() as u32).to_be_bytes());
    out.extend_from_slice(&code);
    put_u16(&mut out, model.handlers.len())?;
    for h in &model.handlers {
        put_u16(&mut out, p(h.start))?;
        put_u16(&mut out, p(h.end))?;
        put_u16(&mut out, p(h.handler))?;
        out.extend_from_slice(&h.catch_type.to_be_bytes());
    }
    // Frames without a StackMapTable of the method's own get one, after the others.
    let new_frames = !model.frames.is_empty() && !model.attrs.iter().any(|a| matches!(a, SubAttr::StackMap(_)));
    put_u16(&mut out, model.attrs.len() + usize::from(new_frames))?;
    for a in &model.attrs {
        let name = match a {
            SubAttr::Lines(nm, _)
            | SubAttr::LocalVars(nm, _)
            | SubAttr::StackMap(nm)
            | SubAttr::TypeAnnotations(nm, _)
            | SubAttr::Other(nm, _) => *nm,
        };
        out.extend_from_slice(&name.to_be_bytes());
        let len_at = out.len();
        out.extend_from_slice(&[0; 4]);
        let d = &mut out;
        match a {
            SubAttr::Lines(_, v) => {
                put_u16(d, v.len())?;
                for (i, line) in v {
                    put_u16(d, p(*i))?;
                    d.extend_from_slice(&line.to_be_bytes());
                }
            }
            SubAttr::LocalVars(_, v) => {
                put_u16(d, v.len())?;
                for x in v {
                    put_u16(d, p(x.start))?;
                    put_u16(d, p(x.end) - p(x.start))?;
                    for r in x.rest {
                        d.extend_from_slice(&r.to_be_bytes());
                    }
                }
            }
            SubAttr::StackMap(_) => frames::encode_stack_map(&model.frames, &initial, &pos, pool, d)?,
            SubAttr::TypeAnnotations(_, v) => {
                put_u16(d, v.len())?;
                for t in v {
                    d.push(t.target_type);
                    match &t.target {
                        TaTarget::LocalVar(r) => {
                            put_u16(d, r.len())?;
                            for (s, e, slot) in r {
                                put_u16(d, p(*s))?;
                                put_u16(d, p(*e) - p(*s))?;
                                d.extend_from_slice(&slot.to_be_bytes());
                            }
                        }
                        TaTarget::Offset(i) => put_u16(d, p(*i))?,
                        TaTarget::TypeArgument(i, k) => {
                            put_u16(d, p(*i))?;
                            d.push(*k);
                        }
                        TaTarget::Raw(r) => d.extend_from_slice(r),
                    }
                    d.extend_from_slice(&t.rest);
                }
            }
            SubAttr::Other(_, raw) => d.extend_from_slice(raw),
        }
        patch(&mut out, len_at);
    }
    if new_frames {
        // Encoded before its name is looked up (the order the pool grows in).
        let mut d = Vec::with_capacity(8 * model.frames.len() + 2);
        frames::encode_stack_map(&model.frames, &initial, &pos, pool, &mut d)?;
        put_attr(&mut out, pool.utf8("StackMapTable")?, &d);
    }
    patch(&mut out, 2);
    Ok(out)
}

/// Everything decoded about a method's code, for tests.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct FullCode {
    pub insns: Vec<Instruction>,
    pub offsets: Vec<u32>,
    pub max_stack: u16,
    /// start, end, handler, catch type.
    pub handlers: Vec<(usize, usize, usize, u16)>,
    pub frames: Vec<(usize, Frame)>,
    /// Entries of every LineNumberTable.
    pub lines: Vec<(usize, u16)>,
    /// Entries of every LocalVariable(Type)Table: start, end, [name, descriptor, slot].
    pub locals: Vec<(usize, usize, [u16; 3])>,
}

#[cfg(test)]
pub(crate) fn decode_full(
    raw: &[u8],
    rc: &RawCode,
    editor: &MethodEditor,
    ctx: &MethodContext,
    pool: &Pool<'_>,
) -> Result<FullCode, BciError> {
    let initial = frames::initial_frame(ctx)?;
    let mut m = decode_model(raw, rc, editor, &initial, pool)?;
    m.insns = editor.insns.clone();
    let mut lines = Vec::new();
    let mut locals = Vec::new();
    for a in &m.attrs {
        match a {
            SubAttr::Lines(_, v) => lines.extend(v.iter().copied()),
            SubAttr::LocalVars(_, v) => locals.extend(v.iter().map(|x| (x.start, x.end, x.rest))),
            _ => {}
        }
    }
    Ok(FullCode {
        insns: m.insns,
        offsets: editor.offsets.clone(),
        max_stack: rc.max_stack,
        handlers: m.handlers.iter().map(|h| (h.start, h.end, h.handler, h.catch_type)).collect(),
        frames: m.frames,
        lines,
        locals,
    })
}
