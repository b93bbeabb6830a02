//! HEAP_DUMP (levels 0, 1, 2) and OBJECT_DUMP: a reader that parses the bytes the agent got the
//! way old tools did (record by record, field values by the CLASS_LOAD field lists), checks
//! every cross-reference, and finds the values the Java program set.

mod harness;

use harness::*;
use std::collections::{HashMap, HashSet};
use std::path::Path;

const W: usize = 8;

#[derive(Debug, Default, Clone)]
struct ClassLoad {
    name: String,
    interfaces: usize,
    statics: Vec<(String, String)>,
    instances: Vec<(String, String)>,
}

#[derive(Debug, Default)]
struct Agent {
    classes: HashMap<u64, ClassLoad>,
    threads: HashSet<u64>,
    lines: Vec<String>,
}

fn hex(s: &str) -> u64 {
    if s == "(nil)" {
        0
    } else {
        u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
    }
}

fn read_agent(prefix: &Path) -> Agent {
    let text = std::fs::read_to_string(prefix.with_extension("txt")).unwrap_or_default();
    let mut a = Agent::default();
    for l in text.lines() {
        let w: Vec<&str> = l.split(' ').collect();
        match w[0] {
            "CLASS" => {
                let mut c = ClassLoad { name: w[2].into(), interfaces: w[3].parse().unwrap(), ..Default::default() };
                let ns: usize = w[5].parse().unwrap();
                let mut i = 6;
                for _ in 0..ns {
                    c.statics.push((w[i].into(), w[i + 1].into()));
                    i += 2;
                }
                let ni: usize = w[i + 1].parse().unwrap();
                i += 2;
                for _ in 0..ni {
                    c.instances.push((w[i].into(), w[i + 1].into()));
                    i += 2;
                }
                a.classes.insert(hex(w[1]), c);
            }
            "THREAD" => {
                a.threads.insert(hex(w[1]));
            }
            _ => {}
        }
        a.lines.push(l.to_string());
    }
    a
}

#[derive(Debug, Clone)]
enum Rec {
    Root {
        kind: u8,
        obj: u64,
        env: u64,
        frame: Option<i32>,
    },
    Class {
        id: u64,
        sup: u64,
        loader: u64,
        signers: u64,
        domain: u64,
        size: u32,
        interfaces: Vec<u64>,
        statics: Vec<u8>,
    },
    Instance {
        id: u64,
        class: u64,
        data: Vec<u8>,
    },
    ObjArray {
        id: u64,
        class: u64,
        elems: Vec<u64>,
    },
    PrimArray {
        id: u64,
        ty: u8,
        n: usize,
        data: Vec<u8>,
    },
}

struct R<'a> {
    b: &'a [u8],
    p: usize,
}
impl R<'_> {
    fn u1(&mut self) -> u8 {
        self.p += 1;
        self.b[self.p - 1]
    }
    fn u2(&mut self) -> u16 {
        self.p += 2;
        u16::from_be_bytes(self.b[self.p - 2..self.p].try_into().unwrap())
    }
    fn u4(&mut self) -> u32 {
        self.p += 4;
        u32::from_be_bytes(self.b[self.p - 4..self.p].try_into().unwrap())
    }
    fn id(&mut self) -> u64 {
        self.p += W;
        u64::from_ne_bytes(self.b[self.p - W..self.p].try_into().unwrap())
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        self.p += n;
        assert!(self.p <= self.b.len(), "record runs past the end of the dump");
        self.b[self.p - n..self.p].to_vec()
    }
}

fn sig_size(sig: &str, level: u8) -> usize {
    match sig.as_bytes()[0] {
        b'L' | b'[' => W,
        _ if level == 1 => 0,
        b'Z' | b'B' => 1,
        b'C' | b'S' => 2,
        b'I' | b'F' => 4,
        _ => 8,
    }
}

fn prim_size(ty: u8) -> usize {
    match ty {
        4 | 8 => 1,
        5 | 9 => 2,
        6 | 10 => 4,
        7 | 11 => 8,
        _ => panic!("bad primitive type {ty}"),
    }
}

