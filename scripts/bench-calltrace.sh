#!/usr/bin/env bash
# Call-trace benchmark: a hot loop calls a recursive method 8 deep whose innermost call is a
# native method (benches/TraceBench.java) implemented by the agent under test, which takes a
# depth-4 stack trace of the current thread there — as an agent's event handler would:
#   (a) plain JVMTI agent, native does nothing (the floor: loop + JNI call)     benches/trace_jvmti.c
#   (b) plain JVMTI agent, GetStackTrace(depth 4)
#   (c) plain JVMTI agent, GetStackTrace(depth 4) + each frame's line number the uncached way
#       (GetLineNumberTable + search + Deallocate per frame; JVMPI frames carry their lines)
#   (d) plain JVMTI agent, GetStackTrace(depth 4) + lines from tables cached per jmethodID
#   (e) shim + JVMPI agent, native does nothing (the floor through the shim)  benches/trace_jvmpi.c
#   (f) shim + JVMPI agent, GetCallTrace(depth 4)
#   (g) shim + JVMPI agent, in one process blocks of 2000 calls taking turns: nothing,
#       JVMTI GetStackTrace(depth 4) from a JVMTI environment of the agent's own, the same with
#       cached lines, GetCallTrace(depth 4); the agent prints the medians (and quartiles) over
#       the cycles of each per call and of GetCallTrace's ratio to the others within a cycle.
# RUNS interleaved rounds; medians of the timed loop's CPU time on the main thread (the work
# is all there; wall time, also shown, swings with the machine's load). Per call: the
# configuration's time less its floor's ((b..d) - (a), (f) - (e)), divided by the calls. Every agent
# returns a checksum of the frames and lines it saw: (c), (d), (f) and (g)'s must agree ((g)'s
# is the probe's own, without the loop's DEPTH).
# Across processes the rounds of one configuration move by ±30% on a loaded machine (the load
# and the JIT's work differ from process to process); (g)'s ratios, measured within one
# process a few milliseconds apart, move by a few hundredths from round to round: the ratio
# the verdict (SUMMARY) takes is the median of (g)'s rounds, (f)/(b) is shown beside it.
#
#   scripts/bench-calltrace.sh [JDK]     JDK: 11, 17 (default), 21 or 25
# Environment: N (calls, default 1000000), DEPTH (recursion, default 8), RUNS (default 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

feature=${1:-17}
n=${N:-1000000}
depth=${DEPTH:-8}
runs=${RUNS:-5}
. scripts/bench-common.sh
bench_java "$feature"
bench_build
cc_agent "$out/libtrace_jvmti.so" benches/trace_jvmti.c
cc_agent "$out/libtrace_jvmpi.so" benches/trace_jvmpi.c
javac -d "$out/classes" --release 11 benches/TraceBench.java

keys=(a b c d e f)
declare -A agentopt=(
    [a]="-agentpath:$out/libtrace_jvmti.so=empty"
    [b]="-agentpath:$out/libtrace_jvmti.so=trace"
    [c]="-agentpath:$out/libtrace_jvmti.so=lines"
    [d]="-agentpath:$out/libtrace_jvmti.so=cached"
    [e]="-agentpath:$shim=agent=$out/libtrace_jvmpi.so:empty"
    [f]="-agentpath:$shim=agent=$out/libtrace_jvmpi.so:trace"
)
declare -A label=(
    [a]="plain JVMTI, empty native (floor)"
    [b]="plain JVMTI, GetStackTrace depth 4"
    [c]="plain JVMTI, + GetLineNumberTable per frame"
    [d]="plain JVMTI, + line tables cached"
    [e]="shim + JVMPI, empty native (floor)"
    [f]="shim + JVMPI, GetCallTrace depth 4"
)
declare -A floor=([a]=a [b]=a [c]=a [d]=a [e]=e [f]=e)
declare -A times walls checksum
alt_gst="" alt_cached="" alt_gct="" alt_r1="" alt_r2="" alt_ck=""
echo "JDK $feature ($("$java" -version 2>&1 | head -1)); N=$n DEPTH=$depth RUNS=$runs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < runs; r++)); do
    for k in "${keys[@]}"; do
        # shellcheck disable=SC2086
        o=$("$java" ${agentopt[$k]} -cp "$out/classes" TraceBench "$depth" "$n" 2>&1)
        line=$(grep '^program:' <<<"$o") || { echo "($k) failed:"; echo "$o"; exit 1; }
        times[$k]="${times[$k]:-} $(sed -n 's/.*cpu_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
        walls[$k]="${walls[$k]:-} $(sed -n 's/.*loop_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
        checksum[$k]=$(sed -n 's/.*checksum=\(-*[0-9]*\).*/\1/p' <<<"$line")
    done
    o=$("$java" "-agentpath:$shim=agent=$out/libtrace_jvmpi.so:alternate" -cp "$out/classes" TraceBench "$depth" "$n" 2>&1)
    grep -q '^alternate: ratio=1' <<<"$o" || { echo "(g) failed:"; echo "$o"; exit 1; }
    kind() { sed -n "s/^alternate: kind=$1 .* median *\([0-9.]*\) ns.*checksum \(-*[0-9]*\).*/\\$2/p" <<<"$o"; }
    ratio_of() { sed -n "s/^alternate: ratio=$1 .* median \([0-9.]*\) .*/\1/p" <<<"$o"; }
    alt_gst+=" $(kind 1 1)" alt_cached+=" $(kind 2 1)" alt_gct+=" $(kind 3 1)"
    alt_r1+=" $(ratio_of 1)" alt_r2+=" $(ratio_of 2)"
    alt_ck="$(kind 2 2) $(kind 3 2)"
