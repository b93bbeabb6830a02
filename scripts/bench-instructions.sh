#!/usr/bin/env bash
# INSTRUCTION_START benchmark: the corpus workload's `spin` loop (benches/InsnBench.java, 16
# bytecode instructions per iteration) run
#   (a) with no agent,
#   (b) with the shim and a JVMPI agent counting INSTRUCTION_START (tests/agents/methodagent.c,
#       options `enable=insn,bench`: one relaxed atomic increment per event),
#   (c) the same agent counting inside RawMonitorEnter/Exit of one raw monitor, as JCOV's
#       INSTRUCTION_START handler does (`bench-lock`),
#   (d) the JNI floor, no agent: the same loop calling two empty static natives per bytecode
#       instruction (benches/InsnFloor.java, benches/insn_floor.c).
# RUNS interleaved rounds; medians of the timed loop, in ns per instruction (ns per iteration
# / 16). Prints the ratios (b)/(d) and (c)/(d): what one INSTRUCTION_START costs in the shim
# against the floor of any JNI-based emulation.
#
#   scripts/bench-instructions.sh [JDK]     JDK: 11, 17 (default), 21 or 25
# Environment: N (iterations per call, default 200000), REPS (calls, default 20), RUNS (default 3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

feature=${1:-17}
n=${N:-200000}
reps=${REPS:-20}
runs=${RUNS:-3}
. scripts/bench-common.sh
bench_java "$feature"
bench_build
cc_agent "$out/libmethodagent.so" tests/agents/methodagent.c -lpthread
cc_agent "$out/libinsnfloor.so" benches/insn_floor.c
javac -d "$out/classes" --release 11 benches/InsnBench.java benches/InsnFloor.java
per_iter=16

declare -A agentopt=(
    [a]=""
    [b]="-agentpath:$shim=agent=$out/libmethodagent.so:enable=insn,bench"
    [c]="-agentpath:$shim=agent=$out/libmethodagent.so:enable=insn,bench-lock"
    [d]=""
)
declare -A label=(
    [a]="no agent"
    [b]="shim + JVMPI agent counting INSTRUCTION_START"
    [c]="same, counting inside RawMonitorEnter/Exit (as JCOV)"
    [d]="JNI floor: two empty static natives per instruction"
)
declare -A nsi counts
echo "JDK $feature ($("$java" -version 2>&1 | head -1)); spin($n) x $reps, $per_iter instructions per iteration; RUNS=$runs"
for ((r = 0; r < runs; r++)); do
    for k in a b c d; do
        main=(InsnBench "$n" "$reps"); [ "$k" = d ] && main=(InsnFloor "$n" "$reps" "$PWD/$out/libinsnfloor.so")
        # shellcheck disable=SC2086
        o=$("$java" ${agentopt[$k]} -cp "$out/classes" "${main[@]}" 2>"$out/err.$k")
        nsi[$k]+="$(sed -n 's/.*ns_per_iter \([0-9.]*\).*/\1/p' <<<"$o") "
        counts[$k]=$(grep -o 'INSTRUCTION_START [0-9]*' "$out/err.$k" || echo "-")
    done
done
declare -A m
for k in a b c d; do
    m[$k]=$(awk -v x="$(median ${nsi[$k]})" -v p=$per_iter 'BEGIN {printf "%.2f", x / p}')
    printf '(%s) %-56s %8s ns/instruction  agent: %s\n' "$k" "${label[$k]}" "${m[$k]}" "${counts[$k]}"
done
awk -v a="${m[a]}" -v b="${m[b]}" -v c="${m[c]}" -v d="${m[d]}" 'BEGIN {
    printf "per instruction: (b)/(d) %.2f  (c)/(d) %.2f  (d)/(a) %.0f (the JNI floor against none)\n", b / d, c / d, d / a
}'
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
awk -v b="${m[b]}" -v c="${m[c]}" -v d="${m[d]}" -v f="$feature" 'BEGIN {
    printf "SUMMARY|instruction events|%s|INSTRUCTION_START / JNI floor (b)/(d)|%.2f|<= 2\n", f, b / d
    printf "SUMMARY|instruction events|%s|same inside a raw monitor, as JCOV (c)/(d)|%.2f|-\n", f, c / d }'