/// Parses a level 1/2 dump (or an object dump) record by record.
fn parse(b: &[u8], level: u8, a: &Agent) -> Vec<Rec> {
    let mut r = R { b, p: 0 };
    let mut out = Vec::new();
    while r.p < b.len() {
        let t = r.u1();
        let rec = match t {
            0xff | 0x05 | 0x07 => Rec::Root { kind: t, obj: r.id(), env: 0, frame: None },
            0x01 => {
                let obj = r.id();
                let _ref = r.id();
                Rec::Root { kind: t, obj, env: 0, frame: None }
            }
            0x02 | 0x03 => Rec::Root { kind: t, obj: r.id(), env: r.id(), frame: Some(r.u4() as i32) },
            0x04 | 0x06 => Rec::Root { kind: t, obj: r.id(), env: r.id(), frame: None },
            0x20 => {
                let id = r.id();
                let (sup, loader, signers, domain) = (r.id(), r.id(), r.id(), r.id());
                let (_r1, _r2) = (r.id(), r.id());
                let size = r.u4();
                let cl = a.classes.get(&id).unwrap_or_else(|| panic!("CLASS_DUMP of {id:#x}: no CLASS_LOAD"));
                let interfaces = (0..cl.interfaces).map(|_| r.id()).collect();
                let cp = r.u2();
                assert_eq!(cp, 0, "constant pool entries");
                let n: usize = cl.statics.iter().map(|(_, s)| sig_size(s, level)).sum();
                Rec::Class { id, sup, loader, signers, domain, size, interfaces, statics: r.bytes(n) }
            }
            0x21 => {
                let (id, class) = (r.id(), r.id());
                let n = r.u4() as usize;
                Rec::Instance { id, class, data: r.bytes(n) }
            }
            0x22 => {
                let id = r.id();
                let n = r.u4() as usize;
                let class = r.id();
                Rec::ObjArray { id, class, elems: (0..n).map(|_| r.id()).collect() }
            }
            0x23 => {
                let id = r.id();
                let n = r.u4() as usize;
                let ty = r.u1();
                let data = if level == 2 { r.bytes(n * prim_size(ty)) } else { Vec::new() };
                Rec::PrimArray { id, ty, n, data }
            }
            _ => panic!(
                "unknown record type {t:#x} at {} after {:?}",
                r.p - 1,
                out.last().map(|r: &Rec| format!("{r:?}").chars().take(300).collect::<String>())
            ),
        };
        out.push(rec);
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum V {
    Ref(u64),
    Prim(Vec<u8>),
}

struct Heap<'a> {
    a: &'a Agent,
    level: u8,
    recs: HashMap<u64, Rec>,
}

impl Heap<'_> {
    fn new(a: &Agent, level: u8, recs: &[Rec]) -> Heap<'static> {
        let mut map = HashMap::new();
        for r in recs {
            let id = match r {
                Rec::Class { id, .. }
                | Rec::Instance { id, .. }
                | Rec::ObjArray { id, .. }
                | Rec::PrimArray { id, .. } => *id,
                Rec::Root { .. } => continue,
            };
            assert!(map.insert(id, r.clone()).is_none(), "two records for {id:#x}");
        }
        let a: &'static Agent =
            Box::leak(Box::new(Agent { classes: a.classes.clone(), threads: a.threads.clone(), lines: vec![] }));
        Heap { a, level, recs: map }
    }
    fn super_of(&self, class: u64) -> u64 {
        match self.recs.get(&class) {
            Some(Rec::Class { sup, .. }) => *sup,
            _ => panic!("no CLASS_DUMP for {class:#x}"),
        }
    }
    /// Instance field values by (class name, field name), decoded with the CLASS_LOAD lists.
    fn fields(&self, id: u64) -> HashMap<String, V> {
        let Some(Rec::Instance { class, data, .. }) = self.recs.get(&id) else { panic!("{id:#x} is no instance") };
        let mut out = HashMap::new();
        let mut p = 0;
        let mut c = *class;
        while c != 0 {
            let cl = &self.a.classes[&c];
            for (n, s) in &cl.instances {
                let k = sig_size(s, self.level);
                if k == 0 {
                    continue;
                }
                let v = &data[p..p + k];
                p += k;
                let v = if s.starts_with('L') || s.starts_with('[') {
                    V::Ref(u64::from_ne_bytes(v.try_into().unwrap()))
                } else {
                    V::Prim(v.to_vec())
                };
                out.insert(format!("{}.{n}", cl.name), v);
            }
            c = self.super_of(c);
        }
        assert_eq!(p, data.len(), "instance {id:#x}: field bytes");
        out
    }
    fn statics(&self, class: u64) -> HashMap<String, V> {
        let Some(Rec::Class { statics, .. }) = self.recs.get(&class) else { panic!() };
        let cl = &self.a.classes[&class];
        let mut out = HashMap::new();
        let mut p = 0;
        for (n, s) in &cl.statics {
            let k = sig_size(s, self.level);
            if k == 0 {
                continue;
            }
            let v = &statics[p..p + k];
            p += k;
            let v = if s.starts_with('L') || s.starts_with('[') {
                V::Ref(u64::from_ne_bytes(v.try_into().unwrap()))
            } else {
                V::Prim(v.to_vec())
            };
            out.insert(n.clone(), v);
        }
        out
    }
    fn class_named(&self, name: &str) -> u64 {
        *self.a.classes.iter().find(|(_, c)| c.name == name).unwrap_or_else(|| panic!("no CLASS_LOAD {name}")).0
    }
    fn instances_of(&self, name: &str) -> Vec<u64> {
        let k = self.class_named(name);
        self.recs
            .values()
            .filter_map(|r| match r {
                Rec::Instance { id, class, .. } if *class == k => Some(*id),
                _ => None,
            })
            .collect()
    }
    /// The text of a java.lang.String (JDK 9+: byte[] value + coder; JDK 8-: char[]).
    fn string(&self, id: u64) -> String {
        let f = self.fields(id);
        let V::Ref(arr) = f["java.lang.String.value"] else { panic!() };
        let Some(Rec::PrimArray { ty, data, .. }) = self.recs.get(&arr) else {
            panic!("String value {arr:#x} has no record")
        };
        let coder = match f.get("java.lang.String.coder") {
            Some(V::Prim(b)) => b[0],
            _ => 0,
        };
        if *ty == 5 || coder == 1 {
            let u: Vec<u16> = data
                .chunks(2)
                .map(|c| if *ty == 5 { u16::from_be_bytes([c[0], c[1]]) } else { u16::from_le_bytes([c[0], c[1]]) })
                .collect();
            String::from_utf16_lossy(&u)
        } else {
            data.iter().map(|&b| b as char).collect()
        }
    }
}

