//! The allocation plan (hooks after every `new` and array allocation, around the JDK's
//! allocations for reflection and method handles, and at the start of
//! `java.lang.Object.<init>`), and the tracker class it calls.

use super::classfile::ClassEditor;
use super::BciError;
use ristretto_classfile::attributes::{Attribute, Instruction, StackFrame, VerificationType};
use ristretto_classfile::{ConstantPool, Field, FieldAccessFlags, FieldType, Method, MethodAccessFlags};

/// Where the tracker lives and what it is called.
#[derive(Debug, Clone, Copy)]
pub struct AllocHooks<'a> {
    /// Internal name of the tracker class, e.g. `"JvmpiShimTracker"`.
    pub tracker: &'a str,
    /// Whether each `new` also leaves the uninitialised object in a local of its own while the
    /// tracker's hook runs ([`NEW_LOCAL`]), where JVMTI `GetLocalObject` can read it (class
    /// files of version 50 and later).
    pub keep_new: bool,
}

/// The name of the local that holds an uninitialised object while its `new`'s hook runs
/// (`keep_new`), as its LocalVariableTable entry gives it.
pub const NEW_LOCAL: &str = "jvmpi_shim$new";

impl AllocHooks<'_> {
    /// Whether `name` is one of the tracker's own classes (the tracker and its shape class),
    /// which are never instrumented.
    pub fn owns(&self, name: &str) -> bool {
        is_tracker_class(self.tracker, name)
    }
}

/// Whether `name` is the tracker `tracker` or its shape class ([`shape_class_name`]). Inline:
/// the shim's class hooks call it for every class, across the crate boundary.
#[inline]
pub fn is_tracker_class(tracker: &str, name: &str) -> bool {
    name.strip_prefix(tracker).is_some_and(|rest| rest.is_empty() || rest == SHAPE_SUFFIX)
}

const SHAPE_SUFFIX: &str = "$Shape";

/// The internal name of the tracker's shape class: `<tracker>$Shape`.
pub fn shape_class_name(tracker: &str) -> String {
    format!("{tracker}{SHAPE_SUFFIX}")
}

/// The size of the tracker's table of shapes (`shapes`, indexed by a class's identity hash
/// masked with `SHAPES - 1`).
pub const SHAPES: usize = 1 << 14;

/// The descriptor of the shape class's constructor: (class, tag, class ID, size, kind, the
/// class's identity hash).
pub const SHAPE_INIT: &str = "(Ljava/lang/Object;JJIII)V";

/// The tracker's natives that take a class's shape from its table, in the order of the hooks
/// that call them (`objectInit`, `newArray`, `newObject`): (name, descriptor).
pub const SHAPED_NATIVES: [(&str, &str); 3] = [
    ("onInitShaped", "(Ljava/lang/Object;Ljava/lang/Class;JJII)V"),
    ("onNewShaped", "(Ljava/lang/Object;Ljava/lang/Class;JJII)V"),
    ("onNewObjectShaped", "(Ljava/lang/Object;JJI)V"),
];

const HOOK: &str = "(Ljava/lang/Object;)V";

/// The tracker's hooks, in the order of [`tracker_class`]'s methods: (hook, native it calls).
/// All take one `Object` and return nothing.
pub const ALLOC_HOOKS: [(&str, &str); 5] = [
    ("objectInit", "onInit"),
    ("newArray", "onNew"),
    ("newObject", "onNewObject"),
    ("made", "onMade"),
    ("reflectNew", "onReflectNew"),
];

/// The descriptors of the tracker's natives, in the order of [`ALLOC_HOOKS`]. `onInit` and
/// `onNew` also get the object's class and that class's identity hash, `onNewObject` its class's
/// identity hash: both are intrinsics in Java, and the shim's per-thread class cache is indexed
/// by the hash (no JNI call to find the class of the object, one to confirm the cache entry).
pub const NATIVE_DESCRIPTORS: [&str; 5] = [
    "(Ljava/lang/Object;Ljava/lang/Class;I)V",
    "(Ljava/lang/Object;Ljava/lang/Class;I)V",
    "(Ljava/lang/Object;I)V",
    HOOK,
    HOOK,
];

