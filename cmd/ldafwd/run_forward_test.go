package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
)

// TestRunForwardOnly: `ldafwd run --forward-only` between two ring links
// forwards the frames both ways, in order, and its final port records
// count them; no interval is reported. A lane may drop frames only when
// its tx port took nothing for the stall limit (50 ms): a receiver here
// starved that long by a loaded machine. Such drops must be counted in the
// stop log, and every frame delivered or counted.
func TestRunForwardOnly(t *testing.T) {
	id := fmt.Sprint(os.Getpid())
	g, k := "FG"+id, "FK"+id
	lg, err := dataplane.NewRingLink(g, dataplane.LinkConfig{Size: 4096, Pool: 16384})
	if err != nil {
		t.Fatal(err)
	}
	lk, err := dataplane.NewRingLink(k, dataplane.LinkConfig{Size: 4096, Pool: 16384})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { lg.A().Close(); lk.B().Close() }()
	var out, errOut syncBuf
	// The run stops when the test cancels it, once every frame has been
	// sent and received (or counted as dropped), not after a fixed
	// duration: a loaded machine may take longer than any fixed one to
	// send them, and frames still unsent at the stop would be neither
	// delivered nor dropped.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runMain(ctx, []string{"--forward-only", "--port-a", "ring:" + g + ".b", "--port-b", "ring:" + k + ".a",
			"--format", "json", "--idle-sleep", "20us"}, &out, &errOut)
	}()
	// 20 000 frames each way, ids in order; the far ends check order.
	const total = 20_000
	gen := traffic.MustGen(traffic.GenConfig{Flows: 64, Size: 128})
	send := func(p dataplane.Port) {
		pk := make([]*dataplane.Packet, 32)
		for next := uint64(1); next <= total; {
			was := next
			if next = sendFrames(p, gen, pk, next, total+1); next-was < 32 && next <= total {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
	// recv takes frames until the last id arrives or, once the run has
	// stopped, the ring is empty.
	stopped := make(chan struct{})
	recv := func(p dataplane.Port) (got uint64, err error) {
		pk := make([]*dataplane.Packet, 64)
		var last uint64
		for last < total {
			n := p.RxBurst(pk)
			for _, q := range pk[:n] {
				id, ok := traffic.FrameID(q.Data)
				if !ok || id <= last || id > total {
					return got, fmt.Errorf("frame id %d (ok %v) after %d", id, ok, last)
				}
				last = id
				got++
			}
			p.Free(pk[:n])
			if n == 0 {
				select {
				case <-stopped:
					return got, nil
				default:
				}
				time.Sleep(50 * time.Microsecond)
			}
		}
		return got, nil
	}
	type result struct {
		got uint64
		err error
	}
	var res [2]chan result // a→b (received at k's far end), b→a
	var received, sent sync.WaitGroup
	for i, p := range []dataplane.Port{lk.B(), lg.A()} {
		res[i] = make(chan result, 1)
		received.Add(1)
		go func() { n, err := recv(p); res[i] <- result{n, err}; received.Done() }()
	}
	for _, p := range []dataplane.Port{lg.A(), lk.B()} {
		sent.Add(1)
		go func() { send(p); sent.Done() }()
	}
	// Every frame sent; then until both far ends have their last frame,
	// or a while longer if a stall dropped it.
	if !waitGroup(&sent, time.Minute) {
		t.Fatalf("the senders did not finish in a minute\n%s", errOut.String())
	}
	waitGroup(&received, 10*time.Second)
	cancel()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("run did not stop\n%s", errOut.String())
	}
	close(stopped)
	if runErr != nil {
		t.Fatalf("run: %v\n%s", runErr, errOut.String())
	}
	var stop struct {
		Msg         string `json:"message"`
		ForwardedAB uint64 `json:"forwarded_ab"`
		ForwardedBA uint64 `json:"forwarded_ba"`
		DroppedAB   uint64 `json:"tx_dropped_ab"`
		DroppedBA   uint64 `json:"tx_dropped_ba"`
	}
	for _, line := range strings.Split(errOut.String(), "\n") {
		if strings.Contains(line, "forwarding stopped") {
			if err := json.Unmarshal([]byte(line), &stop); err != nil {
				t.Fatalf("stop log not JSON: %q", line)
			}
		}
	}
	if stop.Msg == "" {
		t.Fatalf("no \"forwarding stopped\" log line:\n%s", errOut.String())
	}
	for i, c := range [][2]uint64{{stop.ForwardedAB, stop.DroppedAB}, {stop.ForwardedBA, stop.DroppedBA}} {
		r, fwd, dropped := <-res[i], c[0], c[1]
		if r.err != nil || r.got != fwd || r.got+dropped != total || dropped > total/4 {
			t.Fatalf("direction %d delivered %d, logged %d forwarded and %d dropped, of %d frames: %v\n%s", i, r.got, fwd, dropped, total, r.err, errOut.String())
		}
		if dropped > 0 {
			t.Logf("direction %d: the tx ring stalled; %d frames dropped and counted", i, dropped)
		}
	}
	var finalRx uint64
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		switch m["type"] {
		case "interval":
			t.Fatalf("--forward-only reported an interval: %s", line)
		case "port":
			if m["final"] == true {
				finalRx += uint64(m["rx_packets"].(float64))
			}
		}
	}
	if finalRx != 2*total {
		t.Fatalf("final port records count %d received frames, want %d\n%s", finalRx, 2*total, out.String())
	}
	if !strings.Contains(errOut.String(), "forwarding only") {
		t.Errorf("log does not say it is forwarding only:\n%s", errOut.String())
	}
}

// waitGroup waits for wg up to d; it reports whether wg finished.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
}
