#!/usr/bin/env bash
# Cost of COMPILED_METHOD_LOAD and of the Java monitor events. One CPU-bound program
# (benches/JitBench.java cpu: small methods the JIT compiles, inlines and recompiles) run
#   (a) with no agent,
#   (b) with the shim and a JVMPI agent that enables nothing (benches/jit_jvmpi.c none),
#   (c) with the shim and the agent counting COMPILED_METHOD_LOAD/UNLOAD and their line-table
#       entries (cml),
# and a contended-lock program (JitBench contend: two threads take turns on one lock, with a
# short timed wait every 1000 entries) run
#   (d) with the shim and the agent enabling nothing,
#   (e) with the shim and the agent counting the five MONITOR_* events (mon),
# side by side, RUNS interleaved rounds; prints the medians of the program's own loop time and of
# the wall time, the ratios (c)/(b), (c)/(a) and (e)/(d), and the agent's counts.
#
#   scripts/bench-jit.sh [JDK]     JDK: 11, 17 (default), 21 or 25 (installed by scripts/install-jdks.sh)
# Environment: ROUNDS (cpu rounds, default 3000), ENTRIES (lock entries per thread, default 1000000),
# RUNS (default 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

feature=${1:-17}
rounds=${ROUNDS:-3000}
entries=${ENTRIES:-1000000}
runs=${RUNS:-5}
. scripts/bench-common.sh
bench_java "$feature"
bench_build
cc_agent "$out/libjit_jvmpi.so" benches/jit_jvmpi.c
javac -d "$out/classes" --release 11 benches/JitBench.java

declare -A agentopt=(
    [a]=""
    [b]="-agentpath:$shim=agent=$out/libjit_jvmpi.so:none"
    [c]="-agentpath:$shim=agent=$out/libjit_jvmpi.so:cml"
    [d]="-agentpath:$shim=agent=$out/libjit_jvmpi.so:none"
    [e]="-agentpath:$shim=agent=$out/libjit_jvmpi.so:mon"
)
declare -A prog=([a]="cpu $rounds" [b]="cpu $rounds" [c]="cpu $rounds" [d]="contend $entries" [e]="contend $entries")
declare -A label=(
    [a]="cpu: no agent"
    [b]="cpu: shim, nothing enabled"
    [c]="cpu: shim, COMPILED_METHOD_LOAD/UNLOAD counted"
    [d]="contend: shim, nothing enabled"
    [e]="contend: shim, MONITOR_* counted"
)
declare -A loops walls agentline
echo "JDK $feature ($("$java" -version 2>&1 | head -1)); ROUNDS=$rounds ENTRIES=$entries RUNS=$runs"
for ((r = 0; r < runs; r++)); do
    for k in a b c d e; do
        t0=$(date +%s%N)
        # shellcheck disable=SC2086
        o=$("$java" ${agentopt[$k]} -cp "$out/classes" JitBench ${prog[$k]})
        t1=$(date +%s%N)
        loops[$k]+="$(sed -n 's/^loop_ms=\([0-9]*\).*/\1/p' <<<"$o") "
        walls[$k]+="$(((t1 - t0) / 1000000)) "
        agentline[$k]=$(grep '^agent:' <<<"$o" || true)
    done
done
declare -A ml mw
printf '%-48s %10s %10s  %s\n' configuration "loop ms" "wall ms" "agent"
for k in a b c d e; do
    ml[$k]=$(median ${loops[$k]})
    mw[$k]=$(median ${walls[$k]})
    printf '%-48s %10s %10s  %s\n' "(${k}) ${label[$k]}" "${ml[$k]}" "${mw[$k]}" "${agentline[$k]}"
done
ratio() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%.3f", x / y}'; }
echo "(c)/(b) COMPILED_METHOD_LOAD enabled: loop $(ratio "${ml[c]}" "${ml[b]}")  wall $(ratio "${mw[c]}" "${mw[b]}")"
echo "(c)/(a) against no agent:            loop $(ratio "${ml[c]}" "${ml[a]}")  wall $(ratio "${mw[c]}" "${mw[a]}")"
echo "(e)/(d) MONITOR_* enabled:           loop $(ratio "${ml[e]}" "${ml[d]}")  wall $(ratio "${mw[e]}" "${mw[d]}")"
