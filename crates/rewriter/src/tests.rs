//! Unit tests of the rewriting layer on classes compiled by the system javac (`--release 11`)
//! and run with `java -Xverify:all` from the same JDK. Each test checks the rewritten code
//! structurally against the original (every branch, switch case, handler, line number, local
//! variable range and stack map frame still points at the same original instruction) and runs it.

use super::code::FullCode;
use super::frames::{self, VType};
use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const TRACKER: &str = "CountingTracker";

/// The javac stub of the counting tracker; its class file is replaced by the generated one.
const TRACKER_STUB: &str = "public final class CountingTracker {
    public static volatile boolean on;
    public static int objects, arrays, news;
    public static Object last;
    public static void objectInit(Object o) {}
    public static void newArray(Object a) {}
}";

fn jdk_home() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH");
    let javac =
        std::env::split_paths(&path).map(|d| d.join("javac")).find(|p| p.is_file()).expect("javac (JDK 17) on PATH");
    let real = std::fs::canonicalize(&javac).expect("canonical javac");
    real.parent().and_then(Path::parent).expect("<home>/bin/javac").to_path_buf()
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "jvmpi-bci-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        TempDir(d)
    }
    fn sub(&self, name: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::create_dir_all(&p).expect("sub dir");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Compiles `(file name, source)` pairs (plus the tracker stub) into `<tmp>/orig`.
fn javac(tmp: &TempDir, sources: &[(&str, &str)]) -> PathBuf {
    let src = tmp.sub("src");
    let out = tmp.sub("orig");
    let mut files = Vec::new();
    for (name, text) in sources.iter().chain(std::iter::once(&("CountingTracker.java", TRACKER_STUB))) {
        let p = src.join(name);
        std::fs::write(&p, text).expect("write source");
        files.push(p);
    }
    let r = Command::new(jdk_home().join("bin/javac"))
        .args(["--release", "11", "-g", "-nowarn", "-encoding", "UTF-8", "-d"])
        .arg(&out)
        .args(&files)
        .env_remove("JAVA_TOOL_OPTIONS")
        .output()
        .expect("run javac");
    assert!(r.status.success(), "javac failed:\n{}", String::from_utf8_lossy(&r.stderr));
    out
}

/// Runs `main` with `-Xverify:all`; returns stdout, panicking with everything on failure.
fn java(cp: &Path, main: &str) -> String {
    let r = Command::new(jdk_home().join("bin/java"))
        .args(["-Xverify:all", "-Xss8m", "-cp"])
        .arg(cp)
        .arg(main)
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("_JAVA_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .output()
        .expect("run java");
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(r.status.success(), "java {main} failed ({}):\n{out}\n{}", r.status, String::from_utf8_lossy(&r.stderr));
    out
}

fn class_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("class dir")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "class"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).expect("read class")))
        .collect();
    v.sort();
    v
}

/// Writes every class of `orig` through `f` (None: unchanged) into `<tmp>/<name>`, with the
/// generated counting tracker.
/// A rewriting of one class file (file name, bytes); `None`: unchanged.
type Rewrite<'a> = &'a dyn Fn(&str, &[u8]) -> Option<Vec<u8>>;

fn rewrite_dir(tmp: &TempDir, orig: &Path, name: &str, f: Rewrite<'_>) -> PathBuf {
    let out = tmp.sub(name);
    for (file, bytes) in class_files(orig) {
        let data = f(&file, &bytes).unwrap_or(bytes);
        std::fs::write(out.join(&file), data).expect("write class");
    }
    std::fs::write(out.join(format!("{TRACKER}.class")), tracker_class_counting(TRACKER)).expect("write tracker");
    out
}

fn alloc_rewrite(_file: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    instrument_allocations(bytes, &AllocHooks { tracker: TRACKER, keep_new: false }).expect("instrumentation succeeds")
}

/// Lines `count <name> <got> <expected>` must agree; everything else must equal `original`.
fn check_outputs(original: &str, rewritten: &str) -> usize {
    let strip = |s: &str| s.lines().filter(|l| !l.starts_with("count ")).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(strip(original), strip(rewritten), "results differ between original and rewritten code");
    let mut n = 0;
    for l in rewritten.lines().filter(|l| l.starts_with("count ")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 4, "bad count line {l}");
        assert_eq!(f[2], f[3], "count {}: got {} expected {}", f[1], f[2], f[3]);
        n += 1;
    }
    assert!(n > 0, "the program printed no counts");
    // The original program's tracker is the do-nothing stub.
    assert!(original.lines().any(|l| l.starts_with("count ") && l.split_whitespace().nth(2) == Some("0")));
    n
}

// ---------------------------------------------------------------------------------------------
// Structural equivalence

/// What a plan inserts before / after original instruction `j` of method `m`: `(m, j, insn)`.
type InsertFn<'a> = &'a dyn Fn(usize, usize, &Instruction) -> Vec<Instruction>;

#[derive(Default, Debug)]
struct Checked {
    methods: usize,
    widened_gotos: usize,
    widened_conds: usize,
    new_frames: usize,
    /// New frames with `Uninitialized` values on the stack.
    new_uninit_frames: usize,
}

fn same_shape(a: &Instruction, b: &Instruction) -> bool {
    if std::mem::discriminant(a) != std::mem::discriminant(b) {
        return false;
    }
    match (a, b) {
        (Instruction::Tableswitch(x), Instruction::Tableswitch(y)) => x.low == y.low && x.high == y.high,
        (Instruction::Lookupswitch(x), Instruction::Lookupswitch(y)) => {
            x.pairs.keys().collect::<Vec<_>>() == y.pairs.keys().collect::<Vec<_>>()
        }
        _ if branch_target(a).is_some() => true,
        _ => a == b,
    }
}

fn inverse_of(a: &Instruction, b: &Instruction) -> bool {
    use Instruction as I;
    matches!(
        (a, b),
        (I::Ifeq(_), I::Ifne(_))
            | (I::Ifne(_), I::Ifeq(_))
            | (I::Iflt(_), I::Ifge(_))
            | (I::Ifge(_), I::Iflt(_))
            | (I::Ifgt(_), I::Ifle(_))
            | (I::Ifle(_), I::Ifgt(_))
            | (I::If_icmpeq(_), I::If_icmpne(_))
            | (I::If_icmpne(_), I::If_icmpeq(_))
            | (I::If_icmplt(_), I::If_icmpge(_))
            | (I::If_icmpge(_), I::If_icmplt(_))
            | (I::If_icmpgt(_), I::If_icmple(_))
            | (I::If_icmple(_), I::If_icmpgt(_))
            | (I::If_acmpeq(_), I::If_acmpne(_))
            | (I::If_acmpne(_), I::If_acmpeq(_))
            | (I::Ifnull(_), I::Ifnonnull(_))
            | (I::Ifnonnull(_), I::Ifnull(_))
    )
}

/// Checks every method of `new` against `orig` under a plan of insertions.
fn check_equivalent(orig: &[u8], new: &[u8], before: InsertFn<'_>, after: InsertFn<'_>) -> Checked {
    let o_ce = ClassEditor::parse(orig).expect("original parses");
    let n_ce = ClassEditor::parse(new).expect("rewritten parses");
    assert_eq!(o_ce.method_count(), n_ce.method_count());
    let mut c = Checked::default();
    for m in 0..o_ce.method_count() {
        let info = o_ce.method(m).unwrap();
        assert_eq!(info, n_ce.method(m).unwrap());
        if !info.has_code {
            continue;
        }
        let who = format!("{}.{}{}", o_ce.class_name(), info.name, info.descriptor);
        let o = o_ce.full_code(m).unwrap_or_else(|e| panic!("{who}: {e}"));
        let r = n_ce.full_code(m).unwrap_or_else(|e| panic!("{who} rewritten: {e}"));
        check_method(&who, &o, &r, &|j, i| before(m, j, i), &|j, i| after(m, j, i), &mut c);
        c.methods += 1;
    }
    c
}

