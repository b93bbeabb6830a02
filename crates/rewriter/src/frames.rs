//! Verification types, stack map frames (decoded to full frames, re-encoded canonically), and a
//! small type simulator: the state at an instruction that has no frame, computed forward from
//! the nearest frame before it (the code between two frames is straight-line), and the
//! operand-stack depth of every instruction (for `max_stack`).

use super::pool::Pool;
use super::BciError;
use ristretto_classfile::attributes::{ArrayType, Instruction, VerificationType};
use ristretto_classfile::Constant;
use std::rc::Rc;

/// A verification type. Class types are held by name (modified UTF-8 internal name, or array
/// descriptor) so that frames can be compared and re-encoded whatever the constant pool holds;
/// `Uninit` holds the *instruction index* of its `new`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VType {
    Top,
    Int,
    Float,
    Long,
    Double,
    Null,
    UninitThis,
    Object(Rc<[u8]>),
    Uninit(usize),
}

impl VType {
    fn is_wide(&self) -> bool {
        matches!(self, VType::Long | VType::Double)
    }
    pub(crate) fn object(name: &[u8]) -> VType {
        VType::Object(Rc::from(name))
    }
}

/// A frame in the StackMapTable's own form: one entry per local/stack value (long and double
/// take one entry), locals listed up to the last one the frame declares.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Frame {
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

impl Frame {
    /// Rewrites every `Uninit` index with `f`.
    pub(crate) fn map_uninit(&mut self, f: impl Fn(usize) -> usize) {
        for t in self.locals.iter_mut().chain(self.stack.iter_mut()) {
            if let VType::Uninit(n) = t {
                *n = f(*n);
            }
        }
    }
}

/// What the simulator needs to know about the method.
pub(crate) struct MethodContext {
    pub class_name: Vec<u8>,
    pub name: Vec<u8>,
    pub descriptor: Vec<u8>,
    pub is_static: bool,
    pub major: u16,
}

fn bad(msg: impl Into<String>) -> BciError {
    BciError::Malformed(msg.into())
}

/// One field type from the front of `d`: its type and the bytes it took.
pub(crate) fn parse_field_type(d: &[u8]) -> Result<(VType, usize), BciError> {
    let t = match d.first() {
        Some(b'B' | b'C' | b'I' | b'S' | b'Z') => VType::Int,
        Some(b'F') => VType::Float,
        Some(b'J') => VType::Long,
        Some(b'D') => VType::Double,
        Some(b'L') => {
            let end = d.iter().position(|&c| c == b';').ok_or_else(|| bad("unterminated class type in descriptor"))?;
            return Ok((VType::object(&d[1..end]), end + 1));
        }
        Some(b'[') => {
            let mut i = 0;
            while d.get(i) == Some(&b'[') {
                i += 1;
            }
            let (_, n) = parse_field_type(&d[i..])?;
            return Ok((VType::object(&d[..i + n]), i + n));
        }
        _ => return Err(bad(format!("bad descriptor {:?}", String::from_utf8_lossy(d)))),
    };
    Ok((t, 1))
}

/// Parameter types and return type (`None` for void) of a method descriptor.
pub(crate) fn parse_method_descriptor(d: &[u8]) -> Result<(Vec<VType>, Option<VType>), BciError> {
    if d.first() != Some(&b'(') {
        return Err(bad(format!("bad method descriptor {:?}", String::from_utf8_lossy(d))));
    }
    let mut i = 1;
    let mut params = Vec::new();
    while d.get(i) != Some(&b')') {
        if i >= d.len() {
            return Err(bad("unterminated method descriptor"));
        }
        let (t, n) = parse_field_type(&d[i..])?;
        params.push(t);
        i += n;
    }
    let ret = &d[i + 1..];
    if ret == b"V" {
        Ok((params, None))
    } else {
        Ok((params, Some(parse_field_type(ret)?.0)))
    }
}

/// The implicit frame at the start of a method (JVMS 4.10.1.6).
pub(crate) fn initial_frame(ctx: &MethodContext) -> Result<Frame, BciError> {
    let mut locals = Vec::new();
    if !ctx.is_static {
        if ctx.name == b"<init>" && ctx.class_name != b"java/lang/Object" {
            locals.push(VType::UninitThis);
        } else {
            locals.push(VType::object(&ctx.class_name));
        }
    }
    locals.extend(parse_method_descriptor(&ctx.descriptor)?.0);
    Ok(Frame { locals, stack: Vec::new() })
}

