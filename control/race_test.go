package control

import (
	"sync"
	"testing"
)

// TestConcurrentLanes: workers emit End markers from their own goroutines
// while the control goroutine builds fragments and a scraper reads the
// receiver's counters. Run with -race. Sequence numbers must stay unique
// across all of them, and the receiver must accept every frame.
func TestConcurrentLanes(t *testing.T) {
	const lanes, intervals = 4, 50
	s := newTestSender(t, DefaultMTU, lanes, twoParts)
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.MaxIntervals = intervals + 1 })
	var mu sync.Mutex
	var frames [][]byte
	var wg sync.WaitGroup
	for l := 0; l < lanes; l++ {
		w, err := s.NewEndWriter(uint16(l))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, EndFrameLen)
			for k := uint64(1); k <= intervals; k++ {
				e := End{StartNs: int64(k) * 1e9, EndNs: int64(k+1) * 1e9, Frames: 1000*k + uint64(w.lane), Bytes: 64000 * k}
				buf = w.AppendEnd(buf[:0], k, &e)
				mu.Lock()
				frames = append(frames, append([]byte(nil), buf...))
				mu.Unlock()
			}
		}()
	}
	sent := map[uint64][]Part{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var bufs [][]byte
		for k := uint64(1); k <= intervals; k++ {
			parts := makeParts(k, twoParts, 2000, 10)
			sent[k] = parts
			bufs, _ = s.AppendInterval(bufs, k, 0, parts)
			mu.Lock()
			for _, b := range bufs {
				frames = append(frames, append([]byte(nil), b...))
			}
			mu.Unlock()
		}
	}()
	stop := make(chan struct{})
	scraped := make(chan uint64)
	go func() {
		var last uint64
		for {
			select {
			case <-stop:
				scraped <- last
				return
			default:
				last = r.Counters().Accepted
			}
		}
	}()
	wg.Wait()
	seen := map[uint64]bool{}
	var f Frame
	for _, b := range frames {
		if err := ParseFrame(b, &f); err != nil || seen[f.Seq] {
			t.Fatalf("seq %d: %v (duplicate %v)", f.Seq, err, seen[f.Seq])
		}
		seen[f.Seq] = true
	}
	// Frames arrive in the order the goroutines appended them: lanes and
	// the control goroutine interleave, as tx queues do on the wire.
	for _, b := range frames {
		if err := r.Consume(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-scraped
	res := r.Results(nil)
	if len(res) != intervals {
		t.Fatalf("%d results", len(res))
	}
	for _, x := range res {
		if x.Bundle == nil {
			t.Fatalf("failure %v", x.Failure)
		}
		k := x.Bundle.Interval
		wantBundle(t, []Result{x}, s, k, sent[k])
	}
}
