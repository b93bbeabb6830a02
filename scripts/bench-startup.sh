#!/usr/bin/env bash
# Start-up and shutdown benchmark: a hello world (tests/java/Hello.java) from start to exit,
#   (a) with no agent,
#   (b) with a plain JVMTI agent that enables nothing (benches/trace_jvmti.c, "empty"): what
#       loading any agent costs,
#   (c) with the shim and a JVMPI agent that enables nothing (benches/startup_jvmpi.c),
#   (d) the same agent enabling OBJECT_ALLOC and OBJECT_FREE, the start-up rewrite cache warm
#       (the classes retransformed at start-up taken from it, as on every start after the first),
#   (e) the same agent enabling METHOD_ENTRY and METHOD_EXIT, the cache warm,
#   (k), (l): (d) and (e) with the cache off (cache=off: every class rewritten, as on a first start),
#   (f) a plain JVMTI agent retransforming every loaded class at VMInit, unchanged
#       (benches/retransform_jvmti.c): the JVM's own part of instrumenting the classes loaded
#       before a legacy agent's JVM_OnLoad (run at VMInit) enabled (d)'s or (e)'s events,
#   (g) the same, every other class retransformed by a second thread meanwhile (as the shim
#       does at start-up with two CPUs or more): the floor of (d) and (e) in two threads,
#   (h) (g) with the classes the shim changes for (d) changed as little as a class can be (one
#       constant appended): the JVM's part of redefining changed rather than unchanged classes,
#   (i) (g) with the shim's own class files of (d) handed to the JVM (recorded by one run of (d)
#       with the floor agent's "dump" behind the shim) and a tracker whose natives only count:
#       the JVM's whole part of (d), the floor of (d) for any emulation that rewrites classes as
#       the shim does (what stays above it is the shim's own: its rewriting and its events),
#   (j) the same for (e): (g) with the shim's own class files of (e) handed to the JVM and a
#       method tracker whose natives only count, the floor of (e),
# RUNS interleaved rounds per JDK; the median wall time (and its spread) of each, and its
# difference to (a); and the median CPU time (user + system, all threads), steadier when the
# machine is shared.
#
#   scripts/bench-startup.sh [JDK…]     JDKs: 11, 17, 21, 25 (default: 17)
# Environment: RUNS (default 10), EXTRA (more java options for every run, e.g. -Xshare:off).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=${RUNS:-10}
jdks=("${@:-17}")
. scripts/bench-common.sh
bench_build
cc_agent "$out/libtrace_jvmti.so" benches/trace_jvmti.c
cc_agent "$out/libstartup_jvmpi.so" benches/startup_jvmpi.c
cc_agent "$out/libretransform_jvmti.so" benches/retransform_jvmti.c -lpthread
javac -d "$out/classes" --release 11 tests/java/Hello.java

