//! Class-file rewriting (bytecode instrumentation, "BCI"): what jvmpi-shim uses where JVMTI has
//! no event — OBJECT_ALLOC for allocations made by bytecode, METHOD_ENTRY/EXIT and
//! INSTRUCTION_START. A crate of its own in the shim's workspace (`crates/rewriter/`, see its
//! README.md), re-exported by the shim as `jvmpi_shim::bci`: it knows nothing of JVMTI, JVMPI
//! or the shim; it takes class files and the names of the hooks to call, and gives class files.
//!
//! * [`ClassEditor`] opens a class file, hands out a [`MethodEditor`] per method, adds
//!   constants ([`Pool`]) and writes the result. What is not edited is copied byte for byte: the
//!   new class is the original with constants appended to the pool and the `Code` attributes of
//!   edited methods replaced (no re-encoding of annotations, bootstrap methods, records, …).
//! * [`MethodEditor`] shows a method's instructions with every branch target as an
//!   instruction index, and takes straight-line insertions before or after any instruction.
//!   Committing re-encodes: branch targets, switch targets (and their 0–3 bytes of padding),
//!   the exception table, LineNumberTable, LocalVariableTable, LocalVariableTypeTable, code
//!   type annotations, and the StackMapTable — frame positions and the `Uninitialized(offset)`
//!   of every `new` — all follow their instructions; branches that no longer reach are widened;
//!   `max_stack` is recomputed; code over 65535 bytes is refused.
//! * [`ClassEditor::wrap_natives`] turns native methods into Java wrappers of renamed natives
//!   (for JVMTI native method prefixes; a new class file, parsed again for the other plans).
//! * [`instrument_allocations`] is the allocation plan; [`tracker_class`] generates the class
//!   it calls (and [`tracker_class_counting`] a pure-Java variant for tests).
//! * [`instrument_class_wrapping`] applies every plan to a class at once (the allocation plan,
//!   the method plan of [`plan_method`], native wrappers); [`methods_tracker_class`] generates
//!   the class the method plan calls.
//! * [`chaining_init_calls`] reads constructor chains back from running code.
//!
//! # Modules
//!
//! The crate root holds the error type ([`BciError`]), the shortcuts switch and the
//! re-exports; every module uses those. Among themselves the modules depend one way: in this
//! order, each names only modules to its right (`tests::modules_form_no_circle` reads the
//! sources and holds them to it):
//!
//! ```text
//!   method_plan → alloc_plan → classfile → code → frames → pool          sites
//! ```
//!
//! * `pool`: the constant pool ([`Pool`]), looked up and extended append-only; names nothing.
//! * `frames`: verification types, stack map frames and the type simulator; names `pool`.
//! * `code`: the method level ([`MethodEditor`], a `Code` attribute as found in the file, the
//!   re-encoding); names `frames` and `pool`.
//! * `classfile`: the class level ([`ClassEditor`], the walk over the raw bytes, the writer);
//!   names `code` and `pool`.
//! * `alloc_plan`: the allocation plan and its tracker classes; names `classfile` and `code`.
//! * `method_plan`: the method plan, native wrappers, the method tracker class; names
//!   `alloc_plan`, `classfile`, `code` and `pool`.
//! * `sites`: constructor chains read back from running code; names none of them.
//!
//! # Why `ristretto_classfile`
//!
//! It decodes every instruction into one enum (`wide` forms folded into `Iload_w` & co.,
//! switch padding handled on both read and write, by the writer's position), turns branch and
//! switch targets into instruction indices, parses the constant pool into something that can
//! be searched and appended to, and has typed `StackFrame`/`VerificationType` codecs. The
//! alternatives: `noak` reads (borrowing iterators over byte offsets) and writes (a streaming,
//! typestate writer with labels) but has no editable model — a rewrite means translating every
//! instruction and attribute from one API to the other, and it refuses labels out of reach
//! instead of widening; `cafebabe` is read-only; the parser in `jvmti-bindings` is read-only and
//! leaves the code as raw bytes. 0.31 needs rustc 1.95 (cargo's MSRV-aware resolver picks 0.14
//! for this crate's `rust-version`, hence the explicit version in Cargo.toml).
//!
//! # What ristretto does not do, and what this layer does instead
//!
//! From reading its `attributes/{offset_utils,attribute,stack_frame,verification_type,
//! instruction}.rs` (0.31.0):
//!
//! * **Exception table ends.** It maps `end_pc` with a "largest instruction ≤ end" lookup, so
//!   a range ending at the code length loses its last instruction on a read/write round trip.
//!   → The `Code` attribute is located and read by this layer's own walk over the raw bytes
//!   (`classfile.rs`); ristretto decodes single instructions (`Instruction::from_bytes`) and the
//!   constant pool (stack frames are read by `frames.rs`, frame types written by ristretto's
//!   `VerificationType`). End offsets may equal the code length.
//! * **LocalVariableTable / LocalVariableTypeTable and code type annotations** keep byte
//!   offsets (they are not converted on read nor on write). → Converted here: start and end
//!   to instruction indices and back; type-annotation `offset`, `type_argument` and
//!   `localvar` targets too.
//! * **StackMapTable writing**: frame *kinds* are kept while deltas change, so a `same_frame`
//!   whose byte delta grows past 63 is written as frame type ≥ 64 (silently a different frame
//!   kind); the first frame is detected by "previous offset == 0", which is wrong when a frame
//!   sits at offset 0. → Frames are decoded to full frames (locals and stack, relative to the
//!   method's initial frame) and re-encoded canonically (same / same_locals_1_stack_item /
//!   chop / append / full, `_extended` when the delta needs it).
//! * **`Uninitialized(offset)`** verification types keep their byte offset. → Turned into the
//!   index of the `new` instruction and back; insertions *before* a `new` leave it pointing
//!   at the `new` itself.
//! * **Branch widening**: the writer fails (`i16::try_from`) when a branch no longer fits in
//!   ±32767 bytes. → `goto` becomes `goto_w`, `jsr` becomes `jsr_w`, and a conditional
//!   `if<cond> L` becomes `if<!cond> next; goto_w L; next:` — which makes `next` a branch
//!   target, so it gets a stack map frame (version ≥ 50) computed by simulating the
//!   straight-line code from the nearest frame before it (`frames.rs`; `Uninitialized`
//!   entries, long/double halves and `<init>` included). Repeated until every branch reaches.
//! * **`goto_w`/`jsr_w`** are documented as relative but read and written as absolute
//!   positions; this layer uses absolute instruction indices for all branches.
//! * **Code length**: the writer only checks that each instruction *starts* below 65536. →
//!   Code longer than 65535 bytes (after widening) is refused with [`BciError::CodeTooLarge`].
//! * **`max_stack`** is not recomputed (its `stack_delta` counts values, not slots). → A depth
//!   data flow over the rewritten code (exception handlers, `jsr` included) gives the new
//!   `max_stack`, never below the old one.
//! * **Constant pool**: adding never reuses an entry. → [`Pool`] looks up existing Utf8 /
//!   Class / NameAndType / member-ref entries first and refuses to pass 65535 entries.
//!
//! Inserted code is restricted to straight-line instructions that leave the stack and locals as
//! they found them, so the frames of the original code stay valid after shifting; the only
//! frames this layer invents are those of widened conditional branches.
//!
//! # Cost
//!
//! The rewriting runs in the class-file hook, at VMInit for every class already loaded, so its
//! cost is start-up time (docs/benchmarks.md, "Start-up and shutdown"). Shortcuts that leave the
//! output unchanged byte for byte: the allocation plan does not decode a method in which a walk
//! over the bytes finds no site; `max_stack`'s data flow counts slots without simulating types;
//! constants are looked up without being built, member references remembered per class;
//! [`set_shortcuts`] turns them off, for tests comparing the two. The shim's
//! `examples/rewrite_bench.rs` measures the plans offline over recorded class files.
//!
//! # Tests
//!
//! `src/tests.rs` compiles small programs with javac, rewrites them, checks every method
//! against its original (each branch, switch case, handler, line number, local-variable range
//! and frame still designates the same original instruction) and runs both under
//! `-Xverify:all`. The shim's `tests/bci.rs` runs a rewritten program with a counting tracker on every JDK,
//! and rewrites every class of the JDKs' own modules: all must rewrite, re-parse and link with
//! the verifier on — in fresh class loaders (JDK 17 and 25), and patched into the JDK itself
//! (`--patch-module`, every JDK), which then boots on a rewritten `java.base`.

