#!/usr/bin/env bash
# What JVMTI's can_access_local_variables costs a program that merely runs with it held
# (benches/locals_cap_jvmti.c, "on" against "off"): MONITOR_DUMP needs it from JDK 23 on to name
# a monitor that nobody owns and only threads in Object.wait wait on (compat-matrix.md,
# MONITOR_DUMP). Two programs: benches/AllocBench.java's "scratch" loop (sensitive to C2's escape
# analysis, which such capabilities switched off before JDK 16) and benches/FibBench.java (calls).
# RUNS interleaved rounds (default 5), process CPU time (user + system, less sensitive to a busy
# machine than wall time), medians and spreads; then the size of the allocation loop's C2 (OSR)
# code with and without the capability, from one LogCompilation run each.
#
#   scripts/bench-locals.sh [JDK…]     default: 21 25
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
bench_build
RUNS=${RUNS:-5}
cc_agent "$out/liblocals_cap.so" benches/locals_cap_jvmti.c
"$jdk17/bin/javac" -d "$out/classes" benches/AllocBench.java benches/FibBench.java
cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.2f\n", $1 + $2 }'; }
code() {
    "$java" -agentpath:"$PWD/$out/liblocals_cap.so=$1" -XX:+UnlockDiagnosticVMOptions -XX:+LogCompilation \
        -XX:LogFile="$out/locals-$2.log" -Xms2g -Xmx2g -cp "$out/classes" AllocBench 20000000 1000 "$2" >/dev/null 2>&1
    grep "<nmethod" "$out/locals-$2.log" | grep "compiler='c2'" | grep "compile_kind='osr'" |
        grep "method='AllocBench main" | tail -1 |
        sed -n "s/.*insts_offset='\([0-9]*\)' stub_offset='\([0-9]*\)'.*/\2 \1/p" | awk '{ print $1 - $2 }'
}
for feature in "${@:-21 25}"; do
    bench_java "$feature"
    declare -A a=() f=()
    for _ in $(seq "$RUNS"); do
        for c in off on; do
            a[$c]+=" $(cpu "$java" -agentpath:"$PWD/$out/liblocals_cap.so=$c" -cp "$out/classes" AllocBench 200000000 1000 scratch)"
            f[$c]+=" $(cpu "$java" -agentpath:"$PWD/$out/liblocals_cap.so=$c" -cp "$out/classes" FibBench 36 5)"
        done
    done
    for p in a f; do
        declare -n v=$p
        name=$([ $p = a ] && echo "AllocBench scratch 200M" || echo "FibBench 36 x5")
        # shellcheck disable=SC2086
        off=$(median ${v[off]}) on=$(median ${v[on]})
        echo "JDK $feature $name: process CPU off $off s (${v[off]# }), on $on s (${v[on]# }), on/off $(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.2f", a / b }')"
    done
    echo "JDK $feature C2 code of the allocation loop: plain $(code off plain) / $(code on plain) bytes, scratch $(code off scratch) / $(code on scratch) bytes (off / on)"
done