fn prim(v: &V) -> &[u8] {
    match v {
        V::Prim(b) => b,
        V::Ref(_) => panic!("not a primitive"),
    }
}
fn refv(v: &V) -> u64 {
    match v {
        V::Ref(r) => *r,
        V::Prim(_) => panic!("not a reference"),
    }
}

fn run_dumps(jdk: &Jdk, mode: &str) -> (Run, Agent, std::path::PathBuf) {
    let lib = agent("dumpagent");
    let prefix = fresh_log_path(&format!("dumps-{mode}-{}", jdk.feature)).with_extension("");
    let r = run(jdk, &format!("agent={}:out={}", lib.display(), prefix.display()), "Dumps", &[mode], &[]);
    r.assert_ok();
    let a = read_agent(&prefix);
    (r, a, prefix)
}

fn bin(prefix: &Path, seq: usize) -> Vec<u8> {
    std::fs::read(format!("{}.{seq}.bin", prefix.display())).unwrap()
}

/// Every reference of a level 1/2 dump names a record of the dump or an announced class.
fn check_references(h: &Heap, recs: &[Rec]) -> usize {
    let known = |id: u64| id == 0 || h.recs.contains_key(&id) || h.a.classes.contains_key(&id);
    let mut missing = HashSet::new();
    let mut check = |id: u64| {
        if !known(id) {
            missing.insert(id);
        }
    };
    for r in recs {
        match r {
            Rec::Root { kind, obj, env, .. } => {
                check(*obj);
                if matches!(kind, 2 | 3 | 6) {
                    assert!(
                        *env == 0 || h.a.threads.contains(env),
                        "root {kind} names thread {env:#x}, never announced"
                    );
                }
            }
            Rec::Class { sup, loader, signers, domain, interfaces, .. } => {
                [*sup, *loader, *signers, *domain].into_iter().chain(interfaces.iter().copied()).for_each(&mut check)
            }
            Rec::Instance { id, class, .. } => {
                assert!(h.a.classes.contains_key(class), "instance {id:#x} of unannounced class {class:#x}");
                for v in h.fields(*id).values() {
                    if let V::Ref(x) = v {
                        check(*x);
                    }
                }
            }
            Rec::ObjArray { class, elems, .. } => {
                check(*class);
                elems.iter().copied().for_each(&mut check);
            }
            Rec::PrimArray { .. } => {}
        }
    }
    for r in recs {
        if let Rec::Class { id, .. } = r {
            h.statics(*id).values().for_each(|v| {
                if let V::Ref(x) = v {
                    check(*x)
                }
            });
        }
    }
    if !missing.is_empty() {
        let some: Vec<_> = missing.iter().take(5).collect();
        for r in recs {
            let s = format!("{r:?}");
            if some.iter().any(|m| s.contains(&format!("{m}"))) {
                eprintln!("MISSING {some:?} in {}", s.chars().take(400).collect::<String>());
            }
        }
    }
    missing.len()
}