mod alloc_plan;
mod classfile;
mod code;
mod frames;
mod method_plan;
mod pool;
mod sites;

pub use alloc_plan::{
    instrument_allocations, is_tracker_class, shape_class, shape_class_name, tracker_class, tracker_class_counting,
    AllocHooks, ALLOC_HOOKS, NATIVE_DESCRIPTORS, NEW_LOCAL, SHAPED_NATIVES, SHAPES, SHAPE_INIT,
};
pub use classfile::{ClassEditor, MethodInfo, ACC_STATIC};
pub use code::{branch_target, encoded_size, is_unconditional, targets, MethodEditor};
pub use method_plan::{
    branch_taken, instrument_class, instrument_class_wrapping, instrument_methods, is_transition_code, is_vt_machinery,
    methods_tracker_class, plan_method, plan_probe, push_int, Lookup, MethodHooks, NativeWrap, TRACKER_METHODS,
};
pub use pool::Pool;
/// The instruction type of the editor (ristretto's), re-exported for users of [`MethodEditor`].
pub use ristretto_classfile::attributes::{ArrayType, Instruction};
pub use sites::chaining_init_calls;

use std::cell::Cell;
use std::fmt;

thread_local! {
    static SHORTCUTS: Cell<bool> = const { Cell::new(true) };
}

