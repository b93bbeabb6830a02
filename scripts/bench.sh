#!/usr/bin/env bash
# Every benchmark of the shim, one table of ratios: runs each scripts/bench-*.sh below on each
# JDK asked for, keeps its whole output in target/bench/all-<JDK>-<script>.log, and prints the
# lines each one ends with (SUMMARY|goal|JDK|what|value|target) as one table, with the date, the
# machine and its load, and then the same ratios by JDK (scripts/bench-table.py: the README's
# table). Each ratio is measured side by side in one run (interleaved rounds, medians; see each
# script's header for what it compares) — never against figures of another day.
#
#   scripts/bench.sh [JDK...]          default: 11 17 21 25
# Environment: BENCHES (the scripts to run, default: every one below that exists; with MIRRORS
# set and BENCHES unset, also the real-program ones, bench-javac-alloc.sh, bench-sites.sh and
# bench-times.sh, and allocation counting on javac on JDK 21's and 25's VMs when asked for), and each
# script's own settings (RUNS, N, ...), passed through. QUICK=1 runs fewer rounds and smaller
# workloads (a smoke test of the scripts, not figures to publish).
# OLD=<path to another build's libjvmpi_shim.so> compares two builds in one interleaved run:
# each script runs on the old build and then on this tree's, JDK by JDK, and each SUMMARY line
# says which (`[old]`, `[new]`) — for a change that must not move the ratios.
# A full run takes about 12 minutes per JDK on a 2-core machine, and 12 more for the javac ones
# (twice that with OLD).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

jdks=("$@"); [ ${#jdks[@]} -eq 0 ] && jdks=(11 17 21 25)
default_benches="methods instructions alloc startup calltrace heapdump ids vthreads"
benches=${BENCHES:-$default_benches}
out=target/bench; mkdir -p "$out"
quick=${QUICK:-0}
[ "$quick" = 1 ] && export RUNS=${RUNS:-1} REPS=${REPS:-6} NS=${NS:-"43000"}
cargo build --release --quiet || exit 1
scripts/install-jdks.sh >/dev/null || exit 1

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
summary=$out/summary.txt; : >"$summary"
for jdk in "${jdks[@]}"; do
    for b in $benches; do
        script=scripts/bench-$b.sh
        [ -x "$script" ] || { echo "bench.sh: no $script, skipped" >&2; continue; }
        log=$out/all-$jdk-$b.log
        echo "bench.sh: JDK $jdk, $b (log: $log)" >&2
        # N means something else to each script: smaller workloads only where QUICK asks.
        env_extra=()
        if [ "$quick" = 1 ]; then
            case $b in alloc) env_extra=(N=2000000 WINDOW=100000) ;; heapdump) env_extra=(N=200000) ;; esac
        fi
        if [ -z "${OLD:-}" ]; then
            if ! env "${env_extra[@]}" "$script" "$jdk" >"$log" 2>&1; then
                echo "SUMMARY|$b|$jdk|the script failed: see $log|-|-" >>"$summary"
            fi
            grep '^SUMMARY|' "$log" >>"$summary" || echo "SUMMARY|$b|$jdk|no summary line: see $log|-|-" >>"$summary"
            continue
        fi
        # Two builds, one after the other for each script and JDK: the old, then this tree's.
        for build in old new; do
            blog=${log%.log}-$build.log
            [ "$build" = old ] && shim_so=$(readlink -f "$OLD") || shim_so=$(readlink -f target/release/libjvmpi_shim.so)
            echo "bench.sh: JDK $jdk, $b, $build build (log: $blog)" >&2
            if ! env "${env_extra[@]}" SHIM="$shim_so" "$script" "$jdk" >"$blog" 2>&1; then
                echo "SUMMARY|$b|$jdk|[$build] the script failed: see $blog|-|-" >>"$summary"
            fi
            grep '^SUMMARY|' "$blog" | sed "s/^\(SUMMARY|[^|]*|[^|]*|\)/\1[$build] /" >>"$summary" \
                || echo "SUMMARY|$b|$jdk|[$build] no summary line: see $blog|-|-" >>"$summary"
        done
    done
done
# The real program (JDK 17's javac on StarJ's analyzer), once: needs the git mirrors and the
# agents of ../shared/corpus (build.sh), so only where MIRRORS is set.
if [ -n "${MIRRORS:-}" ] && [ -z "${BENCHES:-}" ]; then
    for b in javac-alloc sites times; do
        log=$out/all-javac-$b.log
        echo "bench.sh: javac, $b (log: $log)" >&2
        scripts/bench-$b.sh >"$log" 2>&1 || echo "SUMMARY|$b|17|the script failed: see $log|-|-" >>"$summary"
        grep '^SUMMARY|' "$log" >>"$summary" || true
    done
    # Allocation counting on javac on JDK 21 and 25 too: their runtimes here have no javac, so
    # JDK 17's javac classes run on their VMs (bench-common.sh's javac_on; JDK 11 cannot load them).
    for vm in 21 25; do
        [[ " ${jdks[*]} " == *" $vm "* ]] || continue
        log=$out/all-javac-javac-alloc-$vm.log
        echo "bench.sh: javac on JDK $vm's VM, javac-alloc (log: $log)" >&2
        VM=$vm scripts/bench-javac-alloc.sh >"$log" 2>&1 || echo "SUMMARY|javac-alloc|$vm|the script failed: see $log|-|-" >>"$summary"
        grep '^SUMMARY|' "$log" >>"$summary" || true
    done
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo
echo "jvmpi-shim benchmarks, $started; $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo);"
echo "load average before: $load_before, after: $load_after"
echo
echo "| goal | JDK | ratio | measured | target | met |"
echo "|---|---|---|---|---|---|"
# Grouped by goal, in the order the goals first appeared, each group's lines in run order.
awk -F'|' '{
    if (!($2 in seen)) { seen[$2] = ++ngoals; goal[ngoals] = $2 }
    g = seen[$2]; line[g, ++n[g]] = $0
} END {
    for (g = 1; g <= ngoals; g++) for (i = 1; i <= n[g]; i++) {
        split(line[g, i], f, "|"); met = "-"
        if (f[6] ~ /^<= / && f[5] ~ /^[0-9.]+$/) { t = substr(f[6], 4) + 0; met = (f[5] + 0 <= t) ? "yes" : "no" }
        if (f[6] ~ /^= / && f[5] ~ /^[0-9.]+$/) { t = substr(f[6], 3) + 0; met = (f[5] + 0 == t) ? "yes" : "no" }
        printf "| %s | %s | %s | %s | %s | %s |\n", f[2], f[3], f[4], f[5], f[6], met }
}' "$summary"
echo
echo "The same ratios by JDK (a round-by-round spread, where a script gives one, in parentheses):"
echo
python3 scripts/bench-table.py "$summary" "${jdks[@]}"