/// The first class-file version whose `ldc` may load a `CONSTANT_Class` (Java 5).
const LDC_CLASS: u16 = 49;

/// Rewrites a class for allocation tracking. Returns `Ok(None)` when the class needs no change.
///
/// * `java/lang/Object`: at the very start of `<init>()V`,
///   `aload_0; invokestatic <tracker>.objectInit(Ljava/lang/Object;)V` (the object is bound to
///   the ID its `new` announced, or reported there when no hook saw it being allocated);
/// * after each `new C` (class files of version 49 and later, where `ldc` may load a class),
///   `ldc C; invokestatic <tracker>.newObject(Ljava/lang/Object;)V`: the allocation is reported
///   before any constructor runs (the uninitialised object itself cannot be passed, its class
///   can). With `keep_new` (version 50 and later), `dup; astore L` before and
///   `aconst_null; astore L` after, L a local added to the method (the last one, named
///   [`NEW_LOCAL`] in its LocalVariableTable when it has one): during the hook the object is in
///   L, where the shim reads it when the agent asks for it (`jobjectID2jobject` in the
///   OBJECT_ALLOC handler), and nowhere after (it keeps nothing alive). The verifier lets an
///   uninitialised object sit in a local; every frame of the original code has L as Top;
/// * right after each `newarray` / `anewarray` / `multianewarray`,
///   `dup; invokestatic <tracker>.newArray(Ljava/lang/Object;)V`;
/// * right after each call of `jdk.internal.misc.Unsafe.allocateInstance(Class)` (method
///   handles and reflection on JDK 18+ allocate there before they call the constructor),
///   `dup; invokestatic <tracker>.made(Ljava/lang/Object;)V`;
/// * before each call of a static `newInstance0(Constructor, Object[])` (the JDK's native
///   reflective constructor call), `swap; dup_x1; invokestatic <tracker>.reflectNew(…)`: the
///   object the VM is about to make is reported before its constructor runs.
///
/// `max_stack` grows where a hook sits at the method's deepest stack. The tracker class itself
/// is never rewritten. A class that cannot be parsed, or whose code would exceed 65535 bytes,
/// is an `Err` saying why (the caller keeps the original).
pub fn instrument_allocations(class_file: &[u8], hooks: &AllocHooks) -> Result<Option<Vec<u8>>, BciError> {
    let mut ce = ClassEditor::parse(class_file)?;
    if hooks.owns(ce.class_name()) {
        return Ok(None);
    }
    let mut refs: Option<AllocRefs> = None;
    for m in 0..ce.method_count() {
        if can_skip(&ce, m) {
            continue;
        }
        let Some(mut ed) = ce.method_editor(m)? else { continue };
        plan_allocations(&mut ce, m, &mut ed, hooks, &mut refs)?;
        ce.commit(ed)?;
    }
    if !ce.is_modified() {
        return Ok(None);
    }
    ce.to_bytes().map(Some)
}

/// The tracker's method references in one class's constant pool, added as they are needed.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllocRefs([Option<u16>; ALLOC_HOOKS.len()]);

impl AllocRefs {
    fn get(&mut self, ce: &mut ClassEditor<'_>, hooks: &AllocHooks, which: usize) -> Result<u16, BciError> {
        if let Some(r) = self.0[which] {
            return Ok(r);
        }
        let r = ce.pool().method_ref(hooks.tracker, ALLOC_HOOKS[which].0, HOOK)?;
        self.0[which] = Some(r);
        Ok(r)
    }
}

const OBJECT_INIT: usize = 0;
const NEW_ARRAY: usize = 1;
const NEW_OBJECT: usize = 2;
const MADE: usize = 3;
const REFLECT_NEW: usize = 4;