/// Turns the rewriter's shortcuts off (`false`) or on again in this thread: methods the
/// allocation plan could leave undecoded, `max_stack`'s slot counting (instead of simulating
/// types), constants looked up without being built and member references remembered per class.
/// Their output is the same byte for byte; tests compare the two.
#[doc(hidden)]
pub fn set_shortcuts(on: bool) {
    SHORTCUTS.with(|s| s.set(on));
}

pub(crate) fn shortcuts() -> bool {
    SHORTCUTS.with(Cell::get)
}

/// The prefix of the native methods the shim renames when it wraps them in Java methods (see
/// [`ClassEditor::wrap_natives`]); set with JVMTI `SetNativeMethodPrefix`, so that the JVM binds
/// `jvmpiShim$foo` to the implementation of `foo`. No trace and no CLASS_LOAD shows them.
pub const NATIVE_PREFIX: &str = "jvmpiShim$";

/// Why a class could not be rewritten. The caller keeps the original class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BciError {
    /// The bytes are not a class file this layer can read.
    Malformed(String),
    /// The rewritten code of a method would be longer than 65535 bytes.
    CodeTooLarge {
        /// The length it would have.
        length: usize,
    },
    /// The constant pool would need more than 65535 entries.
    ConstantPoolFull,
    /// Something this layer does not support (e.g. a frame it cannot compute).
    Unsupported(String),
    /// A misuse of [`MethodEditor`] (bad index, inserted code that is not straight-line).
    InvalidEdit(String),
    /// A bug in this layer.
    Internal(String),
    /// An error in a particular class or method.
    In {
        /// The class or method.
        place: String,
        /// What went wrong there.
        error: Box<BciError>,
    },
}

impl BciError {
    pub(crate) fn within(self, place: &str) -> BciError {
        match self {
            e @ BciError::In { .. } => e,
            e => BciError::In { place: place.to_string(), error: Box::new(e) },
        }
    }

    /// The error without its place.
    pub fn kind(&self) -> &BciError {
        match self {
            BciError::In { error, .. } => error.kind(),
            e => e,
        }
    }
}

impl fmt::Display for BciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BciError::Malformed(m) => write!(f, "malformed class file: {m}"),
            BciError::CodeTooLarge { length } => write!(f, "code would be {length} bytes, above the 65535-byte limit"),
            BciError::ConstantPoolFull => write!(f, "the constant pool would exceed 65535 entries"),
            BciError::Unsupported(m) => write!(f, "unsupported: {m}"),
            BciError::InvalidEdit(m) => write!(f, "invalid edit: {m}"),
            BciError::Internal(m) => write!(f, "internal error: {m}"),
            BciError::In { place, error } => write!(f, "{place}: {error}"),
        }
    }
}

impl std::error::Error for BciError {}

#[cfg(test)]
mod tests;