#[test]
fn heap_dump_levels_0_1_2() {
    for_each_jdk(|jdk| {
        let (r, a, prefix) = run_dumps(jdk, "heap");
        for l in 0..4 {
            let want = format!("heapDump({})=0", [0, 1, 2, -1][l]);
            assert!(r.stdout.contains(&want), "{want}\n{}", r.describe());
        }
        let heads: Vec<&String> = a.lines.iter().filter(|l| l.starts_with("HEAP ")).collect();
        assert_eq!(heads.len(), 4, "{:?}", a.lines.iter().filter(|l| !l.starts_with("CLASS")).collect::<Vec<_>>());
        assert!(heads.iter().all(|l| l.ends_with("requested=1")));
        // Level 0: (ty, id) records, IDs unique, every one resolvable with RequestEvent.
        let b0 = bin(&prefix, 1);
        assert_eq!(b0.len() % (1 + W), 0);
        let mut ids0 = HashSet::new();
        for rec in b0.chunks(1 + W) {
            assert!(matches!(rec[0], 0 | 2 | 4..=11), "level 0 type {}", rec[0]);
            assert!(ids0.insert(u64::from_ne_bytes(rec[1..].try_into().unwrap())), "duplicate ID at level 0");
        }
        let res = a.lines.iter().find(|l| l.starts_with("RESOLVE 1 ")).unwrap();
        assert!(res.ends_with(" fail=0"), "{res}");
        assert!(ids0.len() > 1000, "{} objects", ids0.len());
        for (seq, level) in [(2usize, 1u8), (3, 2), (4, 2)] {
            let b = bin(&prefix, seq);
            let recs = parse(&b, level, &a);
            let h = Heap::new(&a, level, &recs);
            let missing = check_references(&h, &recs);
            assert_eq!(missing, 0, "level {level}: unresolvable IDs");
            // Roots: frames of main with the Holder local, sticky classes, threads.
            let kinds: HashSet<u8> =
                recs.iter().filter_map(|r| if let Rec::Root { kind, .. } = r { Some(*kind) } else { None }).collect();
            for k in [0x03u8, 0x05, 0x06] {
                assert!(kinds.contains(&k), "level {level}: no root of kind {k:#x}: {kinds:?}");
            }
            let holders = h.instances_of("Dumps$Holder");
            assert_eq!(holders.len(), 1);
            let hid = holders[0];
            let f = h.fields(hid);
            let frame_root = recs
                .iter()
                .any(|r| matches!(r, Rec::Root { kind: 3, obj, frame: Some(n), .. } if *obj == hid && *n >= 1));
            assert!(frame_root, "level {level}: the Holder is no Java frame root");
            let items = refv(&f["Dumps$Holder.items"]);
            assert_eq!(refv(&f["Dumps$Base.baseRef"]), items);
            let Some(Rec::ObjArray { elems, class, .. }) = h.recs.get(&items) else { panic!("items") };
            assert_eq!(h.a.classes[class].name, "java.lang.Object");
            assert_eq!(elems.len(), 4);
            assert_eq!(elems[2], 0);
            assert_eq!(elems[3], hid);
            if level == 2 {
                assert_eq!(prim(&f["Dumps$Holder.answer"]), 42i32.to_be_bytes());
                assert_eq!(prim(&f["Dumps$Base.baseInt"]), 11i32.to_be_bytes());
                assert_eq!(prim(&f["Dumps$Holder.big"]), 0x1122334455667788i64.to_be_bytes());
                assert_eq!(prim(&f["Dumps$Holder.b"]), [0xfe]);
                assert_eq!(prim(&f["Dumps$Holder.c"]), [0, b'Z']);
                assert_eq!(prim(&f["Dumps$Holder.sh"]), (-300i16).to_be_bytes());
                assert_eq!(prim(&f["Dumps$Holder.d"]), 1.5f64.to_bits().to_be_bytes());
                assert_eq!(prim(&f["Dumps$Holder.fl"]), 2.25f32.to_bits().to_be_bytes());
                assert_eq!(prim(&f["Dumps$Holder.flag"]), [1]);
                assert_eq!(h.string(refv(&f["Dumps$Holder.text"])), "hello dump");
                assert_eq!(h.string(elems[0]), "x");
                let int = h.fields(elems[1]);
                assert_eq!(prim(&int["java.lang.Integer.value"]), 5i32.to_be_bytes());
                let hk = h.class_named("Dumps$Holder");
                let s = h.statics(hk);
                assert_eq!(prim(&s["counter"]), 99i32.to_be_bytes());
                assert_eq!(h.string(refv(&s["label"])), "static label");
                let bs = h.statics(h.class_named("Dumps$Base"));
                assert_eq!(prim(&bs["baseStatic"]), (-5i64).to_be_bytes());
                let ints = refv(&h.statics(h.class_named("Dumps"))["ints"]);
                let Some(Rec::PrimArray { ty: 10, n: 4, data, .. }) = h.recs.get(&ints) else { panic!("ints") };
                assert_eq!(data[12..16], 0x7fffffffi32.to_be_bytes());
            }
            let Some(Rec::Class { sup, size, interfaces, .. }) = h.recs.get(&h.class_named("Dumps$Holder")) else {
                panic!()
            };
            assert_eq!(*sup, h.class_named("Dumps$Base"));
            assert_eq!(interfaces, &vec![h.class_named("Dumps$Konst")]);
            assert!(*size >= 40, "instance size {size}");
            let traces = a
                .lines
                .iter()
                .skip_while(|l| !l.starts_with(&format!("HEAP {seq} ")))
                .skip(1)
                .take_while(|l| l.starts_with("TRACE "))
                .count();
            assert!(traces >= 2, "level {level}: {traces} traces");
        }
    });
}