keys=(a b c d e k l f g h i j)
declare -A agentopt=(
    [a]=""
    [b]="-agentpath:$out/libtrace_jvmti.so=empty"
    [c]="-agentpath:$shim=agent=$out/libstartup_jvmpi.so:none"
    [d]="-agentpath:$shim=cache=$PWD/$out/rewrite-cache-d,agent=$out/libstartup_jvmpi.so:alloc"
    [e]="-agentpath:$shim=cache=$PWD/$out/rewrite-cache-e,agent=$out/libstartup_jvmpi.so:methods"
    [k]="-agentpath:$shim=cache=off,agent=$out/libstartup_jvmpi.so:alloc"
    [l]="-agentpath:$shim=cache=off,agent=$out/libstartup_jvmpi.so:methods"
    [f]="-agentpath:$out/libretransform_jvmti.so"
    [g]="-agentpath:$out/libretransform_jvmti.so=two"
)
declare -A label=(
    [a]="no agent"
    [b]="plain JVMTI agent, nothing enabled"
    [c]="shim + JVMPI agent, nothing enabled"
    [d]="shim + OBJECT_ALLOC/OBJECT_FREE"
    [e]="shim + METHOD_ENTRY/METHOD_EXIT"
    [k]="(d), rewrite cache off"
    [l]="(e), rewrite cache off"
    [f]="plain JVMTI, all classes retransformed"
    [g]="the same in two threads"
    [h]="(g) + (d)'s classes, 1 constant added"
    [i]="(g) + (d)'s class files replayed"
    [j]="(g) + (e)'s class files replayed"
)
declare -A target=([c]=10 [d]=60 [e]=60 [k]=60 [l]=60)
for feature in "${jdks[@]}"; do
    bench_java "$feature"
    [ -x "$java" ] || { echo "JDK $feature: no $java (scripts/install-jdks.sh)"; continue; }
    echo "JDK $feature ($("$java" -version 2>&1 | head -1)); RUNS=$runs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    # (d)'s class files as the shim leaves them, for (h) and (i); in one thread on JDK 11, as the
    # shim retransforms there (jvm::PARALLEL_FROM_JDK).
    # Warmed by the two recording runs below; a directory each, as for two users whose agents
    # each start the same way every time (the shim reads ahead the file used last).
    rm -rf "$out/rewrite-cache-d" "$out/rewrite-cache-e"
    dump=$PWD/$out/startup-classes-$feature.bin
    rm -f "$dump"
    # shellcheck disable=SC2086
    "$java" ${EXTRA:-} ${agentopt[d]} "-agentpath:$out/libretransform_jvmti.so=dump=$dump" -cp "$out/classes" Hello >/dev/null
    dump_e=$PWD/$out/startup-classes-methods-$feature.bin
    rm -f "$dump_e"
    # shellcheck disable=SC2086
    "$java" ${EXTRA:-} ${agentopt[e]} "-agentpath:$out/libretransform_jvmti.so=dump=$dump_e" -cp "$out/classes" Hello >/dev/null
    threads=two; [ "$feature" -ge 17 ] || threads=one
    agentopt[h]="-agentpath:$out/libretransform_jvmti.so=$threads,append=$dump"
    agentopt[i]="-agentpath:$out/libretransform_jvmti.so=$threads,replay=$dump"
    agentopt[j]="-agentpath:$out/libretransform_jvmti.so=$threads,replay=$dump_e"
    declare -A times=() cpus=() delta=() cdelta=()
    for ((r = 0; r < runs; r++)); do
        for k in "${keys[@]}"; do
            s=$(date +%s%N)
            # shellcheck disable=SC2086
            o=$(/usr/bin/time -f "%U %S" -o "$out/startup-time.txt" "$java" ${EXTRA:-} ${agentopt[$k]} -cp "$out/classes" Hello 2>&1)
            e=$(date +%s%N)
            [ "$o" = hello ] || { echo "($k) unexpected output: $o"; exit 1; }
            times[$k]="${times[$k]:-} $(( (e - s) / 1000000 ))"
            cpus[$k]="${cpus[$k]:-} $(awk '{ printf "%d", ($1 + $2) * 1000 }' "$out/startup-time.txt")"
        done
    done
    # shellcheck disable=SC2086
    base=$(median ${times[a]})
    # shellcheck disable=SC2086
    cbase=$(median ${cpus[a]})
    for k in "${keys[@]}"; do
        # shellcheck disable=SC2086
        m=$(median ${times[$k]})
        # shellcheck disable=SC2086
        spread=$(printf '%s\n' ${times[$k]} | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }')
        t=""; [ -n "${target[$k]:-}" ] && t="(target <= +${target[$k]} ms)"
        # shellcheck disable=SC2086
        c=$(median ${cpus[$k]})
        printf '(%s) %-38s wall %5d ms [%s] %+5d ms   cpu %5d ms %+5d ms  %s\n' "$k" "${label[$k]}" "$m" "$spread" "$((m - base))" "$c" "$((c - cbase))" "$t"
        delta[$k]=$((m - base))
        cdelta[$k]=$((c - cbase))
    done
    # One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
    echo "SUMMARY|start-up, nothing enabled|$feature|ms of wall time more than no agent (c)-(a)|${delta[c]}|<= 10"
    echo "SUMMARY|start-up, OBJECT_ALLOC|$feature|ms of wall time more than no agent (d)-(a)|${delta[d]}|<= 60"
    echo "SUMMARY|start-up, METHOD_ENTRY|$feature|ms of wall time more than no agent (e)-(a)|${delta[e]}|<= 60"
    echo "SUMMARY|start-up, OBJECT_ALLOC|$feature|the same, rewrite cache off (a first start) (k)-(a)|${delta[k]}|<= 60"
    echo "SUMMARY|start-up, METHOD_ENTRY|$feature|the same, rewrite cache off (a first start) (l)-(a)|${delta[l]}|<= 60"
    echo "SUMMARY|start-up, OBJECT_ALLOC|$feature|its floor: (d)'s class files replayed by plain JVMTI, ms of wall time more than no agent (i)-(a)|${delta[i]}|-"
    echo "SUMMARY|start-up, OBJECT_ALLOC|$feature|ms of CPU time (d)-(a), its floor (i)-(a)|${cdelta[d]}, ${cdelta[i]}|-"
    echo "SUMMARY|start-up, METHOD_ENTRY|$feature|its floor: (e)'s class files replayed by plain JVMTI, ms of wall time more than no agent (j)-(a)|${delta[j]}|-"
    echo "SUMMARY|start-up, METHOD_ENTRY|$feature|ms of CPU time (e)-(a), its floor (j)-(a)|${cdelta[e]}, ${cdelta[j]}|-"
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
