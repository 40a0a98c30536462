package afxdp

import (
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// TestStaleProgramDetached fakes what a crashed run of an older ldafwd
// would leave (our program attached through netlink, no process holding
// it) and checks Open replaces it and Close leaves nothing attached.
func TestStaleProgramDetached(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{})
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: ProgName, Type: ebpf.XDP, License: "GPL", Instructions: redirectInsns(m.FD(), -1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := xdpSetFD(v.HostIndex, prog.FD(), unix.XDP_FLAGS_SKB_MODE); err != nil {
		t.Fatal(err)
	}
	prog.Close()
	m.Close()
	if id, _, err := xdpAttached(v.HostIndex); err != nil || id == 0 {
		t.Fatalf("stale program not attached: id %d, %v", id, err)
	}
	p, err := Open("afxdp:"+v.Host, Config{Index: 20, RingSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if id, _, err := xdpAttached(v.HostIndex); err != nil || id != 0 {
		t.Fatalf("after Close program id %d attached (%v), want none", id, err)
	}
}

// TestQueuesShareProgram opens two queues of one interface: they share the
// XDP program, every frame reaches one of them, and the program goes with
// the last Close.
func TestQueuesShareProgram(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{Queues: 2})
	q0, err := Open("afxdp:"+v.Host+"@0", Config{Index: 21, RingSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer q0.Close()
	q1, err := Open("afxdp:"+v.Host+"@1", Config{Index: 22, RingSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	if q0.prog != q1.prog || q0.prog.refs != 2 {
		t.Fatal("queues of one interface do not share the XDP program")
	}
	peer := mustPeer(t, v)
	const n = 200
	for i := uint64(0); i < n; i++ {
		if err := peer.Send(nettest.UDPFrame(v.HostMAC, v.PeerMAC, 30, i, 64, uint16(1000+i))); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(map[uint64]bool)
	pkts := newPackets(32)
	deadline := time.Now().Add(5 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		idle := true
		for _, q := range []*Port{q0, q1} {
			k := q.RxBurst(pkts)
			for _, pk := range pkts[:k] {
				if tag, s, ok := nettest.ParseFrame(pk.Data); ok && tag == 30 {
					if seen[s] {
						t.Fatalf("seq %d twice", s)
					}
					seen[s] = true
				}
			}
			q.Free(pkts[:k])
			idle = idle && k == 0
		}
		if idle {
			time.Sleep(time.Millisecond)
		}
	}
	if len(seen) != n {
		t.Fatalf("received %d of %d over two queues", len(seen), n)
	}
	// 200 UDP flows hashed over 2 queues: all on one has probability 2^-199.
	r0, r1 := q0.Stats().RxPackets, q1.Stats().RxPackets
	if r0 == 0 || r1 == 0 {
		t.Errorf("queue 0: %d frames, queue 1: %d frames; want both used", r0, r1)
	}
	if err := q1.Close(); err != nil {
		t.Fatal(err)
	}
	if id, _, _ := xdpAttached(v.HostIndex); id == 0 {
		t.Fatal("program detached while queue 0 is still open")
	}
	if err := q0.Close(); err != nil {
		t.Fatal(err)
	}
	if id, _, _ := xdpAttached(v.HostIndex); id != 0 {
		t.Fatalf("program %d still attached after the last Close", id)
	}
}