fn check_method(
    who: &str,
    o: &FullCode,
    r: &FullCode,
    before: &dyn Fn(usize, &Instruction) -> Vec<Instruction>,
    after: &dyn Fn(usize, &Instruction) -> Vec<Instruction>,
    c: &mut Checked,
) {
    let n = o.insns.len();
    let mut head = vec![0usize; n + 1];
    let mut at = vec![0usize; n + 1];
    let mut widened_cond = vec![false; n];
    let mut k = 0;
    let get = |k: usize| r.insns.get(k).unwrap_or_else(|| panic!("{who}: rewritten code ends early at {k}"));
    for j in 0..n {
        head[j] = k;
        for ins in before(j, &o.insns[j]) {
            assert_eq!(get(k), &ins, "{who}: inserted before {j}");
            k += 1;
        }
        at[j] = k;
        let (oi, ri) = (&o.insns[j], get(k));
        if same_shape(oi, ri) {
            k += 1;
        } else if matches!(
            (oi, ri),
            (Instruction::Goto(_), Instruction::Goto_w(_)) | (Instruction::Jsr(_), Instruction::Jsr_w(_))
        ) {
            c.widened_gotos += 1;
            k += 1;
        } else if inverse_of(oi, ri) && matches!(get(k + 1), Instruction::Goto_w(_)) {
            widened_cond[j] = true;
            c.widened_conds += 1;
            k += 2;
        } else {
            panic!("{who}: original {j} ({oi}) became {k} ({ri})");
        }
        for ins in after(j, &o.insns[j]) {
            assert_eq!(get(k), &ins, "{who}: inserted after {j}");
            k += 1;
        }
    }
    assert_eq!(k, r.insns.len(), "{who}: extra instructions at the end");
    head[n] = k;
    at[n] = k;
    // Branches and switches.
    for j in 0..n {
        let oi = &o.insns[j];
        let ri = &r.insns[at[j]];
        if widened_cond[j] {
            assert_eq!(branch_target(ri), Some(at[j] + 2), "{who}: inverted branch at {j} skips the goto_w");
            assert_eq!(head[j + 1], at[j] + 2, "{who}: code between a widened branch and its successor");
            assert_eq!(
                branch_target(&r.insns[at[j] + 1]),
                Some(head[branch_target(oi).unwrap()]),
                "{who}: goto_w of {j}"
            );
        } else {
            let want: Vec<usize> = targets(oi, j).into_iter().map(|t| head[t]).collect();
            assert_eq!(targets(ri, at[j]), want, "{who}: targets of {j} ({oi})");
        }
    }
    // Exception handlers, lines, local variables.
    let hs: Vec<_> = o.handlers.iter().map(|&(s, e, h, t)| (head[s], head[e], head[h], t)).collect();
    assert_eq!(r.handlers, hs, "{who}: exception table");
    let ls: Vec<_> = o.lines.iter().map(|&(i, l)| (head[i], l)).collect();
    assert_eq!(r.lines, ls, "{who}: line numbers");
    let vs: Vec<_> = o.locals.iter().map(|&(s, e, x)| (head[s], head[e], x)).collect();
    assert_eq!(r.locals, vs, "{who}: local variables");
    // Frames: every original frame (Uninitialized pointing at the same `new`), plus one after
    // each widened conditional branch whose successor had none.
    let mut want: BTreeMap<usize, frames::Frame> = BTreeMap::new();
    for (i, f) in &o.frames {
        let mut f = f.clone();
        f.map_uninit(|u| at[u]);
        want.insert(head[*i], f);
    }
    for (i, f) in &r.frames {
        for t in f.locals.iter().chain(&f.stack) {
            if let VType::Uninit(u) = t {
                assert!(matches!(r.insns[*u], Instruction::New(_)), "{who}: Uninitialized({u}) is not a new");
            }
        }
        match want.remove(i) {
            Some(w) => assert_eq!(&w, f, "{who}: frame at {i}"),
            None => {
                let j = (0..n).find(|&j| widened_cond[j] && at[j] + 2 == *i);
                assert!(j.is_some(), "{who}: unexpected frame at {i}");
                c.new_frames += 1;
                if f.stack.iter().any(|t| matches!(t, VType::Uninit(_))) {
                    c.new_uninit_frames += 1;
                }
            }
        }
    }
    assert!(want.is_empty(), "{who}: frames lost: {:?}", want.keys().collect::<Vec<_>>());
    assert!(r.max_stack >= o.max_stack, "{who}: max_stack shrank");
}

/// The alloc plan's insertions, resolved in the rewritten class's pool.
type Plan = Box<dyn Fn(usize, usize, &Instruction) -> Vec<Instruction>>;

fn alloc_plan(new: &[u8]) -> (Plan, Plan) {
    let mut ce = ClassEditor::parse(new).unwrap();
    let r = ce.pool().method_ref(TRACKER, "newArray", "(Ljava/lang/Object;)V").unwrap();
    let is_object = ce.class_name() == "java/lang/Object";
    let oi = ce.pool().method_ref(TRACKER, "objectInit", "(Ljava/lang/Object;)V").unwrap();
    let init = ce.find_method("<init>", "()V");
    let ldc_class = ce.major_version() >= 49;
    let no = ce.pool().method_ref(TRACKER, "newObject", "(Ljava/lang/Object;)V").unwrap();
    let before: Plan = Box::new(move |m: usize, j: usize, _: &Instruction| {
        if is_object && Some(m) == init && j == 0 {
            vec![Instruction::Aload_0, Instruction::Invokestatic(oi)]
        } else {
            vec![]
        }
    });
    let after: Plan = Box::new(move |_: usize, _: usize, i: &Instruction| match i {
        Instruction::Newarray(_) | Instruction::Anewarray(_) | Instruction::Multianewarray(..) => {
            vec![Instruction::Dup, Instruction::Invokestatic(r)]
        }
        Instruction::New(c) if ldc_class => {
            let ldc = match u8::try_from(*c) {
                Ok(c) => Instruction::Ldc(c),
                Err(_) => Instruction::Ldc_w(*c),
            };
            vec![ldc, Instruction::Invokestatic(no)]
        }
        _ => vec![],
    });
    (before, after)
}

/// Instruments every class of a compiled program, checks each structurally, runs both
/// versions and compares. Returns the totals of the structural checks.
fn instrument_and_run(sources: &[(&str, &str)], main: &str) -> Checked {
    let tmp = TempDir::new(main);
    let orig = javac(&tmp, sources);
    let new = rewrite_dir(&tmp, &orig, "new", &alloc_rewrite);
    let mut total = Checked::default();
    for (file, bytes) in class_files(&orig) {
        if file == format!("{TRACKER}.class") {
            continue;
        }
        let rewritten = std::fs::read(new.join(&file)).unwrap();
        let (b, a) = alloc_plan(&rewritten);
        let c = check_equivalent(&bytes, &rewritten, &b, &a);
        total.methods += c.methods;
        total.widened_gotos += c.widened_gotos;
        total.widened_conds += c.widened_conds;
        total.new_frames += c.new_frames;
        total.new_uninit_frames += c.new_uninit_frames;
    }
    let out_orig = java(&orig, main);
    let out_new = java(&new, main);
    check_outputs(&out_orig, &out_new);
    total
}

// ---------------------------------------------------------------------------------------------
// Programs

const ALLOCS: &str = r#"
public class Allocs {
    static int sink;
    static final class Holder {
        final Object a; final int n;
        Holder(int n, Object a) { this.n = n; this.a = a; }
    }
    static int arrays() { return CountingTracker.arrays; }
    static void count(String what, int before, int expected) {
        System.out.println("count " + what + " " + (arrays() - before) + " " + expected);
    }

    static int branches(int x) {
        int[] a;
        if (x > 3) a = new int[x]; else a = new int[1];
        int s = 0;
        for (int i = 0; i < x; i++) {
            Object[] o = (i % 2 == 0) ? new String[i] : new Object[i + 1];
            s += o.length;
            if (i == 2) continue;
            s += new long[2].length;
        }
        while (s > 20) { s -= new char[3].length * 10; }
        return s + a.length;
    }

    static Object uninit(boolean c, int k) {
        // Stack map frames with Uninitialized(new Holder) entries, the `new` itself after an
        // insertion point (so its offset moves) and the frames after more.
        int[] pre = new int[k + 1];
        return new Holder(c ? pre.length : new int[k].length, c ? new int[3] : new byte[4]);
    }

    static int tryCatch(int n) {
        int r = 0;
        try {
            int[] a = new int[n];
            r = a.length;
            Object[] b = new Object[2];
            r += b.length;
        } catch (NegativeArraySizeException e) {
            int[] c = new int[1];
            r = -c.length;
        } finally {
            sink += new int[0].length;
        }
        return r;
    }