/// Decodes a StackMapTable into full frames keyed by instruction index.
pub(crate) fn decode_stack_map(
    info: &[u8],
    initial: &Frame,
    pool: &Pool<'_>,
    index_of: &dyn Fn(u32) -> Option<usize>,
) -> Result<Vec<(usize, Frame)>, BciError> {
    let short = || bad("StackMapTable: too short");
    let mut at = 0usize;
    let u8_at = |at: &mut usize| -> Result<u8, BciError> {
        let b = *info.get(*at).ok_or_else(short)?;
        *at += 1;
        Ok(b)
    };
    let u16_at = |at: &mut usize| -> Result<u16, BciError> {
        let b = info.get(*at..*at + 2).ok_or_else(short)?;
        *at += 2;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    };
    // The class names met so far, by constant (a method's frames name few classes, often).
    let mut names: Vec<(u16, Rc<[u8]>)> = Vec::new();
    let mut vtype = |at: &mut usize| -> Result<VType, BciError> {
        Ok(match u8_at(at)? {
            0 => VType::Top,
            1 => VType::Int,
            2 => VType::Float,
            3 => VType::Double,
            4 => VType::Long,
            5 => VType::Null,
            6 => VType::UninitThis,
            7 => {
                let c = u16_at(at)?;
                if let Some((_, n)) = names.iter().find(|(k, _)| *k == c) {
                    VType::Object(n.clone())
                } else {
                    let n: Rc<[u8]> = Rc::from(pool.get_class_name(c)?.as_bytes());
                    names.push((c, n.clone()));
                    VType::Object(n)
                }
            }
            8 => {
                let offset = u16_at(at)?;
                VType::Uninit(
                    index_of(u32::from(offset))
                        .ok_or_else(|| bad(format!("Uninitialized({offset}) is not an instruction")))?,
                )
            }
            t => return Err(bad(format!("StackMapTable: verification type tag {t}"))),
        })
    };
    let n = u16_at(&mut at)?;
    let mut out: Vec<(usize, Frame)> = Vec::with_capacity(usize::from(n));
    let mut offset: i64 = -1;
    for _ in 0..n {
        let prev = out.last().map_or(initial, |f| &f.1);
        let frame_type = u8_at(&mut at)?;
        let (delta, frame) = match frame_type {
            0..=63 => (u16::from(frame_type), Frame { locals: prev.locals.clone(), stack: Vec::new() }),
            64..=127 => {
                (u16::from(frame_type - 64), Frame { locals: prev.locals.clone(), stack: vec![vtype(&mut at)?] })
            }
            247 => {
                let d = u16_at(&mut at)?;
                (d, Frame { locals: prev.locals.clone(), stack: vec![vtype(&mut at)?] })
            }
            248..=250 => {
                let d = u16_at(&mut at)?;
                let k = usize::from(251 - frame_type);
                if k > prev.locals.len() {
                    return Err(bad("StackMapTable: chop frame removes more locals than there are"));
                }
                (d, Frame { locals: prev.locals[..prev.locals.len() - k].to_vec(), stack: Vec::new() })
            }
            251 => (u16_at(&mut at)?, Frame { locals: prev.locals.clone(), stack: Vec::new() }),
            252..=254 => {
                let d = u16_at(&mut at)?;
                let mut l = Vec::with_capacity(prev.locals.len() + usize::from(frame_type - 251));
                l.extend_from_slice(&prev.locals);
                for _ in 0..frame_type - 251 {
                    l.push(vtype(&mut at)?);
                }
                (d, Frame { locals: l, stack: Vec::new() })
            }
            255 => {
                let d = u16_at(&mut at)?;
                let nl = u16_at(&mut at)?;
                let mut locals = Vec::with_capacity(usize::from(nl));
                for _ in 0..nl {
                    locals.push(vtype(&mut at)?);
                }
                let ns = u16_at(&mut at)?;
                let mut stack = Vec::with_capacity(usize::from(ns));
                for _ in 0..ns {
                    stack.push(vtype(&mut at)?);
                }
                (d, Frame { locals, stack })
            }
            t => return Err(bad(format!("StackMapTable: frame type {t}"))),
        };
        offset += i64::from(delta) + 1;
        let i = u32::try_from(offset)
            .ok()
            .and_then(index_of)
            .ok_or_else(|| bad(format!("StackMapTable: frame at byte {offset} is not at an instruction")))?;
        out.push((i, frame));
    }
    if at != info.len() {
        return Err(bad("StackMapTable: trailing bytes"));
    }
    Ok(out)
}

fn write_vtype(out: &mut Vec<u8>, t: &VType, pool: &mut Pool<'_>, pos: &[u32]) -> Result<(), BciError> {
    let v = match t {
        VType::Top => VerificationType::Top,
        VType::Int => VerificationType::Integer,
        VType::Float => VerificationType::Float,
        VType::Long => VerificationType::Long,
        VType::Double => VerificationType::Double,
        VType::Null => VerificationType::Null,
        VType::UninitThis => VerificationType::UninitializedThis,
        VType::Object(name) => VerificationType::Object { cpool_index: pool.class_mutf8(name)? },
        VType::Uninit(n) => VerificationType::Uninitialized {
            offset: u16::try_from(pos[*n]).map_err(|_| BciError::CodeTooLarge { length: pos[*n] as usize })?,
        },
    };
    v.to_bytes(out).map_err(|e| bad(e.to_string()))
}

