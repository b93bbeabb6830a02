#!/usr/bin/env bash
# Virtual threads (JDK 21+): the cost of a virtual thread's start and end, and the memory of a
# program that starts N of them over its life (default 1 000 000, at most ALIVE = 5000 alive at
# once; benches/VtChurn.java), in three configurations run side by side (interleaved rounds,
# medians of RUNS, default 3):
#   (a) no agent;
#   (b) the shim with a legacy agent that follows threads as HPROF did (benches/vt_jvmpi.c:
#       THREAD_START/END, a record per thread in JVMPI thread-local storage): each virtual
#       thread is a JVMPI thread of its own (`vthreads=own`, the default);
#   (c) the JVMTI floor: a plain JVMTI agent that enables VirtualThreadStart/End and keeps a
#       record per virtual thread in JVMTI thread-local storage (benches/vt_jvmti.c).
# Prints ns of wall time per virtual thread and the RSS after the churn (after a full
# collection) and its peak, for each. JDK 11 and 17 have no virtual threads: one line says so.
# HEAP (e.g. 256m) fixes the Java heap (-Xms = -Xmx), so that the RSS follows the native memory
# rather than the heap the collector chose to commit.
#   scripts/bench-vthreads.sh [JDK...]     (default 21); N, ALIVE, RUNS, HEAP
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/bench-common.sh
jdks=("$@"); [ ${#jdks[@]} -eq 0 ] && jdks=(21)
n=${N:-1000000}; alive=${ALIVE:-5000}; runs=${RUNS:-3}
heap=(); [ -n "${HEAP:-}" ] && heap=("-Xms$HEAP" "-Xmx$HEAP")
bench_build; mkdir -p "$out/vt-classes"
cc_agent "$out/libvt_jvmpi.so" benches/vt_jvmpi.c
cc_agent "$out/libvt_jvmti.so" benches/vt_jvmti.c
javac --release 11 -d "$out/vt-classes" benches/VtChurn.java
field() { grep -o "$1=[0-9]*" <<<"$2" | cut -d= -f2; }
for feature in "${jdks[@]}"; do
    if [ "$feature" -lt 21 ]; then
        echo "SUMMARY|virtual threads|$feature|no virtual threads on this JDK|-|-"
        continue
    fi
    bench_java "$feature"
    declare -A ns=() rss=() hwm=()
    for ((r = 1; r <= runs; r++)); do
        for cfg in a b c; do
            case $cfg in
                a) agent=() ;;
                b) agent=("-agentpath:$shim=agent=$(readlink -f "$out/libvt_jvmpi.so")") ;;
                c) agent=("-agentpath:$(readlink -f "$out/libvt_jvmti.so")") ;;
            esac
            line=$("$java" "${heap[@]}" "${agent[@]}" -cp "$out/vt-classes" VtChurn "$n" "$alive" 2>&1 | grep '^VTCHURN\|^VTJVM' | tr '\n' ' ')
            echo "JDK $feature run $r ($cfg): $line"
            ns[$cfg]+="$(field ns_per_thread "$line") "
            rss[$cfg]+="$(field rss_kb "$line") "
            hwm[$cfg]+="$(field hwm_kb "$line") "
        done
    done
    declare -A m_ns=() m_rss=() m_hwm=()
    for cfg in a b c; do
        # shellcheck disable=SC2086
        m_ns[$cfg]=$(median ${ns[$cfg]}); m_rss[$cfg]=$(median ${rss[$cfg]}); m_hwm[$cfg]=$(median ${hwm[$cfg]})
    done
    awk -v jdk="$feature" -v n="$n" -v a="${m_ns[a]}" -v b="${m_ns[b]}" -v c="${m_ns[c]}" \
        -v ra="${m_rss[a]}" -v rb="${m_rss[b]}" -v rc="${m_rss[c]}" -v ha="${m_hwm[a]}" -v hb="${m_hwm[b]}" -v hc="${m_hwm[c]}" 'BEGIN {
        printf "JDK %s, %d virtual threads: ns per start+end (a) %d, (b) %d, (c) %d; RSS MiB after (a) %.0f, (b) %.0f, (c) %.0f; peak (a) %.0f, (b) %.0f, (c) %.0f\n",
            jdk, n, a, b, c, ra / 1024, rb / 1024, rc / 1024, ha / 1024, hb / 1024, hc / 1024
        # One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
        printf "SUMMARY|virtual threads, start+end|%s|ns per virtual thread under a THREAD_START agent (b) - no agent (a), JVMTI floor (c) - (a)|%d, %d|-\n", jdk, b - a, c - a
        printf "SUMMARY|virtual threads, start+end|%s|(b)/(c) wall time per virtual thread|%.2f|-\n", jdk, b / c
        printf "SUMMARY|virtual threads, memory|%s|RSS MiB after %d virtual threads (b) - (a), peak (b) - (a)|%.0f, %.0f|-\n", jdk, n, (rb - ra) / 1024, (hb - ha) / 1024 }'
done