/// What kind of allocation site an instruction is.
enum Site {
    Array,
    /// `new` of the class constant at this index.
    New(u16),
    AllocateInstance,
    NewInstance0,
}

fn site(ce: &ClassEditor<'_>, i: &Instruction, ldc_class: bool) -> Option<Site> {
    match i {
        Instruction::Newarray(_) | Instruction::Anewarray(_) | Instruction::Multianewarray(..) => Some(Site::Array),
        Instruction::New(c) if ldc_class => Some(Site::New(*c)),
        Instruction::Invokevirtual(r) => {
            let (n, d) = ce.pool_ref().get_member(*r).ok()?;
            if n.as_bytes() != b"allocateInstance" || d.as_bytes() != b"(Ljava/lang/Class;)Ljava/lang/Object;" {
                return None;
            }
            let class = match ce.pool_ref().get(*r)? {
                ristretto_classfile::Constant::MethodRef { class_index, .. } => *class_index,
                _ => return None,
            };
            (ce.pool_ref().get_class_name(class).ok()?.as_bytes() == b"jdk/internal/misc/Unsafe")
                .then_some(Site::AllocateInstance)
        }
        Instruction::Invokestatic(r) => {
            let (n, d) = ce.pool_ref().get_member(*r).ok()?;
            (n.as_bytes() == b"newInstance0"
                && d.as_bytes() == b"(Ljava/lang/reflect/Constructor;[Ljava/lang/Object;)Ljava/lang/Object;")
                .then_some(Site::NewInstance0)
        }
        _ => None,
    }
}

/// Whether the allocation plan can leave method `m` of `ce` undecoded: a walk over its bytes
/// finds no allocation site, and none of what decoding it would refuse (an unknown opcode, a
/// truncated instruction, a branch or switch target that is not an instruction, …), so that
/// decoding it, planning and committing would change nothing and fail nowhere. `false`: decode
/// it (a method without code included: it has no editor anyway).
pub(crate) fn can_skip(ce: &ClassEditor<'_>, m: usize) -> bool {
    let Some(code) = ce.code_bytes(m) else { return false };
    if ce.class_name() == "java/lang/Object" || !super::shortcuts() {
        return false;
    }
    let ldc_class = ce.major_version() >= LDC_CLASS;
    let n = code.len();
    let mut starts = vec![0u64; n / 64 + 1];
    let mut targets: Vec<i64> = Vec::new();
    let i32_at = |p: usize| i64::from(i32::from_be_bytes([code[p], code[p + 1], code[p + 2], code[p + 3]]));
    let mut pos = 0usize;
    while pos < n {
        starts[pos / 64] |= 1 << (pos % 64);
        let op = code[pos];
        let len = match op {
            0..=15 | 26..=53 | 59..=131 | 133..=152 | 172..=177 | 190 | 191 | 194 | 195 | 202 | 254 | 255 => 1,
            16 | 18 | 21..=25 | 54..=58 | 169 => 2,
            17 | 19 | 20 | 132 | 178..=181 | 183 | 192 | 193 => 3,
            187 if !ldc_class => 3,
            // Allocation sites: newarray, anewarray, multianewarray, new (from version 49 on).
            187..=189 | 197 => return false,
            182 | 184 => {
                if pos + 3 > n {
                    return false;
                }
                let r = u16::from_be_bytes([code[pos + 1], code[pos + 2]]);
                let i = if op == 182 { Instruction::Invokevirtual(r) } else { Instruction::Invokestatic(r) };
                if site(ce, &i, ldc_class).is_some() {
                    return false;
                }
                3
            }
            // invokeinterface, invokedynamic: their zero bytes.
            185 => {
                if pos + 5 > n || code[pos + 4] != 0 {
                    return false;
                }
                5
            }
            186 => {
                if pos + 5 > n || code[pos + 3] != 0 || code[pos + 4] != 0 {
                    return false;
                }
                5
            }
            // Short branches: the target must fit a u16 and be an instruction.
            153..=168 | 198 | 199 => {
                if pos + 3 > n {
                    return false;
                }
                let t = pos as i64 + i64::from(i16::from_be_bytes([code[pos + 1], code[pos + 2]]));
                if u16::try_from(t).is_err() {
                    return false;
                }
                targets.push(t);
                3
            }
            200 | 201 => {
                if pos + 5 > n {
                    return false;
                }
                targets.push(pos as i64 + i32_at(pos + 1));
                5
            }
            196 => match code.get(pos + 1) {
                Some(21..=25 | 54..=58 | 169) => 4,
                Some(132) => 6,
                _ => return false,
            },
            170 | 171 => {
                let base = pos + 1 + (4 - (pos + 1) % 4) % 4;
                if base + 12 > n {
                    return false;
                }
                targets.push(pos as i64 + i32_at(base));
                let (count, first, step) = if op == 170 {
                    let (low, high) = (i32_at(base + 4), i32_at(base + 8));
                    ((high - low + 1).max(0), base + 12, 4)
                } else {
                    (i32_at(base + 4).max(0), base + 12, 8)
                };
                let end = first as i64 + count * step;
                if end > n as i64 {
                    return false;
                }
                let off = if op == 170 { 0 } else { 4 };
                for k in 0..count as usize {
                    targets.push(pos as i64 + i32_at(first + k * step as usize + off));
                }
                end as usize - pos
            }
            _ => return false,
        };
        pos += len;
        if pos > n {
            return false;
        }
    }
    targets.iter().all(|&t| (0..n as i64).contains(&t) && starts[t as usize / 64] & (1 << (t as usize % 64)) != 0)
}