    static int multi() {
        int[][][] m = new int[2][3][];
        int[][] m2 = new int[2][2];
        System.out.println("count multi-last " + (CountingTracker.last == m2 ? 1 : 0) + " 1");
        return m.length + m[1].length + m2[1].length;
    }

    static int line() {
        int[] a = new int[1];
        Throwable t = new Throwable();
        return t.getStackTrace()[0].getLineNumber() * 1000 + a.length;
    }

    static int nested() {
        int[][] n = { {1}, {2, 3}, new int[4] };
        String[] s = { "a", "b" };
        return n.length + n[2].length + s.length + java.util.Arrays.asList("x", "y").size();
    }

    static long wide(long a, double b, int c) {
        long[] la = new long[c];
        double[] da = new double[c + 1];
        la[0] = a; da[0] = b;
        long r = la[0] + (long) da[0];
        for (int i = 0; i < c; i++) r += new byte[i].length;
        return r;
    }

    public static void main(String[] args) throws Exception {
        CountingTracker.on = true;
        int b;
        b = arrays(); System.out.println("result branches " + branches(6)); count("branches6", b, 1 + 6 + 5 + 1);
        b = arrays(); System.out.println("result branches " + branches(2)); count("branches2", b, 1 + 2 + 2);
        b = arrays(); System.out.println("result uninit " + ((Holder) uninit(true, 2)).n); count("uninitT", b, 2);
        b = arrays(); System.out.println("result uninit " + ((Holder) uninit(false, 5)).n); count("uninitF", b, 3);
        b = arrays(); System.out.println("result try " + tryCatch(3)); count("try3", b, 3);
        b = arrays(); System.out.println("result try " + tryCatch(-1)); count("try-1", b, 2);
        b = arrays(); System.out.println("result multi " + multi()); count("multi", b, 2);
        b = arrays(); System.out.println("result line " + line()); count("line", b, 1);
        b = arrays(); System.out.println("result nested " + nested()); count("nested", b, 4 + 1 + 1);
        b = arrays(); System.out.println("result wide " + wide(5, 2.5, 3)); count("wide", b, 5);
        int[] mine = new int[7];
        System.out.println("count identity " + (CountingTracker.last == mine ? 1 : 0) + " 1");
        CountingTracker.on = false;
        b = arrays(); branches(6); count("off", b, 0);
        System.out.println("result sink " + sink);
    }
}
"#;

#[test]
fn branches_try_catch_multianewarray_lines_and_uninitialized() {
    let c = instrument_and_run(&[("Allocs.java", ALLOCS)], "Allocs");
    assert!(c.methods >= 10, "{c:?}");
    assert_eq!(c.widened_gotos + c.widened_conds, 0, "{c:?}");
}

/// A method whose branches span `n` statements of 9 bytes each (13 after instrumentation).
fn huge_source(n: usize, m: usize) -> String {
    let mut s = String::from("public class Huge {\n");
    s += "    static final class Holder { final int n; final Object[] a; Holder(int n, Object[] a) { this.n = n; this.a = a; } }\n";
    s += "    static int big(int x) {\n        int s = 0; int[] a;\n        if (x > 0) {\n";
    for _ in 0..n {
        s += "            a = new int[1]; s += a.length;\n";
    }
    s += "        }\n        switch (x) { case 1: s += 1; break; case 2: s += 2; break; case 3: s += 3; break; default: s += 4; }\n";
    s += "        switch (x * 1000) { case 1000: s += 10; break; case 5000: s += 50; break; default: s += 40; }\n";
    s += "        return s;\n    }\n";
    s += "    static int loop(int x) {\n        int s = 0;\n        for (int i = 0; i < x; i++) {\n            int[] a;\n";
    for _ in 0..n {
        s += "            a = new int[1]; s += a.length;\n";
    }
    s += "        }\n        return s;\n    }\n";
    // A conditional inside constructor arguments: the widened branch's fall-through frame holds
    // two Uninitialized(new Holder) and an int on the stack.
    s += "    static Holder holder(int x) {\n        int[] pre = new int[1];\n        return new Holder(x + pre.length - 1, x > 0 ? new Object[] {\n";
    for _ in 0..m {
        s += "            new int[1],\n";
    }
    s += "        } : null);\n    }\n";
    s += r#"
    static int arrays() { return CountingTracker.arrays; }
    static void count(String what, int before, int expected) {
        System.out.println("count " + what + " " + (arrays() - before) + " " + expected);
    }
    public static void main(String[] args) {
        CountingTracker.on = true;
        int b;
        b = arrays(); System.out.println("result big " + big(1)); count("big1", b, N);
        b = arrays(); System.out.println("result big " + big(0)); count("big0", b, 0);
        b = arrays(); System.out.println("result big " + big(5)); count("big5", b, N);
        b = arrays(); System.out.println("result loop " + loop(2)); count("loop2", b, 2 * N);
        b = arrays(); System.out.println("result loop " + loop(0)); count("loop0", b, 0);
        b = arrays(); Holder h = holder(3); System.out.println("result holder " + h.n + " " + h.a.length); count("holder3", b, M + 2);
        b = arrays(); h = holder(0); System.out.println("result holder " + h.n + " " + h.a); count("holder0", b, 1);
    }
}
"#;
    s.replace(" N)", &format!(" {n})")).replace("2 * N", &format!("{}", 2 * n)).replace("M + 2", &format!("{}", m + 2))
}

#[test]
fn huge_methods_get_widened_branches_and_new_frames() {
    let src = huge_source(3000, 3500);
    let tmp = TempDir::new("huge-orig");
    let orig = javac(&tmp, &[("Huge.java", &src)]);
    // The original reaches everything with short branches.
    let bytes = std::fs::read(orig.join("Huge.class")).unwrap();
    let ce = ClassEditor::parse(&bytes).unwrap();
    for m in 0..ce.method_count() {
        if let Some(ed) = ce.method_editor(m).unwrap() {
            assert!(!ed.instructions().iter().any(|i| matches!(i, Instruction::Goto_w(_))));
        }
    }
    drop(tmp);
    let c = instrument_and_run(&[("Huge.java", &src)], "Huge");
    // big: the if; loop: the loop test and the back edge; holder: the conditional.
    assert!(c.widened_conds >= 3, "{c:?}");
    assert!(c.widened_gotos >= 1, "{c:?}");
    assert!(c.new_frames >= 3, "{c:?}");
    assert!(c.new_uninit_frames >= 1, "holder(): {c:?}");
}

#[test]
fn instrumenting_twice_decodes_wide_branches_and_counts_twice() {
    let src = huge_source(3000, 10).replace("count(\"big1\", b, 3000)", "count(\"big1\", b, 6000)");
    let tmp = TempDir::new("twice");
    let orig = javac(&tmp, &[("Huge.java", &src)]);
    let once = rewrite_dir(&tmp, &orig, "once", &alloc_rewrite);
    let twice = rewrite_dir(&tmp, &once, "twice", &|f, b| if f == "Huge.class" { alloc_rewrite(f, b) } else { None });
    let out = java(&twice, "Huge");
    let big1 = out.lines().find(|l| l.starts_with("count big1 ")).expect("big1 count");
    assert_eq!(big1, "count big1 6000 6000", "{out}");
    // Structure: the second pass inserted after each array allocation again, and kept the
    // goto_w of the first.
    let a = std::fs::read(once.join("Huge.class")).unwrap();
    let b = std::fs::read(twice.join("Huge.class")).unwrap();
    let (bf, af) = alloc_plan(&b);
    let c = check_equivalent(&a, &b, &bf, &af);
    assert_eq!(c.widened_conds + c.widened_gotos, 0, "{c:?}");
}

const SWITCHES: &str = r#"
public class Switches {
    static int table(int k) {
        int r = 0;
        switch (k) {
            case 0: r = 10; break;
            case 1: r = 11;
            case 2: r += 12; break;
            case 3: r = 13; break;
            case 5: r = new int[2].length; break;
            default: r = -1;
        }
        return r;
    }
    static int lookup(int k) {
        switch (k) {
            case -100000: return 1;
            case 7: return 2;
            case 1000: return 3;
            case 99999: { int[] a = new int[1]; return 4 + a.length; }
            default: return 5;
        }
    }
    static String strings(String s) {
        switch (s) { case "a": return "A"; case "bb": return "B"; case "Aa": return "Aa"; case "BB": return "BB"; default: return "?"; }
    }
    public static void main(String[] args) {
        StringBuilder sb = new StringBuilder();
        for (int k = -2; k < 8; k++) sb.append(table(k)).append(',');
        for (int k : new int[] {-100000, 7, 1000, 99999, 3}) sb.append(lookup(k)).append(',');
        for (String s : new String[] {"a", "bb", "Aa", "BB", "x"}) sb.append(strings(s)).append(',');
        System.out.println("result " + sb);
        System.out.println("count dummy " + CountingTracker.arrays + " 0");
    }
}
"#;

