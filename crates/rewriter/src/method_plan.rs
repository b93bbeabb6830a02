//! The method plan: METHOD_ENTRY / METHOD_EXIT hooks (entry, every return, and a catch-all
//! handler for the exceptional exit) and INSTRUCTION_START hooks (before every instruction, with
//! the outcome of conditional branches and switches), and the tracker class they call.
//!
//! Every hooked method gets a number (`index`, an `int` constant in its code) chosen by the
//! caller; the tracker's natives receive it and the shim maps it to the method's `jmethodID`.
//! Instruction hooks pass the instruction's offset in the ORIGINAL code (the class file the
//! agent saw), not in the rewritten one.

use super::classfile::{ClassEditor, ACC_ABSTRACT, ACC_NATIVE, ACC_STATIC};
use super::code::MethodEditor;
use super::pool::Pool;
use super::BciError;
use ristretto_classfile::attributes::Instruction;
use ristretto_classfile::{ConstantPool, Method, MethodAccessFlags};

type I = Instruction;

/// What to hook, and where the tracker lives.
#[derive(Debug, Clone, Copy)]
pub struct MethodHooks<'a> {
    /// Internal name of the tracker class, e.g. `"JvmpiShimMethods"`.
    pub tracker: &'a str,
    /// Another class never to hook (the allocation tracker; its shape class is not hooked either).
    pub also_skip: &'a str,
    /// The entry hook.
    pub entry: bool,
    /// The entry hook of instance methods passes `this` (`enterThis`; METHOD_ENTRY2 is on),
    /// else `enter` as for static methods.
    pub receiver: bool,
    /// Before every return, and the catch-all for the exceptional exit.
    pub exit: bool,
    /// Every instruction.
    pub instructions: bool,
}

/// The tracker's methods: (name, descriptor). All `public static native`. `initThrow` is the
/// exit hook of a constructor's catch-all handler: the shim also ends there the callers that
/// are constructors stopped at their `super(…)`/`this(…)` call, which no handler can cover.
/// The last one,
/// `transit`, is no hook of the plan: the JDK's virtual-thread code calls it where a mount or
/// unmount transition begins and ends ([`is_transition_code`]).
pub const TRACKER_METHODS: [(&str, &str); 12] = [
    ("enter", "(I)V"),
    ("enterThis", "(Ljava/lang/Object;I)V"),
    ("exit", "(I)V"),
    ("initThrow", "(I)V"),
    ("insn", "(II)V"),
    ("ifInt", "(IIII)V"),
    ("ifCmp", "(IIIII)V"),
    ("ifRef", "(Ljava/lang/Object;III)V"),
    ("ifAcmp", "(Ljava/lang/Object;Ljava/lang/Object;III)V"),
    ("tableSwitch", "(IIIII)V"),
    ("lookupSwitch", "(III)V"),
    ("transit", "(Z)V"),
];

/// The JDK's virtual-thread machinery (JDK 19+): the classes whose code mounts and unmounts
/// virtual threads (`java.lang.VirtualThread` and its nested classes, `jdk.internal.vm.Continuation`
/// and its nested classes, `jdk.internal.vm.StackChunk`). Their methods get no method hooks:
/// part of their code runs inside a JVMTI "VTMS transition", where a JVMTI call that waits for
/// transitions (GetFrameLocation, GetStackTrace, SuspendThread, … on JDK 21) never returns, and
/// where an agent's handler may make one; and an agent never sees this machinery as method
/// events (a frame entered outside a transition and left inside one would leave its stack
/// unbalanced).
pub fn is_vt_machinery(class: &str) -> bool {
    is_transition_code(class)
        || matches!(class, "jdk/internal/vm/Continuation" | "jdk/internal/vm/StackChunk")
        || class.starts_with("jdk/internal/vm/Continuation$")
}

/// The classes that begin and end the transitions: `java.lang.VirtualThread` and its nested
/// classes (JDK 21 begins and ends them in `VirtualThread`'s `mount`, `unmount`,
/// `yieldContinuation` and `run`; JDK 25 also in `VirtualThread$VThreadContinuation$1.run`),
/// by calling its natives `notifyJvmtiMount(Z)`, `notifyJvmtiUnmount(Z)` (true: begins, false:
/// ends), `notifyJvmtiStart()` (ends the first mount) and `notifyJvmtiEnd()` (begins the last
/// unmount). The method plan puts a call of the tracker's `transit(Z)` right before each of
/// them (`transition_marks`): from the first to the second the thread sends no event.
pub fn is_transition_code(class: &str) -> bool {
    class == "java/lang/VirtualThread" || class.starts_with("java/lang/VirtualThread$")
}