/// Adds the allocation plan to one method's editor (see [`instrument_allocations`]); `refs`
/// caches the tracker's constants across the methods of a class.
pub fn plan_allocations(
    ce: &mut ClassEditor<'_>,
    m: usize,
    ed: &mut super::MethodEditor,
    hooks: &AllocHooks,
    refs: &mut Option<AllocRefs>,
) -> Result<(), BciError> {
    let object_init = ce.class_name() == "java/lang/Object" && {
        let info = ce.method(m)?;
        info.name == "<init>" && info.descriptor == "()V"
    };
    let ldc_class = ce.major_version() >= LDC_CLASS;
    let sites: Vec<(usize, Site)> =
        ed.instructions().iter().enumerate().filter_map(|(k, i)| site(ce, i, ldc_class).map(|s| (k, s))).collect();
    if sites.is_empty() && !object_init {
        return Ok(());
    }
    let refs = refs.get_or_insert_with(AllocRefs::default);
    // The local that holds each `new`'s object during its hook (keep_new), made once.
    let mut new_local: Option<Option<u16>> = None;
    if object_init {
        let r = refs.get(ce, hooks, OBJECT_INIT)?;
        ed.insert_before(0, &[Instruction::Aload_0, Instruction::Invokestatic(r)])?;
    }
    for (k, s) in sites {
        match s {
            Site::Array => {
                let r = refs.get(ce, hooks, NEW_ARRAY)?;
                ed.insert_after(k, &[Instruction::Dup, Instruction::Invokestatic(r)])?;
            }
            Site::New(c) => {
                let r = refs.get(ce, hooks, NEW_OBJECT)?;
                let ldc = match u8::try_from(c) {
                    Ok(c) => Instruction::Ldc(c),
                    Err(_) => Instruction::Ldc_w(c),
                };
                let keep = if hooks.keep_new && ce.major_version() >= 50 {
                    match new_local {
                        Some(l) => l,
                        None => {
                            let l = match ce.max_locals(m) {
                                Some(max) => {
                                    let name = ce.pool().utf8(NEW_LOCAL)?;
                                    let descriptor = ce.pool().utf8("Ljava/lang/Object;")?;
                                    ed.add_local(max, name, descriptor)
                                }
                                None => None,
                            };
                            new_local = Some(l);
                            l
                        }
                    }
                } else {
                    None
                };
                match keep {
                    Some(l) => {
                        let store = || match u8::try_from(l) {
                            Ok(b) => Instruction::Astore(b),
                            Err(_) => Instruction::Astore_w(l),
                        };
                        ed.insert_after(
                            k,
                            &[
                                Instruction::Dup,
                                store(),
                                ldc,
                                Instruction::Invokestatic(r),
                                Instruction::Aconst_null,
                                store(),
                            ],
                        )?;
                    }
                    None => ed.insert_after(k, &[ldc, Instruction::Invokestatic(r)])?,
                }
            }
            Site::AllocateInstance => {
                let r = refs.get(ce, hooks, MADE)?;
                ed.insert_after(k, &[Instruction::Dup, Instruction::Invokestatic(r)])?;
            }
            Site::NewInstance0 => {
                let r = refs.get(ce, hooks, REFLECT_NEW)?;
                ed.insert_before(k, &[Instruction::Swap, Instruction::Dup_x1, Instruction::Invokestatic(r)])?;
            }
        }
    }
    Ok(())
}