/// Inserts `nops` nops before the first instruction of every method and one before every
/// switch, so switches move by different amounts and their padding changes.
#[test]
fn switch_padding_follows_insertions() {
    let tmp = TempDir::new("switch");
    let orig = javac(&tmp, &[("Switches.java", SWITCHES)]);
    let bytes = std::fs::read(orig.join("Switches.class")).unwrap();
    let reference = java(&orig, "Switches");
    let mut total_changed = 0;
    for nops in 1..=3usize {
        let mut ce = ClassEditor::parse(&bytes).unwrap();
        let mut moved_padding = 0;
        for m in 0..ce.method_count() {
            let Some(mut ed) = ce.method_editor(m).unwrap() else { continue };
            let nop = vec![Instruction::Nop; nops];
            ed.insert_before(0, &nop).unwrap();
            let switches: Vec<usize> = (0..ed.len())
                .filter(|&i| matches!(ed.instructions()[i], Instruction::Tableswitch(_) | Instruction::Lookupswitch(_)))
                .collect();
            for &s in &switches {
                ed.insert_before(s, &[Instruction::Nop]).unwrap();
            }
            moved_padding += switches.len();
            ce.commit(ed).unwrap();
        }
        assert!(moved_padding >= 3);
        let new = ce.to_bytes().unwrap();
        // Padding really changed: some switch now starts at a different offset modulo 4.
        let o_ce = ClassEditor::parse(&bytes).unwrap();
        let n_ce = ClassEditor::parse(&new).unwrap();
        let mut changed = 0;
        for m in 0..o_ce.method_count() {
            if !o_ce.method(m).unwrap().has_code {
                continue;
            }
            let (o, r) = (o_ce.full_code(m).unwrap(), n_ce.full_code(m).unwrap());
            let os: Vec<u32> = (0..o.insns.len())
                .filter(|&i| matches!(o.insns[i], Instruction::Tableswitch(_) | Instruction::Lookupswitch(_)))
                .map(|i| o.offsets[i] % 4)
                .collect();
            let rs: Vec<u32> = (0..r.insns.len())
                .filter(|&i| matches!(r.insns[i], Instruction::Tableswitch(_) | Instruction::Lookupswitch(_)))
                .map(|i| r.offsets[i] % 4)
                .collect();
            changed += os.iter().zip(&rs).filter(|(a, b)| a != b).count();
        }
        assert!(changed >= 1, "padding changed for no switch with {nops} nops");
        total_changed += changed;
        let before = |_: usize, j: usize, i: &Instruction| {
            let mut v = Vec::new();
            if j == 0 {
                v.extend(vec![Instruction::Nop; nops]);
            }
            if matches!(i, Instruction::Tableswitch(_) | Instruction::Lookupswitch(_)) {
                v.push(Instruction::Nop);
            }
            v
        };
        check_equivalent(&bytes, &new, &before, &|_, _, _| vec![]);
        let dir = tmp.sub(&format!("nops{nops}"));
        for (f, b) in class_files(&orig) {
            std::fs::write(dir.join(&f), if f == "Switches.class" { new.clone() } else { b }).unwrap();
        }
        assert_eq!(java(&dir, "Switches"), reference);
    }
    assert!(total_changed >= 6, "padding changed {total_changed} times");
}

#[test]
fn insertions_before_branch_targets_and_handlers_run_as_part_of_them() {
    // Insert `getstatic sink; iconst_1; iadd; putstatic sink` before every instruction that
    // starts a line: jumps to such instructions run the inserted code, so `sink` counts how
    // often each line started; handlers and loop heads included.
    let src = r#"
public class Lines {
    static int sink;
    static int f(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            try {
                if (i % 3 == 0) throw new RuntimeException();
                s += i;
            } catch (RuntimeException e) {
                s -= 1;
            }
        }
        return s;
    }
    public static void main(String[] a) {
        int r = f(7);
        System.out.println("result " + r);
        System.out.println("count sink " + sink + " " + a.length);
    }
}
"#;
    let tmp = TempDir::new("lines");
    let orig = javac(&tmp, &[("Lines.java", src)]);
    let bytes = std::fs::read(orig.join("Lines.class")).unwrap();
    let mut ce = ClassEditor::parse(&bytes).unwrap();
    let sink = ce.pool().field_ref("Lines", "sink", "I").unwrap();
    let m = ce.find_method("f", "(I)I").unwrap();
    let starts: Vec<usize> = ce.full_code(m).unwrap().lines.iter().map(|l| l.0).collect();
    let mut ed = ce.method_editor(m).unwrap().unwrap();
    let probe = [Instruction::Getstatic(sink), Instruction::Iconst_1, Instruction::Iadd, Instruction::Putstatic(sink)];
    for &s in &starts {
        ed.insert_before(s, &probe).unwrap();
    }
    ce.commit(ed).unwrap();
    let new = ce.to_bytes().unwrap();
    let c = check_equivalent(
        &bytes,
        &new,
        &|mm, j, _| if mm == m && starts.contains(&j) { probe.to_vec() } else { vec![] },
        &|_, _, _| vec![],
    );
    assert!(c.methods >= 3);
    let dir = tmp.sub("probed");
    std::fs::write(dir.join("Lines.class"), &new).unwrap();
    let out = java(&dir, "Lines");
    assert!(out.contains("result 9\n"), "{out}");
    // javac's line starts in f: `s = 0` (once), `i = 0` (once), `if` (7), `s += i` (4),
    // `goto` to the update (4), the handler (3), `s -= 1` (3), the update `i++` (7: 4 by the
    // goto, 3 by falling through) and the return (once, by the loop test's branch) = 31. Each
    // probe reached by a jump (the update, the return, the handler) counts only if jumps to an
    // instruction run what was inserted before it.
    let sink: usize =
        out.lines().find(|l| l.starts_with("count sink")).unwrap().split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(sink, 31, "{out}");
}

#[test]
fn object_init_is_hooked_first() {
    // A stand-in java/lang/Object (it cannot be loaded, only rewritten and decoded).
    use ristretto_classfile::attributes::Attribute;
    use ristretto_classfile::{ClassAccessFlags, ClassFile, ConstantPool, Method, MethodAccessFlags, JAVA_17};
    let mut cp = ConstantPool::new();
    let this_class = cp.add_class("java/lang/Object").unwrap();
    let code = cp.add_utf8("Code").unwrap();
    let init = cp.add_utf8("<init>").unwrap();
    let v = cp.add_utf8("()V").unwrap();
    let other = cp.add_utf8("other").unwrap();
    let method = |name_index, body: Vec<Instruction>| Method {
        access_flags: MethodAccessFlags::PUBLIC,
        name_index,
        descriptor_index: v,
        attributes: vec![Attribute::Code {
            name_index: code,
            max_stack: 1,
            max_locals: 1,
            code: body,
            exception_table: vec![],
            attributes: vec![],
        }],
    };
    let class = ClassFile {
        version: JAVA_17,
        constant_pool: cp,
        access_flags: ClassAccessFlags::PUBLIC | ClassAccessFlags::SUPER,
        this_class,
        methods: vec![
            method(init, vec![Instruction::Return]),
            method(
                other,
                vec![
                    Instruction::Iconst_1,
                    Instruction::Newarray(ArrayType::Int),
                    Instruction::Pop,
                    Instruction::Return,
                ],
            ),
        ],
        ..ClassFile::default()
    };
    let mut bytes = Vec::new();
    class.to_bytes(&mut bytes).unwrap();
    let new = instrument_allocations(&bytes, &AllocHooks { tracker: TRACKER, keep_new: false })
        .unwrap()
        .expect("Object is rewritten");
    let mut ce = ClassEditor::parse(&new).unwrap();
    let oi = ce.pool().method_ref(TRACKER, "objectInit", "(Ljava/lang/Object;)V").unwrap();
    let na = ce.pool().method_ref(TRACKER, "newArray", "(Ljava/lang/Object;)V").unwrap();
    let init = ce.full_code(ce.find_method("<init>", "()V").unwrap()).unwrap();
    assert_eq!(init.insns, vec![Instruction::Aload_0, Instruction::Invokestatic(oi), Instruction::Return]);
    let other = ce.full_code(ce.find_method("other", "()V").unwrap()).unwrap();
    assert_eq!(
        other.insns,
        vec![
            Instruction::Iconst_1,
            Instruction::Newarray(ArrayType::Int),
            Instruction::Dup,
            Instruction::Invokestatic(na),
            Instruction::Pop,
            Instruction::Return
        ]
    );
    assert_eq!(other.max_stack, 2, "dup on top of the new array needs one more slot");
    // The real thing, through ristretto's full parser.
    ristretto_classfile::ClassFile::from_bytes(&new).expect("ristretto parses the result");
}

