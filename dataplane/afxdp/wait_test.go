package afxdp

import (
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// TestWorkerWakesOnFrame: a worker whose lanes receive from AF_XDP ports
// waits in ppoll(2) when idle, so a frame arriving during a long idle
// wait is forwarded at once, not when the wait ends. The idle wait here is
// 3 s; the frame must come out within 1.5 s (a worker that slept blind
// would hold it for up to 3 s).
func TestWorkerWakesOnFrame(t *testing.T) {
	in := nettest.NewVeth(t, nettest.Options{})
	out := nettest.NewVeth(t, nettest.Options{})
	a := mustOpen(t, in, Config{Index: 40, RingSize: 256})
	b := mustOpen(t, out, Config{Index: 41, RingSize: 256})
	var lanes [2]*dataplane.Lane
	var err error
	if lanes[0], err = dataplane.NewLane(dataplane.LaneConfig{Rx: a, Tx: b, Role: dataplane.RoleForward}); err != nil {
		t.Fatal(err)
	}
	if lanes[1], err = dataplane.NewLane(dataplane.LaneConfig{Rx: b, Tx: a, Role: dataplane.RoleForward}); err != nil {
		t.Fatal(err)
	}
	ws, err := dataplane.NewWorkers(lanes, nil, dataplane.WorkerConfig{IdleSleep: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	if !w.Polling() {
		t.Fatal("a worker on AF_XDP ports does not wait in ppoll")
	}
	w.Start()
	defer func() { _ = w.Close() }()
	src, dst := mustPeer(t, in), mustPeer(t, out)
	// Let the worker go idle (256 empty polls, then the long wait).
	time.Sleep(300 * time.Millisecond)
	buf := make([]byte, 2048)
	for i := uint64(0); i < 3; i++ {
		sent := time.Now()
		if err := src.Send(nettest.Frame(in.HostMAC, in.PeerMAC, 7, i, 100)); err != nil {
			t.Fatal(err)
		}
		for {
			n, err := dst.Recv(buf, 1500*time.Millisecond)
			if err != nil || n == 0 {
				t.Fatalf("frame %d not forwarded within 1.5 s of an idle wait of 3 s (%v): the worker did not wake", i, err)
			}
			if tag, s, ok := nettest.ParseFrame(buf[:n]); ok && tag == 7 && s == i {
				t.Logf("frame %d forwarded after %v", i, time.Since(sent))
				break
			}
		}
		time.Sleep(200 * time.Millisecond) // idle again
	}
}

// TestXDPStamps: the XDP program stamps each frame at arrival, on the
// sender's clock (CLOCK_REALTIME): a frame received 100 ms after it was
// sent carries the time it was sent, not the time RxBurst ran, and frames
// received later (after the metadata was cleared) are stamped afresh.
func TestXDPStamps(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{})
	p := mustOpen(t, v, Config{Index: 42, RingSize: 64})
	if p.TimestampSource() != "xdp" {
		t.Skipf("timestamps %q: this kernel refused the stamping XDP program", p.TimestampSource())
	}
	peer := mustPeer(t, v)
	pkts := newPackets(32)
	// More rounds than the ring has frames, so chunks are reused.
	for round := uint64(0); round < 200; round++ {
		t0 := uint64(time.Now().UnixNano())
		if err := peer.Send(nettest.Frame(v.HostMAC, v.PeerMAC, 8, round, 100)); err != nil {
			t.Fatal(err)
		}
		t1 := uint64(time.Now().UnixNano())
		if round%50 == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		var ts uint64
		deadline := time.Now().Add(5 * time.Second)
		for ts == 0 && time.Now().Before(deadline) {
			n := p.RxBurst(pkts)
			for _, pk := range pkts[:n] {
				if tag, s, ok := nettest.ParseFrame(pk.Data); ok && tag == 8 && s == round {
					if pk.TS == 0 {
						t.Fatalf("frame %d not stamped", round)
					}
					ts = pk.TS
				}
			}
			p.Free(pkts[:n])
		}
		if ts == 0 {
			t.Fatalf("frame %d not received", round)
		}
		// Sent between t0 and t1; the XDP program runs inside the
		// sending system call on a veth, or in its NAPI poll right after.
		if ts < t0 || ts > t1+10_000_000 {
			t.Fatalf("frame %d stamped %d ns after the send began (send took %d ns)", round, int64(ts-t0), t1-t0)
		}
	}
}

// TestNoStamps: a port opened with NoStamps gets the XDP program without
// the arrival stamp: its frames arrive with TS 0 (the lane stamps the
// burst), TimestampSource says so, and a second socket on the same
// interface must ask the same.
func TestNoStamps(t *testing.T) {
	v2 := nettest.NewVeth(t, nettest.Options{Queues: 2})
	mustOpen(t, v2, Config{Index: 43, RingSize: 64, NoStamps: true})
	if q, err := Open("afxdp:"+v2.Host+"@1", Config{Index: 44, RingSize: 64}); err == nil {
		q.Close()
		t.Fatal("a socket with arrival stamps opened on an interface whose program has none")
	} else if !strings.Contains(err.Error(), "arrival stamps off") {
		t.Fatalf("mismatched stamps: %v", err)
	}
	v := nettest.NewVeth(t, nettest.Options{})
	p := mustOpen(t, v, Config{Index: 45, RingSize: 64, NoStamps: true})
	if got := p.TimestampSource(); got != "poll" {
		t.Fatalf("TimestampSource %q with NoStamps, want poll", got)
	}
	peer := mustPeer(t, v)
	pkts := newPackets(32)
	for i := uint64(0); i < 20; i++ {
		if err := peer.Send(nettest.Frame(v.HostMAC, v.PeerMAC, 9, i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for deadline := time.Now().Add(5 * time.Second); got < 20 && time.Now().Before(deadline); {
		n := p.RxBurst(pkts)
		for _, pk := range pkts[:n] {
			if tag, _, ok := nettest.ParseFrame(pk.Data); ok && tag == 9 {
				got++
				if pk.TS != 0 {
					t.Fatalf("frame stamped %d without arrival stamps", pk.TS)
				}
			}
		}
		p.Free(pkts[:n])
	}
	if got != 20 {
		t.Fatalf("received %d of 20 frames", got)
	}
}
