#!/usr/bin/env bash
# deb.sh BIN OUTDIR: builds OUTDIR/ldafwd_<version>_<arch>.deb of what
# `make install PREFIX=/usr` writes, with Debian's own tools: dpkg-shlibdeps
# for the shared libraries the binary needs (DPDK's when it links it),
# dpkg-deb for the archive (gzip: xz takes ten times as long for a fifth
# less). The package creates the system user ldafwd and
# /etc/ldafwd, and leaves the unit disabled: the config and the key come
# first (docs/deploy.md).
set -euo pipefail
bin=$1
out=$2
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

make --no-print-directory install DESTDIR="$root/pkg" PREFIX=/usr BIN="$bin" >/dev/null
arch=$(dpkg --print-architecture)
# Debian versions need a digit first: 0~git<date>.<commit> for an untagged
# tree (the binary's own `ldafwd version` names the full revision).
rev=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
version=${LDAFWD_VERSION:-0~git$(date -u +%Y%m%d).$rev}

# dpkg-shlibdeps reads debian/control in its working directory.
mkdir -p "$root/src/debian"
printf 'Source: ldafwd\n\nPackage: ldafwd\nArchitecture: any\n' >"$root/src/debian/control"
deps=$(cd "$root/src" && dpkg-shlibdeps -O -e"$root/pkg/usr/bin/ldafwd" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')

mkdir -p "$root/pkg/DEBIAN"
cat >"$root/pkg/DEBIAN/control" <<CONTROL
Package: ldafwd
Version: $version
Architecture: $arch
Maintainer: ldafwd developers <ldafwd@localhost>
Section: net
Priority: optional
${deps:+Depends: $deps
}Description: bump-in-the-wire one-way delay and loss measurement
 Two ldafwd appliances forward all traffic between their two ports
 unchanged and measure, every interval, the one-way delay and loss of the
 segment between them with Lossy Difference Aggregators.
CONTROL
cat >"$root/pkg/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  getent passwd ldafwd >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin ldafwd
  install -d -m 0750 -g ldafwd /etc/ldafwd
  [ -e /etc/ldafwd/ldafwd.conf ] || install -m 0640 -g ldafwd /usr/share/ldafwd/ldafwd.conf.example /etc/ldafwd/ldafwd.conf
fi
POSTINST
chmod 0755 "$root/pkg/DEBIAN/postinst"
mkdir -p "$out"
deb="$out/ldafwd_${version}_${arch}.deb"
dpkg-deb -Zgzip --root-owner-group --build "$root/pkg" "$deb" >/dev/null
echo "$deb"