#[test]
fn code_too_large_is_an_error_and_the_tracker_is_left_alone() {
    // 15000 × (iconst_1; newarray; astore_1) = 60000 bytes; instrumented 120000.
    let mut src = String::from("public class TooLarge { static void f() { int[] a;\n");
    for _ in 0..15000 {
        src += "a = new int[1];\n";
    }
    src += "} }\n";
    let tmp = TempDir::new("toolarge");
    let orig = javac(&tmp, &[("TooLarge.java", &src)]);
    let bytes = std::fs::read(orig.join("TooLarge.class")).unwrap();
    let e =
        instrument_allocations(&bytes, &AllocHooks { tracker: TRACKER, keep_new: false }).expect_err("code too large");
    assert!(matches!(e.kind(), BciError::CodeTooLarge { length } if *length > 65535), "{e}");
    assert!(e.to_string().contains("TooLarge.f()V"), "{e}");
    let tracker = tracker_class(TRACKER);
    assert_eq!(instrument_allocations(&tracker, &AllocHooks { tracker: TRACKER, keep_new: false }).unwrap(), None);
    let e = instrument_allocations(b"\xca\xfe\xba\xbe\0\0", &AllocHooks { tracker: TRACKER, keep_new: false })
        .expect_err("truncated");
    assert!(matches!(e.kind(), BciError::Malformed(_)), "{e}");
    // A class without allocations is not rewritten.
    let stub = std::fs::read(orig.join("CountingTracker.class")).unwrap();
    assert_eq!(instrument_allocations(&stub, &AllocHooks { tracker: "Other", keep_new: false }).unwrap(), None);
}

#[test]
fn tracker_classes_are_well_formed() {
    for (bytes, counting) in
        [(tracker_class("JvmpiShimTracker"), false), (tracker_class_counting("a/b/Counting"), true)]
    {
        let c = ristretto_classfile::ClassFile::from_bytes(&bytes).expect("parses");
        c.verify().expect("ristretto's verifier accepts it");
        assert_eq!(c.version.major(), 52);
        let ce = ClassEditor::parse(&bytes).unwrap();
        for m in 0..ce.method_count() {
            let info = ce.method(m).unwrap();
            if info.has_code {
                let f = ce.full_code(m).unwrap();
                let last = f.insns.len() - 1;
                if !counting && m < 3 {
                    // objectInit, newArray, newObject: the call with the table's shape, then the
                    // call without (an append frame), then the `on` test's return (a chop frame).
                    assert_eq!(f.frames.len(), 2, "{}", info.name);
                    assert_eq!(f.frames[1].0, last);
                    assert!(
                        matches!(f.insns[f.frames[0].0 - 1], Instruction::Return),
                        "{}: the slow call follows a return",
                        info.name
                    );
                } else {
                    assert_eq!(f.frames.len(), 1, "one frame, at the return");
                    assert_eq!(f.frames[0].0, last);
                }
            }
        }
    }
    let ce_bytes = tracker_class("T");
    let ce = ClassEditor::parse(&ce_bytes).unwrap();
    let names: Vec<String> = (0..ce.method_count()).map(|m| ce.method(m).unwrap().name).collect();
    assert_eq!(
        names,
        [
            "objectInit",
            "newArray",
            "newObject",
            "made",
            "reflectNew",
            "onInit",
            "onNew",
            "onNewObject",
            "onMade",
            "onReflectNew",
            "onInitShaped",
            "onNewShaped",
            "onNewObjectShaped"
        ]
    );
    for m in 5..13 {
        assert_eq!(ce.method(m).unwrap().access, 0x010A, "private static native");
    }
    let shape = super::shape_class("T");
    let c = ristretto_classfile::ClassFile::from_bytes(&shape).expect("the shape class parses");
    c.verify().expect("ristretto's verifier accepts the shape class");
    let ce = ClassEditor::parse(&shape).unwrap();
    assert_eq!(ce.class_name(), "T$Shape");
    assert!(super::is_tracker_class("T", "T$Shape") && super::is_tracker_class("T", "T"));
    assert!(!super::is_tracker_class("T", "T$Other") && !super::is_tracker_class("T", "Tx"));
}

#[test]
fn inserted_code_must_be_straight_line() {
    let bytes = tracker_class_counting("T");
    let ce = ClassEditor::parse(&bytes).unwrap();
    let mut ed = ce.method_editor(0).unwrap().unwrap();
    assert!(matches!(ed.insert_before(0, &[Instruction::Goto(0)]), Err(BciError::InvalidEdit(_))));
    assert!(matches!(ed.insert_before(0, &[Instruction::Athrow]), Err(BciError::InvalidEdit(_))));
    assert!(matches!(ed.insert_before(99, &[Instruction::Nop]), Err(BciError::InvalidEdit(_))));
    let last = ed.len() - 1;
    assert!(matches!(ed.insert_after(last, &[Instruction::Nop]), Err(BciError::InvalidEdit(_))), "after a return");
    assert!(ed.insert_after(0, &[Instruction::Nop]).is_ok());
}

#[test]
fn wide_locals_long_double_slots_and_full_frames() {
    // 300 locals (wide loads/stores/iinc), longs and doubles among them, an allocation after
    // branches so frames hold them all.
    let mut src = String::from("public class Wide {\n    static long many(int x) {\n");
    for i in 0..300 {
        match i % 3 {
            0 => src += &format!("        int v{i} = x + {i};\n"),
            1 => src += &format!("        long v{i} = x * {i}L;\n"),
            _ => src += &format!("        double v{i} = x / 2.0 + {i};\n"),
        }
    }
    src += "        long s = 0;\n        for (int i = 0; i < x; i++) {\n            v297 += 1000;\n";
    src += "            long[] a = i % 2 == 0 ? new long[i + 1] : null;\n";
    src += "            s += (a == null ? 0 : a.length) + v297 + v298 + (long) v299;\n        }\n";
    src += "        int[][] m = new int[v0 % 3 + 1][2];\n        return s + m.length + v1 + (long) v2;\n    }\n";
    src += r#"
    public static void main(String[] args) {
        CountingTracker.on = true;
        int b = CountingTracker.arrays;
        System.out.println("result " + many(5));
        System.out.println("count many " + (CountingTracker.arrays - b) + " 4");
    }
}
"#;
    let c = instrument_and_run(&[("Wide.java", &src)], "Wide");
    assert!(c.methods >= 2, "{c:?}");
    // The instrumented code really uses wide forms.
    let tmp = TempDir::new("wide-check");
    let orig = javac(&tmp, &[("Wide.java", &src)]);
    let bytes = std::fs::read(orig.join("Wide.class")).unwrap();
    let ce = ClassEditor::parse(&bytes).unwrap();
    let ed = ce.method_editor(ce.find_method("many", "(I)J").unwrap()).unwrap().unwrap();
    assert!(ed
        .instructions()
        .iter()
        .any(|i| matches!(i, Instruction::Iinc_w(..) | Instruction::Lload_w(_) | Instruction::Astore_w(_))));
}

/// Finds `code` in a class file and sets the `end_pc` of the first exception table entry that
/// follows it to the code length (ristretto's writer cannot express that end).
fn patch_handler_end_to_code_length(class: &mut [u8], code: &[u8]) {
    let at = class.windows(code.len()).position(|w| w == code).expect("code bytes in the class");
    let entry = at + code.len() + 2;
    let len = (code.len() as u16).to_be_bytes();
    class[entry + 2] = len[0];
    class[entry + 3] = len[1];
}

