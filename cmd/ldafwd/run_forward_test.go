package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
)

// TestRunForwardOnly: `ldafwd run --forward-only` between two ring links
// forwards every frame both ways, in order, and its final port records
// count them; no interval is reported.
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
	done := make(chan error, 1)
	go func() {
		done <- runMain(context.Background(), []string{"--forward-only", "--port-a", "ring:" + g + ".b", "--port-b", "ring:" + k + ".a",
			"--duration", "2s", "--format", "json", "--idle-sleep", "20us"}, &out, &errOut)
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
	recv := func(p dataplane.Port) (got uint64, err error) {
		pk := make([]*dataplane.Packet, 64)
		for deadline := time.Now().Add(10 * time.Second); got < total && time.Now().Before(deadline); {
			n := p.RxBurst(pk)
			for _, q := range pk[:n] {
				id, ok := traffic.FrameID(q.Data)
				if !ok || id != got+1 {
					return got, fmt.Errorf("frame id %d (ok %v) after %d", id, ok, got)
				}
				got++
			}
			p.Free(pk[:n])
			if n == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
		return got, nil
	}
	type result struct {
		got uint64
		err error
	}
	res := make(chan result, 2)
	go send(lg.A())
	go send(lk.B())
	go func() { n, err := recv(lk.B()); res <- result{n, err} }()
	go func() { n, err := recv(lg.A()); res <- result{n, err} }()
	for i := 0; i < 2; i++ {
		r := <-res
		if r.err != nil || r.got != total {
			t.Fatalf("a direction delivered %d of %d frames: %v\n%s", r.got, total, r.err, errOut.String())
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
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
