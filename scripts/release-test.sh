#!/usr/bin/env bash
# The release's own test (CI runs it): builds the tarball (scripts/release.sh), unpacks it in a
# temporary folder, builds the example legacy agent against the unpacked include/jvmpi.h and runs
# examples/Demo.java under it through the unpacked bin/jvmpi-shim, with no Rust toolchain on
# PATH; the agent's report must list allocation sites. Then the same from the Debian package's
# tree (unpacked with dpkg-deb -x, not installed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

repo=$PWD
made=$(scripts/release.sh "$repo/target/dist")
tarball=$(echo "$made" | grep '\.tar\.gz$')
deb=$(echo "$made" | grep '\.deb$' || true)
jdk=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The example and its agent are built with the JDK's tools and gcc only.
mkdir -p "$tmp/classes"
"$jdk/bin/javac" --release 11 -d "$tmp/classes" examples/Demo.java

check() { # <unpacked bin dir> <include dir> <what>
    local bin=$1 include=$2 what=$3
    gcc -std=c89 -O2 -shared -fPIC -I "$include" -I "$jdk/include" -I "$jdk/include/linux" \
        -o "$tmp/liblegacy_hprof_lite.so" examples/legacy_hprof_lite.c
    # No cargo, rustc or the repo's target/ anywhere on PATH.
    local path=/usr/bin:/bin
    (cd "$tmp" && env -i PATH="$path" HOME="$tmp" "$bin/jvmpi-shim" run \
        --agent "$tmp/liblegacy_hprof_lite.so:file=$tmp/report.txt,heap=sites,depth=4" \
        -- "$jdk/bin/java" -cp "$tmp/classes" Demo >"$tmp/out.txt" 2>&1) || {
        cat "$tmp/out.txt"; echo "release-test: $what: the run failed" >&2; exit 1; }
    if ! grep -q "SITES BEGIN" "$tmp/report.txt"; then
        cat "$tmp/out.txt" "$tmp/report.txt" >&2 || true
        echo "release-test: $what: no allocation sites in the agent's report" >&2
        exit 1
    fi
    echo "release-test: $what: ok ($(grep -c . "$tmp/report.txt") report lines)"
    rm -f "$tmp/report.txt"
}

mkdir -p "$tmp/unpacked"
tar -C "$tmp/unpacked" -xzf "$tarball"
dir=$(echo "$tmp"/unpacked/jvmpi-shim-*)
for f in bin/jvmpi-shim lib/libjvmpi_shim.so include/jvmpi.h LICENSE-MIT LICENSE-APACHE README.md; do
    [ -e "$dir/$f" ] || { echo "release-test: $f missing from $tarball" >&2; exit 1; }
done
check "$dir/bin" "$dir/include" "tarball"
if [ -n "$deb" ]; then
    dpkg-deb -x "$deb" "$tmp/deb"
    check "$tmp/deb/usr/lib/jvmpi-shim/bin" "$tmp/deb/usr/include/jvmpi-shim" "Debian package"
fi
echo "release-test: passed"
