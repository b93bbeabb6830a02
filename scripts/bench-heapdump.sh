#!/usr/bin/env bash
# Heap-dump benchmark: one program holding N live objects (benches/HeapDumpBench.java) dumps
# its heap twice in one run, side by side:
#   jcmd <pid> GC.heap_dump <file>   the JVM's own HPROF dumper (its "... in X secs" figure,
#                                    which includes the full GC it runs first; and jcmd's wall time)
#   the shim's level-2 HEAP_DUMP     requested by a JVMPI agent (benches/dump_jvmpi.c), timed
#                                    from RequestEvent until NotifyEvent receives the event;
#                                    twice: the first dump tags every object, the second finds
#                                    them tagged
# and then, in the same process, the floor (benches/dump_floor_jvmti.c, a plain JVMTI agent with
# one tag map per walk): what any JVMTI-based dump whose IDs are tags must at least do,
#   f1  FollowReferences, a reference callback that only reads tags and tags untagged objects
#   f2  IterateThroughHeap, an iteration callback that does the same
#   f3  f1 plus the value callbacks a level-2 dump needs (primitive fields, primitive arrays)
#   f4  f2 plus those value callbacks (f1 + f4: object records from IterateThroughHeap and
#       only the references from FollowReferences)
# each twice (first pass tags, second only looks up). The floors run after the shim (tagging
# gives every object an identity hash, as the tag map hashes by it; the first walk of the
# process pays for that, the later ones find it done).
# Each is timed by wall clock and by the process's CPU time over the same span (for jcmd: the
# CPU time of the dumping process while jcmd ran), since on a shared machine the wall time
# also counts the time the dump waited for a CPU.
# Prints the medians and their ratios to jcmd, the dump sizes and the growth of resident memory
# during the shim's dump (VmHWM reset before the request, read in the handler, minus VmRSS
# before; the Java heap is pre-touched, so the growth is native memory).
#
#   scripts/bench-heapdump.sh [JDK...]     JDKs: 11, 17, 21, 25 (default: 17 25)
# Environment: N (live objects, default 2000000), RUNS (rounds per JDK, default 3), SHIM (the
# shim library to measure, default target/release/libjvmpi_shim.so, built first), STEPS (the
# walks after jcmd and their order, default shim,shim,f1,f1,f2,f2,f3,f3,f4,f4; each of them
# twice).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/bench-common.sh

