package afxdp

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// promiscOn reads whether the interface is promiscuous as the kernel
// applies it (dev->flags in sysfs: set while any holder counts, an
// operator's `ip link set promisc on` or a packet socket's membership).
func promiscOn(t *testing.T, ifname string) bool {
	t.Helper()
	b, err := os.ReadFile("/sys/class/net/" + ifname + "/flags")
	if err != nil {
		t.Fatal(err)
	}
	f, err := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 32)
	if err != nil {
		t.Fatalf("flags %q: %v", b, err)
	}
	return f&unix.IFF_PROMISC != 0
}

// TestPromisc: an interface is promiscuous while any of our sockets is
// open on it, and goes back to what it was after the last Close, also
// when an Open failed half way and when the operator had made it
// promiscuous before.
func TestPromisc(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{Queues: 2})
	if promiscOn(t, v.Host) {
		t.Fatal("fresh veth is promiscuous")
	}
	q0, err := Open("afxdp:"+v.Host+"@0", Config{Index: 30, RingSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer q0.Close()
	if !promiscOn(t, v.Host) {
		t.Fatal("not promiscuous with a socket open")
	}
	// A second socket on the same queue fails to bind: its error path
	// must not give up the first one's mode.
	if p, err := Open("afxdp:"+v.Host+"@0", Config{Index: 31, RingSize: 64}); err == nil {
		p.Close()
		t.Fatal("two sockets bound to queue 0")
	}
	if !promiscOn(t, v.Host) {
		t.Fatal("a failed Open turned promiscuous mode off under an open socket")
	}
	q1, err := Open("afxdp:"+v.Host+"@1", Config{Index: 32, RingSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	// A unicast frame to a MAC no interface has reaches the sockets.
	// veth filters no addresses, so this half holds with or without
	// promiscuous mode: it pins that nothing on our path (the XDP
	// program, the port) filters by destination.
	peer := mustPeer(t, v)
	foreign := net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30}
	for i := uint64(0); i < 20; i++ {
		if err := peer.Send(nettest.Frame(foreign, v.PeerMAC, 40, i, 64)); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	pkts := newPackets(32)
	for deadline := time.Now().Add(5 * time.Second); got < 20 && time.Now().Before(deadline); {
		for _, q := range []*Port{q0, q1} { // the peer transmits on either queue
			n := q.RxBurst(pkts)
			for _, pk := range pkts[:n] {
				if tag, _, ok := nettest.ParseFrame(pk.Data); ok && tag == 40 && net.HardwareAddr(pk.Data[:6]).String() == foreign.String() {
					got++
				}
			}
			q.Free(pkts[:n])
		}
		time.Sleep(time.Millisecond)
	}
	if got != 20 {
		t.Errorf("%d of 20 frames to %s received", got, foreign)
	}
	if err := q0.Close(); err != nil {
		t.Fatal(err)
	}
	if !promiscOn(t, v.Host) {
		t.Fatal("not promiscuous with queue 1 still open")
	}

	if err := q1.Close(); err != nil {
		t.Fatal(err)
	}
	if promiscOn(t, v.Host) {
		t.Fatal("still promiscuous after the last Close")
	}

	// The operator's own promiscuous mode survives us. A fresh pair: the
	// kernel releases a closed socket's queue asynchronously, so binding
	// queue 0 again at once may find it busy for a moment.
	w := nettest.NewVeth(t, nettest.Options{})
	if out, err := exec.Command("ip", "link", "set", w.Host, "promisc", "on").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	p, err := Open("afxdp:"+w.Host, Config{Index: 30, RingSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !promiscOn(t, w.Host) {
		t.Fatal("Close turned off the promiscuous mode the operator had set")
	}
}