/// Puts `transit(true)` before every call that begins a transition and `transit(false)` before
/// every call that ends one (see [`is_transition_code`]). No Java code runs between the mark and
/// the call, so the mark's state is the transition's as far as any hook can tell.
fn transition_marks(ce: &mut ClassEditor<'_>, ed: &mut MethodEditor, tracker: &str) -> Result<(), BciError> {
    let insns = ed.instructions().to_vec();
    let mut transit = None;
    for (k, i) in insns.iter().enumerate() {
        let (I::Invokevirtual(ix) | I::Invokespecial(ix)) = i else { continue };
        let Ok((name, desc)) = ce.pool_ref().get_member(*ix) else { continue };
        let push = match (name.as_bytes(), desc.as_bytes()) {
            (b"notifyJvmtiMount" | b"notifyJvmtiUnmount", b"(Z)V") => I::Dup,
            (b"notifyJvmtiStart", b"()V") => I::Iconst_0,
            (b"notifyJvmtiEnd", b"()V") => I::Iconst_1,
            _ => continue,
        };
        let r = match transit {
            Some(r) => r,
            None => *transit.insert(ce.pool().method_ref(tracker, "transit", "(Z)V")?),
        };
        ed.insert_before(k, &[push, I::Invokestatic(r)])?;
    }
    Ok(())
}

/// A lookupswitch the plan met: its original offset and its keys in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The lookupswitch's offset in the original code.
    pub offset: u32,
    /// Its keys, in order.
    pub keys: Vec<i32>,
}

/// The instruction pushing `v`.
pub fn push_int(pool: &mut Pool<'_>, v: i32) -> Result<Instruction, BciError> {
    Ok(match v {
        -1 => I::Iconst_m1,
        0 => I::Iconst_0,
        1 => I::Iconst_1,
        2 => I::Iconst_2,
        3 => I::Iconst_3,
        4 => I::Iconst_4,
        5 => I::Iconst_5,
        _ if i8::try_from(v).is_ok() => I::Bipush(v as i8),
        _ if i16::try_from(v).is_ok() => I::Sipush(v as i16),
        _ => {
            let c = pool.integer(v)?;
            match u8::try_from(c) {
                Ok(c) => I::Ldc(c),
                Err(_) => I::Ldc_w(c),
            }
        }
    })
}

fn is_return(i: &Instruction) -> bool {
    matches!(i, I::Ireturn | I::Lreturn | I::Freturn | I::Dreturn | I::Areturn | I::Return)
}

/// The JVM opcode of a conditional branch (the tracker computes the outcome from it).
fn opcode(i: &Instruction) -> Option<i32> {
    Some(match i {
        I::Ifeq(_) => 0x99,
        I::Ifne(_) => 0x9a,
        I::Iflt(_) => 0x9b,
        I::Ifge(_) => 0x9c,
        I::Ifgt(_) => 0x9d,
        I::Ifle(_) => 0x9e,
        I::If_icmpeq(_) => 0x9f,
        I::If_icmpne(_) => 0xa0,
        I::If_icmplt(_) => 0xa1,
        I::If_icmpge(_) => 0xa2,
        I::If_icmpgt(_) => 0xa3,
        I::If_icmple(_) => 0xa4,
        I::If_acmpeq(_) => 0xa5,
        I::If_acmpne(_) => 0xa6,
        I::Ifnull(_) => 0xc6,
        I::Ifnonnull(_) => 0xc7,
        _ => return None,
    })
}

/// Whether the branch `opcode` is taken for the operands (as HotSpot 1.5 computed `is_true`:
/// `a` is the deeper operand of two; references compare by identity, NULL as 0). Inline: the
/// shim calls it from its INSTRUCTION_START natives, across the crate boundary.
#[inline]
pub fn branch_taken(opcode: i32, a: i32, b: i32) -> bool {
    match opcode {
        0x99 | 0xc6 => b == 0,
        0x9a | 0xc7 => b != 0,
        0x9b => b < 0,
        0x9c => b >= 0,
        0x9d => b > 0,
        0x9e => b <= 0,
        0x9f | 0xa5 => a == b,
        0xa0 | 0xa6 => a != b,
        0xa1 => a < b,
        0xa2 => a >= b,
        0xa3 => a > b,
        0xa4 => a <= b,
        _ => false,
    }
}