#[test]
fn class_load_lists_fields_in_reverse_declaration_order() {
    for_each_jdk(|jdk| {
        let (_r, a, _) = run_dumps(jdk, "heap");
        let h = a.classes.values().find(|c| c.name == "Dumps$Holder").unwrap();
        let names: Vec<&str> = h.instances.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, ["fl", "sh", "flag", "d", "c", "b", "items", "text", "big", "answer"]);
        let s: Vec<&str> = h.statics.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(s, ["label", "counter"]);
    });
}

#[test]
fn object_dump_of_each_record_kind() {
    for_each_jdk(|jdk| {
        let (r, a, prefix) = run_dumps(jdk, "object");
        assert_eq!(r.stdout.matches("objectDump=0").count(), 5, "{}", r.describe());
        let kinds: Vec<u8> = (1..=5).map(|s| bin(&prefix, s)[0]).collect();
        assert_eq!(kinds, [0x21, 0x22, 0x23, 0x20, 0x21]);
        for s in 1..=5 {
            let recs = parse(&bin(&prefix, s), 2, &a);
            assert_eq!(recs.len(), 1, "object dump {s}: one record");
        }
        let recs = parse(&bin(&prefix, 1), 2, &a);
        let h = Heap::new(&a, 2, &recs);
        let Rec::Instance { id, .. } = &recs[0] else { panic!() };
        let holder_class = h.class_named("Dumps$Holder");
        let Rec::Instance { class, data, .. } = &recs[0] else { panic!() };
        assert_eq!(*class, holder_class);
        // answer is the last of Holder's own fields in the record (reverse declaration order).
        let own: usize = a.classes[&holder_class].instances.iter().map(|f| sig_size(&f.1, 2)).sum();
        assert_eq!(data[own - 4..own], 42i32.to_be_bytes(), "{id:#x}");
        let recs = parse(&bin(&prefix, 3), 2, &a);
        let Rec::PrimArray { ty: 10, n: 4, data, .. } = &recs[0] else { panic!("{recs:?}") };
        assert_eq!(data[..4], 1i32.to_be_bytes());
    });
}

/// One monitor record as the agent parsed it: (object or name, handle, owner, entry count,
/// waiting to enter, waiting to be notified).
#[derive(Debug)]
struct Mon {
    what: String,
    handle: u64,
    owner: u64,
    entry: u32,
    enter: Vec<u64>,
    notify: Vec<u64>,
}

fn env_list(s: &str, label: &str) -> Vec<u64> {
    let v = s.strip_prefix(label).unwrap_or_else(|| panic!("{s}: no {label}"));
    if v.is_empty() {
        Vec::new()
    } else {
        v.split(',').map(hex).collect()
    }
}

