//! The class-file level of the editor: a walk over the raw bytes that finds every method's
//! `Code` attribute, the constant pool (parsed by `ristretto_classfile`, extended append-only),
//! and the writer that splices new `Code` attributes and new constants into the original bytes.
//!
//! Everything the editor does not change is copied byte for byte: fields, annotations,
//! `BootstrapMethods`, unknown attributes, and every method that was not committed.

use super::code::{self, MethodEditor, RawAttr, RawCode};
use super::pool::Pool;
use super::BciError;
use ristretto_classfile::byte_reader::ByteReader;
use ristretto_classfile::ConstantPool;
use std::collections::HashMap;
use std::ops::Range;

const MAGIC: u32 = 0xCAFE_BABE;

/// ACC_STATIC of a method.
pub const ACC_STATIC: u16 = 0x0008;

#[derive(Clone, Debug)]
pub(crate) struct RawMethod {
    /// Byte range of the whole `method_info` in the class file.
    pub span: Range<usize>,
    pub access: u16,
    pub name_index: u16,
    pub descriptor_index: u16,
    pub code: Option<RawCode>,
}

/// Name, descriptor and access flags of a method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodInfo {
    /// The method's name.
    pub name: String,
    /// Its descriptor, `(I)V`.
    pub descriptor: String,
    /// Its access flags (`ACC_*`).
    pub access: u16,
    /// Whether it has a `Code` attribute (not abstract or native).
    pub has_code: bool,
}

fn rd<T>(r: ristretto_classfile::Result<T>, what: &str) -> Result<T, BciError> {
    r.map_err(|e| BciError::Malformed(format!("{what}: {e}")))
}

fn read_attrs(r: &mut ByteReader<'_>, what: &str) -> Result<Vec<(u16, Range<usize>)>, BciError> {
    let n = rd(r.read_u16(), what)?;
    let mut v = Vec::with_capacity(usize::from(n));
    for _ in 0..n {
        let name = rd(r.read_u16(), what)?;
        let len = rd(r.read_u32(), what)? as usize;
        let start = r.position();
        rd(r.skip(len), what)?;
        v.push((name, start..start + len));
    }
    Ok(v)
}

/// A class file opened for editing. Methods are edited through [`MethodEditor`]s taken with
/// [`ClassEditor::method_editor`] and given back with [`ClassEditor::commit`]; constants are
/// added through [`ClassEditor::pool`]; [`ClassEditor::to_bytes`] writes the result.
pub struct ClassEditor<'a> {
    raw: &'a [u8],
    pool: Pool<'a>,
    cp_range: Range<usize>,
    major: u16,
    this_class: u16,
    class_name: String,
    methods: Vec<RawMethod>,
    /// Position of `methods_count` in the class file.
    methods_count_at: usize,
    /// New `Code` attribute (header included) per committed method.
    replaced: Vec<Option<Vec<u8>>>,
}

impl<'a> ClassEditor<'a> {
    /// Reads the class file structure (constant pool, every member and attribute boundary, and
    /// every `Code` attribute's layout). Bytecode is decoded only when a method is edited.
    pub fn parse(raw: &'a [u8]) -> Result<Self, BciError> {
        let mut r = ByteReader::new(raw);
        let magic = rd(r.read_u32(), "header")?;
        if magic != MAGIC {
            return Err(BciError::Malformed(format!("bad magic 0x{magic:08x}")));
        }
        let _minor = rd(r.read_u16(), "header")?;
        let major = rd(r.read_u16(), "header")?;
        if major < 45 {
            return Err(BciError::Malformed(format!("class file version {major} is too old")));
        }
        let cp_start = r.position();
        let cp = rd(ConstantPool::from_bytes(&mut r), "constant pool")?;
        let cp_range = cp_start + 2..r.position();
        let pool = Pool::new(cp);
        let _access = rd(r.read_u16(), "class header")?;
        let this_class = rd(r.read_u16(), "class header")?;
        let _super = rd(r.read_u16(), "class header")?;
        let ni = rd(r.read_u16(), "interfaces")?;
        rd(r.skip(usize::from(ni) * 2), "interfaces")?;
        let nf = rd(r.read_u16(), "fields")?;
        for _ in 0..nf {
            rd(r.skip(6), "fields")?;
            read_attrs(&mut r, "field attributes")?;
        }
        let code_name = |pool: &Pool<'_>, i: u16| pool.get_utf8(i).map(|s| s.as_bytes() == b"Code").unwrap_or(false);
        let methods_count_at = r.position();
        let nm = rd(r.read_u16(), "methods")?;
        let mut methods = Vec::with_capacity(usize::from(nm));
        for _ in 0..nm {
            let start = r.position();
            let access = rd(r.read_u16(), "method")?;
            let name_index = rd(r.read_u16(), "method")?;
            let descriptor_index = rd(r.read_u16(), "method")?;
            let attrs = read_attrs(&mut r, "method attributes")?;
            let mut code = None;
            for (name, info) in attrs {
                if !code_name(&pool, name) {
                    continue;
                }
                if code.is_some() {
                    return Err(BciError::Malformed("a method with two Code attributes".into()));
                }
                code = Some(parse_code(raw, name, info)?);
            }
            methods.push(RawMethod { span: start..r.position(), access, name_index, descriptor_index, code });
        }
        read_attrs(&mut r, "class attributes")?;
        if r.position() != raw.len() {
            return Err(BciError::Malformed(format!("{} bytes after the end of the class", raw.len() - r.position())));
        }
        let class_name = pool.get_class_name(this_class)?.to_str_lossy().into_owned();
        let n = methods.len();
        Ok(ClassEditor {
            raw,
            pool,
            cp_range,
            major,
            this_class,
            class_name,
            methods,
            methods_count_at,
            replaced: vec![None; n],
        })
    }

