#!/usr/bin/env bash
# HPROF heap=sites,depth=4 on a real program through the shim, against a plain JVMTI agent doing
# the same job (benches/sites_jvmti.c: every allocation sampled, its depth-4 stack taken, counted
# in its site, tagged; frees counted): JDK 17's javac compiling StarJ's analyzer (581 files, as
# ../shared/corpus/realprog.sh), with
#   (a) no agent,
#   (b) the plain JVMTI agent,
#   (c) the shim + HPROF (phoneME CDC's JVMPI HPROF, built by ../shared/corpus/build.sh),
#   (d) the shim + a minimal JVMPI agent doing (b)'s job (benches/sites_jvmpi.c: OBJECT_ALLOC,
#       GetCallTrace depth 4, its site; OBJECT_FREE, with its own object → site table since
#       JVMPI has no tags) — the shim against plain JVMTI without HPROF's own costs,
# RUNS interleaved rounds; medians of wall time and of CPU time (user + system) of the process.
#
#   scripts/bench-sites.sh           (after ../shared/corpus/build.sh; same MIRRORS and CORPUS_WORK)
# Environment: MIRRORS (git mirrors, needs dufour+starj), CORPUS_WORK (default /tmp/corpus-build),
# RUNS (default 3), JAVAC (default: JDK 17's), HPROF_OPTS (default heap=sites,depth=4).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/bench-common.sh
runs=${RUNS:-3}
W=${CORPUS_WORK:-/tmp/corpus-build}
hprof=$W/out/hprof/lib/libhprof.so
opts=${HPROF_OPTS:-heap=sites,depth=4}
[ -f "$hprof" ] || { echo "no $hprof: run ../shared/corpus/build.sh first" >&2; exit 2; }
javac=${JAVAC:-$(command -v javac)}
bench_build
cc_agent "$out/libsites_jvmti.so" benches/sites_jvmti.c -lpthread
cc_agent "$out/libsites_jvmpi.so" benches/sites_jvmpi.c -lpthread
R=$PWD/$out/sites
starj_sources "$R"
find "$R/src" -name '*.java' | sort > "$R/srcs.txt"

keys=(a b c d)
declare -A agent=([a]="" [b]="-J-agentpath:$PWD/$out/libsites_jvmti.so" [c]="-J-agentpath:$shim=agent=$hprof:$opts"
    [d]="-J-agentpath:$shim=agent=$PWD/$out/libsites_jvmpi.so")
declare -A label=([a]="no agent" [b]="plain JVMTI: sample all, stack depth 4, site, tag" [c]="shim + HPROF $opts"
    [d]="shim + minimal JVMPI agent doing (b)'s job")
declare -A wall cpu
echo "javac on $(wc -l < "$R/srcs.txt") files; RUNS=$runs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < runs; r++)); do
    for k in "${keys[@]}"; do
        d=$R/$k; rm -rf "$d"; mkdir -p "$d/classes"
        # shellcheck disable=SC2086
        read -r e c < <(javac_round "$d" ${agent[$k]} -nowarn -d classes "@$R/srcs.txt")
        wall[$k]="${wall[$k]:-} $e"
        cpu[$k]="${cpu[$k]:-} $c"
    done
done
declare -A mw mc
for k in "${keys[@]}"; do
    # shellcheck disable=SC2086
    mw[$k]=$(median ${wall[$k]}); mc[$k]=$(median ${cpu[$k]})
    printf '(%s) %-52s wall %7.1f s [%s ]  cpu %7.1f s [%s ]\n' "$k" "${label[$k]}" "${mw[$k]}" "${wall[$k]}" "${mc[$k]}" "${cpu[$k]}"
done
for k in b d; do echo "($k) $(grep -h '^agent:' "$R/$k/out.txt" "$R/$k/err.txt" 2>/dev/null | head -1)"; done
[ -f "$R/c/java.hprof.txt" ] && echo "HPROF: $(grep -c '^TRACE' "$R/c/java.hprof.txt") traces, $(sed -n '/^SITES BEGIN/,/^SITES END/p' "$R/c/java.hprof.txt" | grep -c '^ *[0-9]') sites"
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
echo
echo "(c)/(b) wall: $(ratio "${mw[c]}" "${mw[b]}")  cpu: $(ratio "${mc[c]}" "${mc[b]}")   (target <= 2)"
echo "(d)/(b) wall: $(ratio "${mw[d]}" "${mw[b]}")  cpu: $(ratio "${mc[d]}" "${mc[b]}")"
echo "(b)/(a) wall: $(ratio "${mw[b]}" "${mw[a]}")  (c)/(a) wall: $(ratio "${mw[c]}" "${mw[a]}")"
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
echo "SUMMARY|real program: HPROF heap=sites|17|javac: shim + HPROF / plain JVMTI agent doing the same job (c)/(b), CPU|$(ratio "${mc[c]}" "${mc[b]}")|<= 2"
echo "SUMMARY|real program: HPROF heap=sites|17|javac: shim + minimal JVMPI sites agent / the same JVMTI agent (d)/(b), CPU|$(ratio "${mc[d]}" "${mc[b]}")|-"