/// Before JDK 16 the shim does not take `can_get_owned_monitor_info` unless asked
/// (`owned-monitors=yes`): it turns C2's escape analysis off. Without it a monitor owned with
/// nobody waiting ("mine") is not listed; with it, it is.
#[test]
fn monitor_dump_shows_a_deadlock() {
    for_each_jdk(|jdk| {
        let owned_by_default = jdk.feature >= 16;
        check_monitor_dump(jdk, "", owned_by_default);
        if !owned_by_default {
            check_monitor_dump(jdk, "owned-monitors=yes,", true);
        }
    });
}

fn check_monitor_dump(jdk: &Jdk, shim_options: &str, owned_listed: bool) {
    {
        let lib = agent("dumpagent");
        let prefix = fresh_log_path(&format!("dumps-monitor-{}-{}", jdk.feature, owned_listed)).with_extension("");
        let r = run(
            jdk,
            &format!("{shim_options}agent={}:out={}", lib.display(), prefix.display()),
            "Dumps",
            &["monitor"],
            &[],
        );
        r.assert_ok();
        let a = read_agent(&prefix);
        assert!(r.stdout.contains("monitorDump=0"), "{}", r.describe());
        let text = std::fs::read_to_string(prefix.with_extension("txt")).unwrap();
        let field = |l: &str, i: usize| l.split(' ').nth(i).unwrap().to_string();
        let env_of = |name: &str| -> u64 {
            let l = a.lines.iter().find(|l| l.starts_with("THREAD ") && l.ends_with(&format!(" {name}")));
            hex(&field(l.unwrap_or_else(|| panic!("no THREAD_START for {name}")), 1))
        };
        let obj = |name: &str| hex(&field(a.lines.iter().find(|l| l.starts_with(&format!("OBJ {name} "))).unwrap(), 2));
        let rawmon =
            |name: &str| hex(&field(a.lines.iter().find(|l| l.starts_with(&format!("RAWMON {name} "))).unwrap(), 2));
        assert!(text.contains("MONDUMP 1 ") && text.contains("MONPARSED 1 ok"), "{text}");
        assert!(a.lines.iter().any(|l| l.starts_with("MONDUMP 1 ") && l.ends_with("requested=1")));
        let mut mons = Vec::new();
        for l in &a.lines {
            let w: Vec<&str> = l.split(' ').collect();
            match w[0] {
                "MJAVA" => mons.push(Mon {
                    what: w[1].into(),
                    handle: 0,
                    owner: hex(w[2]),
                    entry: w[3].parse().unwrap(),
                    enter: env_list(w[4], "enter="),
                    notify: env_list(w[5], "notify="),
                }),
                "MRAW" => {
                    // The name may hold spaces: the handle is the fourth word from the end.
                    let n = w.len();
                    mons.push(Mon {
                        what: w[1..n - 5].join(" "),
                        handle: hex(w[n - 5]),
                        owner: hex(w[n - 4]),
                        entry: w[n - 3].parse().unwrap(),
                        enter: env_list(w[n - 2], "enter="),
                        notify: env_list(w[n - 1], "notify="),
                    })
                }
                _ => {}
            }
        }
        let java = |id: u64| {
            mons.iter()
                .find(|m| m.handle == 0 && hex(&m.what) == id)
                .unwrap_or_else(|| panic!("no record of {id:#x}: {mons:?}"))
        };
        let (ea, eb, ew, main) = (env_of("deadlock-A"), env_of("deadlock-B"), env_of("waiter"), env_of("main"));
        // The deadlock: each thread owns one lock and waits to enter the other.
        let la = java(obj("lockA"));
        let lb = java(obj("lockB"));
        assert_eq!((la.owner, &la.enter, &la.notify), (ea, &vec![eb], &vec![]), "{la:?}");
        assert_eq!((lb.owner, &lb.enter, &lb.notify), (eb, &vec![ea], &vec![]), "{lb:?}");
        assert_eq!((la.entry, lb.entry), (1, 1), "HotSpot's entry count: waiting to enter + to be notified");
        // Since JDK 23 JVMTI names no monitor for a thread in Object.wait (JDK-8256314): a
        // monitor nobody owns with only such waiters is found only with methods=jvmti.
        if jdk.feature < 23 {
            let w = java(obj("waitLock"));
            assert_eq!((w.owner, &w.enter, &w.notify, w.entry), (0, &vec![], &vec![ew], 1), "{w:?}");
        }
        if owned_listed {
            let m = java(obj("mine"));
            assert_eq!((m.owner, m.enter.len(), m.notify.len(), m.entry), (main, 0, 0, 0), "{m:?}");
        } else {
            assert!(!mons.iter().any(|m| m.handle == 0 && hex(&m.what) == obj("mine")), "{mons:?}");
        }
        // Raw monitors of the agent: "held" owned by raw-holder with raw-enterer blocked on
        // it; "parked" free with raw-holder in RawMonitorWait.
        let (eh, ee) = (env_of("raw-holder"), env_of("raw-enterer"));
        let held = mons.iter().find(|m| m.handle == rawmon("held")).expect("held");
        assert_eq!(held.what, "dumpagent held");
        assert_eq!((held.owner, &held.enter, &held.notify, held.entry), (eh, &vec![ee], &vec![], 1), "{held:?}");
        let parked = mons.iter().find(|m| m.handle == rawmon("parked")).expect("parked");
        assert_eq!((parked.owner, &parked.enter, &parked.notify), (0, &vec![], &vec![eh]), "{parked:?}");
        // Traces and statuses of all threads: blocked threads wait on a monitor, the waiter on
        // a condition variable; none is reported suspended by the dump's own suspension.
        let traces: HashMap<u64, (i32, i32)> = a
            .lines
            .iter()
            .filter(|l| l.starts_with("MTRACE "))
            .map(|l| (hex(&field(l, 1)), (field(l, 2).parse().unwrap(), field(l, 3).parse().unwrap())))
            .collect();
        for (env, status) in [(ea, 2), (eb, 2), (ew, 3)] {
            let (frames, s) = traces[&env];
            assert!(frames >= 1, "no frames for {env:#x}");
            assert_eq!(s, status, "status of {env:#x}");
        }
        assert!(traces.values().all(|&(_, s)| s & 0x8000 == 0), "{traces:?}");
        assert!(traces.contains_key(&main) && traces.len() >= 6, "{traces:?}");
        let b = bin(&prefix, 1);
        assert_eq!(b[0], 1, "Java monitors first");
    }
}

