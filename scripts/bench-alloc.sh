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
# allocation, with the spread min-max). Prints the ratios, the event counts next to the
# program's own, and peak RSS.
#
# Three workloads (WORKLOADS; the first two by default):
#   plain    the loop above (15/16 small objects, 1/16 int[8], all kept in a ring);
#   scratch  the same, plus a small int[2] per iteration that never leaves the loop: once C2 has
#            compiled the loop, (b) sees none of them (escape analysis presumably; on JDK 25 also
#            with it switched off), but the shim's array hook hands it to a native, so the shim
#            reports (and the JVM makes) twice the allocations. (a), (b), (c) and (d) run it: its
#            (d)/(a) is the idle ratio where escape analysis matters (before JDK 16 a JVMTI
#            environment holding can_get_owned_monitor_info turns it off; the shim takes that
#            capability there only with owned-monitors=yes).
#   escape   "scratch" with each int[2] stored in a static field: it escapes, so every one is
#            made and (b) sees and tags it too. (a), (b) and (c) run it: its (c)/(b) compares the
#            shim with a floor that tags the same objects (not in the default WORKLOADS).
# (c)/(b) is given per reported allocation (loop time / the agent's OBJECT_ALLOC count), the
# goal's measure, and per loop iteration; both from the loop thread's CPU time (CPU=1, the
# default: on a busy machine wall time mostly measures the wait for a core) or wall time (CPU=0).
#
#   scripts/bench-alloc.sh [JDK]     JDK: 11, 17 (default), 21 or 25 (installed by scripts/install-jdks.sh)
# Environment: N (allocations, default 20000000), WINDOW (live objects, default 1000000), RUNS (default 5),
#   WORKLOADS ("plain scratch"), CPU (1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

feature=${1:-17}
n=${N:-20000000}
# The configurations that give no IDs run 10 times the allocations, so that their short loops
# are measured above the noise; every ratio below compares nanoseconds per allocation.
nfast=$((n * 10))
window=${WINDOW:-1000000}
runs=${RUNS:-5}
workloads=${WORKLOADS:-plain scratch}
clock=$([ "${CPU:-1}" = 1 ] && echo cpu_ms || echo loop_ms)
. scripts/bench-common.sh
bench_java "$feature"
bench_build
cc_agent "$out/libtag_all_jvmti.so" benches/tag_all_jvmti.c
cc_agent "$out/libcount_jvmpi.so" benches/count_jvmpi.c
javac -d "$out/classes" --release 11 benches/AllocBench.java

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
declare -A configs=([plain]="a b c d e" [scratch]="a b c d" [escape]="a b c")
# A fixed, pre-touched heap makes peak RSS comparable between the configurations.
heap="-Xms2g -Xmx2g -XX:+AlwaysPreTouch"
# Per workload and configuration: times per allocation of the program, per reported
# allocation, and the last run's lines.
declare -A median agentline programline times rtimes memline
echo "JDK $feature ($("$java" -version 2>&1 | head -1)); N=$n WINDOW=$window RUNS=$runs clock=$clock; $(uptime | sed 's/.*load/load/')"
# Rounds interleave the configurations and workloads, so that drift of a busy machine hits them alike.
for ((r = 0; r < runs; r++)); do
    for w in $workloads; do
        for k in ${configs[$w]}; do
            # shellcheck disable=SC2086
            case $k in b | c) count=$n ;; *) count=$nfast ;; esac
            o=$("$java" ${agentopt[$k]} $heap -cp "$out/classes" AllocBench "$count" "$window" "$w" 2>&1)
            programline[$w$k]=$(grep '^program:' <<<"$o")
            agentline[$w$k]=$(grep '^agent:' <<<"$o" || true)
            memline[$w$k]=$(grep '^jvmpi-shim: memory:' <<<"$o" || true)
            ms=$(sed -n "s/.*$clock=\([0-9.]*\).*/\1/p" <<<"${programline[$w$k]}")
            reported=$(sed -n 's/.*allocs=\([0-9]*\).*/\1/p' <<<"${agentline[$w$k]}")
            times[$w$k]="${times[$w$k]:-} $(awk -v ms="$ms" -v c="$count" 'BEGIN { printf "%.2f", ms * 1e6 / c }')"
            [ -n "$reported" ] && rtimes[$w$k]="${rtimes[$w$k]:-} $(awk -v ms="$ms" -v c="$reported" 'BEGIN { printf "%.2f", ms * 1e6 / c }')"
        done
    done