/// The tracker class (class file version 52, with StackMapTables): for each of
/// [`ALLOC_HOOKS`] a hook calling its native while `on`:
///
/// ```java
/// public final class <tracker> {
///     public static volatile boolean on;
///     private static <tracker>$Shape[] shapes;  // SHAPES entries, set by the shim before `on`
///     public static void objectInit(Object o) {
///         if (on) {
///             Class k = o.getClass(); int h = System.identityHashCode(k);
///             <tracker>$Shape s = shapes[h & (SHAPES - 1)];
///             if (s != null && s.hash == h && s.get() == k) onInitShaped(o, k, s.tag, s.id, s.size, s.kind);
///             else onInit(o, k, h);
///         }
///     }
///     public static void newArray(Object a)   { … the same, onNewShaped or onNew }
///     public static void newObject(Object c)  { … the same with c, the Class: onNewObjectShaped(c, s.tag, s.id, s.size) or onNewObject(c, h) }
///     public static void made(Object o)       { if (on) onMade(o); }
///     public static void reflectNew(Object c) { if (on) onReflectNew(c); } // c: a Constructor
///     private static native void onInit(Object o, Class k, int hash); // … one per hook, and SHAPED_NATIVES
/// }
/// ```
/// A class found in `shapes` costs its event no lookup in the shim (the comparison of the
/// entry's class is a load in compiled Java code, where the shim's own cache needs a JNI call).
pub fn tracker_class(tracker: &str) -> Vec<u8> {
    build_tracker(tracker, false).expect("the tracker class is well-formed")
}

/// A tracker for tests, with the same `on` and hooks as [`tracker_class`] but no native
/// method: while `on`, `objectInit` counts in `objects`, `newArray` in `arrays` (both keep the
/// object in `last`), and the other hooks in `news`.
///
/// ```java
/// public final class <tracker> {
///     public static volatile boolean on;
///     public static int objects, arrays, news;
///     public static Object last;
///     public static void objectInit(Object o) { if (on) { objects++; last = o; } }
///     public static void newArray(Object a)   { if (on) { arrays++; last = a; } }
///     public static void newObject(Object c)  { if (on) news++; } // made, reflectNew alike
/// }
/// ```
pub fn tracker_class_counting(tracker: &str) -> Vec<u8> {
    build_tracker(tracker, true).expect("the tracker class is well-formed")
}

