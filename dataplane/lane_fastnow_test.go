package dataplane

import (
	"sync/atomic"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/synopsis"
)

// nowFastRx is a receive port whose measuring fast path takes every poll:
// a full burst received, measured and sent, with result r.
type nowFastRx struct {
	Port
	r FastResult
}

func (p nowFastRx) SendMeasured(_ Port, _ FastSynopses, burst, _ int, _ RxStamp, _ []*Packet) (FastResult, bool) {
	r := p.r
	r.Rx, r.Done = burst, true
	return r, true
}

type nowFastTx struct{ Port }

func (nowFastTx) LastTxNs() uint64 { return 1 }

// TestSendFastTakesThePortsClock: a sender lane on RealtimeClock takes the
// port's clock reading after its last transmit as the poll's time rather
// than reading the clock again; it reads the clock when the port gives no
// reading, or on another clock.
func TestSendFastTakesThePortsClock(t *testing.T) {
	const portNow = 12345
	clockNow := uint64(7)
	for _, c := range []struct {
		name  string
		r     FastResult
		clock func() uint64
		want  func(now uint64) bool
	}{
		{"port's reading", FastResult{Sent: 32, TxNow: portNow}, nil, func(now uint64) bool { return now == portNow }},
		{"no reading", FastResult{Sent: 32}, nil, func(now uint64) bool { return now > 1e18 }},
		{"another clock", FastResult{Sent: 32, TxNow: portNow}, func() uint64 { return clockNow }, func(now uint64) bool { return now == clockNow }},
	} {
		l, err := NewRingLink("", LinkConfig{Size: 64, Pool: 256})
		if err != nil {
			t.Fatal(err)
		}
		cl, _ := classifier.NewClassifier(nil)
		buf, err := NewSynBuffer(SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1})
		if err != nil {
			t.Fatal(err)
		}
		lane, err := NewLane(LaneConfig{Rx: nowFastRx{l.A(), c.r}, Tx: nowFastTx{l.B()}, Role: RoleSender, Classifier: cl,
			Buffer: buf, Epoch: new(atomic.Uint64), Clock: c.clock})
		if err != nil {
			t.Fatal(err)
		}
		if !lane.FastPath() {
			t.Fatalf("%s: no fast path", c.name)
		}
		if !lane.Poll() {
			t.Fatalf("%s: the poll did nothing", c.name)
		}
		if !c.want(lane.now) {
			t.Errorf("%s: the lane's time after the poll is %d", c.name, lane.now)
		}
	}
}