    /// Internal name of the class (`java/lang/Object`).
    pub fn class_name(&self) -> &str {
        &self.class_name
    }

    /// Major class-file version (52 = Java 8, 61 = Java 17).
    pub fn major_version(&self) -> u16 {
        self.major
    }

    /// The constant-pool index of this class.
    pub fn this_class_index(&self) -> u16 {
        self.this_class
    }

    /// The number of methods.
    pub fn method_count(&self) -> usize {
        self.methods.len()
    }

    /// Name, descriptor and flags of method `index`.
    pub fn method(&self, index: usize) -> Result<MethodInfo, BciError> {
        let m = &self.methods[index];
        Ok(MethodInfo {
            name: self.pool.get_utf8(m.name_index)?.to_str_lossy().into_owned(),
            descriptor: self.pool.get_utf8(m.descriptor_index)?.to_str_lossy().into_owned(),
            access: m.access,
            has_code: m.code.is_some(),
        })
    }

    /// The constant pool, to add the constants inserted instructions refer to.
    pub fn pool(&mut self) -> &mut Pool<'a> {
        &mut self.pool
    }

    /// The constant pool, to read.
    pub fn pool_ref(&self) -> &Pool<'a> {
        &self.pool
    }

    /// The bytecode of method `index`, undecoded; `None` for a method without code.
    pub(crate) fn code_bytes(&self, index: usize) -> Option<&'a [u8]> {
        let code = self.methods[index].code.as_ref()?;
        Some(&self.raw[code.code.clone()])
    }

    /// Decodes the bytecode of method `index` for editing; `None` for a method without code.
    pub fn method_editor(&self, index: usize) -> Result<Option<MethodEditor>, BciError> {
        let Some(code) = &self.methods[index].code else { return Ok(None) };
        MethodEditor::decode(index, &self.raw[code.code.clone()]).map(Some).map_err(|e| self.context(index, e))
    }

    /// The `max_locals` of method `index`'s code (None for a method without code).
    pub fn max_locals(&self, index: usize) -> Option<u16> {
        self.methods[index].code.as_ref().map(|c| c.max_locals)
    }

    /// Applies the edits of `editor` and replaces the method's `Code` attribute.
    /// Nothing changes when the editor has no edits.
    pub fn commit(&mut self, editor: MethodEditor) -> Result<(), BciError> {
        if !editor.has_edits() {
            return Ok(());
        }
        let index = editor.method_index();
        let attr = self.encode_method(editor).map_err(|e| self.context(index, e))?;
        self.replaced[index] = Some(attr);
        Ok(())
    }

    /// What the code rewriter needs to know about the method that holds the code.
    fn method_context(&self, m: &RawMethod) -> Result<code::MethodContext, BciError> {
        Ok(code::MethodContext {
            class_name: self.pool.get_class_name(self.this_class)?.as_bytes().to_vec(),
            name: self.pool.get_utf8(m.name_index)?.as_bytes().to_vec(),
            descriptor: self.pool.get_utf8(m.descriptor_index)?.as_bytes().to_vec(),
            is_static: m.access & ACC_STATIC != 0,
            major: self.major,
        })
    }

    fn encode_method(&mut self, editor: MethodEditor) -> Result<Vec<u8>, BciError> {
        let index = editor.method_index();
        let m = self.methods[index].clone();
        let raw_code = m.code.as_ref().expect("an editor exists only for a method with code");
        let ctx = self.method_context(&m)?;
        code::rewrite(self.raw, raw_code, editor, &ctx, &mut self.pool)
    }

    /// Everything decoded about method `index`'s code (tests only).
    #[cfg(test)]
    pub(crate) fn full_code(&self, index: usize) -> Result<code::FullCode, BciError> {
        let m = &self.methods[index];
        let rc = m.code.as_ref().ok_or_else(|| BciError::InvalidEdit("no code".into()))?;
        let ed = MethodEditor::decode(index, &self.raw[rc.code.clone()])?;
        let ctx = self.method_context(m)?;
        code::decode_full(self.raw, rc, &ed, &ctx, &self.pool)
    }

    /// Index of the method with this name and descriptor.
    pub fn find_method(&self, name: &str, descriptor: &str) -> Option<usize> {
        (0..self.methods.len()).find(|&i| self.method(i).is_ok_and(|m| m.name == name && m.descriptor == descriptor))
    }

    fn context(&self, index: usize, e: BciError) -> BciError {
        let who = match self.method(index) {
            Ok(m) => format!("{}.{}{}", self.class_name, m.name, m.descriptor),
            Err(_) => format!("{} method #{index}", self.class_name),
        };
        e.within(&who)
    }

    /// True once a method was committed with edits.
    pub fn is_modified(&self) -> bool {
        self.replaced.iter().any(Option::is_some)
    }

    /// The class file: the original bytes with the new constants appended to the pool and the
    /// committed methods' `Code` attributes replaced.
    pub fn to_bytes(&self) -> Result<Vec<u8>, BciError> {
        let extra: usize = self.replaced.iter().flatten().map(Vec::len).sum();
        let mut out = Vec::with_capacity(self.raw.len() + extra + 256);
        out.extend_from_slice(&self.raw[..self.cp_range.start - 2]);
        self.pool.write_count_and_new(&mut out, &self.raw[self.cp_range.clone()])?;
        let mut pos = self.cp_range.end;
        for (m, new) in self.methods.iter().zip(&self.replaced) {
            if let (Some(code), Some(new)) = (&m.code, new) {
                out.extend_from_slice(&self.raw[pos..code.span.start]);
                out.extend_from_slice(new);
                pos = code.span.end;
            }
        }
        out.extend_from_slice(&self.raw[pos..]);
        Ok(out)
    }
}

