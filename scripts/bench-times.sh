#!/usr/bin/env bash
# HPROF cpu=times on a real program through the shim, against a plain JVMTI agent doing the same
# job the JVMTI way (benches/times_jvmti.c: MethodEntry/MethodExit events, the thread's CPU time
# at each, per-thread call stack and per-method costs): JDK 17's javac compiling one package of
# StarJ's analyzer (the sources ../shared/corpus/realprog.sh uses; PACKAGE, default `util`, with
# the rest on the source path), with
#   (a) no agent,
#   (b) the plain JVMTI agent,
#   (c) the shim + HPROF cpu=times (phoneME CDC's JVMPI HPROF, built by ../shared/corpus/build.sh),
#   (d) the shim + a minimal JVMPI agent doing (b)'s job (benches/times_jvmpi.c: METHOD_ENTRY,
#       METHOD_EXIT, GetCurrentThreadCpuTime) — the shim against plain JVMTI without HPROF's own
#       costs (its 256-bucket per-thread tables: docs/real-agents.md, "HPROF cpu=times").
# One package rather than the 581 files: (b) runs every thread in the interpreter, about 30 M
# events for this package alone. RUNS interleaved rounds (default 1: (b) takes minutes); medians
# of wall time and of CPU time (user + system) of the process.
#
#   scripts/bench-times.sh           (after ../shared/corpus/build.sh; same MIRRORS and CORPUS_WORK)
# Environment: MIRRORS (git mirrors, needs dufour+starj), CORPUS_WORK (default /tmp/corpus-build),
# RUNS (default 1), PACKAGE (default util), JAVAC (default: JDK 17's).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/bench-common.sh
runs=${RUNS:-1}
pkg=${PACKAGE:-util}
W=${CORPUS_WORK:-/tmp/corpus-build}
hprof=$W/out/hprof/lib/libhprof.so
[ -f "$hprof" ] || { echo "no $hprof: run ../shared/corpus/build.sh first" >&2; exit 2; }
javac=${JAVAC:-$(command -v javac)}
bench_build
cc_agent "$out/libtimes_jvmti.so" benches/times_jvmti.c -lpthread
cc_agent "$out/libtimes_jvmpi.so" benches/times_jvmpi.c -lpthread
R=$PWD/$out/times
starj_sources "$R"
find "$R/src/analyzer/src/starj/$pkg" -name '*.java' | sort > "$R/srcs.txt"

keys=(a b c d)
declare -A agent=([a]="" [b]="-J-agentpath:$PWD/$out/libtimes_jvmti.so" [c]="-J-agentpath:$shim=agent=$hprof:cpu=times"
    [d]="-J-agentpath:$shim=agent=$PWD/$out/libtimes_jvmpi.so")
declare -A label=([a]="no agent" [b]="plain JVMTI: MethodEntry/Exit, thread CPU time" [c]="shim + HPROF cpu=times"
    [d]="shim + minimal JVMPI agent doing (b)'s job")
declare -A wall cpu
echo "javac on starj/$pkg ($(wc -l < "$R/srcs.txt") files, the rest on the source path); RUNS=$runs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < runs; r++)); do
    for k in "${keys[@]}"; do
        d=$R/$k; rm -rf "$d"; mkdir -p "$d/classes"
        # shellcheck disable=SC2086
        read -r e c < <(javac_round "$d" ${agent[$k]} -nowarn -sourcepath "$R/src/analyzer/src" -d classes "@$R/srcs.txt")
        wall[$k]="${wall[$k]:-} $e"
        cpu[$k]="${cpu[$k]:-} $c"
    done
done
declare -A mw mc
for k in "${keys[@]}"; do
    # shellcheck disable=SC2086
    mw[$k]=$(median ${wall[$k]}); mc[$k]=$(median ${cpu[$k]})
    printf '(%s) %-48s wall %7.1f s [%s ]  cpu %7.1f s [%s ]  classes %s\n' "$k" "${label[$k]}" "${mw[$k]}" "${wall[$k]}" "${mc[$k]}" "${cpu[$k]}" "$(find "$R/$k/classes" -name '*.class' | wc -l)"
done
for k in b d; do echo "($k) $(grep -h '^agent:' "$R/$k/out.txt" "$R/$k/err.txt" 2>/dev/null | head -1)"; done
f=$R/c/java.hprof.txt
[ -f "$f" ] && echo "HPROF: $(sed -n '/^CPU TIME (ms) BEGIN/,/^CPU TIME (ms) END/p' "$f" | grep -c '^ *[0-9]') CPU TIME lines, $(grep -c '^TRACE' "$f") traces"
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
echo
echo "(c)/(b) wall: $(ratio "${mw[c]}" "${mw[b]}")  cpu: $(ratio "${mc[c]}" "${mc[b]}")"
echo "(d)/(b) wall: $(ratio "${mw[d]}" "${mw[b]}")  cpu: $(ratio "${mc[d]}" "${mc[b]}")"
echo "(b)/(a) wall: $(ratio "${mw[b]}" "${mw[a]}")  (c)/(a) wall: $(ratio "${mw[c]}" "${mw[a]}")  (d)/(a) wall: $(ratio "${mw[d]}" "${mw[a]}")"
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
echo "SUMMARY|real program: HPROF cpu=times|17|javac: shim + HPROF / plain JVMTI agent doing the same job (c)/(b), CPU|$(ratio "${mc[c]}" "${mc[b]}")|<= 2"
echo "SUMMARY|real program: HPROF cpu=times|17|javac: shim + minimal JVMPI times agent / the same JVMTI agent (d)/(b), CPU|$(ratio "${mc[d]}" "${mc[b]}")|-"