fn build_tracker(tracker: &str, counting: bool) -> ristretto_classfile::Result<Vec<u8>> {
    use Instruction as I;
    let mut cp = ConstantPool::new();
    let this_class = cp.add_class(tracker)?;
    let super_class = cp.add_class("java/lang/Object")?;
    let code_name = cp.add_utf8("Code")?;
    let smt_name = cp.add_utf8("StackMapTable")?;
    let hook_desc = cp.add_utf8(HOOK)?;
    let on = cp.add_field_ref(this_class, "on", "Z")?;
    let mut fields = Vec::new();
    let mut field = |cp: &mut ConstantPool<'static>,
                     name: &str,
                     desc: &str,
                     flags: FieldAccessFlags|
     -> ristretto_classfile::Result<()> {
        fields.push(Field {
            access_flags: flags,
            name_index: cp.add_utf8(name)?,
            descriptor_index: cp.add_utf8(desc)?,
            field_type: FieldType::parse(desc)?,
            attributes: Vec::new(),
        });
        Ok(())
    };
    let public_static = FieldAccessFlags::PUBLIC | FieldAccessFlags::STATIC;
    field(&mut cp, "on", "Z", public_static | FieldAccessFlags::VOLATILE)?;
    // A hook: `frames` are ristretto's (the first frame's delta is its target's instruction
    // index, each later one's the distance from the frame before less one).
    let code_method =
        |name_index: u16, body: Vec<Instruction>, max_stack: u16, max_locals: u16, frames: Vec<StackFrame>| Method {
            access_flags: MethodAccessFlags::PUBLIC | MethodAccessFlags::STATIC,
            name_index,
            descriptor_index: hook_desc,
            attributes: vec![Attribute::Code {
                name_index: code_name,
                max_stack,
                max_locals,
                code: body,
                exception_table: Vec::new(),
                attributes: vec![Attribute::StackMapTable { name_index: smt_name, frames }],
            }],
        };
    // A hook whose one branch is `if (on) { … }`: one frame, at the return, reached by the
    // ifeq and by falling through.
    let hook_method = |name_index: u16, body: Vec<Instruction>, max_stack: u16| {
        let target = body.len() - 1;
        code_method(name_index, body, max_stack, 1, vec![StackFrame::SameFrame { frame_type: target as u8 }])
    };
    let mut methods = Vec::new();
    if counting {
        field(&mut cp, "objects", "I", public_static)?;
        field(&mut cp, "arrays", "I", public_static)?;
        field(&mut cp, "news", "I", public_static)?;
        field(&mut cp, "last", "Ljava/lang/Object;", public_static)?;
        let last = cp.add_field_ref(this_class, "last", "Ljava/lang/Object;")?;
        for (k, (hook, _)) in ALLOC_HOOKS.iter().enumerate() {
            let name = cp.add_utf8(hook)?;
            let counter = match k {
                OBJECT_INIT => "objects",
                NEW_ARRAY => "arrays",
                _ => "news",
            };
            let c = cp.add_field_ref(this_class, counter, "I")?;
            let mut body = vec![I::Getstatic(on), I::Ifeq(0), I::Getstatic(c), I::Iconst_1, I::Iadd, I::Putstatic(c)];
            if k == OBJECT_INIT || k == NEW_ARRAY {
                body.extend([I::Aload_0, I::Putstatic(last)]);
            }
            body.push(I::Return);
            body[1] = I::Ifeq(body.len() as u16 - 1);
            methods.push(hook_method(name, body, 2));
        }
    } else {
        let get_class = cp.add_method_ref(super_class, "getClass", "()Ljava/lang/Class;")?;
        let system = cp.add_class("java/lang/System")?;
        let identity_hash = cp.add_method_ref(system, "identityHashCode", "(Ljava/lang/Object;)I")?;
        let shape_name = shape_class_name(tracker);
        let shape = cp.add_class(&shape_name)?;
        let shapes = cp.add_field_ref(this_class, "shapes", &format!("[L{shape_name};"))?;
        field(&mut cp, "shapes", &format!("[L{shape_name};"), FieldAccessFlags::PRIVATE | FieldAccessFlags::STATIC)?;
        let reference = cp.add_class("java/lang/ref/Reference")?;
        let referent = cp.add_method_ref(reference, "get", "()Ljava/lang/Object;")?;
        let tag = cp.add_field_ref(shape, "tag", "J")?;
        let id = cp.add_field_ref(shape, "id", "J")?;
        let size = cp.add_field_ref(shape, "size", "I")?;
        let kind = cp.add_field_ref(shape, "kind", "I")?;
        let hash = cp.add_field_ref(shape, "hash", "I")?;
        let mask = (SHAPES - 1) as i16;
        let class_type = VerificationType::Object { cpool_index: cp.add_class("java/lang/Class")? };
        let shape_type = VerificationType::Object { cpool_index: shape };
        for (k, (hook, native)) in ALLOC_HOOKS.iter().enumerate() {
            let name = cp.add_utf8(hook)?;
            let target = cp.add_method_ref(this_class, *native, NATIVE_DESCRIPTORS[k])?;
            let method = match k {
                // objectInit, newArray (o: the object):
                //   Class k = o.getClass(); int h = System.identityHashCode(k);
                //   Shape s = shapes[h & (SHAPES - 1)];
                //   if (s != null && s.hash == h && s.get() == k) shaped(o, k, s.tag, s.id, s.size, s.kind);
                //   else native(o, k, h);
                // newObject (c: the class): the same without o, and without s.kind.
                OBJECT_INIT | NEW_ARRAY | NEW_OBJECT => {
                    let shaped = cp.add_method_ref(this_class, SHAPED_NATIVES[k].0, SHAPED_NATIVES[k].1)?;
                    let object = k != NEW_OBJECT;
                    // Locals: the object (if any), the class, its hash, its shape.
                    let (kl, h, sl) = if object { (1, 2, 3) } else { (0, 1, 2) };
                    let mut body = vec![I::Getstatic(on), I::Ifeq(0)];
                    if object {
                        body.extend([I::Aload_0, I::Invokevirtual(get_class), I::Astore(kl)]);
                    }
                    body.extend([
                        I::Aload(kl),
                        I::Invokestatic(identity_hash),
                        I::Istore(h),
                        I::Getstatic(shapes),
                        I::Iload(h),
                        I::Sipush(mask),
                        I::Iand,
                        I::Aaload,
                        I::Astore(sl),
                        I::Aload(sl),
                        I::Ifnull(0),
                        I::Aload(sl),
                        I::Getfield(hash),
                        I::Iload(h),
                        I::If_icmpne(0),
                        I::Aload(sl),
                        I::Invokevirtual(referent),
                        I::Aload(kl),
                        I::If_acmpne(0),
                    ]);
                    let head = if object { vec![I::Aload_0, I::Aload(kl)] } else { vec![I::Aload(kl)] };
                    body.extend(head.iter().cloned());
                    let figures = if object { vec![tag, id, size, kind] } else { vec![tag, id, size] };
                    for f in figures {
                        body.extend([I::Aload(sl), I::Getfield(f)]);
                    }
                    body.extend([I::Invokestatic(shaped), I::Return]);
                    let slow = body.len() as u16;
                    body.extend(head);
                    body.extend([I::Iload(h), I::Invokestatic(target), I::Return, I::Return]);
                    let done = body.len() as u16 - 1;
                    body[1] = I::Ifeq(done);
                    to_slow(&mut body, slow);
                    let mut added = vec![VerificationType::Integer, shape_type.clone()];
                    if object {
                        added.insert(0, class_type.clone());
                    }
                    let n = added.len() as u8;
                    let frames = vec![
                        StackFrame::AppendFrame { frame_type: 251 + n, offset_delta: slow, locals: added },
                        StackFrame::ChopFrame { frame_type: 251 - n, offset_delta: done - slow - 1 },
                    ];
                    // The shaped call's arguments: object, class, two longs, two ints (8 slots).
                    code_method(name, body, if object { 8 } else { 6 }, sl as u16 + 1, frames)
                }
                _ => {
                    let mut body = vec![I::Getstatic(on), I::Ifeq(0), I::Aload_0, I::Invokestatic(target), I::Return];
                    body[1] = I::Ifeq(body.len() as u16 - 1);
                    hook_method(name, body, 1)
                }
            };
            methods.push(method);
        }
        let natives = ALLOC_HOOKS.iter().map(|(_, n)| *n).zip(NATIVE_DESCRIPTORS).chain(SHAPED_NATIVES);
        for (native, descriptor) in natives {
            methods.push(Method {
                access_flags: MethodAccessFlags::PRIVATE | MethodAccessFlags::STATIC | MethodAccessFlags::NATIVE,
                name_index: cp.add_utf8(native)?,
                descriptor_index: cp.add_utf8(descriptor)?,
                attributes: Vec::new(),
            });
        }
    }
    super::classfile::final_class_bytes(cp, this_class, super_class, fields, methods)
}

