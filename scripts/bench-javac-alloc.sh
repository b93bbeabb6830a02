#!/usr/bin/env bash
# Allocation tracking on a real program: JDK 17's javac compiling the 581 files of StarJ's
# analyzer (analyzer/src of the dufour/starj mirror, as ../shared/corpus/realprog.sh builds the
# list; two files do not compile, javac exits 1), run
#   (a) with no agent,
#   (b) with the plain JVMTI tagging floor (benches/tag_all_jvmti.c: SampledObjectAlloc at
#       interval 0 + SetTag),
#   (c) with the shim and a JVMPI agent counting OBJECT_ALLOC and OBJECT_FREE (benches/count_jvmpi.c),
#   (d) the emulation floor of bytecode-instrumented allocation events (benches/alloc_emul.c): the
#       shim and the same agent, the same instrumented bytecode and JNI transitions as (c), but
#       the tracker's natives bound to functions that only tag the object (SetTag, a counter),
#       fill OBJECT_ALLOC and call the agent's NotifyEvent; OBJECT_FREE from JVMTI ObjectFree,
# in RUNS interleaved rounds. Prints per configuration the median (and min-max) of wall time and
# of the process's CPU time (user + sys), the agents' counts, and the ratios (c)/(b), (d)/(b),
# (c)/(d), whole-run and per reported allocation.
#
#   scripts/bench-javac-alloc.sh         Environment: RUNS (default 3), MIRRORS (default /work/.mirror),
#                                        JAVAC (default: JDK 17's; e.g. a JDK 25 javac, whose JDK runs it),
#                                        VM (a JDK without a javac here, e.g. 21: JDK 17's javac
#                                        classes run by that JDK's VM, bench-common.sh's javac_on),
#                                        JFLAGS (javac options for every configuration, e.g. "-J-Xbatch"),
#                                        ALLOC_EMUL_SPIN (slows (d) by a fixed loop per allocation:
#                                        benches/alloc_emul.c)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/bench-common.sh
runs=${RUNS:-3}
mirrors=${MIRRORS:-/work/.mirror}
g=$(find "$mirrors/dufour+starj" -maxdepth 3 -name HEAD -type f 2>/dev/null | head -1)
[ -n "$g" ] || { echo "no dufour+starj mirror under $mirrors" >&2; exit 2; }
if [ -n "${VM:-}" ]; then javac=$(javac_on "$VM") || exit 2; else javac=$(readlink -f "${JAVAC:-$(command -v javac)}"); fi
jdkv=$("$javac" -version 2>&1 | sed -n 's/^javac \([0-9]*\).*/\1/p')
bench_build
w=$out/javac
rm -rf "$w"; mkdir -p "$w/src" "$w/classes"
git --git-dir="$(dirname "$g")" archive HEAD analyzer/src | tar -x -C "$w/src"
find "$w/src" -name '*.java' | sort > "$w/srcs.txt"
cc_agent "$out/libtag_all_jvmti.so" benches/tag_all_jvmti.c
cc_agent "$out/libcount_jvmpi.so" benches/count_jvmpi.c
# Loads libcount_jvmpi.so from its own directory.
cc_agent "$out/liballoc_emul.so" benches/alloc_emul.c -ldl
declare -A agentopt=(
    [a]=""
    [b]="-J-agentpath:$PWD/$out/libtag_all_jvmti.so"
    [c]="-J-agentpath:$shim=agent=$PWD/$out/libcount_jvmpi.so:count"
    [d]="-J-agentpath:$shim=agent=$PWD/$out/liballoc_emul.so:count"
)
declare -A label=([a]="no agent" [b]="plain JVMTI, tag every allocation" [c]="shim + JVMPI agent counting OBJECT_ALLOC/FREE"
    [d]="emulation floor: same bytecode, bare natives")
declare -A wall cpu agentline nalloc
echo "javac $("$javac" -version 2>&1), $(wc -l < "$w/srcs.txt") files; RUNS=$runs; $(uptime | sed 's/.*load/load/')"
for ((r = 0; r < runs; r++)); do
    for k in a b c d; do
        rm -rf "$w/classes"; mkdir -p "$w/classes"
        # shellcheck disable=SC2086
        /usr/bin/time -f "time: %e %U %S" -o "$w/time.txt" "$javac" ${agentopt[$k]} ${JFLAGS:-} -nowarn -d "$w/classes" "@$w/srcs.txt" > "$w/out.txt" 2> "$w/err.txt" || true
        read -r _ e u s < <(grep "^time:" "$w/time.txt")
        wall[$k]="${wall[$k]:-} $e"
        cpu[$k]="${cpu[$k]:-} $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
        agentline[$k]=$(grep '^agent:' "$w/out.txt" || true)
        floorline=$(grep '^emulation floor:' "$w/out.txt" || true)
        [ -z "$floorline" ] || agentline[$k]="${agentline[$k]}   ($floorline)"
        nalloc[$k]="${nalloc[$k]:-} $(sed -n 's/.*allocs=\([0-9]*\).*/\1/p' <<<"${agentline[$k]}")"
    done