/// Adds the method plan to one method's editor. `method` is the method's index in the class,
/// `index` its number for the tracker (a lookupswitch's keys, which the shim needs to tell
/// which pair was chosen, are listed beforehand by [`plan_probe`]). Methods without code
/// (abstract, native) are not edited here.
pub fn plan_method(
    ce: &mut ClassEditor<'_>,
    method: usize,
    ed: &mut MethodEditor,
    hooks: &MethodHooks<'_>,
    index: i32,
) -> Result<(), BciError> {
    let info = ce.method(method)?;
    plan_method_with(ce, &info, ed, hooks, index, &mut [None; TRACKER_METHODS.len()])
}

/// [`plan_method`] for the method described by `info`, with the tracker's method references
/// already in the class's pool (`refs`, by [`TRACKER_METHODS`] index; kept across the methods
/// of a class: the pool only grows, so they stay what they are).
fn plan_method_with(
    ce: &mut ClassEditor<'_>,
    info: &super::MethodInfo,
    ed: &mut MethodEditor,
    hooks: &MethodHooks<'_>,
    index: i32,
    refs: &mut [Option<u16>; TRACKER_METHODS.len()],
) -> Result<(), BciError> {
    let is_static = info.access & ACC_STATIC != 0;
    let is_init = info.name == "<init>";
    let pool = ce.pool();
    // Only the tracker methods this method calls go into the constant pool (a class that
    // is only hooked for entry and exit gets two or three, not all ten).
    let mut r = |pool: &mut Pool<'_>, name: &str| -> Result<u16, BciError> {
        let k = TRACKER_METHODS.iter().position(|m| m.0 == name).expect("a tracker method");
        if let Some(i) = refs[k] {
            return Ok(i);
        }
        let i = pool.method_ref(hooks.tracker, name, TRACKER_METHODS[k].1)?;
        refs[k] = Some(i);
        Ok(i)
    };
    let idx = push_int(pool, index)?;
    // A method whose whole code is one return instruction (`Object.<init>`, empty methods)
    // cannot be left by an exception: it gets no catch-all handler. (JDK 11's C2 crashes
    // compiling `Object.<init>` with one.)
    let only_returns = ed.instructions().len() == 1 && is_return(&ed.instructions()[0]);
    if hooks.entry {
        // A constructor's `this` cannot be passed before `super(…)`: constructors enter with
        // the plain hook (METHOD_ENTRY2 reports no receiver for them).
        let code = if is_static || is_init || !hooks.receiver {
            vec![idx.clone(), I::Invokestatic(r(pool, "enter")?)]
        } else {
            vec![I::Aload_0, idx.clone(), I::Invokestatic(r(pool, "enterThis")?)]
        };
        // Once per call: a loop whose head is instruction 0 branches back after it.
        ed.prologue(&code)?;
    }
    let insns = ed.instructions().to_vec();
    for (k, i) in insns.iter().enumerate() {
        if hooks.instructions {
            let off = ed.original_offset(k) as i32;
            let off_i = push_int(pool, off)?;
            let code = match i {
                I::Tableswitch(s) => vec![
                    I::Dup,
                    idx.clone(),
                    off_i,
                    push_int(pool, s.low)?,
                    push_int(pool, s.high)?,
                    I::Invokestatic(r(pool, "tableSwitch")?),
                ],
                I::Lookupswitch(_) => vec![I::Dup, idx.clone(), off_i, I::Invokestatic(r(pool, "lookupSwitch")?)],
                _ => match opcode(i) {
                    Some(op @ 0x99..=0x9e) => {
                        vec![I::Dup, idx.clone(), off_i, push_int(pool, op)?, I::Invokestatic(r(pool, "ifInt")?)]
                    }
                    Some(op @ 0x9f..=0xa4) => {
                        vec![I::Dup2, idx.clone(), off_i, push_int(pool, op)?, I::Invokestatic(r(pool, "ifCmp")?)]
                    }
                    Some(op @ 0xa5..=0xa6) => {
                        vec![I::Dup2, idx.clone(), off_i, push_int(pool, op)?, I::Invokestatic(r(pool, "ifAcmp")?)]
                    }
                    Some(op) => {
                        vec![I::Dup, idx.clone(), off_i, push_int(pool, op)?, I::Invokestatic(r(pool, "ifRef")?)]
                    }
                    None => vec![idx.clone(), off_i, I::Invokestatic(r(pool, "insn")?)],
                },
            };
            ed.insert_before(k, &code)?;
        }
        if hooks.exit && is_return(i) {
            ed.insert_before(k, &[idx.clone(), I::Invokestatic(r(pool, "exit")?)])?;
        }
    }
    if hooks.exit && !only_returns {
        // A constructor's exceptional exit also ends its callers stopped at their chaining
        // call (the JVM's verifier lets no handler cover a `super(…)`/`this(…)` call of an
        // uninitialised `this` whose frame could be given: see `code::rewrite`).
        let hook = if is_init { "initThrow" } else { "exit" };
        ed.catch_all(&[idx, I::Invokestatic(r(pool, hook)?)])?;
    }
    Ok(())
}

