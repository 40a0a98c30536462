package dataplane

import (
	"fmt"
	"sync/atomic"
)

type atomicU64 = atomic.Uint64

// NewQueueWorkers makes one worker per queue pair of a multi-queue
// appliance: worker i runs pairs[i] (the sender lane of queue i and the
// receiver lane of queue i), so a frame is received, measured and
// transmitted on one core and never crosses to another. cores is empty
// (no pinning) or has one core per pair.
func NewQueueWorkers(pairs [][2]*Lane, cores []int, tmpl WorkerConfig) ([]*Worker, error) {
	if len(cores) != 0 && len(cores) != len(pairs) {
		return nil, fmt.Errorf("dataplane: %d cores for %d queue pairs: want none or one per pair", len(cores), len(pairs))
	}
	var ws []*Worker
	for i, p := range pairs {
		cfg := tmpl
		cfg.ID, cfg.Core, cfg.Lanes = i, -1, []*Lane{p[0], p[1]}
		if len(cores) > 0 {
			cfg.Core = cores[i]
		}
		w, err := NewWorker(cfg)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// AddTo adds s's counters into t (a total over lanes); the widest-gap
// gauges take the larger value.
func (s *LaneStats) AddTo(t *LaneStats) {
	for _, f := range [][2]*atomicU64{
		{&s.RxFrames, &t.RxFrames}, {&s.TxFrames, &t.TxFrames}, {&s.RxBytes, &t.RxBytes},
		{&s.TxDropped, &t.TxDropped}, {&s.ControlDropped, &t.ControlDropped}, {&s.Recorded, &t.Recorded},
		{&s.Malformed, &t.Malformed}, {&s.ControlStripped, &t.ControlStripped}, {&s.ControlQueueFull, &t.ControlQueueFull},
		{&s.ControlPassed, &t.ControlPassed}, {&s.ControlBlocked, &t.ControlBlocked}, {&s.Excluded, &t.Excluded},
		{&s.EndsSent, &t.EndsSent}, {&s.EndsFailed, &t.EndsFailed}, {&s.EndsSeen, &t.EndsSeen},
		{&s.EndsIgnored, &t.EndsIgnored}, {&s.EndsMisrouted, &t.EndsMisrouted}, {&s.Misrouted, &t.Misrouted}, {&s.Injected, &t.Injected},
		{&s.InjectFailed, &t.InjectFailed}, {&s.Flips, &t.Flips}, {&s.PollStamped, &t.PollStamped}, {&s.FastBursts, &t.FastBursts},
	} {
		f[1].Add(f[0].Load())
	}
	for _, f := range [][2]*atomicU64{{&s.MaxTxStampGapNs, &t.MaxTxStampGapNs}, {&s.MaxRxStampErrNs, &t.MaxRxStampErrNs}} {
		if v := f[0].Load(); v > f[1].Load() {
			f[1].Store(v)
		}
	}
}
