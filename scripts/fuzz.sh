#!/usr/bin/env bash
# fuzz.sh runs every Fuzz* target in the module for the given time each
# (default 5s). Go's fuzzer takes one target per run, so list them.
set -euo pipefail
T=${1:-5s}
TAGS=$(pkg-config --exists libdpdk 2>/dev/null && echo "-tags dpdk" || true)
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $f ($T)"
    go test $TAGS -pgo=off -run '^$' -fuzz "^$f\$" -fuzztime "$T" "$pkg" >/tmp/fuzz.$$.log 2>&1 || { cat /tmp/fuzz.$$.log; exit 1; }
  done
done
echo "fuzz: all targets passed"
