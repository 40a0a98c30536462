// Command ldafwd is a userspace bump-in-the-wire forwarder that measures
// one-way delay and loss between two points of a network with Lossy
// Difference Aggregators:
//
//	ldafwd run      the appliance (DPDK, AF_XDP or ring ports)
//	ldafwd demo     two appliances over an impaired link, estimates beside the truth
//	ldafwd analyze  two captures of the same traffic → the same reports, offline
//	ldafwd sim      the LDA paper's accuracy experiments
//	ldafwd bench    per-packet cost and forwarding rate against same-run baselines
//	ldafwd keygen   a pre-shared key for the control frames
//
// Each command lives in its own file, registers itself in init, parses its
// own pflag set, validates every flag before it builds anything, and prints
// JSON lines with --format json. main.go stays thin. The work is in
// packages: run's in appliance/service, demo's in appliance, analyze's in
// analyze, sim's in sim, bench's suites in bench/suites.
package main