#[test]
fn old_class_files_jsr_ret_and_a_handler_range_ending_at_the_code_length() {
    use ristretto_classfile::attributes::{Attribute, ExceptionTableEntry};
    use ristretto_classfile::{ClassAccessFlags, ClassFile, ConstantPool, Method, MethodAccessFlags, JAVA_5};
    use Instruction as I;
    let tmp = TempDir::new("old");
    let main = r#"
public class OldMain {
    public static void main(String[] a) {
        CountingTracker.on = true;
        int b = CountingTracker.arrays;
        System.out.println("result f " + Old.f(5) + " " + Old.f(0));
        System.out.println("count f " + (CountingTracker.arrays - b) + " 4");
        b = CountingTracker.arrays;
        System.out.println("result g " + Old.g(0) + " " + Old.g(3) + " " + Old.g(-1));
        System.out.println("count g " + (CountingTracker.arrays - b) + " 2");
    }
}
"#;
    let stub = "public class Old { public static int f(int n) { return 0; } public static int g(int n) { return 0; } }";
    let orig = javac(&tmp, &[("OldMain.java", main), ("Old.java", stub)]);
    // Version 49 (no stack maps; the JVM's old verifier): f uses a subroutine that allocates,
    // g has a handler *before* the code it protects, whose range ends at the code length.
    let mut cp = ConstantPool::new();
    let this_class = cp.add_class("Old").unwrap();
    let super_class = cp.add_class("java/lang/Object").unwrap();
    let code_name = cp.add_utf8("Code").unwrap();
    let desc = cp.add_utf8("(I)I").unwrap();
    let f_name = cp.add_utf8("f").unwrap();
    let g_name = cp.add_utf8("g").unwrap();
    let f_code = vec![
        I::Iload_0,
        I::Newarray(ArrayType::Int),
        I::Astore_1,
        I::Jsr(7),
        I::Aload_1,
        I::Arraylength,
        I::Ireturn,
        I::Astore_2,
        I::Iconst_1,
        I::Newarray(ArrayType::Byte),
        I::Pop,
        I::Ret(2),
    ];
    let g_code = vec![
        I::Goto(4),
        I::Pop,
        I::Iconst_m1,
        I::Ireturn,
        I::Iload_0,
        I::Newarray(ArrayType::Int),
        I::Arraylength,
        I::Ifne(10),
        I::Bipush(7),
        I::Ireturn,
        I::Aconst_null,
        I::Athrow,
    ];
    let method = |name_index, code: Vec<Instruction>, exception_table| Method {
        access_flags: MethodAccessFlags::PUBLIC | MethodAccessFlags::STATIC,
        name_index,
        descriptor_index: desc,
        attributes: vec![Attribute::Code {
            name_index: code_name,
            max_stack: 1,
            max_locals: 3,
            code,
            exception_table,
            attributes: vec![],
        }],
    };
    let handler = ExceptionTableEntry { range_pc: 4..12, handler_pc: 1, catch_type: 0 };
    let class = ClassFile {
        version: JAVA_5,
        constant_pool: cp,
        access_flags: ClassAccessFlags::PUBLIC | ClassAccessFlags::SUPER,
        this_class,
        super_class,
        methods: vec![method(f_name, f_code, vec![]), method(g_name, g_code, vec![handler])],
        ..ClassFile::default()
    };
    let mut old = Vec::new();
    class.to_bytes(&mut old).unwrap();
    // g's bytecode: goto +6; pop; iconst_m1; ireturn; iload_0; newarray int; arraylength;
    // ifne +6; bipush 7; ireturn; aconst_null; athrow.
    let g_bytes = [0xa7, 0, 6, 0x57, 0x02, 0xac, 0x1a, 0xbc, 10, 0xbe, 0x9a, 0, 6, 0x10, 7, 0xac, 0x01, 0xbf];
    patch_handler_end_to_code_length(&mut old, &g_bytes);
    std::fs::write(orig.join("Old.class"), &old).unwrap();
    let ce = ClassEditor::parse(&old).unwrap();
    let g = ce.full_code(ce.find_method("g", "(I)I").unwrap()).unwrap();
    assert_eq!(g.handlers, vec![(4, 12, 1, 0)], "the handler covers the last instruction");
    let new = instrument_allocations(&old, &AllocHooks { tracker: TRACKER, keep_new: false }).unwrap().unwrap();
    // The rewriter's shortcuts (a byte walk, `max_stack` by counting slots) on a subroutine
    // and a handler before its code: the same bytes as the full path, in every plan.
    let methods =
        MethodHooks { tracker: "M", also_skip: TRACKER, entry: true, receiver: false, exit: true, instructions: true };
    let run = |shortcuts: bool| {
        set_shortcuts(shortcuts);
        let mut n = 0;
        let mut next = |_: &str, _: &str, _: &[Lookup]| -> i32 {
            n += 1;
            n
        };
        let all = instrument_class(
            &old,
            Some(&AllocHooks { tracker: TRACKER, keep_new: false }),
            Some((&methods, &mut next)),
        )
        .unwrap();
        let alloc_only = instrument_allocations(&old, &AllocHooks { tracker: TRACKER, keep_new: false }).unwrap();
        set_shortcuts(true);
        (alloc_only, all)
    };
    let (with, without) = (run(true), run(false));
    assert_eq!(with.0.as_deref(), Some(&new[..]));
    assert!(with.1.is_some(), "every plan changes the class");
    assert!(with == without, "the shortcuts change an old class file with a subroutine");
    let (b, a) = alloc_plan(&new);
    check_equivalent(&old, &new, &b, &a);
    let ce = ClassEditor::parse(&new).unwrap();
    let g = ce.full_code(ce.find_method("g", "(I)I").unwrap()).unwrap();
    assert_eq!(g.handlers, vec![(4, 14, 1, 0)], "still up to the (new) code length");
    assert!(g.frames.is_empty(), "no StackMapTable is invented for a version-49 class");
    let f = ce.full_code(ce.find_method("f", "(I)I").unwrap()).unwrap();
    assert_eq!(f.max_stack, 2, "the subroutine's allocation raises max_stack to 2");
    let dir = tmp.sub("new");
    for (file, bytes) in class_files(&orig) {
        std::fs::write(dir.join(&file), if file == "Old.class" { new.clone() } else { bytes }).unwrap();
    }
    std::fs::write(dir.join(format!("{TRACKER}.class")), tracker_class_counting(TRACKER)).unwrap();
    check_outputs(&java(&orig, "OldMain"), &java(&dir, "OldMain"));
}

/// A nop before every instruction of every method: every index reference (branches, switches
/// and their padding, handlers, lines, local variables, frames, `Uninitialized` offsets of
/// `new`s that now have code before them) is exercised; widened branches too, for Huge.
#[test]
fn a_nop_before_every_instruction() {
    let huge = huge_source(2000, 2000);
    for (file, src, main) in [
        ("Allocs.java", ALLOCS, "Allocs"),
        ("Switches.java", SWITCHES, "Switches"),
        ("Huge.java", huge.as_str(), "Huge"),
    ] {
        let tmp = TempDir::new("nops");
        let orig = javac(&tmp, &[(file, src)]);
        let every = |_: usize, _: usize, _: &Instruction| vec![Instruction::Nop];
        let mut checked = Checked::default();
        let new = rewrite_dir(&tmp, &orig, "new", &|f, bytes| {
            if f.starts_with(TRACKER) {
                return None;
            }
            let mut ce = ClassEditor::parse(bytes).unwrap();
            for m in 0..ce.method_count() {
                let Some(mut ed) = ce.method_editor(m).unwrap() else { continue };
                for i in 0..ed.len() {
                    ed.insert_before(i, &[Instruction::Nop]).unwrap();
                }
                ce.commit(ed).unwrap();
            }
            Some(ce.to_bytes().unwrap())
        });
        for (f, bytes) in class_files(&orig) {
            if f.starts_with(TRACKER) {
                continue;
            }
            let c = check_equivalent(&bytes, &std::fs::read(new.join(&f)).unwrap(), &every, &|_, _, _| vec![]);
            checked.methods += c.methods;
            checked.widened_conds += c.widened_conds;
        }
        assert!(checked.methods >= 3, "{main}: {checked:?}");
        if main == "Huge" {
            assert!(checked.widened_conds >= 2, "{checked:?}");
        }
        // The nops change nothing; the counting tracker counts nothing (not instrumented).
        let strip = |s: String| s.lines().filter(|l| !l.starts_with("count ")).collect::<Vec<_>>().join("\n");
        assert_eq!(strip(java(&orig, main)), strip(java(&new, main)), "{main}");
    }
}

