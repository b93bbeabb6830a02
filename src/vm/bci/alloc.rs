//! The allocation plan (hooks after every array allocation and at the start of
//! `java.lang.Object.<init>`), and the tracker class it calls.

use super::classfile::ClassEditor;
use super::BciError;
use ristretto_classfile::attributes::{Attribute, Instruction, StackFrame};
use ristretto_classfile::{
    ClassAccessFlags, ClassFile, ConstantPool, Field, FieldAccessFlags, FieldType, Method, MethodAccessFlags,
    JAVA_8,
};

/// Where the tracker lives and what it is called.
#[derive(Debug, Clone, Copy)]
pub struct AllocHooks<'a> {
    /// Internal name of the tracker class, e.g. `"JvmpiShimTracker"`.
    pub tracker: &'a str,
}

const HOOK: &str = "(Ljava/lang/Object;)V";

/// Rewrites a class for allocation tracking. Returns `Ok(None)` when the class needs no change.
///
/// * `java/lang/Object`: at the very start of `<init>()V`,
///   `aload_0; invokestatic <tracker>.objectInit(Ljava/lang/Object;)V`.
/// * every method of every class: right after each `newarray` / `anewarray` /
///   `multianewarray`, `dup; invokestatic <tracker>.newArray(Ljava/lang/Object;)V`
///   (`max_stack` grows by one where the allocation happens at the method's deepest stack).
/// * the tracker class itself is never rewritten. A class that cannot be parsed, or whose code
///   would exceed 65535 bytes, is an `Err` saying why (the caller keeps the original).
pub fn instrument_allocations(class_file: &[u8], hooks: &AllocHooks) -> Result<Option<Vec<u8>>, BciError> {
    let mut ce = ClassEditor::parse(class_file)?;
    if ce.class_name() == hooks.tracker {
        return Ok(None);
    }
    let mut refs: Option<(u16, u16)> = None;
    for m in 0..ce.method_count() {
        let Some(mut ed) = ce.method_editor(m)? else { continue };
        plan_allocations(&mut ce, m, &mut ed, hooks, &mut refs)?;
        ce.commit(ed)?;
    }
    if !ce.is_modified() {
        return Ok(None);
    }
    ce.to_bytes().map(Some)
}

/// Adds the allocation plan to one method's editor (see [`instrument_allocations`]); `refs`
/// caches the tracker's constants across the methods of a class.
pub fn plan_allocations(
    ce: &mut ClassEditor<'_>,
    m: usize,
    ed: &mut super::MethodEditor,
    hooks: &AllocHooks,
    refs: &mut Option<(u16, u16)>,
) -> Result<(), BciError> {
    let object_init = ce.class_name() == "java/lang/Object" && {
        let info = ce.method(m)?;
        info.name == "<init>" && info.descriptor == "()V"
    };
    let sites: Vec<usize> = ed
        .instructions()
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, Instruction::Newarray(_) | Instruction::Anewarray(_) | Instruction::Multianewarray(..)))
        .map(|(k, _)| k)
        .collect();
    if sites.is_empty() && !object_init {
        return Ok(());
    }
    let (object_init_ref, new_array_ref) = match *refs {
        Some(r) => r,
        None => {
            let pool = ce.pool();
            let r = (pool.method_ref(hooks.tracker, "objectInit", HOOK)?, pool.method_ref(hooks.tracker, "newArray", HOOK)?);
            *refs = Some(r);
            r
        }
    };
    if object_init {
        ed.insert_before(0, &[Instruction::Aload_0, Instruction::Invokestatic(object_init_ref)])?;
    }
    for k in sites {
        ed.insert_after(k, &[Instruction::Dup, Instruction::Invokestatic(new_array_ref)])?;
    }
    Ok(())
}

