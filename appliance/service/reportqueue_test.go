package service

import (
	"sync"
	"testing"

	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// TestReportQueueKeepsEveryLineInOrder: a sink slower than the control side
// (blocked until released) fills the queue; put then waits instead of
// dropping, close writes everything queued, and a line put after close is
// written after them. Order and count are exact.
func TestReportQueueKeepsEveryLineInOrder(t *testing.T) {
	var mu sync.Mutex
	var got []int64
	release := make(chan struct{})
	q := newReportQueue(4, func(iv *report.Interval) {
		<-release
		mu.Lock()
		got = append(got, iv.Interval)
		mu.Unlock()
	}, zerolog.Nop())
	const n = 50
	putDone := make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			q.put(&report.Interval{Interval: int64(i)})
		}
		close(putDone)
	}()
	// The writer holds one line and the queue four: the sixth put waits.
	for q.Stalls.Load() == 0 {
		select {
		case <-putDone:
			t.Fatal("every put returned while the sink was blocked: lines were dropped or the queue is unbounded")
		default:
		}
	}
	close(release)
	<-putDone
	q.close()
	q.put(&report.Interval{Interval: n})
	q.close() // twice is fine
	if len(got) != n+1 {
		t.Fatalf("%d lines written, want %d", len(got), n+1)
	}
	for i, k := range got {
		if k != int64(i) {
			t.Fatalf("line %d is interval %d: out of order", i, k)
		}
	}
	if q.Stalls.Load() == 0 {
		t.Fatal("no stall counted")
	}
}