/// Applies the method plan to every method with code of a class (the tracker excepted).
/// `next_index` hands out the methods' numbers: called with (method name, descriptor) for each
/// hooked method. Returns `Ok(None)` when nothing was hooked.
pub fn instrument_methods(
    class_file: &[u8],
    hooks: &MethodHooks<'_>,
    next_index: &mut dyn FnMut(&str, &str, &[Lookup]) -> i32,
) -> Result<Option<Vec<u8>>, BciError> {
    instrument_class(class_file, None, Some((hooks, next_index)))
}

/// Applies every active plan to a class in one pass: allocation hooks first (an allocation is
/// reported before the constructor's METHOD_ENTRY, as HotSpot posted OBJECT_ALLOC at `new`),
/// then method hooks. `next_index` is called as for [`instrument_methods`]. Neither tracker
/// class is ever rewritten. `Ok(None)`: the class needs no change.
pub fn instrument_class(
    class_file: &[u8],
    alloc: Option<&super::AllocHooks<'_>>,
    methods: Option<(&MethodHooks<'_>, &mut dyn FnMut(&str, &str, &[Lookup]) -> i32)>,
) -> Result<Option<Vec<u8>>, BciError> {
    instrument_class_wrapping(class_file, alloc, methods, None).map(|(out, _)| out)
}

/// Which native methods of a class to wrap (see [`ClassEditor::wrap_natives`]): `choose` is
/// asked with each native method's name and descriptor; the renamed natives are
/// `<prefix><name>`.
pub struct NativeWrap<'a> {
    /// The prefix of the renamed natives.
    pub prefix: &'a str,
    /// Whether to wrap the native with this name and descriptor.
    pub choose: &'a dyn Fn(&str, &str) -> bool,
}

