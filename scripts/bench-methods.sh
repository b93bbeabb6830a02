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
#   (i) the emulation floor, no shim: the same natives (same Java code as (e)) doing only what any
#       JVMPI emulation through JNI natives must do per event — fill a zeroed JVMPI_Event (type,
#       env_id, the jmethodID from a table by the method's number) and call the agent's
#       NotifyEvent through its interface table, re-read every time — the agent being the same
#       methodagent `bench` handler in its own library (benches/fib_emul.c),
#   on JDK 22 and later also the floor through the foreign-function API (benches/FibFfm.java):
#   (g) two ordinary downcalls per call, (h) two critical downcalls (no thread-state transition),
# RUNS interleaved rounds; medians of the timed loop (ns per fib call), of the main thread's CPU
# time on it (ns per fib call: the time this shared machine gave to other processes left out),
# and of wall time.
# (c) runs fewer calls (it is two orders of magnitude slower); ratios compare ns per call, and
# the wall-time ratio of (c) is scaled to the same number of calls.
#
#   scripts/bench-methods.sh [JDK]     JDK: 11, 17 (default), 21 or 25
# Environment: N (fib argument, default 27), REPS (default 60), RUNS (default 3), STEPS (the
# configurations to run, default all: "a b c d e f i", and "g h" on JDK 22+; ratios of steps not
# run print as 0).
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
cc_agent "$out/libfibemul.so" benches/fib_emul.c -ldl
javac -d "$out/classes" --release 11 benches/FibBench.java benches/FibFloor.java
javac -d "$out/classes" --release 17 benches/FibFfm.java
steps="a b c d e f i"; [ "$feature" -ge 22 ] && steps="$steps g h"
steps=${STEPS:-$steps}

declare -A agentopt=(
    [a]=""
    [b]="-agentpath:$shim=agent=$out/libmethodagent.so:enable=entry+exit,bench"
    [c]="-agentpath:$shim=methods=jvmti,agent=$out/libmethodagent.so:enable=entry+exit,bench"
    [d]="-agentpath:$shim=agent=$out/libmethodagent.so:enable=entry+exit,bench,off-again"
    [e]=""
    [f]="-agentpath:$shim=agent=$out/libmethodagent.so:enable=entry2+exit,bench"
    [g]="-Dfibffm.mode=ffm -Dfibffm.lib=$PWD/$out/libfibfloor.so --enable-native-access=ALL-UNNAMED"
    [h]="-Dfibffm.mode=critical -Dfibffm.lib=$PWD/$out/libfibfloor.so --enable-native-access=ALL-UNNAMED"
    [i]=""
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
    [i]="emulation floor: two natives sending to the agent, no shim"
)
declare -A nsl cpu wall counts calls
echo "JDK $feature ($("$java" -version 2>&1 | head -1)); fib($n) x $reps (c: x $slow_reps); RUNS=$runs"
for ((r = 0; r < runs; r++)); do
    for k in $steps; do
        rp=$reps; [ "$k" = c ] && rp=$slow_reps
        main=(FibBench "$n" "$rp")
        [ "$k" = e ] && main=(FibFloor "$n" "$rp" "$PWD/$out/libfibfloor.so")
        [ "$k" = i ] && main=(FibFloor "$n" "$rp" "$PWD/$out/libfibemul.so")
        case $k in g | h) main=(FibFfm "$n" "$rp") ;; esac
        # shellcheck disable=SC2086
        s=$(date +%s%N)
        o=$("$java" ${agentopt[$k]} -cp "$out/classes" "${main[@]}" 2>"$out/err.$k")
        e=$(date +%s%N)
        nsl[$k]+="$(sed -n 's/.* ns_per_call \([0-9.]*\).*/\1/p' <<<"$o") "
        cpu[$k]+="$(sed -n 's/.* cpu_ns_per_call \([0-9.]*\).*/\1/p' <<<"$o") "
        wall[$k]+="$(( (e - s) / 1000000 )) "
        calls[$k]=$(sed -n 's/^calls \([0-9]*\).*/\1/p' <<<"$o")
        counts[$k]=$(grep -o 'METHOD_ENTRY [0-9]* METHOD_EXIT [0-9]*' "$out/err.$k" || echo "no events")
    done
