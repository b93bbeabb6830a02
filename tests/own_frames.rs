//! No frame of the shim's own in a profile. The shim links each class it announces in the
//! thread that defines it (`Class.getDeclaredFields0`, through JNI, inside the JVMTI ClassLoad
//! callback); an HPROF-style sampler (tests/agents/sampler.c: a CreateSystemThread thread that
//! suspends each thread it knows and takes its depth-4 GetCallTrace) over a program that does
//! nothing but define classes (tests/java/ClassFlood.java) must never see that method, nor any
//! of the shim's generated classes, in a sample: the samples of the defining thread show the
//! program's `ClassLoader.defineClass1` on top. The same with the method and allocation
//! trackers running in every method.

mod harness;

use harness::*;
use std::collections::HashMap;

/// The sampler's SAMPLES line as numbers.
fn samples(r: &Run) -> HashMap<String, i64> {
    let l = r.lines_with("SAMPLES ");
    assert_eq!(l.len(), 1, "one SAMPLES line\n{}", r.describe());
    l[0].split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().expect("a number")))
        .collect()
}

fn check_samples(jdk: &Jdk, mode: &str) {
    let opts = format!(
        "agent={}:log={{log}},bad=java.lang.Class.getDeclaredFields0,bad=java.lang.Class.getDeclaredFields,\
         prefix=JvmpiShim{mode}",
        agent("sampler").display()
    );
    let r = run(jdk, &opts, "ClassFlood", &["2000"], &[]);
    r.assert_ok();
    assert!(r.stdout.contains("DEFINED many"), "{}", r.describe());
    let s = samples(&r);
    assert_eq!(s["bad"], 0, "samples holding a frame of the shim's own\n{}", r.describe());
    assert_eq!(s["unnamed"], 0, "{}", r.describe());
    // The sampler saw the program at its work: defining classes (the defining thread's
    // samples name ClassLoader.defineClass*), with defineClass1 on top most often.
    assert!(s["total"] >= 200, "{}", r.describe());
    assert!(s["defining"] >= 100, "{}", r.describe());
    let tops = r.lines_with("TOP ");
    assert!(
        tops.iter().take(3).any(|l| l.ends_with(" java.lang.ClassLoader.defineClass1")),
        "defineClass1 among the three most frequent top frames\n{}",
        r.describe()
    );
}

#[test]
fn class_loading_samples_show_no_frame_of_the_shim() {
    for_each_jdk(|jdk| check_samples(jdk, ""));
}

/// The same with METHOD_ENTRY, METHOD_EXIT and OBJECT_ALLOC on: every method calls the shim's
/// trackers (`JvmpiShimMethods`, `JvmpiShimTracker`), whose frames no sample may show either.
#[test]
fn class_loading_samples_show_no_frame_of_the_shim_with_trackers() {
    for_each_jdk(|jdk| check_samples(jdk, ",busy"));
}