/// [`instrument_class`], first wrapping the native methods `wrap` chooses. A wrapper gets the
/// entry/exit hooks of the method plan (when it has them), never instruction hooks: it stands
/// for a native method, which has no instructions. Returns the class (None: unchanged) and
/// the number of native methods wrapped.
pub fn instrument_class_wrapping(
    class_file: &[u8],
    alloc: Option<&super::AllocHooks<'_>>,
    methods: Option<(&MethodHooks<'_>, &mut dyn FnMut(&str, &str, &[Lookup]) -> i32)>,
    wrap: Option<&NativeWrap<'_>>,
) -> Result<(Option<Vec<u8>>, usize), BciError> {
    let skip = |name: &str| {
        alloc.is_some_and(|a| a.owns(name))
            || methods.as_ref().is_some_and(|m| {
                m.0.tracker == name
                    || (!m.0.also_skip.is_empty() && super::alloc_plan::is_tracker_class(m.0.also_skip, name))
            })
    };
    let mut wrapped = Vec::new();
    let mut wrapped_class = None;
    if let Some(w) = wrap {
        let mut ce = ClassEditor::parse(class_file)?;
        if skip(ce.class_name()) {
            return Ok((None, 0));
        }
        let natives: Vec<usize> = (0..ce.method_count())
            .filter(|&i| {
                ce.method(i).is_ok_and(|m| {
                    m.access & (ACC_NATIVE | ACC_ABSTRACT) == ACC_NATIVE
                        && !m.name.starts_with(w.prefix)
                        && (w.choose)(&m.name, &m.descriptor)
                })
            })
            .collect();
        if !natives.is_empty() {
            for &i in &natives {
                let m = ce.method(i)?;
                wrapped.push((m.name, m.descriptor));
            }
            wrapped_class = Some(ce.wrap_natives(&natives, w.prefix)?);
        }
    }
    let input = wrapped_class.as_deref().unwrap_or(class_file);
    let mut ce = ClassEditor::parse(input)?;
    let name = ce.class_name().to_string();
    if skip(&name) {
        return Ok((None, 0));
    }
    let mut methods = methods;
    // The virtual-thread machinery gets no method hooks; the code that begins and ends the
    // transitions gets its marks instead (see [`is_vt_machinery`]).
    let marks = match methods.as_ref() {
        Some((hooks, _)) if is_transition_code(&name) => Some(hooks.tracker.to_string()),
        _ => None,
    };
    if is_vt_machinery(&name) {
        methods = None;
    }
    let mut refs = None;
    let mut tracker_refs = [None; TRACKER_METHODS.len()];
    for m in 0..ce.method_count() {
        if let Some(tracker) = marks.as_deref() {
            if let Some(mut ed) = ce.method_editor(m)? {
                transition_marks(&mut ce, &mut ed, tracker)?;
                if let Some(a) = alloc {
                    super::alloc_plan::plan_allocations(&mut ce, m, &mut ed, a, &mut refs)?;
                }
                ce.commit(ed)?;
            }
            continue;
        }
        if methods.is_none() && super::alloc_plan::can_skip(&ce, m) {
            continue;
        }
        let Some(mut ed) = ce.method_editor(m)? else { continue };
        if let Some(a) = alloc {
            super::alloc_plan::plan_allocations(&mut ce, m, &mut ed, a, &mut refs)?;
        }
        if let Some((hooks, next_index)) = methods.as_mut() {
            let info = ce.method(m)?;
            let is_wrapper = wrapped.iter().any(|(n, d)| *n == info.name && *d == info.descriptor);
            let wrapper_hooks = MethodHooks { instructions: false, ..**hooks };
            let hooks = if is_wrapper { &wrapper_hooks } else { *hooks };
            if hooks.entry || hooks.exit || hooks.instructions {
                let probe = plan_probe(&ed, hooks);
                let index = next_index(&info.name, &info.descriptor, &probe);
                plan_method_with(&mut ce, &info, &mut ed, hooks, index, &mut tracker_refs)?;
            }
        }
        ce.commit(ed)?;
    }
    if !ce.is_modified() {
        return Ok((wrapped_class, wrapped.len()));
    }
    ce.to_bytes().map(|b| (Some(b), wrapped.len()))
}

/// The lookupswitches a plan will meet in a method (so the caller can record them with the
/// method's number before the code runs).
pub fn plan_probe(ed: &MethodEditor, hooks: &MethodHooks<'_>) -> Vec<Lookup> {
    if !hooks.instructions {
        return Vec::new();
    }
    ed.instructions()
        .iter()
        .enumerate()
        .filter_map(|(k, i)| match i {
            I::Lookupswitch(s) => {
                Some(Lookup { offset: ed.original_offset(k), keys: s.pairs.keys().copied().collect() })
            }
            _ => None,
        })
        .collect()
}

/// The tracker class: `public final class <tracker>` with the [`TRACKER_METHODS`], all
/// `public static native` (bound with RegisterNatives by the shim). Class file version 52.
pub fn methods_tracker_class(tracker: &str) -> Vec<u8> {
    build(tracker).expect("the tracker class is well-formed")
}

fn build(tracker: &str) -> ristretto_classfile::Result<Vec<u8>> {
    let mut cp = ConstantPool::new();
    let this_class = cp.add_class(tracker)?;
    let super_class = cp.add_class("java/lang/Object")?;
    let mut methods = Vec::new();
    for (name, desc) in TRACKER_METHODS {
        methods.push(Method {
            access_flags: MethodAccessFlags::PUBLIC | MethodAccessFlags::STATIC | MethodAccessFlags::NATIVE,
            name_index: cp.add_utf8(name)?,
            descriptor_index: cp.add_utf8(desc)?,
            attributes: Vec::new(),
        });
    }
    super::classfile::final_class_bytes(cp, this_class, super_class, Vec::new(), methods)
}
