//go:build tools

// This file pins modules that later packages use, so that helpers working in
// parallel do not race on go.mod/go.sum. Remove an import once a real package
// uses it.
package main

import (
	_ "github.com/cilium/ebpf"
	_ "github.com/google/gopacket/pcapgo"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "gonum.org/v1/plot"
)
