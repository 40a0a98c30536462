# ldafwd build. `make test` is what CI runs (.ci/run); it installs its own
# dependencies first so a fresh machine passes.
GO       ?= go
BIN      := bin/ldafwd
# DPDK is linked through cgo when pkg-config finds it (scripts/deps.sh
# installs it); without it the binary builds and says so when asked for a
# dpdk: port.
TAGS     := $(shell pkg-config --exists libdpdk 2>/dev/null && echo dpdk)
GOFLAGS_TAGS := $(if $(TAGS),-tags $(TAGS),)
PKGS     := ./...
# The commit `ldafwd version` and ldafwd_build_info name when the go tool
# records none itself (a git worktree, GOFLAGS=-buildvcs=false).
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := $(if $(REVISION),-ldflags "-X github.com/ldafwd/ldafwd/buildinfo.stampedRevision=$(REVISION)",)

.PHONY: all build build-afxdp install deb deploy-check deps test test-short race fuzz bench bench-pcap accuracy audit analyze-scale demo lint clean pgo

# make install: the binary, the systemd unit (its ExecStart under PREFIX),
# an example config, the Prometheus paths file and rules, the Grafana
# dashboard and the Wireshark dissector. DESTDIR stages into another root.
# BIN=bin/ldafwd-afxdp installs (and make deb packages) the AF_XDP-only
# binary instead, built by build-afxdp.
PREFIX   ?= /usr/local
DESTDIR  ?=
SHARE    := $(DESTDIR)$(PREFIX)/share/ldafwd
BUILD_BIN := $(if $(filter bin/ldafwd-afxdp,$(BIN)),build-afxdp,build)

all: build

deps:
	./scripts/deps.sh

build:
	$(GO) build $(GOFLAGS_TAGS) $(LDFLAGS) -o $(BIN) ./cmd/ldafwd

# An AF_XDP-only binary: no cgo, no DPDK libraries, for hosts without
# libdpdk (dpdk: ports are then refused with a clear error).
build-afxdp:
	CGO_ENABLED=0 $(GO) build $(LDFLAGS) -o bin/ldafwd-afxdp ./cmd/ldafwd

install: $(BUILD_BIN)
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/ldafwd
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's|/usr/local/bin/ldafwd|$(PREFIX)/bin/ldafwd|g' scripts/ldafwd.service > $(DESTDIR)$(PREFIX)/lib/systemd/system/ldafwd.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/ldafwd.service
	install -D -m 0644 scripts/ldafwd.conf $(SHARE)/ldafwd.conf.example
	install -D -m 0644 scripts/prometheus/paths.conf $(SHARE)/prometheus/paths.conf
	install -D -m 0644 scripts/prometheus/ldafwd-rules.yml $(SHARE)/prometheus/ldafwd-rules.yml
	install -D -m 0644 scripts/grafana/ldafwd-fleet.json $(SHARE)/grafana/ldafwd-fleet.json
	install -D -m 0644 scripts/wireshark/ldafwd.lua $(SHARE)/wireshark/ldafwd.lua

# A Debian package of what make install writes (PREFIX=/usr), built with
# dpkg-deb, its library dependencies from dpkg-shlibdeps.
deb: $(BUILD_BIN)
	./scripts/deb.sh $(BIN) bin

# Runs docs/deploy.md's walk-through, its commands as written, in a scratch
# root (overlays on /etc, /usr/local and /var/log, a network namespace with
# veth eth1 and eth2, DPDK's net_null for the PCI NICs): install, keygen,
# the config, run --check, the unit (systemd-analyze verify), the rules
# (promtool check rules), /healthz and metrics. Root.
deploy-check:
	./scripts/deploy-check.sh

# The test suite: unit, race, zero-allocation pins, short fuzz passes on every
# decoder and the end-to-end tests (root-only ones skip with a message).
# Tests build without the PGO profile (-pgo=off): with it, every package
# under cmd/ldafwd's tests is compiled a second time, for no test's benefit.
# The live lab tests (e2e/) run after the rest, alone: they measure delays
# of tens of microseconds across network namespaces, and the other packages'
# tests running beside them on a 2-core machine would stretch the stamps
# they check (the appliances then honestly report intervals invalid).
test: deps build
	$(GO) vet $(GOFLAGS_TAGS) $(PKGS)
	$(GO) test $(GOFLAGS_TAGS) -pgo=off -count=1 -timeout 20m $$($(GO) list $(PKGS) | grep -v /e2e$$)
	$(GO) test $(GOFLAGS_TAGS) -pgo=off -count=1 -timeout 10m -p 1 ./e2e/
	$(GO) test $(GOFLAGS_TAGS) -pgo=off -race -count=1 -timeout 20m -short $(PKGS)
	./scripts/fuzz.sh 3s

test-short: build
	$(GO) test $(GOFLAGS_TAGS) -short -count=1 $(PKGS)

fuzz:
	./scripts/fuzz.sh 60s

bench: deps build
	$(GO) test $(GOFLAGS_TAGS) -run '^$$' -bench . -benchmem -count=1 $(PKGS)
	./$(BIN) bench --format json

# ldafwd run itself on realistic traffic (an IMIX capture of IPv4/IPv6
# TCP/UDP flows replayed by DPDK's net_pcap) against dpdk-testpmd on the
# same vdevs and core (docs/performance.md). Root, a -tags dpdk build.
bench-pcap: build
	./$(BIN) bench --only '^forward-dpdk-pcap$$' --rounds 5 --duration 10s --format json

# Long accuracy sweeps reproducing the papers' figures (docs/accuracy.md).
accuracy: build
	./scripts/accuracy.sh

# Every valid analyze line against captures written by an independent
# generator (docs/analyze.md, "Tests").
audit: build
	./scripts/audit/run.sh out/audit

# What `ldafwd analyze` costs at capture scale (docs/analyze.md, "Cost"):
# writes SCALE_PACKETS packets a side with genscale, times capinfos on the
# pair as the I/O baseline, then analyze streaming on 1 and 2 cores (peak
# RSS from /usr/bin/time -v, rate against capinfos) and two cores against
# one. SCALE_WHOLE=1 adds the whole-capture analysis; SCALE_REPEAT=n runs
# n rounds of one core and two cores back to back (which goes first
# alternates) and reports medians, each round beside the cache-line round
# trip between CPUs 0 and 1 (linetrip). Not part of make test: it writes 2 x 82 bytes
# a packet to SCALE_DIR and takes minutes.
SCALE_PACKETS ?= 10000000
SCALE_DIR     ?= out/scale
SCALE_REPEAT  ?= 1
analyze-scale: build
	SCALE_REPEAT=$(SCALE_REPEAT) ./scripts/analyze-scale.sh $(SCALE_DIR) $(SCALE_PACKETS)

demo: deps build
	./$(BIN) demo

# Regenerate the profile behind bin/ldafwd's profile-guided optimisation
# (cmd/ldafwd/default.pgo, used automatically by go build).
pgo:
	./scripts/pgo.sh

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	$(GO) vet $(GOFLAGS_TAGS) $(PKGS)

clean:
	rm -rf bin
