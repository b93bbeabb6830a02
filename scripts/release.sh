#!/usr/bin/env bash
# Builds the release: a versioned tarball that works unpacked anywhere, and a Debian package.
#
#   scripts/release.sh [OUTDIR]          OUTDIR default: target/dist
#
# jvmpi-shim-<version>-linux-<arch>.tar.gz holds one folder, jvmpi-shim-<version>/, with
#   bin/jvmpi-shim             the front end (finds the shim in ../lib/ of its own directory)
#   lib/libjvmpi_shim.so       the shim
#   include/jvmpi.h            the header legacy agents are built against
#   LICENSE-MIT, LICENSE-APACHE, README.md, CHANGELOG.md, compat-matrix.md, docs/
# jvmpi-shim_<version>_<debian arch>.deb installs the same folder as /usr/lib/jvmpi-shim/ with
# /usr/bin/jvmpi-shim and /usr/include/jvmpi-shim/jvmpi.h linked to it (built with dpkg-deb,
# when the machine has it). The version is Cargo.toml's. Prints the paths of what it made.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=${1:-target/dist}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(uname -m)
name=jvmpi-shim-$version

cargo build --release --locked >&2
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/lib" "$root/include" "$root/docs"
install -m 0755 target/release/jvmpi-shim "$root/bin/jvmpi-shim"
install -m 0755 target/release/libjvmpi_shim.so "$root/lib/libjvmpi_shim.so"
install -m 0644 shim/jvmpi.h "$root/include/jvmpi.h"
install -m 0644 LICENSE-MIT LICENSE-APACHE README.md CHANGELOG.md compat-matrix.md "$root/"
install -m 0644 docs/*.md "$root/docs/"
tarball=$out/$name-linux-$arch.tar.gz
tar -C "$stage" --owner=0 --group=0 --sort=name -czf "$tarball" "$name"
echo "$tarball"

if command -v dpkg-deb >/dev/null 2>&1; then
    case $arch in x86_64) darch=amd64 ;; aarch64) darch=arm64 ;; *) darch=$arch ;; esac
    deb=$stage/deb
    mkdir -p "$deb/DEBIAN" "$deb/usr/lib" "$deb/usr/bin" "$deb/usr/include/jvmpi-shim"
    cp -a "$root" "$deb/usr/lib/jvmpi-shim"
    ln -s ../lib/jvmpi-shim/bin/jvmpi-shim "$deb/usr/bin/jvmpi-shim"
    ln -s ../../lib/jvmpi-shim/include/jvmpi.h "$deb/usr/include/jvmpi-shim/jvmpi.h"
    cat >"$deb/DEBIAN/control" <<CONTROL
Package: jvmpi-shim
Version: $version
Architecture: $darch
Maintainer: jvmpi-shim developers <jvmpi-shim@invalid>
Section: devel
Priority: optional
Depends: libc6
Description: legacy JVMPI profiler agents, unchanged, on JDK 11 to 25
 A JVMTI agent that loads a JVMPI agent library (JVM_OnLoad, GetEnv for
 JVMPI_VERSION_1) and emulates the JVMPI interface and event stream on
 JVMTI, JNI and bytecode instrumentation.
CONTROL
    debfile=$out/jvmpi-shim_${version}_$darch.deb
    dpkg-deb --root-owner-group --build "$deb" "$debfile" >/dev/null
    echo "$debfile"
fi
