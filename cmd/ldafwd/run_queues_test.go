package main

import (
	"context"
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
)

// TestRunQueues runs two appliances with --queues 2 over ring links (the
// queues steered in software): both ends cut every interval per lane,
// the valid intervals have no loss (the segment loses nothing), the sink gets every frame, and flag mistakes are refused.
func TestRunQueues(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--queues 0", "--queues 0"},
		{"--queues 2 --cores 0", "one CPU per queue pair"},
		{"--queues 2 --forward-only", "--forward-only"},
		{"--queues 2 --port-a afxdp:lo@1 --port-b afxdp:lo", "give the interface only"},
	} {
		args := append([]string{"--port-a", "ring:v.a", "--port-b", "ring:w.b", "--segment-port", "b", "--insecure"}, strings.Fields(c.args)...)
		var out, errb syncBuf
		if err := runMain(context.Background(), args, &out, &errb); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.args, err, c.want)
		}
	}

	id := fmt.Sprint(os.Getpid())
	g, s, k := "QG"+id, "QS"+id, "QK"+id
	mk := func(name string, c dataplane.LinkConfig) *dataplane.RingLink {
		l, err := dataplane.NewRingLink(name, c)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	lg := mk(g, dataplane.LinkConfig{Size: 4096, Pool: 16384})
	mk(s, dataplane.LinkConfig{Size: 4096, Pool: 16384})
	lk := mk(k, dataplane.LinkConfig{Size: 16384, Pool: 4096})
	defer func() {
		lg.A().Close()
		lk.B().Close()
	}()
	key := writeKey(t)
	common := []string{"--queues", "2", "--interval", "200ms", "--key-file", key, "--format", "json", "--drain", "1s", "--log-level", "info",
		"--max-delay", "500ms", "--min-delay", "-50ms", "--idle-sleep", "20us"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out1, out2, err1, err2 syncBuf
	errs := make(chan error, 2)
	go func() {
		errs <- runMain(ctx, append([]string{"--port-a", "ring:" + g + ".b", "--port-b", "ring:" + s + ".a", "--segment-port", "b"}, common...), &out1, &err1)
	}()
	go func() {
		errs <- runMain(ctx, append([]string{"--port-a", "ring:" + s + ".b", "--port-b", "ring:" + k + ".a", "--segment-port", "a"}, common...), &out2, &err2)
	}()
	var sunk uint64
	sinkStop := make(chan struct{})
	sinkDone := sinkPort(lk.B(), sinkStop, &sunk)
	time.Sleep(300 * time.Millisecond) // both appliances up
	gen := traffic.MustGen(traffic.GenConfig{Flows: 200, Size: 128})
	sent := sendPaced(lg.A(), gen, 5_000, 3*time.Second, 1) - 1
	time.Sleep(600 * time.Millisecond)
	stopRunMains(t, cancel, errs)
	close(sinkStop)
	<-sinkDone
	if sunk != sent {
		t.Errorf("sent %d, sink got %d", sent, sunk)
	}
	ivs, _ := runLines(t, out2.String())
	valid := 0
	for _, r := range ivs {
		if r.Direction != "a>b" || r.Synopsis != "lda" {
			continue
		}
		t.Logf("k=%d valid=%v %s sent=%d received=%d lost=%d", r.Interval, r.Valid, r.Reason, r.Sent, r.Received, r.Lost)
		if strings.Contains(r.Reason, "steer") || strings.Contains(r.Reason, "lanes") {
			t.Errorf("interval %d: %s", r.Interval, r.Reason)
		}
		if r.Valid {
			valid++
			if r.Lost != 0 || r.Sent != r.Received {
				t.Errorf("interval %d valid with sent %d, received %d, lost %d on a lossless segment", r.Interval, r.Sent, r.Received, r.Lost)
			}
		}
	}
	// 15 intervals of traffic. On a 2-CPU machine shared with other jobs
	// most intervals of this pair can end invalid ("end marker lost",
	// "nothing from the sender", "receiver's copy spans more than this
	// interval") although every control frame arrived: both appliances run
	// in this one process, four busy-polling workers and two control
	// goroutines on GOMAXPROCS=2, and a control goroutine that waits for a
	// P neither moves the interval clock (no End markers: the peer logs
	// peer_silent) nor takes its lanes' copies (overruns merge intervals).
	// The lines say so, never a wrong number; so this asks for one valid
	// interval only, and the checks above hold every line to the truth.
	// A deployed pair runs one process per host with pinned workers.
	if valid < 1 && !raceEnabled {
		t.Errorf("%d valid intervals of 3 s at 200 ms", valid)
	}
	if t.Failed() {
		t.Logf("#1 log:\n%s\n#2 log:\n%s\n#2 out:\n%s", err1.String(), err2.String(), out2.String())
	}
}