/// Encodes frames (sorted, distinct indices) as a StackMapTable body, each frame in the most
/// compact form relative to the one before it; `pos` gives each instruction's byte offset.
pub(crate) fn encode_stack_map(
    frames: &[(usize, Frame)],
    initial: &Frame,
    pos: &[u32],
    pool: &mut Pool<'_>,
    out: &mut Vec<u8>,
) -> Result<(), BciError> {
    let n = u16::try_from(frames.len()).map_err(|_| bad("too many stack map frames"))?;
    out.extend_from_slice(&n.to_be_bytes());
    let mut prev = initial;
    let mut prev_off: i64 = -1;
    for (at, f) in frames {
        let off = i64::from(pos[*at]);
        let delta = off - prev_off - 1;
        if delta < 0 {
            return Err(BciError::Internal(format!("stack map frames out of order at byte {off}")));
        }
        let d16 = u16::try_from(delta).map_err(|_| BciError::CodeTooLarge { length: off as usize })?;
        let same_locals = f.locals == prev.locals;
        let (pl, fl) = (prev.locals.len(), f.locals.len());
        if same_locals && f.stack.is_empty() {
            if delta < 64 {
                out.push(delta as u8);
            } else {
                out.push(251);
                out.extend_from_slice(&d16.to_be_bytes());
            }
        } else if same_locals && f.stack.len() == 1 {
            if delta < 64 {
                out.push(64 + delta as u8);
            } else {
                out.push(247);
                out.extend_from_slice(&d16.to_be_bytes());
            }
            write_vtype(out, &f.stack[0], pool, pos)?;
        } else if f.stack.is_empty() && fl > pl && fl - pl <= 3 && f.locals[..pl] == prev.locals[..] {
            out.push(251 + (fl - pl) as u8);
            out.extend_from_slice(&d16.to_be_bytes());
            for t in &f.locals[pl..] {
                write_vtype(out, t, pool, pos)?;
            }
        } else if f.stack.is_empty() && pl > fl && pl - fl <= 3 && prev.locals[..fl] == f.locals[..] {
            out.push(251 - (pl - fl) as u8);
            out.extend_from_slice(&d16.to_be_bytes());
        } else {
            out.push(255);
            out.extend_from_slice(&d16.to_be_bytes());
            out.extend_from_slice(&(f.locals.len() as u16).to_be_bytes());
            for t in &f.locals {
                write_vtype(out, t, pool, pos)?;
            }
            out.extend_from_slice(&(f.stack.len() as u16).to_be_bytes());
            for t in &f.stack {
                write_vtype(out, t, pool, pos)?;
            }
        }
        prev = f;
        prev_off = off;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Simulation

/// Locals and stack with one entry per slot (a long or double is followed by `Top`).
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

fn to_slots(list: &[VType]) -> Vec<VType> {
    let mut v = Vec::with_capacity(list.len() + 2);
    for t in list {
        v.push(t.clone());
        if t.is_wide() {
            v.push(VType::Top);
        }
    }
    v
}

fn from_slots(slots: &[VType]) -> Vec<VType> {
    let mut v = Vec::with_capacity(slots.len());
    let mut i = 0;
    while i < slots.len() {
        v.push(slots[i].clone());
        i += if slots[i].is_wide() { 2 } else { 1 };
    }
    v
}

impl State {
    pub(crate) fn of(f: &Frame) -> State {
        State { locals: to_slots(&f.locals), stack: to_slots(&f.stack) }
    }

    /// The frame of this state; unused trailing locals are left out.
    pub(crate) fn frame(&self) -> Frame {
        let mut locals = from_slots(&self.locals);
        while locals.last() == Some(&VType::Top) {
            locals.pop();
        }
        Frame { locals, stack: from_slots(&self.stack) }
    }

    fn pop(&mut self, n: usize) -> Result<(), BciError> {
        if self.stack.len() < n {
            return Err(BciError::Internal("operand stack underflow in simulation".into()));
        }
        self.stack.truncate(self.stack.len() - n);
        Ok(())
    }

    fn pop1(&mut self) -> Result<VType, BciError> {
        self.stack.pop().ok_or_else(|| BciError::Internal("operand stack underflow in simulation".into()))
    }

    fn push(&mut self, t: VType) {
        let wide = t.is_wide();
        self.stack.push(t);
        if wide {
            self.stack.push(VType::Top);
        }
    }

    fn load(&mut self, n: usize) {
        let t = self.locals.get(n).cloned().unwrap_or(VType::Top);
        self.push(t);
    }

    fn store(&mut self, n: usize, t: VType) {
        let wide = t.is_wide();
        let need = n + if wide { 2 } else { 1 };
        if self.locals.len() < need {
            self.locals.resize(need, VType::Top);
        }
        if n > 0 && self.locals[n - 1].is_wide() {
            self.locals[n - 1] = VType::Top;
        }
        self.locals[n] = t;
        if wide {
            self.locals[n + 1] = VType::Top;
        }
    }

    /// `dup_x`-style: copies the top `n` slots below the `depth` slots under them.
    fn dup(&mut self, n: usize, depth: usize) -> Result<(), BciError> {
        let len = self.stack.len();
        if len < n + depth {
            return Err(BciError::Internal("operand stack underflow in simulation".into()));
        }
        let top: Vec<VType> = self.stack[len - n..].to_vec();
        let at = len - n - depth;
        for (i, t) in top.into_iter().enumerate() {
            self.stack.insert(at + i, t);
        }
        Ok(())
    }
}

/// What the simulator reads besides the instruction.
pub(crate) struct SimContext<'p, 'a> {
    pub pool: &'p Pool<'a>,
    pub class_name: &'p [u8],
    pub insns: &'p [Instruction],
}

fn array_of(t: &ArrayType) -> &'static [u8] {
    match t {
        ArrayType::Boolean => b"[Z",
        ArrayType::Char => b"[C",
        ArrayType::Float => b"[F",
        ArrayType::Double => b"[D",
        ArrayType::Byte => b"[B",
        ArrayType::Short => b"[S",
        ArrayType::Int => b"[I",
        ArrayType::Long => b"[J",
    }
}

fn slots(t: &VType) -> usize {
    if t.is_wide() {
        2
    } else {
        1
    }
}

/// Executes `insn` (at index `at`) on `st`. Unknown types (`Top` where a reference is
/// expected) are tolerated, so the same code serves the depth-only analysis.
pub(crate) fn step(st: &mut State, at: usize, insn: &Instruction, cx: &SimContext<'_, '_>) -> Result<(), BciError> {
    use Instruction as I;
    use VType as T;
    match insn {
        I::Nop | I::Goto(_) | I::Goto_w(_) | I::Iinc(..) | I::Iinc_w(..) | I::Return | I::Ret(_) | I::Ret_w(_) => {}
        I::Aconst_null => st.push(T::Null),
        I::Iconst_m1 | I::Iconst_0 | I::Iconst_1 | I::Iconst_2 | I::Iconst_3 | I::Iconst_4 | I::Iconst_5 => {
            st.push(T::Int)
        }
        I::Bipush(_) | I::Sipush(_) => st.push(T::Int),
        I::Lconst_0 | I::Lconst_1 => st.push(T::Long),
        I::Fconst_0 | I::Fconst_1 | I::Fconst_2 => st.push(T::Float),
        I::Dconst_0 | I::Dconst_1 => st.push(T::Double),
        I::Ldc(i) => ldc(st, u16::from(*i), cx)?,
        I::Ldc_w(i) | I::Ldc2_w(i) => ldc(st, *i, cx)?,
        I::Iload(_) | I::Iload_0 | I::Iload_1 | I::Iload_2 | I::Iload_3 | I::Iload_w(_) => st.push(T::Int),
        I::Lload(_) | I::Lload_0 | I::Lload_1 | I::Lload_2 | I::Lload_3 | I::Lload_w(_) => st.push(T::Long),
        I::Fload(_) | I::Fload_0 | I::Fload_1 | I::Fload_2 | I::Fload_3 | I::Fload_w(_) => st.push(T::Float),
        I::Dload(_) | I::Dload_0 | I::Dload_1 | I::Dload_2 | I::Dload_3 | I::Dload_w(_) => st.push(T::Double),
        I::Aload(n) => st.load(usize::from(*n)),
        I::Aload_w(n) => st.load(usize::from(*n)),
        I::Aload_0 => st.load(0),
        I::Aload_1 => st.load(1),
        I::Aload_2 => st.load(2),
        I::Aload_3 => st.load(3),
        I::Iaload | I::Baload | I::Caload | I::Saload => {
            st.pop(2)?;
            st.push(T::Int)
        }
        I::Laload => {
            st.pop(2)?;
            st.push(T::Long)
        }
        I::Faload => {
            st.pop(2)?;
            st.push(T::Float)
        }
        I::Daload => {
            st.pop(2)?;
            st.push(T::Double)
        }
        I::Aaload => {
            st.pop(1)?;
            let arr = st.pop1()?;
            let t = match arr {
                T::Null => T::Null,
                T::Object(name) if name.first() == Some(&b'[') => parse_field_type(&name[1..])?.0,
                _ => T::Top,
            };
            st.push(t)
        }
        I::Istore(n) => {
            st.pop(1)?;
            st.store(usize::from(*n), T::Int)
        }
        I::Istore_w(n) => {
            st.pop(1)?;
            st.store(usize::from(*n), T::Int)
        }
        I::Istore_0 | I::Istore_1 | I::Istore_2 | I::Istore_3 => {
            st.pop(1)?;
            st.store(small_index(insn), T::Int)
        }
        I::Fstore(n) => {
            st.pop(1)?;
            st.store(usize::from(*n), T::Float)
        }
        I::Fstore_w(n) => {
            st.pop(1)?;
            st.store(usize::from(*n), T::Float)
        }
        I::Fstore_0 | I::Fstore_1 | I::Fstore_2 | I::Fstore_3 => {
            st.pop(1)?;
            st.store(small_index(insn), T::Float)
        }
        I::Lstore(n) => {
            st.pop(2)?;
            st.store(usize::from(*n), T::Long)
        }
        I::Lstore_w(n) => {
            st.pop(2)?;
            st.store(usize::from(*n), T::Long)
        }
        I::Lstore_0 | I::Lstore_1 | I::Lstore_2 | I::Lstore_3 => {
            st.pop(2)?;
            st.store(small_index(insn), T::Long)
        }
        I::Dstore(n) => {
            st.pop(2)?;
            st.store(usize::from(*n), T::Double)
        }
        I::Dstore_w(n) => {
            st.pop(2)?;
            st.store(usize::from(*n), T::Double)
        }
        I::Dstore_0 | I::Dstore_1 | I::Dstore_2 | I::Dstore_3 => {
            st.pop(2)?;
            st.store(small_index(insn), T::Double)
        }
        I::Astore(n) => {
            let t = st.pop1()?;
            st.store(usize::from(*n), t)
        }
        I::Astore_w(n) => {
            let t = st.pop1()?;
            st.store(usize::from(*n), t)
        }
        I::Astore_0 | I::Astore_1 | I::Astore_2 | I::Astore_3 => {
            let t = st.pop1()?;
            st.store(small_index(insn), t)
        }
        I::Iastore | I::Fastore | I::Aastore | I::Bastore | I::Castore | I::Sastore => st.pop(3)?,
        I::Lastore | I::Dastore => st.pop(4)?,
        I::Pop => st.pop(1)?,
        I::Pop2 => st.pop(2)?,
        I::Dup => st.dup(1, 0)?,
        I::Dup_x1 => st.dup(1, 1)?,
        I::Dup_x2 => st.dup(1, 2)?,
        I::Dup2 => st.dup(2, 0)?,
        I::Dup2_x1 => st.dup(2, 1)?,
        I::Dup2_x2 => st.dup(2, 2)?,
        I::Swap => {
            let a = st.pop1()?;
            let b = st.pop1()?;
            st.stack.push(a);
            st.stack.push(b);
        }
        I::Iadd | I::Isub | I::Imul | I::Idiv | I::Irem | I::Ishl | I::Ishr | I::Iushr | I::Iand | I::Ior | I::Ixor => {
            st.pop(2)?;
            st.push(T::Int)
        }
        I::Fadd | I::Fsub | I::Fmul | I::Fdiv | I::Frem => {
            st.pop(2)?;
            st.push(T::Float)
        }
        I::Ladd | I::Lsub | I::Lmul | I::Ldiv | I::Lrem | I::Land | I::Lor | I::Lxor => {
            st.pop(4)?;
            st.push(T::Long)
        }
        I::Lshl | I::Lshr | I::Lushr => {
            st.pop(3)?;
            st.push(T::Long)
        }
        I::Dadd | I::Dsub | I::Dmul | I::Ddiv | I::Drem => {
            st.pop(4)?;
            st.push(T::Double)
        }
        I::Ineg | I::I2b | I::I2c | I::I2s => {
            st.pop(1)?;
            st.push(T::Int)
        }
        I::Fneg | I::I2f => {
            st.pop(1)?;
            st.push(T::Float)
        }
        I::Lneg | I::D2l => {
            st.pop(2)?;
            st.push(T::Long)
        }
        I::Dneg | I::L2d => {
            st.pop(2)?;
            st.push(T::Double)
        }
        I::I2l | I::F2l => {
            st.pop(1)?;
            st.push(T::Long)
        }
        I::I2d | I::F2d => {
            st.pop(1)?;
            st.push(T::Double)
        }
        I::L2i | I::D2i => {
            st.pop(2)?;
            st.push(T::Int)
        }
        I::L2f | I::D2f => {
            st.pop(2)?;
            st.push(T::Float)
        }
        I::F2i => {
            st.pop(1)?;
            st.push(T::Int)
        }
        I::Lcmp | I::Dcmpl | I::Dcmpg => {
            st.pop(4)?;
            st.push(T::Int)
        }
        I::Fcmpl | I::Fcmpg => {
            st.pop(2)?;
            st.push(T::Int)
        }
        I::Ifeq(_)
        | I::Ifne(_)
        | I::Iflt(_)
        | I::Ifge(_)
        | I::Ifgt(_)
        | I::Ifle(_)
        | I::Ifnull(_)
        | I::Ifnonnull(_) => st.pop(1)?,
        I::If_icmpeq(_)
        | I::If_icmpne(_)
        | I::If_icmplt(_)
        | I::If_icmpge(_)
        | I::If_icmpgt(_)
        | I::If_icmple(_)
        | I::If_acmpeq(_)
        | I::If_acmpne(_) => st.pop(2)?,
        I::Jsr(_) | I::Jsr_w(_) => st.push(T::Top),
        I::Tableswitch(_) | I::Lookupswitch(_) => st.pop(1)?,
        I::Ireturn | I::Freturn | I::Areturn | I::Athrow | I::Monitorenter | I::Monitorexit => st.pop(1)?,
        I::Lreturn | I::Dreturn => st.pop(2)?,
        I::Getstatic(i) | I::Getfield(i) | I::Putstatic(i) | I::Putfield(i) => {
            let (_, d) = cx.pool.get_member(*i)?;
            let (t, _) = parse_field_type(d.as_bytes())?;
            match insn {
                I::Getstatic(_) => st.push(t),
                I::Getfield(_) => {
                    st.pop(1)?;
                    st.push(t)
                }
                I::Putstatic(_) => st.pop(slots(&t))?,
                _ => st.pop(slots(&t) + 1)?,
            }
        }
        I::Invokevirtual(i)
        | I::Invokespecial(i)
        | I::Invokestatic(i)
        | I::Invokeinterface(i, _)
        | I::Invokedynamic(i) => {
            let (name, d) = cx.pool.get_member(*i)?;
            let (params, ret) = parse_method_descriptor(d.as_bytes())?;
            st.pop(params.iter().map(slots).sum())?;
            if !matches!(insn, I::Invokestatic(_) | I::Invokedynamic(_)) {
                let recv = st.pop1()?;
                if matches!(insn, I::Invokespecial(_)) && name.as_bytes() == b"<init>" {
                    let init = match &recv {
                        T::UninitThis => Some(T::object(cx.class_name)),
                        T::Uninit(n) => match cx.insns.get(*n) {
                            Some(I::New(c)) => Some(T::object(cx.pool.get_class_name(*c)?.as_bytes())),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(init) = init {
                        for t in st.locals.iter_mut().chain(st.stack.iter_mut()) {
                            if *t == recv {
                                *t = init.clone();
                            }
                        }
                    }
                }
            }
            if let Some(r) = ret {
                st.push(r)
            }
        }
        I::New(_) => st.push(T::Uninit(at)),
        I::Newarray(t) => {
            st.pop(1)?;
            st.push(T::object(array_of(t)))
        }
        I::Anewarray(c) => {
            st.pop(1)?;
            let name = cx.pool.get_class_name(*c)?.as_bytes();
            let mut a = Vec::with_capacity(name.len() + 3);
            a.push(b'[');
            if name.first() == Some(&b'[') {
                a.extend_from_slice(name);
            } else {
                a.push(b'L');
                a.extend_from_slice(name);
                a.push(b';');
            }
            st.push(T::object(&a))
        }
        I::Multianewarray(c, dims) => {
            st.pop(usize::from(*dims))?;
            st.push(T::object(cx.pool.get_class_name(*c)?.as_bytes()))
        }
        I::Arraylength | I::Instanceof(_) => {
            st.pop(1)?;
            st.push(T::Int)
        }
        I::Checkcast(c) => {
            st.pop(1)?;
            st.push(T::object(cx.pool.get_class_name(*c)?.as_bytes()))
        }
        I::Wide | I::Breakpoint | I::Impdep1 | I::Impdep2 => {
            return Err(BciError::Unsupported(format!("cannot simulate {insn}")));
        }
    }
    Ok(())
}

fn small_index(insn: &Instruction) -> usize {
    use Instruction as I;
    match insn {
        I::Istore_0 | I::Lstore_0 | I::Fstore_0 | I::Dstore_0 | I::Astore_0 => 0,
        I::Istore_1 | I::Lstore_1 | I::Fstore_1 | I::Dstore_1 | I::Astore_1 => 1,
        I::Istore_2 | I::Lstore_2 | I::Fstore_2 | I::Dstore_2 | I::Astore_2 => 2,
        _ => 3,
    }
}

fn ldc(st: &mut State, i: u16, cx: &SimContext<'_, '_>) -> Result<(), BciError> {
    let t = match cx.pool.get(i) {
        Some(Constant::Integer(_)) => VType::Int,
        Some(Constant::Float(_)) => VType::Float,
        Some(Constant::Long(_)) => VType::Long,
        Some(Constant::Double(_)) => VType::Double,
        Some(Constant::String(_)) => VType::object(b"java/lang/String"),
        Some(Constant::Class(_)) => VType::object(b"java/lang/Class"),
        Some(Constant::MethodType(_)) => VType::object(b"java/lang/invoke/MethodType"),
        Some(Constant::MethodHandle { .. }) => VType::object(b"java/lang/invoke/MethodHandle"),
        Some(Constant::Dynamic { .. }) => parse_field_type(cx.pool.get_member(i)?.1.as_bytes())?.0,
        _ => return Err(bad(format!("ldc of constant #{i}"))),
    };
    st.push(t);
    Ok(())
}

/// Operand-stack depth (in slots) after `insn`, given the depth before: what [`step`] leaves
/// on a stack of `depth` unknown values (and no locals), computed without simulating the types.
/// `Err` exactly where that simulation fails (an underflow, a constant or descriptor it cannot
/// read, an instruction it cannot simulate); [`depth_after_by_simulation`] is the reference.
pub(crate) fn depth_after(depth: usize, insn: &Instruction, cx: &SimContext<'_, '_>) -> Result<usize, ()> {
    use Instruction as I;
    // (slots popped, slots pushed); every instruction pops before it pushes.
    let (pop, push): (usize, usize) = match insn {
        I::Nop | I::Goto(_) | I::Goto_w(_) | I::Iinc(..) | I::Iinc_w(..) | I::Return | I::Ret(_) | I::Ret_w(_) => {
            (0, 0)
        }
        I::Aconst_null
        | I::Iconst_m1
        | I::Iconst_0
        | I::Iconst_1
        | I::Iconst_2
        | I::Iconst_3
        | I::Iconst_4
        | I::Iconst_5
        | I::Bipush(_)
        | I::Sipush(_)
        | I::Fconst_0
        | I::Fconst_1
        | I::Fconst_2 => (0, 1),
        I::Lconst_0 | I::Lconst_1 | I::Dconst_0 | I::Dconst_1 => (0, 2),
        I::Ldc(i) => (0, ldc_slots(u16::from(*i), cx)?),
        I::Ldc_w(i) | I::Ldc2_w(i) => (0, ldc_slots(*i, cx)?),
        I::Iload(_) | I::Iload_0 | I::Iload_1 | I::Iload_2 | I::Iload_3 | I::Iload_w(_) => (0, 1),
        I::Fload(_) | I::Fload_0 | I::Fload_1 | I::Fload_2 | I::Fload_3 | I::Fload_w(_) => (0, 1),
        I::Lload(_) | I::Lload_0 | I::Lload_1 | I::Lload_2 | I::Lload_3 | I::Lload_w(_) => (0, 2),
        I::Dload(_) | I::Dload_0 | I::Dload_1 | I::Dload_2 | I::Dload_3 | I::Dload_w(_) => (0, 2),
        // No locals are known: a reference load pushes one unknown slot.
        I::Aload(_) | I::Aload_w(_) | I::Aload_0 | I::Aload_1 | I::Aload_2 | I::Aload_3 => (0, 1),
        I::Iaload | I::Baload | I::Caload | I::Saload | I::Faload => (2, 1),
        I::Laload | I::Daload => (2, 2),
        // The array is unknown: its element is one unknown slot.
        I::Aaload => (2, 1),
        I::Istore(_) | I::Istore_w(_) | I::Istore_0 | I::Istore_1 | I::Istore_2 | I::Istore_3 => (1, 0),
        I::Fstore(_) | I::Fstore_w(_) | I::Fstore_0 | I::Fstore_1 | I::Fstore_2 | I::Fstore_3 => (1, 0),
        I::Astore(_) | I::Astore_w(_) | I::Astore_0 | I::Astore_1 | I::Astore_2 | I::Astore_3 => (1, 0),
        I::Lstore(_) | I::Lstore_w(_) | I::Lstore_0 | I::Lstore_1 | I::Lstore_2 | I::Lstore_3 => (2, 0),
        I::Dstore(_) | I::Dstore_w(_) | I::Dstore_0 | I::Dstore_1 | I::Dstore_2 | I::Dstore_3 => (2, 0),
        I::Iastore | I::Fastore | I::Aastore | I::Bastore | I::Castore | I::Sastore => (3, 0),
        I::Lastore | I::Dastore => (4, 0),
        I::Pop => (1, 0),
        I::Pop2 => (2, 0),
        I::Dup => (1, 2),
        I::Dup_x1 => (2, 3),
        I::Dup_x2 => (3, 4),
        I::Dup2 => (2, 4),
        I::Dup2_x1 => (3, 5),
        I::Dup2_x2 => (4, 6),
        I::Swap => (2, 2),
        I::Iadd | I::Isub | I::Imul | I::Idiv | I::Irem | I::Ishl | I::Ishr | I::Iushr | I::Iand | I::Ior | I::Ixor => {
            (2, 1)
        }
        I::Fadd | I::Fsub | I::Fmul | I::Fdiv | I::Frem => (2, 1),
        I::Ladd | I::Lsub | I::Lmul | I::Ldiv | I::Lrem | I::Land | I::Lor | I::Lxor => (4, 2),
        I::Lshl | I::Lshr | I::Lushr => (3, 2),
        I::Dadd | I::Dsub | I::Dmul | I::Ddiv | I::Drem => (4, 2),
        I::Ineg | I::I2b | I::I2c | I::I2s | I::Fneg | I::I2f | I::F2i => (1, 1),
        I::Lneg | I::D2l | I::Dneg | I::L2d => (2, 2),
        I::I2l | I::F2l | I::I2d | I::F2d => (1, 2),
        I::L2i | I::D2i | I::L2f | I::D2f => (2, 1),
        I::Lcmp | I::Dcmpl | I::Dcmpg => (4, 1),
        I::Fcmpl | I::Fcmpg => (2, 1),
        I::Ifeq(_)
        | I::Ifne(_)
        | I::Iflt(_)
        | I::Ifge(_)
        | I::Ifgt(_)
        | I::Ifle(_)
        | I::Ifnull(_)
        | I::Ifnonnull(_) => (1, 0),
        I::If_icmpeq(_)
        | I::If_icmpne(_)
        | I::If_icmplt(_)
        | I::If_icmpge(_)
        | I::If_icmpgt(_)
        | I::If_icmple(_)
        | I::If_acmpeq(_)
        | I::If_acmpne(_) => (2, 0),
        I::Jsr(_) | I::Jsr_w(_) => (0, 1),
        I::Tableswitch(_) | I::Lookupswitch(_) => (1, 0),
        I::Ireturn | I::Freturn | I::Areturn | I::Athrow | I::Monitorenter | I::Monitorexit => (1, 0),
        I::Lreturn | I::Dreturn => (2, 0),
        I::Getstatic(i) | I::Getfield(i) | I::Putstatic(i) | I::Putfield(i) => {
            let (_, d) = cx.pool.get_member(*i).map_err(drop)?;
            let t = field_slots(d.as_bytes())?.0;
            match insn {
                I::Getstatic(_) => (0, t),
                I::Getfield(_) => (1, t),
                I::Putstatic(_) => (t, 0),
                _ => (t + 1, 0),
            }
        }
        I::Invokevirtual(i)
        | I::Invokespecial(i)
        | I::Invokestatic(i)
        | I::Invokeinterface(i, _)
        | I::Invokedynamic(i) => {
            let (_, d) = cx.pool.get_member(*i).map_err(drop)?;
            let (params, ret) = method_slots(d.as_bytes())?;
            let receiver = usize::from(!matches!(insn, I::Invokestatic(_) | I::Invokedynamic(_)));
            (params + receiver, ret)
        }
        I::New(_) => (0, 1),
        I::Newarray(_) => (1, 1),
        I::Anewarray(c) | I::Checkcast(c) => {
            cx.pool.get_class_name(*c).map_err(drop)?;
            (1, 1)
        }
        I::Multianewarray(c, dims) => {
            cx.pool.get_class_name(*c).map_err(drop)?;
            (usize::from(*dims), 1)
        }
        I::Arraylength | I::Instanceof(_) => (1, 1),
        I::Wide | I::Breakpoint | I::Impdep1 | I::Impdep2 => return Err(()),
    };
    if depth < pop {
        return Err(());
    }
    Ok(depth - pop + push)
}

/// The slots of the field type at the front of `d` and the bytes it took; `Err` where
/// [`parse_field_type`] fails.
fn field_slots(d: &[u8]) -> Result<(usize, usize), ()> {
    match d.first() {
        Some(b'B' | b'C' | b'I' | b'S' | b'Z' | b'F') => Ok((1, 1)),
        Some(b'J' | b'D') => Ok((2, 1)),
        Some(b'L') => {
            let end = d.iter().position(|&c| c == b';').ok_or(())?;
            Ok((1, end + 1))
        }
        Some(b'[') => {
            let mut i = 0;
            while d.get(i) == Some(&b'[') {
                i += 1;
            }
            let (_, n) = field_slots(&d[i..])?;
            Ok((1, i + n))
        }
        _ => Err(()),
    }
}

/// The slots of a method descriptor's parameters and of its return value; `Err` where
/// [`parse_method_descriptor`] fails.
fn method_slots(d: &[u8]) -> Result<(usize, usize), ()> {
    if d.first() != Some(&b'(') {
        return Err(());
    }
    let mut i = 1;
    let mut params = 0;
    while d.get(i) != Some(&b')') {
        if i >= d.len() {
            return Err(());
        }
        let (s, n) = field_slots(&d[i..])?;
        params += s;
        i += n;
    }
    let ret = &d[i + 1..];
    if ret == b"V" {
        Ok((params, 0))
    } else {
        Ok((params, field_slots(ret)?.0))
    }
}

/// The slots an `ldc` of constant `i` pushes; `Err` where [`ldc`] fails.
fn ldc_slots(i: u16, cx: &SimContext<'_, '_>) -> Result<usize, ()> {
    Ok(match cx.pool.get(i) {
        Some(Constant::Long(_) | Constant::Double(_)) => 2,
        Some(
            Constant::Integer(_)
            | Constant::Float(_)
            | Constant::String(_)
            | Constant::Class(_)
            | Constant::MethodType(_)
            | Constant::MethodHandle { .. },
        ) => 1,
        Some(Constant::Dynamic { .. }) => field_slots(cx.pool.get_member(i).map_err(drop)?.1.as_bytes())?.0,
        _ => return Err(()),
    })
}

/// [`depth_after`] by simulation: what [`step`] leaves on a stack of `depth` unknown values
/// (without [`super::shortcuts`]).
pub(crate) fn depth_after_by_simulation(
    depth: usize,
    at: usize,
    insn: &Instruction,
    cx: &SimContext<'_, '_>,
    scratch: &mut State,
) -> Result<usize, BciError> {
    scratch.stack.clear();
    scratch.stack.resize(depth, VType::Top);
    scratch.locals.clear();
    step(scratch, at, insn, cx)?;
    Ok(scratch.stack.len())
}
