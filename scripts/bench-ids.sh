#!/usr/bin/env bash
# Object-ID benchmark (not a timed test): a program holding N items (benches: tests/java/IdsProg.java
# `keep N`, about 2.3 objects per item) and a memory profiler (tests/agents/memprof.c) that at
# exit takes a level-0 heap dump, then requests OBJECT_ALLOC and CLASS_LOAD for every object in
# it, then calls jobjectID2jobject (+ jobject2jobjectID) for each, then both again.
# Prints per JDK and N: the dump's time, the report's time (OBJECT_ALLOC + CLASS_LOAD per
# object) and its ratio to the dump, µs per request and per jobjectID2jobject (first pass,
# which pays the index rebuild, and second pass).
#   scripts/bench-ids.sh [JDK...]        (default 17); NS="10000 100000 1000000"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/bench-common.sh
jdks=("$@"); [ ${#jdks[@]} -eq 0 ] && jdks=(17)
ns=${NS:-"4300 43000 430000"}
bench_build; mkdir -p "$out/ids-classes"
cc_agent "$out/libmemprof.so" tests/agents/memprof.c
javac --release 11 -d "$out/ids-classes" tests/java/IdsProg.java
f() { grep "^$1 " "$2" | grep -o "$3=[0-9.]*" | cut -d= -f2; }
for feature in "${jdks[@]}"; do
    bench_java "$feature"
    home=$(dirname "$(dirname "$java")")
    for n in $ns; do
        r=$out/ids-$feature-$n.txt
        "$home/bin/java" -Xmx4g -agentpath:"$shim"=agent="$(readlink -f "$out/libmemprof.so")":out="$r" \
            -cp "$out/ids-classes" IdsProg keep "$n" >/dev/null
        objs=$(f DUMP "$r" objects); d=$(f DUMP "$r" ms); q=$(f REQ "$r" ms); j=$(f J2J "$r" ms); j2=$(f J2J2 "$r" ms); a2=$(f ALLOC2 "$r" ms)
        awk -v jdk="$feature" -v o="$objs" -v d="$d" -v q="$q" -v j="$j" -v j2="$j2" -v a2="$a2" -v bad="$(f REQ "$r" bad)/$(f J2J "$r" bad)" 'BEGIN {
            printf "JDK %s objects %8d: dump %7.0f ms, report %7.0f ms (%.2fx dump), %.2f us per OBJECT_ALLOC+CLASS_LOAD, OBJECT_ALLOC again %.2f us; jobjectID2jobject+back %.2f us (with rebuild), again %.2f us; bad %s\n",
                jdk, o, d, q, q / d, q * 1000 / o, a2 * 1000 / o, j * 1000 / o, j2 * 1000 / o, bad
            # One line per goal for scripts/bench.sh: SUMMARY|goal|JDK|what|value|target.
            printf "SUMMARY|object IDs|%s|us per RequestEvent(OBJECT_ALLOC), %d live objects|%.2f|<= 2\n", jdk, o, a2 * 1000 / o
            printf "SUMMARY|object IDs|%s|us per jobjectID2jobject, %d live objects|%.2f|<= 2\n", jdk, o, j2 * 1000 / o
            printf "SUMMARY|object IDs|%s|requests for every object / the dump, %d live objects|%.2f|<= 2\n", jdk, o, q / d }'
    done
done
