package afxdp

import (
	"bytes"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
	"github.com/ldafwd/ldafwd/dataplane/porttest"
)

func TestCheckPort(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{})
	p, err := Open("afxdp:"+v.Host, Config{Index: 40, RingSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	porttest.CheckPort(t, p)
}

// TestCheckLink runs the link conformance check from an AF_XDP port on one
// end of a veth pair to an AF_XDP port on the other end, inside the
// namespace.
func TestCheckLink(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{})
	tx := mustOpen(t, v, Config{Index: 41, RingSize: 512})
	var rx *Port
	if err := nettest.InNetns(v.NS, func() (err error) {
		rx, err = Open("afxdp:"+v.Peer, Config{Index: 42, RingSize: 512})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	frames := 5000
	if testing.Short() {
		frames = 1000
	}
	// veth has no flow control: bursts of 32 with the receiver polled
	// between them stay far below the 512-frame rings.
	porttest.CheckLink(t, tx, rx, porttest.LinkOptions{Frames: frames})
}

// TestPooledHandoff transmits frames of a dataplane PacketPool: they are
// copied into tx frames, given back to their pool and reach the peer.
func TestPooledHandoff(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{})
	p := mustOpen(t, v, Config{Index: 43, RingSize: 64})
	peer := mustPeer(t, v)
	pool, err := dataplane.NewPacketPool(32, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	out := make([]*dataplane.Packet, 8)
	if n := pool.Alloc(out); n != 8 {
		t.Fatalf("pool alloc %d", n)
	}
	frames := make([][]byte, 8)
	for i, q := range out {
		frames[i] = nettest.Frame(v.PeerMAC, v.HostMAC, 50, uint64(i), 100)
		q.Data = append(q.Data[:0], frames[i]...)
	}
	before := pool.Available()
	if m := p.TxBurst(out); m != 8 {
		t.Fatalf("tx took %d of 8", m)
	}
	if got := pool.Available(); got != before+8 {
		t.Fatalf("pool has %d free, want %d", got, before+8)
	}
	buf := make([]byte, 2048)
	for i := 0; i < 8; {
		m, err := peer.Recv(buf, 5*time.Second)
		if err != nil || m == 0 {
			t.Fatalf("peer got %d of 8 (%v)", i, err)
		}
		if tag, _, ok := nettest.ParseFrame(buf[:m]); ok && tag == 50 {
			if !bytes.Equal(buf[:m], frames[i]) {
				t.Fatalf("frame %d differs", i)
			}
			i++
		}
	}
	// A packet of no known kind is refused, not taken.
	alien := &dataplane.Packet{Data: make([]byte, 64), Handle: 1 << 40, Port: 43}
	if m := p.TxBurst([]*dataplane.Packet{alien}); m != 0 {
		t.Fatalf("alien packet taken")
	}
}

// mustOpen opens an AF_XDP port on the host end of v, closed at cleanup.
func mustOpen(t *testing.T, v *nettest.Veth, cfg Config) *Port {
	t.Helper()
	p, err := Open("afxdp:"+v.Host, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// mustPeer opens a raw socket on the peer end of v, closed at cleanup.
func mustPeer(t *testing.T, v *nettest.Veth) *nettest.RawSocket {
	t.Helper()
	s, err := v.PeerSocket()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