const ACC_PUBLIC: u16 = 0x0001;
const ACC_PRIVATE: u16 = 0x0002;
const ACC_PROTECTED: u16 = 0x0004;
const ACC_FINAL: u16 = 0x0010;
const ACC_SYNCHRONIZED: u16 = 0x0020;
const ACC_BRIDGE: u16 = 0x0040;
const ACC_VARARGS: u16 = 0x0080;
pub const ACC_NATIVE: u16 = 0x0100;
pub const ACC_ABSTRACT: u16 = 0x0400;
const ACC_SYNTHETIC: u16 = 0x1000;

/// The local-variable slots of a method's arguments (`this` included when not static) and of
/// its return value, from its descriptor; with each argument's kind (`I`, `J`, `F`, `D`, `A`).
fn descriptor_slots(descriptor: &str, is_static: bool) -> Result<(Vec<u8>, u16, u16), BciError> {
    let bad = || BciError::Malformed(format!("method descriptor {descriptor}"));
    let b = descriptor.as_bytes();
    if b.first() != Some(&b'(') {
        return Err(bad());
    }
    let mut kinds = Vec::new();
    if !is_static {
        kinds.push(b'A');
    }
    let mut i = 1;
    let one = |i: &mut usize| -> Result<u8, BciError> {
        let mut array = false;
        while b.get(*i) == Some(&b'[') {
            array = true;
            *i += 1;
        }
        let c = *b.get(*i).ok_or_else(bad)?;
        *i += 1;
        if c == b'L' {
            while b.get(*i).ok_or_else(bad)? != &b';' {
                *i += 1;
            }
            *i += 1;
        }
        Ok(match (array, c) {
            (true, _) | (_, b'L') => b'A',
            (_, b'B' | b'C' | b'I' | b'S' | b'Z') => b'I',
            (_, b'J' | b'F' | b'D' | b'V') => c,
            _ => return Err(bad()),
        })
    };
    while b.get(i) != Some(&b')') {
        kinds.push(one(&mut i)?);
    }
    i += 1;
    let ret = one(&mut i)?;
    let size = |k: u8| {
        if matches!(k, b'J' | b'D') {
            2
        } else if k == b'V' {
            0
        } else {
            1
        }
    };
    let args: u16 = kinds.iter().map(|&k| size(k)).sum();
    Ok((kinds, args, size(ret).max(args).max(1)))
}