done
med() { printf '%s\n' $1 | sort -g | sed -n "$(( (runs + 1) / 2 ))p"; }
spread() { printf '%s\n' $1 | sort -g | sed -n '1p;$p' | paste -sd- -; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
# The ratio of two configurations round by round: its min-max.
rspread() {
    paste <(printf '%s\n' $1) <(printf '%s\n' $2) | awk '{ r = $1 / $2; if (NR == 1 || r < lo) lo = r; if (NR == 1 || r > hi) hi = r } END { printf "%.2f-%.2f", lo, hi }'
}
for w in $workloads; do
    echo
    echo "== workload $w"
    for k in ${configs[$w]}; do
        median[$w$k]=$(med "${times[$w$k]}")
        printf '(%s) %-48s %8.2f ns/allocation (%s)   [%s ]\n' "$k" "${label[$k]}" "${median[$w$k]}" "$(spread "${times[$w$k]}")" "${times[$w$k]}"
        printf '      %s\n' "${programline[$w$k]}"
        [ -n "${agentline[$w$k]}" ] && printf '      %s\n' "${agentline[$w$k]}"
        [ -n "${memline[$w$k]:-}" ] && printf '      %s\n' "${memline[$w$k]}"
    done
    rb=$(med "${rtimes[${w}b]}"); rc=$(med "${rtimes[${w}c]}")
    echo "(b) ns per reported allocation: $rb ($(spread "${rtimes[${w}b]}")); (c): $rc ($(spread "${rtimes[${w}c]}"))"
    echo "(c)/(b) per reported allocation:           $(ratio "$rc" "$rb")   round by round $(rspread "${rtimes[${w}c]}" "${rtimes[${w}b]}")   (target <= 1.0)"
    echo "(c)/(b) per loop iteration:                $(ratio "${median[${w}c]}" "${median[${w}b]}")   round by round $(rspread "${times[${w}c]}" "${times[${w}b]}")"
    echo "(b)/(a) plain JVMTI tagging vs no agent:   $(ratio "${median[${w}b]}" "${median[${w}a]}")"
    echo "(c)/(a) shim+JVMPI vs no agent:            $(ratio "${median[${w}c]}" "${median[${w}a]}")"
    # One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
    echo "SUMMARY|allocation events|$feature|OBJECT_ALLOC+FREE per reported allocation / JVMTI tagging (c)/(b), $w (rounds $(rspread "${rtimes[${w}c]}" "${rtimes[${w}b]}"))|$(ratio "$rc" "$rb")|<= 1.0"
    [ "$w" = escape ] && continue
    echo "SUMMARY|idle|$feature|shim loaded, nothing enabled / no agent (d)/(a), $w (rounds $(rspread "${times[${w}d]}" "${times[${w}a]}"))|$(ratio "${median[${w}d]}" "${median[${w}a]}")|<= 1.01"
    echo "(d)/(a) shim, nothing enabled vs no agent: $(ratio "${median[${w}d]}" "${median[${w}a]}")   round by round $(rspread "${times[${w}d]}" "${times[${w}a]}")   (target <= 1.01)"
    if [ "$w" = plain ]; then
        echo "(e)/(a) instrumentation switched off:     $(ratio "${median[${w}e]}" "${median[${w}a]}")"
        rss() { sed -n 's/.*peak_rss_kb=\([0-9]*\).*/\1/p' <<<"$1"; }
        kb=$(rss "${agentline[${w}b]}"); kc=$(rss "${agentline[${w}c]}")
        if [ -n "$kb" ] && [ -n "$kc" ]; then
            echo "peak RSS (whole process, same pre-touched heap): (b) $((kb / 1024)) MiB, (c) $((kc / 1024)) MiB; (c)-(b) per live object: $(awk -v b="$kb" -v c="$kc" -v w="$window" 'BEGIN { printf "%.1f", (c - b) * 1024 / w }') bytes"
        fi
    fi
done
# The idle ratio above moves by ±20-50 % from round to round here, far more than the 1 % it is
# held to; what the shim could change in the loop is the code C2 makes of it (a capability such
# as can_get_owned_monitor_info switches escape analysis off before JDK 16). So the size of the
# loop's C2-compiled (OSR) code, with no agent and with the shim enabling nothing, from one
# LogCompilation run each: equal sizes mean the loop runs the same machine code (the OSR
# compilation: a standard compilation of main made after the loop, in some runs, is not the loop).
c2_code_bytes() {
    local log="$out/c2-$feature-$1-$2.log"
    # shellcheck disable=SC2086
    "$java" ${agentopt[$1]} -XX:+UnlockDiagnosticVMOptions -XX:+LogCompilation -XX:LogFile="$log" $heap \
        -cp "$out/classes" AllocBench "$nfast" "$window" "$2" >/dev/null 2>&1
    grep "<nmethod" "$log" | grep "compiler='c2'" | grep "compile_kind='osr'" | grep "method='AllocBench main" | tail -1 |
        sed -n "s/.*insts_offset='\([0-9]*\)' stub_offset='\([0-9]*\)'.*/\2 \1/p" | awk '{ print $1 - $2 }'
}
for w in $workloads; do
    [ "$w" = escape ] && continue
    ca=$(c2_code_bytes a "$w"); cs=$(c2_code_bytes d "$w")
    echo "C2 code of the $w loop: $ca bytes with no agent, $cs with the shim enabling nothing"
    [ -n "$ca" ] && [ -n "$cs" ] &&
        echo "SUMMARY|idle|$feature|C2 code of the $w loop, bytes, shim nothing enabled / no agent (d)/(a)|$(ratio "$cs" "$ca")|= 1.00"
done
echo
echo "The shim keeps no state per live object (an object's ID and its 'defined' bit are its JVMTI tag);"
echo "its only memory that grows with objects is the compact queue of deaths waiting for a GC bracket (line (c) above)."
