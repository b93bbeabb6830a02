#!/usr/bin/env bash
# Method-event benchmark: recursive fib (benches/FibBench.java) run
#   (a) with no agent,
#   (b) with the shim and a JVMPI agent counting METHOD_ENTRY and METHOD_EXIT
#       (tests/agents/methodagent.c, option `bench`): bytecode instrumentation, the default,
#   (c) the same with the JVMTI MethodEntry/MethodExit path forced (`methods=jvmti`),
#   (d) with the shim and the agent enabling METHOD_ENTRY/EXIT and disabling them again in
#       JVM_OnLoad (nothing retransformed: the shim defers that to the gate's opening),
#   (f) the same as (b) with METHOD_ENTRY2 in place of METHOD_ENTRY,
#   (e) the JNI floor, no agent: the same fib calling two empty static natives per call
#       (benches/FibFloor.java, benches/fib_floor.c), what any JNI-based emulation pays,
#   on JDK 22 and later also the floor through the foreign-function API (benches/FibFfm.java):
#   (g) two ordinary downcalls per call, (h) two critical downcalls (no thread-state transition),
# RUNS interleaved rounds; medians of the timed loop (ns per fib call) and of wall time.
# (c) runs fewer calls (it is two orders of magnitude slower); ratios compare ns per call, and
# the wall-time ratio of (c) is scaled to the same number of calls.
#
#   scripts/bench-methods.sh [JDK]     JDK: 11, 17 (default), 21 or 25
# Environment: N (fib argument, default 27), REPS (default 60), RUNS (default 3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

feature=${1:-17}
n=${N:-27}
reps=${REPS:-60}
slow_reps=$(( reps / 30 > 0 ? reps / 30 : 1 ))
runs=${RUNS:-3}
. scripts/bench-common.sh
bench_java "$feature"
bench_build
cc_agent "$out/libmethodagent.so" tests/agents/methodagent.c -lpthread
cc_agent "$out/libfibfloor.so" benches/fib_floor.c
javac -d "$out/classes" --release 11 benches/FibBench.java benches/FibFloor.java
javac -d "$out/classes" --release 17 benches/FibFfm.java
steps="a b c d e f"; [ "$feature" -ge 22 ] && steps="$steps g h"

declare -A agentopt=(
    [a]=""
    [b]="-agentpath:$shim=agent=$out/libmethodagent.so:enable=entry+exit,bench"
    [c]="-agentpath:$shim=methods=jvmti,agent=$out/libmethodagent.so:enable=entry+exit,bench"
    [d]="-agentpath:$shim=agent=$out/libmethodagent.so:enable=entry+exit,bench,off-again"
    [e]=""
    [f]="-agentpath:$shim=agent=$out/libmethodagent.so:enable=entry2+exit,bench"
    [g]="-Dfibffm.mode=ffm -Dfibffm.lib=$PWD/$out/libfibfloor.so --enable-native-access=ALL-UNNAMED"
    [h]="-Dfibffm.mode=critical -Dfibffm.lib=$PWD/$out/libfibfloor.so --enable-native-access=ALL-UNNAMED"
)
declare -A label=(
    [a]="no agent"
    [b]="shim + JVMPI agent counting METHOD_ENTRY/EXIT (instrumentation)"
    [c]="same, methods=jvmti (JVMTI MethodEntry/MethodExit)"
    [d]="shim, METHOD_ENTRY/EXIT enabled then disabled"
    [e]="JNI floor: two empty static natives per call, no agent"
    [f]="shim + JVMPI agent counting METHOD_ENTRY2/EXIT"
    [g]="FFM floor: two ordinary downcalls per call, no agent"
    [h]="FFM floor: two critical downcalls per call, no agent"
)
declare -A nsl wall counts calls
echo "JDK $feature ($("$java" -version 2>&1 | head -1)); fib($n) x $reps (c: x $slow_reps); RUNS=$runs"
for ((r = 0; r < runs; r++)); do
    for k in $steps; do
        rp=$reps; [ "$k" = c ] && rp=$slow_reps
        main=(FibBench "$n" "$rp"); [ "$k" = e ] && main=(FibFloor "$n" "$rp" "$PWD/$out/libfibfloor.so")
        case $k in g | h) main=(FibFfm "$n" "$rp") ;; esac
        # shellcheck disable=SC2086
        s=$(date +%s%N)
        o=$("$java" ${agentopt[$k]} -cp "$out/classes" "${main[@]}" 2>"$out/err.$k")
        e=$(date +%s%N)
        nsl[$k]+="$(sed -n 's/.*ns_per_call \([0-9.]*\).*/\1/p' <<<"$o") "
        wall[$k]+="$(( (e - s) / 1000000 )) "
        calls[$k]=$(sed -n 's/^calls \([0-9]*\).*/\1/p' <<<"$o")
        counts[$k]=$(grep -o 'METHOD_ENTRY [0-9]* METHOD_EXIT [0-9]*' "$out/err.$k" || echo "no events")
    done
done
declare -A m w
for k in $steps; do
    m[$k]=$(median ${nsl[$k]})
    w[$k]=$(median ${wall[$k]})
    printf '(%s) %-62s %8s ns/call  wall %6s ms  fib calls %s  agent: %s\n' "$k" "${label[$k]}" "${m[$k]}" "${w[$k]}" "${calls[$k]}" "${counts[$k]}"
done
awk -v a="${m[a]}" -v b="${m[b]}" -v c="${m[c]}" -v d="${m[d]}" -v e="${m[e]}" -v wa="${w[a]}" -v wb="${w[b]}" -v wc="${w[c]}" -v wd="${w[d]}" -v f="$((reps / slow_reps))" 'BEGIN {
    printf "loop: (b)/(a) %.1f  (c)/(a) %.1f  (d)/(a) %.3f  (e)/(a) %.1f (the JNI floor)  (b)/(e) %.2f\n", b / a, c / a, d / a, e / a, b / e
    printf "wall: (b)/(a) %.1f  (c)/(a) %.1f (scaled to the same calls)  (d)/(a) %.3f\n", wb / wa, wc * f / wa, wd / wa
}'
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
awk -v b="${m[b]}" -v e="${m[e]}" -v e2="${m[f]}" -v f="$feature" 'BEGIN {
    printf "SUMMARY|method events|%s|METHOD_ENTRY+EXIT per call / JNI floor (b)/(e)|%.2f|<= 1.3\n", f, b / e
    printf "SUMMARY|method events|%s|METHOD_ENTRY2+EXIT per call / JNI floor (f)/(e)|%.2f|<= 1.3\n", f, e2 / e }'
if [ "$feature" -ge 22 ]; then
    awk -v b="${m[b]}" -v e="${m[e]}" -v g="${m[g]}" -v h="${m[h]}" -v f="$feature" 'BEGIN {
        printf "FFM: (g)/(e) %.2f  (h)/(e) %.2f  (b)/(h) %.2f\n", g / e, h / e, b / h
        printf "SUMMARY|method events|%s|FFM critical-downcall floor / JNI floor (h)/(e)|%.2f|-\n", f, h / e }'
fi
