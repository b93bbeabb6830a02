#!/usr/bin/env bash
# The long reliability suite: tests/reliability.rs::long_stress, on a release build of the shim.
#
#   scripts/stress.sh [minutes] [repetitions]      # defaults: 10 minutes, 20 repetitions
#
# For each JDK (JVMPI_SHIM_JDKS, default 17,25): `minutes` of stress (8 workers allocating and
# contending, a stream of short-lived threads, classes defined and dropped, collections; the
# invariant-checking agent with its sampler, call traces, RequestEvent and re-entrant calls) on
# a 256 MB heap committed and touched up front (-Xms256m -Xmx256m -XX:+AlwaysPreTouch), with
# the process's RSS sampled every 5 s; each shutdown race `repetitions` times (System.exit,
# Runtime.halt, System.exit inside a GC bracket, ProfilerExit from OBJECT_ALLOC, from GC_START,
# from JVM_SHUT_DOWN, from GC_START while the JVM is exiting, and from an attached and an
# unattached thread while a bracket is open; every thread suspended during JVM_SHUT_DOWN and
# resumed after it); abuse runs (a pthread the JVM does not know
# calling everything, before JVM_INIT_DONE and after JVM_SHUT_DOWN, NotifyEvent NULL and
# swapped); and a -Xcheck:jni run.
#
# Prints one summary line:
#   stress: jdk=17,25 minutes=10 repetitions=20 runs=N crashes=0 hangs=0 wrong_exit=0 violations=0
#           after_shutdown=0 missing_shut_down=0 allocs=N rss_growth=jdk17:+x%(max M MiB, S samples),...
#           failures=0 wall=Ss
# rss_growth compares the mean RSS of the last quarter of the samples with that of the second
# (the first quarter is warm-up). The whole output, with the details of any failed run, is in
# target/stress/stress-<time>.log. Exits non-zero if any run failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export JVMPI_SHIM_STRESS_MINUTES=${1:-${JVMPI_SHIM_STRESS_MINUTES:-10}}
export JVMPI_SHIM_STRESS_REPEAT=${2:-${JVMPI_SHIM_STRESS_REPEAT:-20}}
export JVMPI_SHIM_JDKS=${JVMPI_SHIM_JDKS:-17,25}
export REQUIRE_ALL_JDKS=1

scripts/install-jdks.sh >/dev/null
mkdir -p target/stress
log=target/stress/stress-$(date +%Y%m%d-%H%M%S).log
status=0
cargo test --release --test reliability long_stress -- --ignored --exact --nocapture >"$log" 2>&1 || status=$?
if ! grep '^stress:' "$log"; then
    echo "stress: the suite did not finish (exit $status); see $log"
    exit 1
fi
[ "$status" -eq 0 ] || echo "stress: failed runs; see $log"
exit "$status"