/// Points the table lookup's three tests (`ifnull`, `if_icmpne`, `if_acmpne`, written with
/// target 0) at `slow`, the call without a shape.
fn to_slow(body: &mut [Instruction], slow: u16) {
    for i in body.iter_mut() {
        match i {
            Instruction::Ifnull(0) => *i = Instruction::Ifnull(slow),
            Instruction::If_icmpne(0) => *i = Instruction::If_icmpne(slow),
            Instruction::If_acmpne(0) => *i = Instruction::If_acmpne(slow),
            _ => {}
        }
    }
}

/// The tracker's shape class, `<tracker>$Shape` (class file version 52): what the allocation
/// events of one class need, kept in the tracker's table `shapes` at the class's identity hash,
/// the class itself held weakly (its entry does not keep it loaded).
///
/// ```java
/// public final class <tracker>$Shape extends java.lang.ref.WeakReference {
///     final long tag, id;  // the class's tag; the event's class_id
///     final int size, kind; // instance size (0: each array's own); is_array | nested << 16
///     final int hash;       // the class's identity hash
///     <tracker>$Shape(Object k, long tag, long id, int size, int kind, int hash) { super(k); … }
/// }
/// ```
/// The hooks compare `hash` before they call `get()`: `Reference.get` keeps its referent alive
/// while the collector marks, and a class that only shares the slot must not be kept loaded.
pub fn shape_class(tracker: &str) -> Vec<u8> {
    build_shape(tracker).expect("the shape class is well-formed")
}