done
declare -A m u w
for k in a b c d e f g h i; do m[$k]=0 u[$k]=0 w[$k]=0; done # not run: its ratios print as 0
for k in $steps; do
    m[$k]=$(median ${nsl[$k]})
    u[$k]=$(median ${cpu[$k]})
    w[$k]=$(median ${wall[$k]})
    printf '(%s) %-62s %8s ns/call  cpu %8s ns/call  wall %6s ms  fib calls %s  agent: %s\n' "$k" "${label[$k]}" "${m[$k]}" "${u[$k]}" "${w[$k]}" "${calls[$k]}" "${counts[$k]}"
done
# Each round's figure (ns per call on the loop), in the order run: the spread behind each median.
for k in $steps; do printf '(%s) rounds: %s\n' "$k" "${nsl[$k]% }"; done
awk -v a="${m[a]}" -v b="${m[b]}" -v c="${m[c]}" -v d="${m[d]}" -v e="${m[e]}" -v wa="${w[a]}" -v wb="${w[b]}" -v wc="${w[c]}" -v wd="${w[d]}" -v f="$((reps / slow_reps))" 'function q(x, y) { return x > 0 && y > 0 ? x / y : 0 } BEGIN {
    printf "loop: (b)/(a) %.1f  (c)/(a) %.1f  (d)/(a) %.3f  (e)/(a) %.1f (the JNI floor)  (b)/(e) %.2f\n", q(b, a), q(c, a), q(d, a), q(e, a), q(b, e)
    printf "wall: (b)/(a) %.1f  (c)/(a) %.1f (scaled to the same calls)  (d)/(a) %.3f\n", q(wb, wa), q(wc * f, wa), q(wd, wa)
}'
awk -v b="${m[b]}" -v e="${m[e]}" -v i="${m[i]}" -v x="${m[f]}" -v ub="${u[b]}" -v ue="${u[e]}" -v ui="${u[i]}" -v ux="${u[f]}" 'function q(x, y) { return x > 0 && y > 0 ? x / y : 0 } BEGIN {
    printf "emulation floor, loop: (b)/(i) %.2f  (f)/(i) %.2f  (i)/(e) %.2f   above (i) per event: (b) %.2f ns, (f) %.2f ns\n", q(b, i), q(x, i), q(i, e), (i > 0 ? (b - i) / 2 : 0), (i > 0 ? (x - i) / 2 : 0)
    printf "emulation floor, cpu:  (b)/(i) %.2f  (f)/(i) %.2f  (i)/(e) %.2f   above (i) per event: (b) %.2f ns, (f) %.2f ns\n", q(ub, ui), q(ux, ui), q(ui, ue), (ui > 0 ? (ub - ui) / 2 : 0), (ui > 0 ? (ux - ui) / 2 : 0)
}'
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
awk -v b="${m[b]}" -v e="${m[e]}" -v e2="${m[f]}" -v i="${m[i]}" -v f="$feature" 'function q(x, y) { return x > 0 && y > 0 ? x / y : 0 } BEGIN {
    printf "SUMMARY|method events|%s|METHOD_ENTRY+EXIT per call / JNI floor (b)/(e)|%.2f|<= 1.3\n", f, q(b, e)
    printf "SUMMARY|method events|%s|METHOD_ENTRY2+EXIT per call / JNI floor (f)/(e)|%.2f|<= 1.3\n", f, q(e2, e)
    printf "SUMMARY|method events|%s|METHOD_ENTRY+EXIT per call / emulation floor (b)/(i)|%.2f|-\n", f, q(b, i)
    printf "SUMMARY|method events|%s|emulation floor / JNI floor (i)/(e)|%.2f|-\n", f, q(i, e) }'
if [ "$feature" -ge 22 ]; then
    awk -v b="${m[b]}" -v e="${m[e]}" -v g="${m[g]}" -v h="${m[h]}" -v f="$feature" 'function q(x, y) { return x > 0 && y > 0 ? x / y : 0 } BEGIN {
        printf "FFM: (g)/(e) %.2f  (h)/(e) %.2f  (b)/(h) %.2f\n", q(g, e), q(h, e), q(b, h)
        printf "SUMMARY|method events|%s|FFM critical-downcall floor / JNI floor (h)/(e)|%.2f|-\n", f, q(h, e) }'
fi