impl ClassEditor<'_> {
    /// Native method wrapping (JVMTI native method prefixes): each native method `i` of
    /// `natives` becomes a Java method of the same name, descriptor, access (less `native`)
    /// and attributes, whose code passes its arguments on to a new method `<prefix><name>`: the
    /// native itself, private (and never synchronized: the wrapper holds the monitor), that
    /// the JVM binds to the implementation of `<name>` once the prefix is set. The wrapper's
    /// code is plain (load every argument, call, return), for the method plan to hook like any
    /// other; it has no line table. The result is a new class file, to be parsed again; no
    /// other edit may have been made to this editor.
    pub fn wrap_natives(&mut self, natives: &[usize], prefix: &str) -> Result<Vec<u8>, BciError> {
        if self.is_modified() {
            return Err(BciError::InvalidEdit("wrap_natives on an edited class".into()));
        }
        let code_name = self.pool.utf8("Code")?;
        let class_name = self.class_name.clone();
        // method index → (new access, new Code attribute); and the new natives' method_info.
        let mut wrappers: HashMap<usize, (u16, Vec<u8>)> = HashMap::new();
        let mut added = Vec::new();
        for &i in natives {
            let info = self.method(i)?;
            if info.access & ACC_NATIVE == 0 || info.access & ACC_ABSTRACT != 0 {
                return Err(BciError::InvalidEdit(format!(
                    "{}.{}{} is not a native method",
                    class_name, info.name, info.descriptor
                )));
            }
            let is_static = info.access & ACC_STATIC != 0;
            let (kinds, arg_slots, max_stack) = descriptor_slots(&info.descriptor, is_static)?;
            let renamed = format!("{prefix}{}", info.name);
            let name_index = self.pool.utf8(&renamed)?;
            let target = self.pool.method_ref(&class_name, &renamed, &info.descriptor)?;
            let mut code = Vec::new();
            let mut slot: u16 = 0;
            for &k in &kinds {
                let (short, long) = match k {
                    b'I' => (0x1a, 0x15),
                    b'J' => (0x1e, 0x16),
                    b'F' => (0x22, 0x17),
                    b'D' => (0x26, 0x18),
                    _ => (0x2a, 0x19),
                };
                match slot {
                    0..=3 => code.push(short + slot as u8),
                    4..=255 => code.extend_from_slice(&[long, slot as u8]),
                    _ => {
                        code.extend_from_slice(&[0xc4, long]);
                        code.extend_from_slice(&slot.to_be_bytes());
                    }
                }
                slot += if matches!(k, b'J' | b'D') { 2 } else { 1 };
            }
            code.push(if is_static { 0xb8 } else { 0xb7 });
            code.extend_from_slice(&target.to_be_bytes());
            let ret = info.descriptor.rsplit(')').next().unwrap_or("V").as_bytes().first().copied().unwrap_or(b'V');
            code.push(match ret {
                b'V' => 0xb1,
                b'J' => 0xad,
                b'F' => 0xae,
                b'D' => 0xaf,
                b'L' | b'[' => 0xb0,
                _ => 0xac,
            });
            let mut attr = Vec::with_capacity(code.len() + 18);
            attr.extend_from_slice(&code_name.to_be_bytes());
            attr.extend_from_slice(&(12 + code.len() as u32).to_be_bytes());
            attr.extend_from_slice(&max_stack.to_be_bytes());
            attr.extend_from_slice(&arg_slots.to_be_bytes());
            attr.extend_from_slice(&(code.len() as u32).to_be_bytes());
            attr.extend_from_slice(&code);
            attr.extend_from_slice(&[0, 0, 0, 0]);
            wrappers.insert(i, (info.access & !ACC_NATIVE, attr));
            let access = (info.access & !(ACC_PUBLIC | ACC_PROTECTED | ACC_SYNCHRONIZED | ACC_BRIDGE | ACC_VARARGS))
                | ACC_PRIVATE
                | ACC_SYNTHETIC
                | if is_static { 0 } else { ACC_FINAL };
            let descriptor_index = self.methods[i].descriptor_index;
            let mut m = Vec::with_capacity(8);
            for v in [access, name_index, descriptor_index, 0] {
                m.extend_from_slice(&v.to_be_bytes());
            }
            added.push(m);
        }
        let count = u16::try_from(self.methods.len() + added.len())
            .map_err(|_| BciError::Unsupported("more than 65535 methods".into()))?;
        let mut out = Vec::with_capacity(self.raw.len() + 64 * added.len() + 256);
        out.extend_from_slice(&self.raw[..self.cp_range.start - 2]);
        self.pool.write_count_and_new(&mut out, &self.raw[self.cp_range.clone()])?;
        out.extend_from_slice(&self.raw[self.cp_range.end..self.methods_count_at]);
        out.extend_from_slice(&count.to_be_bytes());
        let mut end = self.methods_count_at + 2;
        for (i, m) in self.methods.iter().enumerate() {
            match wrappers.get(&i) {
                Some((access, attr)) => {
                    let head = m.span.start;
                    let n = u16::from_be_bytes([self.raw[head + 6], self.raw[head + 7]]);
                    out.extend_from_slice(&access.to_be_bytes());
                    out.extend_from_slice(&self.raw[head + 2..head + 6]);
                    let n = n
                        .checked_add(1)
                        .ok_or_else(|| BciError::Unsupported("a method with 65535 attributes".into()))?;
                    out.extend_from_slice(&n.to_be_bytes());
                    out.extend_from_slice(&self.raw[head + 8..m.span.end]);
                    out.extend_from_slice(attr);
                }
                None => out.extend_from_slice(&self.raw[m.span.clone()]),
            }
            end = m.span.end;
        }
        for m in &added {
            out.extend_from_slice(m);
        }
        out.extend_from_slice(&self.raw[end..]);
        Ok(out)
    }
}

