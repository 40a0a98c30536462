#!/bin/sh
# Regenerates cmd/ldafwd/default.pgo, the CPU profile `go build` uses for
# profile-guided optimisation of bin/ldafwd (Go's -pgo=auto picks up
# default.pgo in the main package's directory).
#
# The profile is of the per-packet hot paths: the forwarding lanes
# measuring with the LDA alone and with every synopsis, and the per-packet
# stages (parse, classify, synopsis updates). With it the compiler inlines
# the hot calls that its ordinary budget refuses — the identity hash into
# the parser, the parser into the lane — about 20 instructions per
# measured packet (docs/performance.md). Re-run after large changes to
# those paths; a stale profile is still safe, only less useful.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -run XXX -bench 'ForwardRing/(lda|all)|PerPacket' -benchtime 1s \
	-cpuprofile "$tmp/cpu.prof" -o "$tmp/bench.test" ./bench >/dev/null
cp "$tmp/cpu.prof" cmd/ldafwd/default.pgo
echo "wrote cmd/ldafwd/default.pgo ($(wc -c < cmd/ldafwd/default.pgo) bytes)"