done
med() { printf '%s\n' $1 | sort -g | sed -n "$(( (runs + 1) / 2 ))p"; }
spread() { printf '%s\n' $1 | sort -g | sed -n '1p;$p' | paste -sd- -; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
declare -A mw mc
for k in a b c d; do
    mw[$k]=$(med "${wall[$k]}"); mc[$k]=$(med "${cpu[$k]}")
    printf '(%s) %-46s wall %6.2f s (%s)   CPU %6.2f s (%s)\n' "$k" "${label[$k]}" "${mw[$k]}" "$(spread "${wall[$k]}")" "${mc[$k]}" "$(spread "${cpu[$k]}")"
    [ -n "${agentline[$k]}" ] && printf '      %s\n' "${agentline[$k]}"
done
echo "(c)/(b) wall: $(ratio "${mw[c]}" "${mw[b]}")   CPU: $(ratio "${mc[c]}" "${mc[b]}")   (target <= 1.0)"
echo "(d)/(b) wall: $(ratio "${mw[d]}" "${mw[b]}")   CPU: $(ratio "${mc[d]}" "${mc[b]}")   (c)/(d) CPU: $(ratio "${mc[c]}" "${mc[d]}")"
echo "(b)/(a) wall: $(ratio "${mw[b]}" "${mw[a]}")   (c)/(a) wall: $(ratio "${mw[c]}" "${mw[a]}")"
# The goal's measure: per reported allocation (each agent's own count), the CPU time above
# no agent, so that javac's own work is not counted as the agents' and the agent that reports
# more allocations is not charged for them as if they were the same work.
allocs() { sed -n 's/.*allocs=\([0-9]*\).*/\1/p' <<<"$1"; }
per() { awk -v x="$1" -v a="${mc[a]}" -v n="$2" 'BEGIN { printf "%.3f", (x - a) * 1e6 / n }'; }
nb=$(allocs "${agentline[b]}"); nc=$(allocs "${agentline[c]}"); nd=$(allocs "${agentline[d]}")
if [ -n "$nb" ] && [ -n "$nc" ]; then
    pb=$(per "${mc[b]}" "$nb"); pc=$(per "${mc[c]}" "$nc")
    echo "CPU above no agent per reported allocation: (b) $pb us ($nb allocations), (c) $pc us ($nc); (c)/(b) $(ratio "$pc" "$pb")"
fi
if [ -n "${pb:-}" ] && [ -n "$nd" ]; then
    pd=$(per "${mc[d]}" "$nd")
    echo "                                            (d) $pd us ($nd); (d)/(b) $(ratio "$pd" "$pb"), (c)/(d) $(ratio "$pc" "$pd")"
    # Round by round (each round's own no-agent time and counts): the spread of the ratios.
    awk -v a="${cpu[a]}" -v b="${cpu[b]}" -v c="${cpu[c]}" -v d="${cpu[d]}" \
        -v nb="${nalloc[b]}" -v nc="${nalloc[c]}" -v nd="${nalloc[d]}" 'BEGIN {
        n = split(a, A); split(b, B); split(c, C); split(d, D); split(nb, NB); split(nc, NC); split(nd, ND)
        for (i = 1; i <= n; i++) {
            xb = (B[i] - A[i]) / NB[i]; xc = (C[i] - A[i]) / NC[i]; xd = (D[i] - A[i]) / ND[i]
            printf "  round %d per reported allocation: (d)/(b) %.2f  (c)/(d) %.2f  (c)/(b) %.2f\n", i, xd / xb, xc / xd, xc / xb
        } }'
fi
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
echo "SUMMARY|real program: allocation events|$jdkv|javac: shim + OBJECT_ALLOC/FREE counter / JVMTI tagging (c)/(b), CPU|$(ratio "${mc[c]}" "${mc[b]}")|<= 1.0"
[ -z "${pc:-}" ] || echo "SUMMARY|real program: allocation events|$jdkv|javac: the same per reported allocation, CPU above no agent (c)/(b)|$(ratio "$pc" "$pb")|<= 1.0"
# The floor of the mechanism: (d)/(b) >= 1 says the target is below what bytecode-instrumented
# events can cost at all; (c)/(d) is the shim's own share.
[ -z "${pd:-}" ] || echo "SUMMARY|real program: allocation events|$jdkv|javac: emulation floor of instrumented allocation events / JVMTI tagging, per reported allocation, CPU above no agent (d)/(b)|$(ratio "$pd" "$pb")|-"
[ -z "${pd:-}" ] || echo "SUMMARY|real program: allocation events|$jdkv|javac: shim / emulation floor, per reported allocation, CPU above no agent (c)/(d)|$(ratio "$pc" "$pd")|-"
