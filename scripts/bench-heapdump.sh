#!/usr/bin/env bash
# Heap-dump benchmark: one program holding N live objects (benches/HeapDumpBench.java) dumps
# its heap first with
#   jcmd <pid> GC.heap_dump <file>   the JVM's own HPROF dumper (its "... in X secs" figure,
#                                    which includes the full GC it runs first; and jcmd's wall time)
# and then with one of these walks, twice (the first pass tags every object, the second finds
# them tagged):
#   shim  the shim's level-2 HEAP_DUMP, requested by a JVMPI agent (benches/dump_jvmpi.c), timed
#         from RequestEvent until NotifyEvent receives the event
#   the floor (benches/dump_floor_jvmti.c, a plain JVMTI agent with one tag map per walk): what
#   any JVMTI-based dump whose IDs are tags must at least do,
#   f1  FollowReferences, a reference callback that only reads tags and tags untagged objects
#   f2  IterateThroughHeap, an iteration callback that does the same
#   f3  f1 plus the value callbacks a level-2 dump needs (primitive fields, primitive arrays):
#       the floor of the goal (shim / f3 <= 1.1)
#   f4  f2 plus those value callbacks (f1 + f4: object records from IterateThroughHeap and
#       only the references from FollowReferences)
#   f5  f3 tagging nothing (its callbacks only read the tag slots): f3 - f5 is what tagging
#       every object costs on a first pass
#   f6  f3 writing about as many bytes as the shim's dump into one buffer grown by doubling
#       (referees' tags, primitive values, array elements): the least a dump that writes its
#       records must do (shim / f6 is shown; the goal is stated against f3)
# Each walk runs in a process of its own (the PROCESSES), all on the same heap: the walk that comes
# first in a process meets no object with an identity hash, by which JVMTI's tag map hashes, and
# skips every lookup of an untagged object; a later walk pays the hashes' lookups, so sharing a
# process made the order of the walks move the ratio by +-15 %. One round runs every group once,
# the first group of round r being group r mod (number of groups), so no group always runs
# first; the ratio is the ratio of the medians, shown with the range and the median of the
# rounds' own ratios (each round's two walks side by side in time).
# Each is timed by wall clock and by the process's CPU time over the same span (for jcmd: the
# CPU time of the dumping process while jcmd ran), since on a shared machine the wall time
# also counts the time the dump waited for a CPU.
# Prints the medians and their ratios to jcmd, the dump sizes and the growth of resident memory
# during the shim's dump (VmHWM reset before the request, read in the handler, minus VmRSS
# before; the Java heap is pre-touched, so the growth is native memory).
#
#   scripts/bench-heapdump.sh [JDK...]     JDKs: 11, 17, 21, 25 (default: 17 25)
# Environment: N (live objects, default 2000000), RUNS (rounds per JDK, default 5), SHIM (the
# shim library to measure, default target/release/libjvmpi_shim.so, built first), PROCESSES (the
# processes of a round, each the comma-separated walks it runs after jcmd; default
# "shim,shim f3,f3"; e.g. "shim,shim f3,f3 f1,f1 f2,f2 f4,f4 f5,f5 f6,f6" for all of them, or
# "shim,shim,f3,f3" for the old single process). SHIM_B: a second shim library (e.g. an older build),
# measured in the groups prefixed "B:" (e.g. PROCESSES="shim,shim B:shim,shim f3,f3 f6,f6"), whose
# shim walks are reported as shimB, side by side with the others in every round.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/bench-common.sh