n=${N:-2000000}
runs=${RUNS:-3}
jdks=("$@")
[ ${#jdks[@]} -eq 0 ] && jdks=(17 25)
bench_build
cc_agent "$out/libdump_jvmpi.so" benches/dump_jvmpi.c
cc_agent "$out/libdump_floor_jvmti.so" benches/dump_floor_jvmti.c
javac -d "$out/classes" --release 17 benches/HeapDumpBench.java
heap="-Xms1g -Xmx1g -XX:+AlwaysPreTouch"
steps=${STEPS:-shim,shim,f1,f1,f2,f2,f3,f3,f4,f4}
field() { { grep -o "\(^\| \)$1=[0-9.-]*" <<<"$2" || true; } | head -1 | cut -d= -f2; }
for feature in "${jdks[@]}"; do
    bench_java "$feature"
    home=$(dirname "$(dirname "$java")")
    echo "JDK $feature ($("$home/bin/java" -version 2>&1 | head -1)); N=$n RUNS=$runs"
    declare -A v=()
    add() { v[$1]="${v[$1]:-} $2"; }
    for ((r = 0; r < runs; r++)); do
        o=$("$home/bin/java" -agentpath:"$shim"=agent="$(readlink -f "$out/libdump_jvmpi.so")" \
            -agentpath:"$(readlink -f "$out/libdump_floor_jvmti.so")" $heap -cp "$out/classes" HeapDumpBench \
            "$n" "$home/bin/jcmd" "$(readlink -f "$out")/bench.hprof" "$steps" 2>&1)
        jl=$(grep '^jcmd:' <<<"$o" || true); sl=$({ grep '^shim:' <<<"$o" || true; } | sed -n 1p)
        printf '  round %d: %s\n' "$r" "$jl"
        grep '^shim:\|^floor:' <<<"$o" | sed 's/^/           /'
        add jcmd.ms "$(field ms "$jl")"; add jcmd.cpu "$(field cpu_ms "$jl")"
        for who in shim f1 f2 f3 f4; do
            for pass in 1 2; do
                if [ $who = shim ]; then pat='^shim:'; else pat="^floor: $who "; fi
                l=$({ grep "$pat" <<<"$o" || true; } | sed -n "${pass}p")
                add "$who$pass.ms" "$(field ms "$l")"; add "$who$pass.cpu" "$(field cpu_ms "$l")"
            done
        done
    done
    m() { median ${v[$1]}; }
    awk -v jdk="$feature" -v jb="$(field bytes "$jl")" -v sb="$(field bytes "$sl")" -v g="$(field growth_kb "$sl")" -v list="$(
        for k in jcmd.ms jcmd.cpu shim1.ms shim2.ms shim1.cpu shim2.cpu f11.ms f12.ms f11.cpu f12.cpu f21.ms f22.ms f21.cpu \
            f22.cpu f31.ms f32.ms f31.cpu f32.cpu f41.ms f42.ms f41.cpu f42.cpu; do printf '%s=%s ' "$k" "$(m $k)"; done)" 'BEGIN {
        n = split(list, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); x[p[1]] = p[2] }
        j = x["jcmd.ms"]; jc = x["jcmd.cpu"]
        printf "  medians (ms, first / second pass; ratio to jcmd by wall time, and by CPU time):\n"
        printf "  %-46s %6.0f        wall, %6.0f        CPU  (%.1f MiB HPROF)\n", "jcmd GC.heap_dump", j, jc, jb / 1048576
        row("shim HEAP_DUMP level 2", "shim"); row("f1 FollowReferences, tags only", "f1"); row("f2 IterateThroughHeap, tags only", "f2")
        row("f3 FollowReferences + value callbacks", "f3"); row("f4 IterateThroughHeap + value callbacks", "f4")
        printf "  %-46s %.2f / %.2f wall, %.2f / %.2f CPU\n", "f1 + f4 (to jcmd)", d(x["f11.ms"] + x["f41.ms"], j), d(x["f12.ms"] + x["f42.ms"], j), d(x["f11.cpu"] + x["f41.cpu"], jc), d(x["f12.cpu"] + x["f42.cpu"], jc)
        printf "  %-46s %.2f / %.2f wall, %.2f / %.2f CPU\n", "shim / f3", d(x["shim1.ms"], x["f31.ms"]), d(x["shim2.ms"], x["f32.ms"]), d(x["shim1.cpu"], x["f31.cpu"]), d(x["shim2.cpu"], x["f32.cpu"])
        printf "  shim dump %.1f MiB; resident growth during the first dump %.1f MiB (target: shim/jcmd <= 1.0)\n", sb / 1048576, g / 1024
        # One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
        printf "SUMMARY|heap dump|%s|HEAP_DUMP level 2 / one FollowReferences with value callbacks (f3), first pass, CPU|%.2f|<= 1.1\n", jdk, d(x["shim1.cpu"], x["f31.cpu"])
        printf "SUMMARY|heap dump|%s|same, second pass (objects already tagged), CPU|%.2f|<= 1.1\n", jdk, d(x["shim2.cpu"], x["f32.cpu"]) }
    function d(a, b) { return b > 0 ? a / b : 0 }
    function row(name, k) {
        printf "  %-46s %6.0f / %6.0f wall (%.2f / %.2f), %6.0f / %6.0f CPU (%.2f / %.2f)\n", name, x[k "1.ms"], x[k "2.ms"], d(x[k "1.ms"], j), d(x[k "2.ms"], j), x[k "1.cpu"], x[k "2.cpu"], d(x[k "1.cpu"], jc), d(x[k "2.cpu"], jc) }'
done