// ---------------------------------------------------------------------------------------------
// The method plan

/// A pure-Java stand-in for the methods tracker: prints one line per hook.
const METHODS_TRACKER: &str = r#"
public final class MTracker {
    static StringBuilder log = new StringBuilder();
    static boolean busy;
    static void add(String s) { if (busy) return; busy = true; log.append(s).append('\n'); busy = false; }
    public static void enter(int m) { add("enter " + m); }
    public static void enterThis(Object o, int m) { add("enter " + m + " this=" + (o == null ? "null" : o.getClass().getName())); }
    public static void exit(int m) { add("exit " + m); }
    public static void initThrow(int m) { add("exit " + m); }
    public static void insn(int m, int off) { add("insn " + m + " " + off); }
    public static void ifInt(int v, int m, int off, int op) { add("if " + m + " " + off + " op=" + op + " " + v); }
    public static void ifCmp(int a, int b, int m, int off, int op) { add("if " + m + " " + off + " op=" + op + " " + a + " " + b); }
    public static void ifRef(Object o, int m, int off, int op) { add("if " + m + " " + off + " op=" + op + " " + (o == null ? "null" : "obj")); }
    public static void ifAcmp(Object a, Object b, int m, int off, int op) { add("if " + m + " " + off + " op=" + op + " " + (a == b)); }
    public static void tableSwitch(int k, int m, int off, int lo, int hi) { add("tswitch " + m + " " + off + " " + k + " " + lo + " " + hi); }
    public static void lookupSwitch(int k, int m, int off) { add("lswitch " + m + " " + off + " " + k); }
    public static void dump() { System.out.print(log); }
}"#;

const CALLS: &str = r#"
public class Calls {
    final int v;
    Calls(int x) { super(); v = check(x); }
    Calls(String s) { this(Integer.parseInt(s)); }
    static int check(int x) { if (x < 0) throw new IllegalArgumentException("neg"); return x; }
    int twice() { return 2 * v; }
    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    static int thrower(int n) { if (n == 0) throw new RuntimeException("x"); return thrower(n - 1); }
    static int catcher() { try { return thrower(2); } catch (RuntimeException e) { return -1; } }
    static String sw(int k, Object o) {
        switch (k) { case 1: return "one"; case 2: return "two"; case 3: return "three"; }
        switch (k) { case 100: return "hundred"; case -7: return "minus"; }
        if (o == null) return "null";
        if (o != "x") return "other";
        return "x";
    }
    public static void main(String[] a) {
        int r = fib(3) + catcher() + new Calls(5).twice() + new Calls("7").twice();
        try { new Calls(-1); } catch (IllegalArgumentException e) { r += 100; }
        System.out.println("result " + r + " " + sw(2, null) + sw(100, "x") + sw(9, new Object()));
        MTracker.dump();
    }
}"#;

#[test]
fn method_plan_entry_exit_exceptions_and_instructions() {
    let tmp = TempDir::new("methods");
    let orig = javac(&tmp, &[("Calls.java", CALLS), ("MTracker.java", METHODS_TRACKER)]);
    let names = std::cell::RefCell::new(Vec::<String>::new());
    let hooks = |instructions| MethodHooks {
        tracker: "MTracker",
        also_skip: "",
        entry: true,
        receiver: true,
        exit: true,
        instructions,
    };
    for instructions in [false, true] {
        names.borrow_mut().clear();
        let dir = rewrite_dir(&tmp, &orig, if instructions { "insn" } else { "calls" }, &|f, bytes| {
            if !f.starts_with("Calls") {
                return None;
            }
            let mut next = |n: &str, d: &str, _: &[Lookup]| {
                let mut v = names.borrow_mut();
                v.push(format!("{n}{d}"));
                v.len() as i32 - 1
            };
            instrument_class(bytes, None, Some((&hooks(instructions), &mut next))).unwrap()
        });
        let out = java(&dir, "Calls");
        let names = names.borrow();
        let id = |n: &str| names.iter().position(|x| x.starts_with(n)).unwrap_or_else(|| panic!("{n} in {names:?}"));
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("result 125 twohundredother"), "{out}");
        let events: Vec<&str> = lines.collect();
        // Every enter has its exit, properly nested (main's exit is after the dump).
        let mut stack = Vec::new();
        let mut count = std::collections::HashMap::<usize, usize>::new();
        for e in events.iter().filter(|e| e.starts_with("enter ") || e.starts_with("exit ")) {
            let m: usize = e.split_whitespace().nth(1).unwrap().parse().unwrap();
            if e.starts_with("enter") {
                stack.push(m);
                *count.entry(m).or_default() += 1;
            } else {
                assert_eq!(stack.pop(), Some(m), "unbalanced exit {e}\n{out}");
            }
        }
        assert_eq!(stack, vec![id("main")], "{out}");
        assert_eq!(count[&id("fib")], 5);
        assert_eq!(count[&id("thrower")], 3);
        assert_eq!(count[&id("catcher")], 1);
        assert_eq!(count[&id("check")], 3);
        assert_eq!(count[&id("<init>(I)V")], 3);
        assert_eq!(count[&id("<init>(Ljava/lang/String;)V")], 1);
        assert!(events.contains(&format!("enter {} this=Calls", id("twice")).as_str()), "{out}");
        if instructions {
            // Offsets are those of the original code.
            let raw = std::fs::read(orig.join("Calls.class")).unwrap();
            let ce = ClassEditor::parse(&raw).unwrap();
            let m = ce.find_method("fib", "(I)I").unwrap();
            let ed = ce.method_editor(m).unwrap().unwrap();
            let fib = id("fib");
            let first: Vec<u32> = events
                .iter()
                .filter_map(|e| e.strip_prefix(&format!("insn {fib} ")).or(e.strip_prefix(&format!("if {fib} "))))
                .take(3)
                .map(|s| s.split_whitespace().next().unwrap().parse().unwrap())
                .collect();
            assert_eq!(first, vec![ed.original_offset(0), ed.original_offset(1), ed.original_offset(2)], "{out}");
            let sw = id("sw");
            assert!(events.iter().any(|e| e.starts_with(&format!("tswitch {sw} ")) && e.ends_with(" 2 1 3")), "{out}");
            assert!(events.iter().any(|e| e.starts_with(&format!("lswitch {sw} ")) && e.ends_with(" 100")), "{out}");
            // fib(3): n < 2 compares (if_icmpge, 0xa2) with operands n and 2.
            assert!(events.iter().any(|e| e.starts_with(&format!("if {fib} ")) && e.ends_with("op=162 3 2")), "{out}");
            assert!(events.iter().any(|e| e.starts_with(&format!("if {sw} ")) && e.contains("op=199 obj")), "{out}");
        }
    }
}

#[test]
fn catch_all_covers_the_code_after_the_entry_hook() {
    let tmp = TempDir::new("catchall");
    let orig = javac(&tmp, &[("Calls.java", CALLS), ("MTracker.java", METHODS_TRACKER)]);
    let raw = std::fs::read(orig.join("Calls.class")).unwrap();
    let mut ce2 = ClassEditor::parse(&raw).unwrap();
    let m = ce2.find_method("thrower", "(I)I").unwrap();
    let mut ed = ce2.method_editor(m).unwrap().unwrap();
    let n = ed.len();
    plan_method(
        &mut ce2,
        m,
        &mut ed,
        &MethodHooks {
            tracker: "MTracker",
            also_skip: "",
            entry: true,
            receiver: true,
            exit: true,
            instructions: false,
        },
        7,
    )
    .unwrap();
    ce2.commit(ed).unwrap();
    let bytes = ce2.to_bytes().unwrap();
    let new = ClassEditor::parse(&bytes).unwrap();
    let full = new.full_code(m).unwrap();
    let (s, e, h, t) = *full.handlers.last().unwrap();
    assert_eq!((s, t), (2, 0), "after `bipush 7; invokestatic enter`");
    assert_eq!(e, h);
    assert_eq!(h + 3, full.insns.len(), "handler: push, exit, athrow");
    assert!(matches!(full.insns.last(), Some(Instruction::Athrow)));
    let (at, f) = full.frames.last().unwrap();
    assert_eq!(*at, h);
    assert!(f.locals.is_empty() && f.stack == vec![VType::object(b"java/lang/Throwable")]);
    assert!(full.insns.len() > n + 5);
}