n=${N:-2000000}
runs=${RUNS:-5}
jdks=("$@")
[ ${#jdks[@]} -eq 0 ] && jdks=(17 25)
bench_build
cc_agent "$out/libdump_jvmpi.so" benches/dump_jvmpi.c
cc_agent "$out/libdump_floor_jvmti.so" benches/dump_floor_jvmti.c
javac -d "$out/classes" --release 11 benches/HeapDumpBench.java
heap="-Xms1g -Xmx1g -XX:+AlwaysPreTouch"
read -r -a groups <<<"${PROCESSES:-shim,shim f3,f3}"
field() { { grep -o "\(^\| \)$1=[0-9.-]*" <<<"$2" || true; } | head -1 | cut -d= -f2; }
# ratio A B: A / B with two decimals, or nothing when either is missing or zero.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b }'; }
# range LIST: "min-max" of the values, or "-" when there are none.
range() { if [ -z "${1// /}" ]; then echo -; else printf '%s\n' $1 | sort -g | sed -n '1h;${x;G;s/\n/-/;p}'; fi; }
walks="shim shimB f1 f2 f3 f4 f5 f6"
shim_b=$(readlink -f "${SHIM_B:-$shim}")
for feature in "${jdks[@]}"; do
    bench_java "$feature"
    home=$(dirname "$(dirname "$java")")
    echo "JDK $feature ($("$home/bin/java" -version 2>&1 | head -1)); N=$n RUNS=$runs; one process per group: ${groups[*]}; load $(cut -d' ' -f1-3 /proc/loadavg)"
    declare -A v=() rr=()
    add() { [ -n "$2" ] && v[$1]="${v[$1]:-} $2"; return 0; }
    jl= sl=
    for ((r = 0; r < runs; r++)); do
        declare -A cur=()
        for ((g = 0; g < ${#groups[@]}; g++)); do
            steps=${groups[(r + g) % ${#groups[@]}]}
            lib=$shim b=
            if [ "${steps#B:}" != "$steps" ]; then lib=$shim_b b=B steps=${steps#B:}; fi
            o=$("$home/bin/java" -agentpath:"$lib"=agent="$(readlink -f "$out/libdump_jvmpi.so")" \
                -agentpath:"$(readlink -f "$out/libdump_floor_jvmti.so")" $heap -cp "$out/classes" HeapDumpBench \
                "$n" "$home/bin/jcmd" "$(readlink -f "$out")/bench.hprof" "$steps" 2>&1) || true
            pj=$(grep '^jcmd:' <<<"$o" || true); [ -n "$pj" ] && jl=$pj
            l=$({ grep '^shim:' <<<"$o" || true; } | sed -n 1p); [ -n "$l" ] && sl=$l
            printf '  round %d, %s%s: %s; load %s\n' "$r" "${b:+B:}" "$steps" "${pj:-no jcmd line}" "$(cut -d' ' -f1 /proc/loadavg)"
            grep '^shim:\|^floor:' <<<"$o" | sed 's/^/           /' || echo "$o" | tail -5 | sed 's/^/           ! /'
            [ -n "$b" ] && o=$(sed 's/^shim:/shimB:/' <<<"$o")
            add jcmd.ms "$(field ms "$pj")"; add jcmd.cpu "$(field cpu_ms "$pj")"
            for who in $walks; do
                for pass in 1 2; do
                    case $who in shim*) pat="^$who:" ;; *) pat="^floor: $who " ;; esac
                    l=$({ grep "$pat" <<<"$o" || true; } | sed -n "${pass}p")
                    [ -n "$l" ] || continue
                    add "$who$pass.ms" "$(field ms "$l")"; add "$who$pass.cpu" "$(field cpu_ms "$l")"
                    cur[$who$pass]=$(field cpu_ms "$l")
                done
            done
        done
        # This round's ratios (CPU), its walks side by side in time.
        for pass in 1 2; do
            for pair in shim:f3 f3:f5 shim:f6 shim:shimB shimB:f3 shimB:f6 f6:f3; do
                a=${pair%:*} b=${pair#*:}
                x=$(ratio "${cur[$a$pass]:-}" "${cur[$b$pass]:-}"); [ -n "$x" ] && rr[$a/$b$pass]="${rr[$a/$b$pass]:-} $x"
            done
        done
        unset cur
    done
    m() { median ${v[$1]:-}; }
    echo "  rounds' CPU ratios: shim/f3 first pass ${rr[shim/f31]:-}, second ${rr[shim/f32]:-}; f3/f5 first ${rr[f3/f51]:-}; shim/f6 first ${rr[shim/f61]:-}, second ${rr[shim/f62]:-}"
    for pair in shim/shimB shimB/f3 shimB/f6 f6/f3; do
        [ -n "${rr[${pair}1]:-}" ] && echo "  rounds' CPU ratios $pair: first pass ${rr[${pair}1]} (range $(range "${rr[${pair}1]}"), median $(median ${rr[${pair}1]})), second ${rr[${pair}2]:-} (range $(range "${rr[${pair}2]:-}"), median $(median ${rr[${pair}2]:-}))"
    done
    awk -v jdk="$feature" -v jb="$(field bytes "$jl")" -v sb="$(field bytes "$sl")" -v g="$(field growth_kb "$sl")" \
        -v s1="$(range "${rr[shim/f31]:-}")" -v s2="$(range "${rr[shim/f32]:-}")" -v runs="$runs" \
        -v m1="$(median ${rr[shim/f31]:-})" -v m2="$(median ${rr[shim/f32]:-})" -v list="$(
        for k in jcmd.ms jcmd.cpu; do printf '%s=%s ' "$k" "$(m $k)"; done
        for w in $walks; do for k in 1.ms 2.ms 1.cpu 2.cpu; do printf '%s=%s ' "$w$k" "$(m $w$k)"; done; done)" 'BEGIN {
        n = split(list, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); x[p[1]] = p[2] }
        j = x["jcmd.ms"]; jc = x["jcmd.cpu"]
        printf "  medians (ms, first / second pass; ratio to jcmd by wall time, and by CPU time):\n"
        printf "  %-46s %6.0f        wall, %6.0f        CPU  (%.1f MiB HPROF)\n", "jcmd GC.heap_dump", j, jc, jb / 1048576
        row("shim HEAP_DUMP level 2", "shim"); row("shimB (SHIM_B) HEAP_DUMP level 2", "shimB"); row("f1 FollowReferences, tags only", "f1"); row("f2 IterateThroughHeap, tags only", "f2")
        row("f3 FollowReferences + value callbacks", "f3"); row("f4 IterateThroughHeap + value callbacks", "f4")
        row("f5 f3 without tagging", "f5"); row("f6 f3 writing a dump-sized buffer", "f6")
        if (x["f11.cpu"] > 0 && x["f41.cpu"] > 0)
            printf "  %-46s %.2f / %.2f wall, %.2f / %.2f CPU\n", "f1 + f4 (to jcmd)", d(x["f11.ms"] + x["f41.ms"], j), d(x["f12.ms"] + x["f42.ms"], j), d(x["f11.cpu"] + x["f41.cpu"], jc), d(x["f12.cpu"] + x["f42.cpu"], jc)
        printf "  %-46s %.2f / %.2f wall, %.2f / %.2f CPU (rounds %s / %s, their medians %s / %s)\n", "shim / f3", d(x["shim1.ms"], x["f31.ms"]), d(x["shim2.ms"], x["f32.ms"]), d(x["shim1.cpu"], x["f31.cpu"]), d(x["shim2.cpu"], x["f32.cpu"]), s1, s2, m1, m2
        if (x["f61.cpu"] > 0)
            printf "  %-46s %.2f / %.2f wall, %.2f / %.2f CPU\n", "shim / f6", d(x["shim1.ms"], x["f61.ms"]), d(x["shim2.ms"], x["f62.ms"]), d(x["shim1.cpu"], x["f61.cpu"]), d(x["shim2.cpu"], x["f62.cpu"])
        printf "  shim dump %.1f MiB; resident growth during the first dump %.1f MiB (target: shim/jcmd <= 1.0)\n", sb / 1048576, g / 1024
        # One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
        printf "SUMMARY|heap dump|%s|HEAP_DUMP level 2 / one FollowReferences with value callbacks (f3), first pass, CPU, own processes (%s rounds %s, their median %s)|%.2f|<= 1.1\n", jdk, runs, s1, m1, d(x["shim1.cpu"], x["f31.cpu"])
        printf "SUMMARY|heap dump|%s|same, second pass (objects already tagged), CPU (rounds %s, their median %s)|%.2f|<= 1.1\n", jdk, s2, m2, d(x["shim2.cpu"], x["f32.cpu"]) }
    function d(a, b) { return b > 0 ? a / b : 0 }
    function row(name, k) {
        if (x[k "1.cpu"] > 0)
            printf "  %-46s %6.0f / %6.0f wall (%.2f / %.2f), %6.0f / %6.0f CPU (%.2f / %.2f)\n", name, x[k "1.ms"], x[k "2.ms"], d(x[k "1.ms"], j), d(x[k "2.ms"], j), x[k "1.cpu"], x[k "2.cpu"], d(x[k "1.cpu"], jc), d(x[k "2.cpu"], jc) }'
    unset v rr
done
