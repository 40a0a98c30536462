package dataplane_test

import (
	"sync/atomic"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// fastRx is a receive port that offers a SenderFastPath (as a DPDK port
// does); fastTx a transmit port that stamps its bursts.
type fastRx struct{ dataplane.Port }

// A change to the fast path's interface must break this test's build,
// not quietly leave fastRx outside it.
var _ dataplane.MeasureFastPath = fastRx{}

func (fastRx) SendMeasured(dataplane.Port, dataplane.FastSynopses, int, int, dataplane.RxStamp, []*dataplane.Packet) (dataplane.FastResult, bool) {
	return dataplane.FastResult{}, false
}

type fastTx struct{ dataplane.Port }

func (fastTx) LastTxNs() uint64 { return 1 }

// TestSynopsesFastPath: the sender fast path records the LDA, the RDA,
// the LDS and the trajectory sample of one class.
func TestSynopsesFastPath(t *testing.T) {
	smp := synopsis.DefaultSampleConfig()
	rda := synopsis.RDAConfig{Banks: 3, Cells: 64, CacheBudget: 1 << 12}
	lds := synopsis.LDSConfig{Cols: 64, MaxFlows: 16}
	for _, c := range []struct {
		syn  dataplane.SynConfig
		fast bool
	}{
		{dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1}, true},
		{dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds, Classes: 1}, true},
		{dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Sample: &smp, Classes: 1}, true},
		{dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds, Sample: &smp, Classes: 1}, true},
	} {
		l, _ := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 256})
		cl, _ := classifier.NewClassifier(nil)
		buf, err := dataplane.NewSynBuffer(c.syn)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range buf.Sets {
			if (s.Sample != nil) != (c.syn.Sample != nil) || len(s.Sample) > 0 && len(s.Sample) != c.syn.Classes {
				t.Fatalf("set holds %d samples for config %+v", len(s.Sample), c.syn.Sample)
			}
		}
		lane, err := dataplane.NewLane(dataplane.LaneConfig{Rx: fastRx{l.A()}, Tx: fastTx{l.B()}, Role: dataplane.RoleSender, Classifier: cl, Buffer: buf, Epoch: new(atomic.Uint64)})
		if err != nil {
			t.Fatal(err)
		}
		if lane.FastPath() != c.fast {
			t.Errorf("sample %v: fast path %v, want %v", c.syn.Sample != nil, lane.FastPath(), c.fast)
		}
	}
}
