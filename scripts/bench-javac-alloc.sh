#!/usr/bin/env bash
# Allocation tracking on a real program: JDK 17's javac compiling the 581 files of StarJ's
# analyzer (analyzer/src of the dufour/starj mirror, as ../shared/corpus/realprog.sh builds the
# list; two files do not compile, javac exits 1), run
#   (a) with no agent,
#   (b) with the plain JVMTI tagging floor (benches/tag_all_jvmti.c: SampledObjectAlloc at
#       interval 0 + SetTag),
#   (c) with the shim and a JVMPI agent counting OBJECT_ALLOC and OBJECT_FREE (benches/count_jvmpi.c),
# in RUNS interleaved rounds. Prints per configuration the median (and min-max) of wall time and
# of the process's CPU time (user + sys), the agents' counts, and (c)/(b).
#
#   scripts/bench-javac-alloc.sh         Environment: RUNS (default 3), MIRRORS (default /work/.mirror)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/bench-common.sh
runs=${RUNS:-3}
mirrors=${MIRRORS:-/work/.mirror}
g=$(find "$mirrors/dufour+starj" -maxdepth 3 -name HEAD -type f 2>/dev/null | head -1)
[ -n "$g" ] || { echo "no dufour+starj mirror under $mirrors" >&2; exit 2; }
javac=$(readlink -f "$(command -v javac)")
bench_build
w=$out/javac
rm -rf "$w"; mkdir -p "$w/src" "$w/classes"
git --git-dir="$(dirname "$g")" archive HEAD analyzer/src | tar -x -C "$w/src"
find "$w/src" -name '*.java' | sort > "$w/srcs.txt"
cc_agent "$out/libtag_all_jvmti.so" benches/tag_all_jvmti.c
cc_agent "$out/libcount_jvmpi.so" benches/count_jvmpi.c
declare -A agentopt=(
    [a]=""
    [b]="-J-agentpath:$PWD/$out/libtag_all_jvmti.so"
    [c]="-J-agentpath:$shim=agent=$PWD/$out/libcount_jvmpi.so:count"
)
declare -A label=([a]="no agent" [b]="plain JVMTI, tag every allocation" [c]="shim + JVMPI agent counting OBJECT_ALLOC/FREE")
declare -A wall cpu agentline
echo "javac $("$javac" -version 2>&1), $(wc -l < "$w/srcs.txt") files; RUNS=$runs; $(uptime | sed 's/.*load/load/')"
for ((r = 0; r < runs; r++)); do
    for k in a b c; do
        rm -rf "$w/classes"; mkdir -p "$w/classes"
        # shellcheck disable=SC2086
        /usr/bin/time -f "time: %e %U %S" -o "$w/time.txt" "$javac" ${agentopt[$k]} -nowarn -d "$w/classes" "@$w/srcs.txt" > "$w/out.txt" 2> "$w/err.txt" || true
        read -r _ e u s < <(grep "^time:" "$w/time.txt")
        wall[$k]="${wall[$k]:-} $e"
        cpu[$k]="${cpu[$k]:-} $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
        agentline[$k]=$(grep '^agent:' "$w/out.txt" || true)
    done
done
med() { printf '%s\n' $1 | sort -g | sed -n "$(( (runs + 1) / 2 ))p"; }
spread() { printf '%s\n' $1 | sort -g | sed -n '1p;$p' | paste -sd- -; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
declare -A mw mc
for k in a b c; do
    mw[$k]=$(med "${wall[$k]}"); mc[$k]=$(med "${cpu[$k]}")
    printf '(%s) %-46s wall %6.2f s (%s)   CPU %6.2f s (%s)\n' "$k" "${label[$k]}" "${mw[$k]}" "$(spread "${wall[$k]}")" "${mc[$k]}" "$(spread "${cpu[$k]}")"
    [ -n "${agentline[$k]}" ] && printf '      %s\n' "${agentline[$k]}"
done
echo "(c)/(b) wall: $(ratio "${mw[c]}" "${mw[b]}")   CPU: $(ratio "${mc[c]}" "${mc[b]}")   (target <= 1.0)"
echo "(b)/(a) wall: $(ratio "${mw[b]}" "${mw[a]}")   (c)/(a) wall: $(ratio "${mw[c]}" "${mw[a]}")"
# The goal's measure: per reported allocation (each agent's own count), the CPU time above
# no agent, so that javac's own work is not counted as the agents' and the agent that reports
# more allocations is not charged for them as if they were the same work.
allocs() { sed -n 's/.*allocs=\([0-9]*\).*/\1/p' <<<"$1"; }
nb=$(allocs "${agentline[b]}"); nc=$(allocs "${agentline[c]}")
if [ -n "$nb" ] && [ -n "$nc" ]; then
    pb=$(awk -v x="${mc[b]}" -v a="${mc[a]}" -v n="$nb" 'BEGIN { printf "%.3f", (x - a) * 1e6 / n }')
    pc=$(awk -v x="${mc[c]}" -v a="${mc[a]}" -v n="$nc" 'BEGIN { printf "%.3f", (x - a) * 1e6 / n }')
    echo "CPU above no agent per reported allocation: (b) $pb us ($nb allocations), (c) $pc us ($nc); (c)/(b) $(ratio "$pc" "$pb")"
fi
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
echo "SUMMARY|real program: allocation events|17|javac: shim + OBJECT_ALLOC/FREE counter / JVMTI tagging (c)/(b), CPU|$(ratio "${mc[c]}" "${mc[b]}")|<= 1.0"
[ -z "${pc:-}" ] || echo "SUMMARY|real program: allocation events|17|javac: the same per reported allocation, CPU above no agent (c)/(b)|$(ratio "$pc" "$pb")|<= 1.0"