/// The tracker class (class file version 52, with StackMapTables):
///
/// ```java
/// public final class <tracker> {
///     public static volatile boolean on;
///     public static void objectInit(Object o) { if (on) onNew(o); }
///     public static void newArray(Object a)   { if (on) onNew(a); }
///     private static native void onNew(Object o);
/// }
/// ```
pub fn tracker_class(tracker: &str) -> Vec<u8> {
    build_tracker(tracker, false).expect("the tracker class is well-formed")
}

/// A tracker for tests, with the same `on`, `objectInit` and `newArray` as [`tracker_class`]
/// but no native method: while `on`, `objectInit` counts in `objects`, `newArray` in `arrays`,
/// and both keep the object in `last`.
///
/// ```java
/// public final class <tracker> {
///     public static volatile boolean on;
///     public static int objects, arrays;
///     public static Object last;
///     public static void objectInit(Object o) { if (on) { objects++; last = o; } }
///     public static void newArray(Object a)   { if (on) { arrays++; last = a; } }
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
    let mut field = |cp: &mut ConstantPool<'static>, name: &str, desc: &str, flags: FieldAccessFlags| -> ristretto_classfile::Result<()> {
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
    let hook_method = |name_index: u16, body: Vec<Instruction>, max_stack: u16| {
        // The frame after `if (on) { … }`: the return, reached by the ifeq and by falling through.
        let target = body.len() - 1;
        Method {
            access_flags: MethodAccessFlags::PUBLIC | MethodAccessFlags::STATIC,
            name_index,
            descriptor_index: hook_desc,
            attributes: vec![Attribute::Code {
                name_index: code_name,
                max_stack,
                max_locals: 1,
                code: body,
                exception_table: Vec::new(),
                attributes: vec![Attribute::StackMapTable {
                    name_index: smt_name,
                    // ristretto's delta of the first frame is the target's instruction index.
                    frames: vec![StackFrame::SameFrame { frame_type: target as u8 }],
                }],
            }],
        }
    };
    let object_init_name = cp.add_utf8("objectInit")?;
    let new_array_name = cp.add_utf8("newArray")?;
    let mut methods = Vec::new();
    if counting {
        field(&mut cp, "objects", "I", public_static)?;
        field(&mut cp, "arrays", "I", public_static)?;
        field(&mut cp, "last", "Ljava/lang/Object;", public_static)?;
        let last = cp.add_field_ref(this_class, "last", "Ljava/lang/Object;")?;
        for (name, counter) in [(object_init_name, "objects"), (new_array_name, "arrays")] {
            let c = cp.add_field_ref(this_class, counter, "I")?;
            let body = vec![
                I::Getstatic(on),
                I::Ifeq(8),
                I::Getstatic(c),
                I::Iconst_1,
                I::Iadd,
                I::Putstatic(c),
                I::Aload_0,
                I::Putstatic(last),
                I::Return,
            ];
            methods.push(hook_method(name, body, 2));
        }
    } else {
        let on_new_name = cp.add_utf8("onNew")?;
        let on_new = cp.add_method_ref(this_class, "onNew", HOOK)?;
        for name in [object_init_name, new_array_name] {
            let body = vec![I::Getstatic(on), I::Ifeq(4), I::Aload_0, I::Invokestatic(on_new), I::Return];
            methods.push(hook_method(name, body, 1));
        }
        methods.push(Method {
            access_flags: MethodAccessFlags::PRIVATE | MethodAccessFlags::STATIC | MethodAccessFlags::NATIVE,
            name_index: on_new_name,
            descriptor_index: hook_desc,
            attributes: Vec::new(),
        });
    }
    let class = ClassFile {
        version: JAVA_8,
        constant_pool: cp,
        access_flags: ClassAccessFlags::PUBLIC | ClassAccessFlags::FINAL | ClassAccessFlags::SUPER,
        this_class,
        super_class,
        fields,
        methods,
        ..ClassFile::default()
    };
    let mut out = Vec::new();
    class.to_bytes(&mut out)?;
    Ok(out)
}