/// A legacy heap profiler (tests/agents/heapcensus.c, written like hprof's heap=dump) asks for
/// a level-2 dump on DATA_DUMP_REQUEST (SIGQUIT), parses it with its own class table and
/// counts instances.
#[test]
fn legacy_heap_census_on_data_dump_request() {
    for_each_jdk(|jdk| census(jdk, "dump", &["signal"]));
}

/// As hprof's `heap=dump` did: the dump is requested inside JVM_SHUT_DOWN's handler (the gate is
/// closed for everything else by then, but what that handler requests is delivered to it).
#[test]
fn legacy_heap_census_at_shutdown() {
    for_each_jdk(|jdk| census(jdk, "shutdown", &[]));
}

/// As hprof's `heap=dump` really does it: OBJECT_ALLOC on from the start (the shim instruments
/// classes), and in JVM_SHUT_DOWN every event switched off, CLASS_LOAD included, before the last
/// level-2 dump is requested; the agent parses it as hprof's `hprof_get_dump_size` does (a
/// CLASS_DUMP's interfaces and statics skipped by its CLASS_LOAD's counts and types, an unknown
/// class ID fails the parse). The program sleeps (JDK 21+ loads `jdk.internal.event`
/// classes for that). Before the fix, switching OBJECT_ALLOC off at VM death retransformed every
/// class back; on JDK 21 and 25 that loaded ~200 JFR classes no CLASS_LOAD could announce any
/// more, and the dump named them (the parse failed; hprof: "unknown class_id").
#[test]
fn legacy_heap_census_at_shutdown_with_every_event_off() {
    for_each_jdk(|jdk| census(jdk, "shutdown,hprof", &["wait", "100"]));
}

fn census(jdk: &Jdk, at: &str, args: &[&str]) {
    let out = fresh_log_path(&format!("census-{}-{}", jdk.feature, at.replace(',', "-"))).with_extension("txt");
    let lib = agent("heapcensus");
    let o = out.display().to_string();
    let mut argv: Vec<&str> = args.to_vec();
    if args.first() == Some(&"signal") {
        argv.push(&o);
    }
    let r = run(jdk, &format!("agent={}:out={},at={at}", lib.display(), o), "Census", &argv, &[]);
    r.assert_ok();
    if args.first() == Some(&"signal") {
        assert!(r.stdout.contains("census written"), "{}", r.describe());
    }
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let first = text.lines().next().unwrap_or("");
    assert!(first.starts_with("DUMP rc=0 ") && first.ends_with("parsed=ok"), "{text}\n{}", r.describe());
    let count = |kind: &str, name: &str| -> (u64, u64) {
        let l = text
            .lines()
            .find(|l| l.starts_with(&format!("{kind} {name} ")))
            .unwrap_or_else(|| panic!("no {kind} {name}:\n{text}"));
        let w: Vec<&str> = l.split(' ').collect();
        (w[2].parse().unwrap(), w[3].parse().unwrap())
    };
    assert_eq!(count("COUNT", "Census$Leaf"), (1234, 1234 * 4));
    assert_eq!(count("COUNT", "Census$Node").0, 56);
    assert_eq!(count("ARRAYS", "Census$Leaf"), (1, 1234));
    assert!(count("ARRAYS", "int").0 >= 56);
    // Unreachable objects are not in the dump (HotSpot 1.5 may have listed some).
    assert!(!text.contains("COUNT Census$Dropped "), "{text}");
}

