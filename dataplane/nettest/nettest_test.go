package nettest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestVethRoundTrip(t *testing.T) {
	v := NewVeth(t, Options{})
	peer, err := v.PeerSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	host, err := v.HostSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for i := uint64(0); i < 10; i++ {
		if err := peer.Send(Frame(v.HostMAC, v.PeerMAC, 7, i, 64+int(i))); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 2048)
	got := 0
	for got < 10 {
		n, err := host.Recv(buf, time.Second)
		if err != nil || n == 0 {
			t.Fatalf("after %d frames: n=%d err=%v", got, n, err)
		}
		tag, seq, ok := ParseFrame(buf[:n])
		if !ok {
			continue // not ours
		}
		if tag != 7 || seq != uint64(got) || n != 64+got {
			t.Fatalf("frame %d: tag %d seq %d len %d", got, tag, seq, n)
		}
		got++
	}
}

func TestSweepStale(t *testing.T) {
	Require(t)
	const ns = "ldafwd-test-999999999-1"
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	SweepStale()
	if _, err := os.Stat("/var/run/netns/" + ns); err == nil {
		t.Fatal("namespace of a dead pid survived the sweep")
	}
}
