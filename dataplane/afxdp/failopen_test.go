package afxdp

import (
	"os/exec"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// failOpenPair is a bump in the wire's two interfaces: a and b host ends
// of two veth pairs whose far ends stand for the stations on either side.
// GRO is turned on on the far ends: a frame the bypass redirects into a
// veth (native XDP, ndo_xdp_xmit) is delivered only when the receiving
// end runs NAPI, which it does with an XDP program or with GRO on
// (TestFailOpenNeedsPeerNAPI).
func failOpenPair(t *testing.T, gro bool) (a, b *nettest.Veth) {
	a, b = nettest.NewVeth(t, nettest.Options{}), nettest.NewVeth(t, nettest.Options{})
	if gro {
		for _, v := range []*nettest.Veth{a, b} {
			if out, err := exec.Command("ip", "netns", "exec", v.NS, "ethtool", "-K", v.Peer, "gro", "on").CombinedOutput(); err != nil {
				t.Skipf("ethtool -K %s gro on: %v: %s", v.Peer, err, out)
			}
		}
	}
	return a, b
}

// crossed sends n frames tagged tag from from's far end and counts those
// of them that reach to's far end within 2 s.
func crossed(t *testing.T, from, to *nettest.Veth, tag uint32, n int) int {
	t.Helper()
	src, dst := mustPeer(t, from), mustPeer(t, to)
	for i := 0; i < n; i++ {
		// Addressed to the other station, as a bump in the wire sees it.
		if err := src.Send(nettest.Frame(to.PeerMAC, from.PeerMAC, tag, uint64(i), 64)); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	buf := make([]byte, 2048)
	for deadline := time.Now().Add(2 * time.Second); got < n && time.Now().Before(deadline); {
		k, err := dst.Recv(buf, 100*time.Millisecond)
		if err != nil || k == 0 {
			continue
		}
		if tg, _, ok := nettest.ParseFrame(buf[:k]); ok && tg == tag {
			got++
		}
	}
	return got
}

// TestFailOpen: with Bypass set, frames whose queue has a socket go to the
// socket and nowhere else; once the sockets are closed (Close, or the
// process's death, which closes them the same way) the program stays
// attached and forwards every frame to the other interface, both ways; a
// new Open replaces that program without a gap and takes the frames
// again; an Open without Bypass removes it.
func TestFailOpen(t *testing.T) {
	va, vb := failOpenPair(t, true)
	open := func() (*Port, *Port) {
		t.Helper()
		a, err := Open("afxdp:"+va.Host, Config{Index: 50, RingSize: 256, Bypass: vb.Host})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open("afxdp:"+vb.Host, Config{Index: 51, RingSize: 256, Bypass: va.Host})
		if err != nil {
			a.Close()
			t.Fatal(err)
		}
		return a, b
	}
	a, b := open()
	if got := crossed(t, va, vb, 60, 50); got != 0 {
		t.Errorf("%d of 50 frames crossed in the kernel while a socket was bound", got)
	}
	if seqs := rxOurs(t, a, 60, 50); len(seqs) != 50 {
		t.Errorf("socket a received %d of 50 frames", len(seqs))
	}
	idA, _, _ := xdpAttached(va.HostIndex)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if id, _, err := xdpAttached(va.HostIndex); err != nil || id != idA {
		t.Fatalf("after Close: program %d attached (%v), want the bypass %d", id, err, idA)
	}
	if !promiscOn(t, va.Host) || !promiscOn(t, vb.Host) {
		t.Error("the bypass left an interface not promiscuous")
	}
	if got := crossed(t, va, vb, 61, 200); got != 200 {
		t.Errorf("no process: %d of 200 frames crossed a → b", got)
	}
	if got := crossed(t, vb, va, 62, 200); got != 200 {
		t.Errorf("no process: %d of 200 frames crossed b → a", got)
	}

	// Takeover: the kernel releases a closed socket's queue
	// asynchronously, so the new bind may find it busy for a moment.
	var err error
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if a, err = Open("afxdp:"+va.Host, Config{Index: 50, RingSize: 256, Bypass: vb.Host}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if id, _, _ := xdpAttached(va.HostIndex); id == idA || id == 0 {
		t.Errorf("after the new Open: program %d attached, want a new one replacing %d", id, idA)
	}
	if got := crossed(t, va, vb, 63, 50); got != 0 {
		t.Errorf("%d of 50 frames crossed in the kernel after the takeover", got)
	}
	if seqs := rxOurs(t, a, 63, 50); len(seqs) != 50 {
		t.Errorf("after the takeover socket a received %d of 50 frames", len(seqs))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// Open without Bypass (--fail-open=false) removes the bypass; its
	// Close leaves nothing attached.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if a, err = Open("afxdp:"+va.Host, Config{Index: 50, RingSize: 256}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if id, _, err := xdpAttached(va.HostIndex); err != nil || id != 0 {
		t.Errorf("after Open and Close without Bypass: program %d attached (%v), want none", id, err)
	}
	if got := crossed(t, va, vb, 64, 20); got != 0 {
		t.Errorf("bypass removed, yet %d of 20 frames crossed", got)
	}
}

// TestFailOpenNeedsPeerNAPI pins what the veth labs must set up: a frame
// redirected in native XDP into a veth is dropped unless the veth's far
// end runs NAPI (an XDP program there, or GRO on).
func TestFailOpenNeedsPeerNAPI(t *testing.T) {
	va, vb := failOpenPair(t, false)
	a, err := Open("afxdp:"+va.Host, Config{Index: 52, RingSize: 64, Bypass: vb.Host})
	if err != nil {
		t.Fatal(err)
	}
	mode := a.XDPMode()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got := crossed(t, va, vb, 65, 50)
	if mode == "driver" && got != 0 {
		t.Errorf("%d of 50 frames crossed into a veth whose far end has no NAPI", got)
	}
	if out, err := exec.Command("ip", "netns", "exec", vb.NS, "ethtool", "-K", vb.Peer, "gro", "on").CombinedOutput(); err != nil {
		t.Skipf("ethtool: %v: %s", err, out)
	}
	if got := crossed(t, va, vb, 66, 50); got != 50 {
		t.Errorf("GRO on at the far end: %d of 50 frames crossed", got)
	}
}
