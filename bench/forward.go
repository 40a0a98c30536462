package bench

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Forwarding modes of ForwardRing.
const (
	ModeOff = "off" // forward only
	ModeLDA = "lda" // sender lane recording the LDA
	ModeAll = "all" // sender lane recording LDA + RDA + LDS
)

// ForwardResult is one forwarding run.
type ForwardResult struct {
	Mode     string
	Burst    int
	Packets  uint64
	Elapsed  time.Duration // wall clock
	NsPerPkt float64       // wall clock
	Mpps     float64       // wall clock
	Recorded uint64
	// CPU is the forwarding thread's CPU time over the run; CPUNsPerPkt
	// and CPUMpps are the cost and rate it implies (see threadCPU), and
	// CPUShare = CPU/Elapsed says how much of the run the thread had a
	// core (≈ 1 on an idle machine).
	CPU         time.Duration
	CPUNsPerPkt float64
	CPUMpps     float64
	CPUShare    float64
}

// ForwardRing measures one lane forwarding between two ring ports on one
// goroutine: a source port feeds frames, the lane forwards (and, in the
// measuring modes, classifies and records them as a sender), and whatever
// arrives at the far end goes straight back into the source. The frames
// are generated once and circulate, so the generator costs nothing; the
// ring hand-offs of the harness are the same in every mode, so the ratio of
// two modes is the cost of measuring. One lane on one core is what l2fwd
// calls one lcore forwarding one port pair. size is the frames' length in
// bytes (64..2048, the ring ports' buffers).
func ForwardRing(mode string, burst, size int, d time.Duration) (ForwardResult, error) {
	res := ForwardResult{Mode: mode, Burst: burst}
	if size < 64 || size > dataplane.DefaultMTU {
		return res, fmt.Errorf("bench: frame size %d outside 64..%d", size, dataplane.DefaultMTU)
	}
	in, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 8192, Burst: 64})
	if err != nil {
		return res, err
	}
	out, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 64, Burst: 64})
	if err != nil {
		return res, err
	}
	defer func() { in.A().Close(); in.B().Close(); out.A().Close(); out.B().Close() }()
	cfg := dataplane.LaneConfig{Rx: in.B(), Tx: out.A(), Burst: burst, Role: dataplane.RoleForward}
	var epoch atomic.Uint64
	if mode != ModeOff {
		cl, err := classifier.NewClassifier(nil)
		if err != nil {
			return res, err
		}
		syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1}
		switch mode {
		case ModeLDA:
		case ModeAll:
			rda := synopsis.DefaultRDAConfig()
			syn.RDA = &rda
			lds, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 10_000})
			if err != nil {
				return res, err
			}
			syn.LDS = &lds
		default:
			return res, fmt.Errorf("bench: unknown forwarding mode %q", mode)
		}
		buf, err := dataplane.NewSynBuffer(syn)
		if err != nil {
			return res, err
		}
		for _, set := range buf.Sets {
			reserveCaches(set)
		}
		epoch.Store(1)
		cfg.Role, cfg.Classifier, cfg.Buffer, cfg.Epoch = dataplane.RoleSender, cl, buf, &epoch
	}
	lane, err := dataplane.NewLane(cfg)
	if err != nil {
		return res, err
	}
	// Fill the source with 2048 distinct frames.
	frames, err := Frames(2048, size, 1024)
	if err != nil {
		return res, err
	}
	pk := make([]*dataplane.Packet, 64)
	for i := 0; i < len(frames); i += len(pk) {
		n := in.A().Alloc(pk)
		for j := 0; j < n && i+j < len(frames); j++ {
			pk[j].Data = append(pk[j].Data[:0], frames[i+j]...)
		}
		in.A().TxBurst(pk[:n])
	}
	back := make([]*dataplane.Packet, 64)
	// One OS thread for the whole run, so its CPU time is the run's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	start := time.Now()
	deadline := start.Add(d)
	var fwd uint64
	for polls := 0; ; polls++ {
		lane.Poll()
		n := out.B().RxBurst(back)
		if n > 0 {
			fwd += uint64(n)
			in.A().TxBurst(back[:n]) // circulate: pooled packets move without copies
		}
		if polls&255 == 0 && time.Now().After(deadline) {
			break
		}
	}
	res.Elapsed = time.Since(start)
	res.CPU = threadCPU() - cpu0
	res.Packets = fwd
	res.Recorded = lane.Stats.Recorded.Load()
	if fwd > 0 {
		res.NsPerPkt = float64(res.Elapsed.Nanoseconds()) / float64(fwd)
		res.Mpps = float64(fwd) / res.Elapsed.Seconds() / 1e6
	}
	if fwd > 0 && res.CPU > 0 {
		res.CPUNsPerPkt = float64(res.CPU.Nanoseconds()) / float64(fwd)
		res.CPUMpps = 1e3 / res.CPUNsPerPkt
		res.CPUShare = res.CPU.Seconds() / res.Elapsed.Seconds()
	}
	return res, nil
}
