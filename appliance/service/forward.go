package service

import (
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ldafwd/ldafwd/dataplane"
)

// forwardOnly is `ldafwd run --forward-only`: the same ports, workers and
// lanes as the appliance, both directions RoleForward — no parsing, no
// synopses, no control frames. It is the baseline the cost of measuring
// is read against on one's own NIC and cores (measuring vs. not, against
// testpmd), and a plain bump in the wire. On DPDK port pairs the
// lanes hand whole bursts to the port (dataplane.Forwarder).
type forwardOnly struct {
	lanes   [2]*dataplane.Lane // a→b, b→a
	workers []*dataplane.Worker
	log     zerolog.Logger
}

// measurementFlags are the run flags that only make sense when measuring;
// --forward-only refuses them rather than ignore them.
var measurementFlags = []string{"segment-port", "interval", "mec", "max-delay", "min-delay", "confidence",
	"key-file", "insecure", "control-copies", "control-parity", "control-priority", "mtu", "drain",
	"lda-counters", "lda-expected-packets", "lda-loss-rates", "lda-banks", "lda-digest", "max-stamp-err",
	"synopsis", "top", "rda-banks", "rda-cells", "rda-cache", "rda-expected-packets", "rda-problem-rate",
	"lds-flows", "lds-cells-per-flow", "lds-max-losses-per-flow", "sample-level", "sample-capacity", "control-budget", "microburst-gap", "microburst-min"}

// checkForwardOnly rejects measurement flags given with --forward-only.
func checkForwardOnly(changed map[string]bool) error {
	var bad []string
	for _, f := range measurementFlags {
		if changed[f] {
			bad = append(bad, "--"+f)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("--forward-only measures nothing: drop %s", strings.Join(bad, ", "))
	}
	return nil
}

func newForwardOnly(o *Config, p *portSet, log zerolog.Logger) (*forwardOnly, error) {
	f := &forwardOnly{log: log}
	var err error
	if f.lanes[0], err = dataplane.NewLane(dataplane.LaneConfig{Rx: p.a, Tx: p.b, Role: dataplane.RoleForward, Burst: o.Burst}); err != nil {
		return nil, err
	}
	if f.lanes[1], err = dataplane.NewLane(dataplane.LaneConfig{Rx: p.b, Tx: p.a, Role: dataplane.RoleForward, Burst: o.Burst}); err != nil {
		return nil, err
	}
	if f.workers, err = dataplane.NewWorkers(f.lanes, o.Cores, dataplane.WorkerConfig{IdleSleep: o.IdleSleep,
		OnStart: p.onWorkerStart, OnExit: p.onWorkerExit}); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *forwardOnly) Start() error {
	for i, w := range f.workers {
		if err := w.Start(); err != nil {
			for _, v := range f.workers[:i] {
				_ = v.Close()
			}
			return err
		}
	}
	return nil
}

// Stop forwards what is in flight, then stops the workers (nothing to
// drain but the tx buffers: there is no interval to close), and logs
// what each direction forwarded and dropped. A lane drops users' frames
// only when its tx port has taken nothing for the stall limit; those
// frames are counted in no port's record (the port never saw them), so
// this line is where a user finds them.
func (f *forwardOnly) Stop(time.Duration) error {
	var first error
	for _, w := range f.workers {
		if err := w.Close(); err != nil && first == nil {
			first = err
		}
	}
	ab, ba := &f.lanes[0].Stats, &f.lanes[1].Stats
	f.log.Info().Uint64("forwarded_ab", ab.TxFrames.Load()).Uint64("forwarded_ba", ba.TxFrames.Load()).
		Uint64("tx_dropped_ab", ab.TxDropped.Load()).Uint64("tx_dropped_ba", ba.TxDropped.Load()).
		Msg("forwarding stopped")
	return first
}
