package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
)

// receiverLinks are one incarnation of the receiving run's links: the
// segment side (the relay writes its a end) and the sink side (the relay
// drains its b end).
type receiverLinks struct{ seg, out *dataplane.RingLink }

// TestRunReceiverKilledLiveSender: the receiving `ldafwd run` of a live
// pair is killed mid-run and started again on the same --report file
// while the sender keeps forwarding:
//
//	test ─ring:G─ [a run#1 b] ═ring:S═ relay ═ring:Rn═ [a run#2 b] ─ring:Kn─ sink
//
// Ring ports live in one process, so the kill is what a SIGKILL leaves
// behind, done in place: the relay stops handing frames to run#2 (the
// frames the sender forwards meanwhile reach nobody), the report file
// keeps only what was written by then plus a partial line, and nothing
// the dying run writes after that reaches the file (it writes to a file
// that was replaced). A new run#2 on fresh links then reads the file
// back. Its direction's interval numbers must form one sequence without
// hole or repeat, the intervals between the kill and the restart must be
// invalid with the not-running reason, and every interval in which the
// sender forwarded a frame must have its line: valid with the sender's
// exact count, or invalid with a reason.
func TestRunReceiverKilledLiveSender(t *testing.T) {
	if raceEnabled {
		t.Skip("judges timing")
	}
	const iv = 200 * time.Millisecond
	id := fmt.Sprint(os.Getpid())
	g, s := "RG"+id, "RS"+id
	truth, err := dataplane.NewIntervalTruth(appliance.DirAtoB)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, c dataplane.LinkConfig) *dataplane.RingLink {
		l, err := dataplane.NewRingLink(name, c)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	lg := mk(g, dataplane.LinkConfig{Size: 4096, Pool: 16384})
	ls := mk(s, dataplane.LinkConfig{Size: 4096, Pool: 16384, AtoB: &dataplane.ImpairConfig{Loss: model.NoLoss{}, Seed: 7, Truth: dataTruth(truth)}})
	var incs []receiverLinks
	newInc := func(n int) receiverLinks {
		r := receiverLinks{mk(fmt.Sprintf("RR%d_%s", n, id), dataplane.LinkConfig{Size: 4096, Pool: 4096}),
			mk(fmt.Sprintf("RK%d_%s", n, id), dataplane.LinkConfig{Size: 8192, Pool: 4096})}
		incs = append(incs, r)
		return r
	}
	defer func() {
		lg.A().Close()
		ls.B().Close()
		for _, r := range incs {
			r.seg.A().Close()
			r.out.B().Close()
		}
	}()

	// The relay owns S.b, and Rn.a and Kn.b of the live incarnation (nil:
	// the receiver is dead, frames from the segment are dropped).
	swap := make(chan *receiverLinks)
	relayDone := make(chan struct{})
	var dropped atomic.Uint64
	go func() {
		defer close(relayDone)
		var cur *receiverLinks
		pk := make([]*dataplane.Packet, 64)
		for {
			select {
			case c, ok := <-swap:
				if !ok {
					return
				}
				cur = c
			default:
			}
			busy := false
			n := ls.B().RxBurst(pk)
			m := 0
			if cur != nil {
				m = cur.seg.A().TxBurst(pk[:n])
			}
			dropped.Add(uint64(n - m))
			ls.B().Free(pk[m:n])
			busy = busy || n > 0
			if cur != nil {
				n = cur.seg.A().RxBurst(pk) // run#2's control frames toward run#1
				m = ls.B().TxBurst(pk[:n])
				ls.B().Free(pk[m:n])
				busy = busy || n > 0
				n = cur.out.B().RxBurst(pk)
				cur.out.B().Free(pk[:n])
				busy = busy || n > 0
			}
			if !busy {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()

	key := writeKey(t)
	rep := filepath.Join(t.TempDir(), "r2.jsonl")
	common := []string{"--interval", iv.String(), "--key-file", key, "--format", "json", "--stats-interval", "1s", "--drain", "1s",
		"--log-level", "info", "--max-delay", "500ms", "--min-delay", "-50ms", "--idle-sleep", "20us"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out1, err1, err2, err2b syncBuf
	errs := make(chan error, 2)
	go func() {
		errs <- runMain(ctx, append([]string{"--port-a", "ring:" + g + ".b", "--port-b", "ring:" + s + ".a", "--segment-port", "b"}, common...), &out1, &err1)
	}()
	startReceiver := func(ctx context.Context, n int, log *syncBuf, done chan<- error) {
		r := newInc(n)
		go func() {
			done <- runMain(ctx, append([]string{"--port-a", "ring:" + r.seg.B().Name()[len("ring:"):], "--port-b", "ring:" + r.out.A().Name()[len("ring:"):],
				"--segment-port", "a", "--report", rep}, common...), &syncBuf{}, log)
		}()
		swap <- &r
	}
	ctx1, kill1 := context.WithCancel(context.Background())
	defer kill1()
	killed := make(chan error, 1)
	startReceiver(ctx1, 1, &err2, killed)

	// Traffic at 5 kpps; run#2 dies at 1.6 s, or later if it has not
	// written a whole line by then (a loaded machine), is back 0.6 s after
	// and runs 2.2 s more.
	gen := traffic.MustGen(traffic.GenConfig{Flows: 50, Size: 128})
	pk := make([]*dataplane.Packet, 32)
	next := uint64(1)
	start := time.Now()
	stage := 0
	var killedAfter int64
	var killedAt, checked time.Duration
	for stage < 2 || time.Since(start) < killedAt+2800*time.Millisecond {
		switch e := time.Since(start); {
		case stage == 0 && e >= 10*time.Second:
			t.Fatal("the first receiver wrote no whole interval line in 10 s")
		case stage == 0 && e >= 1600*time.Millisecond && e-checked >= 50*time.Millisecond:
			checked = e
			if !hasIntervalLine(t, rep) {
				break
			}
			killedAt = e
			stage++
			swap <- nil
			// What the kill leaves: the lines written by now, the last
			// one perhaps partial. The dying run keeps its descriptor of
			// the replaced file: nothing it writes from now on is seen.
			b, err := os.ReadFile(rep)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, `{"type":"interval","interval":`...)
			if err := os.WriteFile(rep+".new", b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(rep+".new", rep); err != nil {
				t.Fatal(err)
			}
			kill1()
			if ivs, _ := runLines(t, string(b[:strings.LastIndexByte(string(b), '\n')+1])); len(ivs) > 0 {
				killedAfter = ivs[len(ivs)-1].Interval
			}
		case stage == 1 && e >= killedAt+600*time.Millisecond:
			stage++
			select {
			case <-killed:
			case <-time.After(5 * time.Second):
				t.Fatal("the killed run did not return")
			}
			startReceiver(ctx, 2, &err2b, errs)
		}
		due := uint64(time.Since(start).Seconds()*5_000) + 1
		if due <= next {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		next = sendFrames(lg.A(), gen, pk, next, due)
	}
	time.Sleep(600 * time.Millisecond) // let the last intervals close
	stopRunMains(t, cancel, errs)
	close(swap)
	<-relayDone

	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(err2b.String(), "partial line") || !strings.Contains(err2b.String(), "receiver was not running") {
		t.Errorf("the restarted run did not log the partial line and the gap:\n%s", err2b.String())
	}
	// The partial line stays one damaged line; the rest parse.
	text := strings.Replace(string(b), "{\"type\":\"interval\",\"interval\":\n", "", 1)
	ivs, _ := runLines(t, text)
	truths := truthByInterval(truth)
	seen := map[int64]bool{}
	var prev int64
	gap := 0
	for _, r := range ivs {
		if r.Direction != "a>b" || r.Synopsis != "lda" || r.MEC != "all" {
			continue
		}
		ti, hasTruth := truths[r.Interval]
		t.Logf("%d valid=%v sent=%d received=%d truth sent=%d %s", r.Interval, r.Valid, r.Sent, r.Received, ti.Delivered+ti.Lost, r.Reason)
		if prev != 0 && r.Interval != prev+1 {
			t.Errorf("interval %d follows %d", r.Interval, prev)
		}
		prev = r.Interval
		seen[r.Interval] = true
		switch {
		case r.Reason == appliance.ReasonNotRunning:
			gap++
			if r.Interval <= killedAfter {
				t.Errorf("gap line %d before the kill (last line then %d)", r.Interval, killedAfter)
			}
		case r.Valid && hasTruth && r.Sent != ti.Delivered+ti.Lost:
			t.Errorf("interval %d valid with sent %d, the sender forwarded %d", r.Interval, r.Sent, ti.Delivered+ti.Lost)
		case !r.Valid && r.Reason == "":
			t.Errorf("interval %d invalid without a reason", r.Interval)
		}
	}
	if gap < 2 {
		t.Errorf("%d gap lines for a receiver down 0.6 s (3 intervals)", gap)
	}
	// Every interval in which the sender forwarded frames (by the
	// segment's truth) between the first and last line has its line.
	var first int64
	for k := range seen {
		if first == 0 || k < first {
			first = k
		}
	}
	for k, ti := range truths {
		if k >= first && k <= prev && ti.Delivered+ti.Lost > 0 && !seen[k] {
			t.Errorf("interval %d: the sender forwarded %d frames, no line", k, ti.Delivered+ti.Lost)
		}
	}
	t.Logf("killed after interval %d; %d gap lines; %d frames reached no receiver", killedAfter, gap, dropped.Load())
}

// hasIntervalLine says whether the report file at path holds a whole
// interval line yet.
func hasIntervalLine(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return bytes.Contains(b[:i], []byte(`"type":"interval"`))
	}
	return false
}