fn parse_code(raw: &[u8], name_index: u16, info: Range<usize>) -> Result<RawCode, BciError> {
    let what = "Code attribute";
    let mut r = ByteReader::new(&raw[..info.end]);
    r.set_position(info.start);
    let max_stack = rd(r.read_u16(), what)?;
    let max_locals = rd(r.read_u16(), what)?;
    let len = rd(r.read_u32(), what)? as usize;
    if len == 0 || len > 65535 {
        return Err(BciError::Malformed(format!("code length {len}")));
    }
    let code = r.position()..r.position() + len;
    rd(r.skip(len), what)?;
    let ne = rd(r.read_u16(), what)?;
    let mut exceptions = Vec::with_capacity(usize::from(ne));
    for _ in 0..ne {
        exceptions.push([
            rd(r.read_u16(), what)?,
            rd(r.read_u16(), what)?,
            rd(r.read_u16(), what)?,
            rd(r.read_u16(), what)?,
        ]);
    }
    let attributes =
        read_attrs(&mut r, what)?.into_iter().map(|(name_index, info)| RawAttr { name_index, info }).collect();
    if r.position() != info.end {
        return Err(BciError::Malformed("Code attribute length does not match its contents".into()));
    }
    Ok(RawCode { span: info.start - 6..info.end, name_index, max_stack, max_locals, code, exceptions, attributes })
}

/// A `public final` class file of version 52 (the shim's generated classes).
pub(super) fn final_class_bytes(
    constant_pool: ristretto_classfile::ConstantPool<'static>,
    this_class: u16,
    super_class: u16,
    fields: Vec<ristretto_classfile::Field>,
    methods: Vec<ristretto_classfile::Method>,
) -> ristretto_classfile::Result<Vec<u8>> {
    let class = ristretto_classfile::ClassFile {
        version: ristretto_classfile::JAVA_8,
        constant_pool,
        access_flags: {
            use ristretto_classfile::ClassAccessFlags as F;
            F::PUBLIC | F::FINAL | F::SUPER
        },
        this_class,
        super_class,
        fields,
        methods,
        ..ristretto_classfile::ClassFile::default()
    };
    let mut out = Vec::new();
    class.to_bytes(&mut out)?;
    Ok(out)
}