fn build_shape(tracker: &str) -> ristretto_classfile::Result<Vec<u8>> {
    use Instruction as I;
    let mut cp = ConstantPool::new();
    let this_class = cp.add_class(shape_class_name(tracker))?;
    let super_class = cp.add_class("java/lang/ref/WeakReference")?;
    let code_name = cp.add_utf8("Code")?;
    let super_init = cp.add_method_ref(super_class, "<init>", "(Ljava/lang/Object;)V")?;
    let mut fields = Vec::new();
    let mut body = vec![I::Aload_0, I::Aload_1, I::Invokespecial(super_init)];
    // (name, descriptor, the constructor's load of its argument)
    let values = [
        ("tag", "J", I::Lload_2),
        ("id", "J", I::Lload(4)),
        ("size", "I", I::Iload(6)),
        ("kind", "I", I::Iload(7)),
        ("hash", "I", I::Iload(8)),
    ];
    for (name, desc, load) in values {
        // Package-private (the tracker shares the boot loader's unnamed package): no other code
        // reads or makes shapes.
        fields.push(Field {
            access_flags: FieldAccessFlags::FINAL,
            name_index: cp.add_utf8(name)?,
            descriptor_index: cp.add_utf8(desc)?,
            field_type: FieldType::parse(desc)?,
            attributes: Vec::new(),
        });
        let f = cp.add_field_ref(this_class, name, desc)?;
        body.extend([I::Aload_0, load, I::Putfield(f)]);
    }
    body.push(I::Return);
    let init = Method {
        access_flags: MethodAccessFlags::empty(),
        name_index: cp.add_utf8("<init>")?,
        descriptor_index: cp.add_utf8(SHAPE_INIT)?,
        attributes: vec![Attribute::Code {
            name_index: code_name,
            max_stack: 3,
            max_locals: 9,
            code: body,
            exception_table: Vec::new(),
            attributes: Vec::new(),
        }],
    };
    super::classfile::final_class_bytes(cp, this_class, super_class, fields, vec![init])
}
