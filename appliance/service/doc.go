// Package service assembles and runs the appliance as `ldafwd run` does:
// it validates the run configuration (Config.ValidateWiring, Validate),
// opens the ports (ring, AF_XDP, DPDK with its EAL), splits them into
// queues, builds the appliance or the forward-only lanes, serves the
// metrics, runs the peer watchdog (is the peer heard, authentic, of the
// same configuration, are the clocks in step, are the intervals that carry
// traffic measured: measured.go), writes the interval, port
// and status records, and stops and closes in order (Run).
//
// A restart resumes: LastReported reads the end of the --report file back
// so the receiver reports, as lost, the intervals no run held — the file
// has no hole after a kill.
//
// Capture taps (Capture, --capture-a/-b, and demo's
// --capture-sender/-receiver) write what a port receives to pcapng files
// through dataplane.Tap, off the packet path.
//
// The command (cmd/ldafwd) parses the flags into Config and derives the
// synopsis settings from its flag groups; everything after is here.
package service
