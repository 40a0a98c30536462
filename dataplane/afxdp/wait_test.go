package afxdp

import (
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
	defer func() { w.Quit(); _ = w.Wait() }()
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