const NATIVES: &str = r#"
public class Nat {
    static native long mix(int a, long b, double c, float d, Object e, int[] f, boolean g, byte h, char i, short j);
    native synchronized double inst(double x, String y);
    static native void none();
    static native int[] arr(long[][] a);
    public static void main(String[] args) {
        String[] names = {"mix", "inst", "none", "arr"};
        for (int k = 0; k < 4; k++) {
            try {
                switch (k) {
                    case 0: mix(1, 2L, 3.0, 4f, null, null, true, (byte) 5, 'c', (short) 6); break;
                    case 1: new Nat().inst(1.0, "s"); break;
                    case 2: none(); break;
                    default: arr(null);
                }
            } catch (UnsatisfiedLinkError e) {
                System.out.println("unbound " + names[k] + " " + e.getMessage().contains("jvmpiShim$" + names[k]));
            }
        }
        MTracker.dump();
    }
}"#;

/// Native methods wrapped in Java methods (JVMTI native method prefixes): every kind of
/// argument is passed on (the wrapper verifies and calls the renamed native, which no library
/// implements here: UnsatisfiedLinkError names it), the wrapper gets entry and exit — also by
/// that exception — and never instruction hooks; access flags move as documented.
#[test]
fn native_wrappers_pass_every_argument_and_exit_by_exception() {
    let tmp = TempDir::new("natives");
    let orig = javac(&tmp, &[("Nat.java", NATIVES), ("MTracker.java", METHODS_TRACKER)]);
    let raw = std::fs::read(orig.join("Nat.class")).unwrap();
    let all = |_: &str, _: &str| true;
    let wrap = NativeWrap { prefix: "jvmpiShim$", choose: &all };
    for hooked in [false, true] {
        let names = std::cell::RefCell::new(Vec::<String>::new());
        let hooks = MethodHooks {
            tracker: "MTracker",
            also_skip: "",
            entry: true,
            receiver: true,
            exit: true,
            instructions: true,
        };
        let dir = rewrite_dir(&tmp, &orig, if hooked { "hooked" } else { "plain" }, &|f, bytes| {
            if !f.starts_with("Nat") {
                return None;
            }
            let mut next = |n: &str, d: &str, _: &[Lookup]| {
                let mut v = names.borrow_mut();
                v.push(format!("{n}{d}"));
                v.len() as i32 - 1
            };
            let methods = hooked.then_some((&hooks, &mut next as &mut dyn FnMut(&str, &str, &[Lookup]) -> i32));
            let (out, n) = instrument_class_wrapping(bytes, None, methods, Some(&wrap)).unwrap();
            assert_eq!(n, 4);
            out
        });
        let out = java(&dir, "Nat");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[..4],
            ["unbound mix true", "unbound inst true", "unbound none true", "unbound arr true"],
            "{out}"
        );
        let names = names.borrow();
        for m in ["mix", "inst", "none", "arr"] {
            let events: Vec<&str> = lines.iter().copied().filter(|l| !l.starts_with("unbound")).collect();
            if !hooked {
                assert!(events.is_empty(), "{out}");
                continue;
            }
            let id = names
                .iter()
                .position(|x| x.starts_with(&format!("{m}(")))
                .unwrap_or_else(|| panic!("{m} in {names:?}"));
            let mine: Vec<&str> = events
                .iter()
                .copied()
                .filter(|e| e.split_whitespace().nth(1) == Some(id.to_string().as_str()))
                .collect();
            let enter = if m == "inst" { format!("enter {id} this=Nat") } else { format!("enter {id}") };
            assert_eq!(mine, [enter.as_str(), &format!("exit {id}")], "{out}");
        }
        assert!(!names.iter().any(|n| n.starts_with("jvmpiShim$")), "the renamed natives have no code: {names:?}");
    }
    // The class: four more methods; wrappers keep the access (less native), natives are private.
    let (bytes, _) = instrument_class_wrapping(&raw, None, None, Some(&wrap)).unwrap();
    let ce = ClassEditor::parse(bytes.as_deref().unwrap()).unwrap();
    let before = ClassEditor::parse(&raw).unwrap().method_count();
    assert_eq!(ce.method_count(), before + 4);
    let inst = ce.method(ce.find_method("inst", "(DLjava/lang/String;)D").unwrap()).unwrap();
    assert_eq!(inst.access, 0x0020, "synchronized, no longer native");
    let renamed = ce.method(ce.find_method("jvmpiShim$inst", "(DLjava/lang/String;)D").unwrap()).unwrap();
    assert_eq!(renamed.access, 0x1000 | 0x0100 | 0x0010 | 0x0002, "synthetic native final private");
    let mix = ce.method(ce.find_method("jvmpiShim$mix", "(IJDFLjava/lang/Object;[IZBCS)J").unwrap()).unwrap();
    assert_eq!(mix.access, 0x1000 | 0x0100 | 0x0008 | 0x0002, "synthetic native static private");
    // Wrapping again what is wrapped changes nothing (the renamed natives are never chosen).
    let (again, n) = instrument_class_wrapping(bytes.as_deref().unwrap(), None, None, Some(&wrap)).unwrap();
    assert_eq!((again, n), (None, 0));
}

/// The modules of the crate and the modules each one names (`super::m::…`, or an item the crate
/// root re-exports from `m`), read from the sources; comment lines are not read, nor the tests.
fn module_arrows(sources: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let lib = &sources["lib"];
    // `pub use m::{a, b};` / `pub use m::a;` in lib.rs: a → m.
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(rest) = stmt.trim_start().strip_prefix("pub use ") else { continue };
        let Some((m, names)) = rest.split_once("::") else { continue };
        if sources.contains_key(m) {
            for n in names.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|n| !n.is_empty()) {
                reexports.insert(n.to_string(), m.to_string());
            }
        }
    }
    let mut arrows = BTreeMap::new();
    for (module, text) in sources.iter().filter(|(m, _)| *m != "lib" && *m != "tests") {
        let code: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
        let mut to = BTreeSet::new();
        for (i, _) in code.match_indices("super::") {
            let rest = &code[i + "super::".len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                group.split('}').next().unwrap_or("").split(',').map(str::trim).collect()
            } else {
                vec![rest]
            };
            for name in names {
                let first: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if sources.contains_key(&first) {
                    to.insert(first);
                } else if let Some(m) = reexports.get(&first) {
                    to.insert(m.clone());
                }
            }
        }
        to.remove(module);
        arrows.insert(module.clone(), to);
    }
    arrows
}

/// A module that reaches itself through the arrows, if any.
fn circle(arrows: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    fn reaches(
        from: &str,
        target: &str,
        arrows: &BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        arrows
            .get(from)
            .into_iter()
            .flatten()
            .any(|next| next == target || (seen.insert(next.clone()) && reaches(next, target, arrows, seen)))
    }
    arrows.keys().find(|m| reaches(m, m, arrows, &mut BTreeSet::new())).cloned()
}

/// The modules depend on each other one way, as the crate docs draw them: the pool at the
/// bottom, then frames, code, classfile, the allocation plan, the method plan; `sites` alone.
#[test]
fn modules_form_no_circle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("src/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            let stem = path.file_stem().expect("stem").to_string_lossy().into_owned();
            sources.insert(stem, std::fs::read_to_string(&path).expect("read"));
        }
    }
    let arrows = module_arrows(&sources);
    let of = |m: &str| arrows[m].iter().map(String::as_str).collect::<Vec<_>>();
    assert_eq!(of("pool"), Vec::<&str>::new());
    assert_eq!(of("frames"), ["pool"]);
    assert_eq!(of("code"), ["frames", "pool"]);
    assert_eq!(of("classfile"), ["code", "pool"]);
    assert_eq!(of("alloc_plan"), ["classfile", "code"]);
    assert_eq!(of("method_plan"), ["alloc_plan", "classfile", "code", "pool"]);
    assert_eq!(of("sites"), Vec::<&str>::new());
    assert_eq!(circle(&arrows), None, "{arrows:?}");
    // The check finds a circle: the pool naming the class editor, directly or by a re-export.
    for planted in ["fn f(_: super::classfile::RawMethod) {}", "fn f(_: super::ClassEditor<'_>) {}"] {
        let mut s = sources.clone();
        s.get_mut("pool").expect("pool.rs").push_str(planted);
        assert!(circle(&module_arrows(&s)).is_some(), "{planted}");
    }
}