/// An agent that resolves what it meets on the spot, as hprof's heap=dump did: RequestEvent
/// (OBJECT_DUMP, OBJECT_ALLOC, CLASS_LOAD, HEAP_DUMP, MONITOR_DUMP) from inside its HEAP_DUMP,
/// OBJECT_DUMP, MONITOR_DUMP, CLASS_LOAD, OBJECT_ALLOC and JVM_SHUT_DOWN handlers, holding its
/// own lock across every handler while a thread of its own takes that lock and requests dumps.
/// Each answer is checked (the event arrived, requested, naming what was asked; a class's
/// OBJECT_DUMP names a superclass the agent knows, java.lang.Object for a direct subclass) and
/// the JVM exits normally. Before the fix the first nested dump request hung the JVM for ever.
#[test]
fn nested_requests_from_every_handler() {
    for_each_jdk(|jdk| {
        let out = fresh_log_path(&format!("nestdump-{}", jdk.feature)).with_extension("txt");
        let lib = agent("nestdump");
        let r = run(jdk, &format!("agent={}:out={}", lib.display(), out.display()), "Census", &["wait", "800"], &[]);
        r.assert_ok();
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        assert!(text.ends_with("DONE\n"), "{text}\n{}", r.describe());
        assert!(!text.contains("BAD "), "{text}");
        let site = |h: &str, q: &str| -> (u32, u32, u32) {
            let l = text
                .lines()
                .find(|l| l.starts_with(&format!("SITE {h} {q} ")))
                .unwrap_or_else(|| panic!("no {h}/{q}:\n{text}"));
            let n = |k: &str| l.split(' ').find_map(|w| w.strip_prefix(k)).unwrap().parse::<u32>().unwrap();
            (n("ok="), n("bad="), n("failed="))
        };
        let must = [
            ("HEAP_DUMP", &["OBJECT_DUMP", "OBJECT_ALLOC", "CLASS_LOAD", "HEAP_DUMP", "MONITOR_DUMP"][..]),
            ("OBJECT_DUMP", &["OBJECT_DUMP"][..]),
            ("MONITOR_DUMP", &["OBJECT_DUMP", "HEAP_DUMP"][..]),
            ("CLASS_LOAD", &["OBJECT_DUMP", "CLASS_LOAD", "HEAP_DUMP"][..]),
            ("OBJECT_ALLOC", &["CLASS_LOAD", "HEAP_DUMP", "MONITOR_DUMP"][..]),
            ("JVM_SHUT_DOWN", &["HEAP_DUMP", "MONITOR_DUMP", "OBJECT_DUMP", "OBJECT_ALLOC", "CLASS_LOAD"][..]),
            ("JVM_SHUT_DOWN-leaf-class", &["OBJECT_DUMP"][..]),
            ("HEAP_DUMP-level2", &["OBJECT_DUMP"][..]),
        ];
        for (h, qs) in must {
            for q in qs {
                let (ok, bad, failed) = site(h, q);
                assert!(ok >= 1 && bad == 0 && failed == 0, "{h}/{q}: ok={ok} bad={bad} failed={failed}\n{text}");
            }
        }
        // About an object whose allocation is being reported: an answer (the object or a
        // refusal), never a wrong one.
        for q in ["OBJECT_DUMP", "OBJECT_ALLOC"] {
            let (ok, bad, failed) = site("OBJECT_ALLOC", q);
            assert!(ok + failed >= 1 && bad == 0, "OBJECT_ALLOC/{q}\n{text}");
        }
        let dumper: u32 = text.lines().find_map(|l| l.strip_prefix("DUMPER ")).unwrap().parse().unwrap();
        assert!(dumper >= 1, "the agent's own thread got no dump\n{text}");
    });
}
