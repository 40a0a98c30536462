package appliance

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

func stopTestAppliance(t *testing.T) *Appliance {
	t.Helper()
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.A().Close(); link.B().Close() })
	cl, _ := classifier.NewClassifier(nil)
	a, err := New(Config{PortA: link.A(), PortB: link.B(), Segment: "b", Interval: 20 * time.Millisecond, Classifier: cl,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Insecure: true, IdleSleep: 50 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// stopWithin runs Stop on n goroutines at once and fails unless every call
// returns, with the same error, within limit.
func stopWithin(t *testing.T, a *Appliance, drain time.Duration, n int, limit time.Duration) {
	t.Helper()
	errs := make(chan error, n)
	for range n {
		go func() { errs <- a.Stop(drain) }()
	}
	timeout := time.After(limit)
	var first error
	for i := range n {
		select {
		case err := <-errs:
			if i == 0 {
				first = err
			} else if err != first {
				t.Errorf("Stop returned %v and %v", first, err)
			}
		case <-timeout:
			t.Fatalf("%d of %d Stop calls still blocked after %v", n-i, n, limit)
		}
	}
}

// TestStopAnyOrder: Stop is the one stop path and works whatever the order
// and however often it is called: before Start (then the appliance never
// starts), twice, and from several goroutines at once while running.
func TestStopAnyOrder(t *testing.T) {
	t.Run("before start", func(t *testing.T) {
		a := stopTestAppliance(t)
		stopWithin(t, a, time.Second, 2, time.Second)
		if err := a.Start(); !errors.Is(err, ErrStopped) {
			t.Fatalf("Start after Stop: %v, want ErrStopped", err)
		}
		for _, w := range a.workers {
			if err := w.Start(); !errors.Is(err, dataplane.ErrWorkerClosed) {
				t.Fatalf("a worker of a stopped appliance started: %v", err)
			}
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		a := stopTestAppliance(t)
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		if err := a.Start(); err == nil {
			t.Fatal("a second Start succeeded")
		}
		time.Sleep(50 * time.Millisecond)
		// The drain is bounded by its deadline and closeWait; the control
		// goroutine has ended (a.done closed) when every Stop returns.
		stopWithin(t, a, 100*time.Millisecond, 4, 5*time.Second)
		select {
		case <-a.done:
		default:
			t.Fatal("Stop returned with the control goroutine running")
		}
		stopWithin(t, a, time.Second, 1, time.Second)
		if err := a.Start(); !errors.Is(err, ErrStopped) {
			t.Fatalf("Start after Stop: %v, want ErrStopped", err)
		}
	})
	t.Run("start and stop race", func(t *testing.T) {
		// Whichever wins, nothing is left running and Stop returns.
		a := stopTestAppliance(t)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _ = a.Start() }()
		stopWithin(t, a, 0, 2, 5*time.Second)
		wg.Wait()
		for _, w := range a.workers {
			if err := w.Start(); !errors.Is(err, dataplane.ErrWorkerClosed) {
				t.Fatalf("a worker still startable after Stop: %v", err)
			}
		}
	})
}
