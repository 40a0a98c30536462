package appliance

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestFinalOldestFirst: what is left at stop — receiver copies waiting for
// the sender's synopses and sender bundles waiting for a copy — is
// reported oldest first, one line per interval, whatever map order holds
// them in.
func TestFinalOldestFirst(t *testing.T) {
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer link.A().Close()
	defer link.B().Close()
	cl, _ := classifier.NewClassifier(nil)
	var got []int64
	a, err := New(Config{PortA: link.A(), PortB: link.B(), Segment: "b", Interval: 100 * time.Millisecond, Classifier: cl,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Insecure: true,
		Reports: func(r *report.Interval) { got = append(got, r.Interval) }})
	if err != nil {
		t.Fatal(err)
	}
	c := a.ctl
	lda, _ := synopsis.NewLDA(synopsis.DefaultLDAConfig())
	for _, k := range []uint64{17, 11, 15, 12, 19, 13} {
		c.halves.copies[k] = &rcopy{k: k, lda: []*synopsis.LDA{lda}, frames: 1}
	}
	for _, k := range []uint64{18, 10, 14, 16} {
		c.halves.bundles[k] = &waiting{b: &control.IntervalBundle{Interval: k}}
	}
	c.final()
	if len(got) != 10 {
		t.Fatalf("%d lines: %v", len(got), got)
	}
	for i := range got {
		if got[i] != int64(10+i) {
			t.Fatalf("final lines in order %v, want 10…19", got)
		}
	}
}

// TestStartFailsOnWorkerError: a worker that cannot start (here its
// OnWorkerStart fails, as a DPDK lcore registration may) makes Start
// fail, and Stop then returns at once.
func TestStartFailsOnWorkerError(t *testing.T) {
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer link.A().Close()
	defer link.B().Close()
	cl, _ := classifier.NewClassifier(nil)
	a, err := New(Config{PortA: link.A(), PortB: link.B(), Segment: "b", Interval: 100 * time.Millisecond, Classifier: cl,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Insecure: true,
		OnWorkerStart: func() error { return errNoLcore }})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err == nil {
		t.Fatal("Start succeeded with a failing worker")
	}
	done := make(chan struct{})
	go func() { a.Stop(time.Second); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Stop after a failed Start blocked")
	}
}

var errNoLcore = errString("no lcore")

type errString string

func (e errString) Error() string { return string(e) }