done
declare -A med
for k in "${keys[@]}"; do
    # shellcheck disable=SC2086
    med[$k]=$(median ${times[$k]})
done
declare -A ns
for k in "${keys[@]}"; do
    f=${floor[$k]}
    ns[$k]=$(awk -v x="${med[$k]}" -v y="${med[$f]}" -v n="$n" 'BEGIN { printf "%.0f", (x - y) * 1e6 / n }')
    spread=$(printf '%s\n' ${times[$k]} | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }')
    if [ "$k" = "$f" ]; then per="(floor)"; else per="${ns[$k]} ns/call"; fi
    # shellcheck disable=SC2086
    printf '(%s) %-44s cpu %8.1f ms [%s]  wall %8.1f ms  %-14s checksum %s\n' "$k" "${label[$k]}" "${med[$k]}" "$spread" "$(median ${walls[$k]})" "$per" "${checksum[$k]}"
done
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
# shellcheck disable=SC2086
{
    printf '(g) in one process, per call (medians of the rounds [their range]): GetStackTrace %s ns [%s], + cached lines %s ns [%s], GetCallTrace %s ns [%s]\n' \
        "$(median $alt_gst)" "$(range $alt_gst)" "$(median $alt_cached)" "$(range $alt_cached)" "$(median $alt_gct)" "$(range $alt_gct)"
    r1=$(median $alt_r1) r2=$(median $alt_r2)
    echo
    echo "(g) GetCallTrace / GetStackTrace, in one process:        $r1   [rounds $(range $alt_r1)]   (target <= 1.2)"
    echo "(g) GetCallTrace / GetStackTrace + cached lines:         $r2   [rounds $(range $alt_r2)]"
}
echo "(f)/(b) GetCallTrace vs GetStackTrace, across processes: $(ratio "${ns[f]}" "${ns[b]}")"
echo "(f)/(c) GetCallTrace vs GetStackTrace + line tables:     $(ratio "${ns[f]}" "${ns[c]}")"
echo "(f)/(d) GetCallTrace vs GetStackTrace + cached lines:    $(ratio "${ns[f]}" "${ns[d]}")"
[ "${checksum[c]}" = "${checksum[f]}" ] && [ "${checksum[d]}" = "${checksum[f]}" ] && [ "$alt_ck" = "$((checksum[d] - depth)) $((checksum[f] - depth))" ] \
    && echo "checksums agree: the shim's frames and lines are JVMTI's" \
    || echo "CHECKSUMS DIFFER: (c) ${checksum[c]} (d) ${checksum[d]} (f) ${checksum[f]} (g: cached lines, GetCallTrace) $alt_ck"
# One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
echo "SUMMARY|call traces|$feature|GetCallTrace / GetStackTrace, depth 4, per call, in one process (g)|$r1|<= 1.2"
echo "SUMMARY|call traces with lines|$feature|GetCallTrace / GetStackTrace + cached line tables, in one process (g)|$r2|<= 1.2"
