#!/usr/bin/env bash
# deps.sh installs everything the build and the tests need on a fresh Debian
# machine. Idempotent: it does nothing when every package is already present.
set -euo pipefail

PKGS=(pkg-config gcc make libpcap-dev dpkg-dev
      libdpdk-dev dpdk dpdk-dev
      libxdp-dev libbpf-dev
      iproute2 ethtool iputils-ping tshark tcpreplay
      prometheus) # promtool and the server the metrics tests scrape with

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections || true
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
