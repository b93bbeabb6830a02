#!/usr/bin/env bash
# THE one command that runs every test of the project on a fresh machine:
# installs the JDKs (scripts/install-jdks.sh), then runs `cargo test` with all four JDKs
# (11, 17, 21, 25) required. Extra arguments go to `cargo test`, e.g.
#   scripts/test.sh --test harness_selftest
#   scripts/test.sh -- --nocapture
# Environment: RUST_TEST_THREADS (default 2: the machines have 2 cores), JVMPI_SHIM_JDKS to
# restrict the JDKs (then only those are required), JVMPI_SHIM_TEST_TIMEOUT (seconds per JVM run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-jdks.sh

export REQUIRE_ALL_JDKS=1
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-2}
exec cargo test "$@"
