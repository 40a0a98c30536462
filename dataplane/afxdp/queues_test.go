package afxdp

import (
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// drainQueues polls every queue of m for tag's frames until want arrived
// or 3 s passed, returning the sequence numbers each queue received.
func drainQueues(t *testing.T, m *Queues, tag uint32, want int) [][]uint64 {
	t.Helper()
	got := make([][]uint64, m.Len())
	pkts := newPackets(32)
	total := 0
	for deadline := time.Now().Add(3 * time.Second); total < want && time.Now().Before(deadline); {
		idle := true
		for q := 0; q < m.Len(); q++ {
			k := m.Queue(q).RxBurst(pkts)
			for _, pk := range pkts[:k] {
				if tg, s, ok := nettest.ParseFrame(pk.Data); ok && tg == tag {
					got[q] = append(got[q], s)
					total++
				}
			}
			m.Queue(q).Free(pkts[:k])
			idle = idle && k == 0
		}
		if idle {
			time.Sleep(time.Millisecond)
		}
	}
	return got
}

// TestQueueIdentity is what multi-queue AF_XDP over veth relies on: a
// frame an AF_XDP socket bound to queue q of one end transmits arrives on
// rx queue q of the other end, in order. The sender in the namespace
// steers 400 UDP frames of 64 flows with dataplane.SteerQueue, as a NIC's
// RSS with the same key would; every frame must come out of the
// receiving socket of its steered queue, both queues used, each queue's
// frames in send order.
func TestQueueIdentity(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{Queues: 2})
	rx, err := OpenQueues("afxdp:"+v.Host, 2, Config{Index: 40, RingSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	var tx *Queues
	if err := nettest.InNetns(v.NS, func() (err error) {
		tx, err = OpenQueues("afxdp:"+v.Peer, 2, Config{Index: 42, RingSize: 512})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	const n = 400
	steered := make([]int, n)
	one := newPackets(1)
	for i := uint64(0); i < n; i++ {
		f := nettest.UDPFrame(v.HostMAC, v.PeerMAC, 41, i, 80, uint16(2000+i%64))
		q := dataplane.SteerQueue(f, 2)
		steered[i] = q
		p := tx.Queue(q)
		for p.Alloc(one) == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		one[0].Data = append(one[0].Data[:0], f...)
		for p.TxBurst(one) == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	got := drainQueues(t, rx, 41, n)
	for q, seqs := range got {
		for i, s := range seqs {
			if steered[s] != q {
				t.Fatalf("frame %d sent on queue %d arrived on queue %d", s, steered[s], q)
			}
			if i > 0 && s <= seqs[i-1] {
				t.Fatalf("queue %d: frame %d after %d", q, s, seqs[i-1])
			}
		}
	}
	if len(got[0])+len(got[1]) != n || len(got[0]) == 0 || len(got[1]) == 0 {
		t.Fatalf("received %d + %d of %d frames", len(got[0]), len(got[1]), n)
	}
	if s := rx.Stats(); s.RxPackets != n {
		t.Errorf("Stats over both queues: %d rx packets, want %d", s.RxPackets, n)
	}
}

// TestCrossQueueRefused pins the kernel behaviour that rules out steering
// in the XDP program: a frame redirected to a socket bound to another
// queue is dropped (xsk_rcv_check), not delivered. Queue 1's socket is
// also put at XSKMAP key 0; of frames arriving on both queues it receives
// only those of queue 1.
func TestCrossQueueRefused(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{Queues: 2})
	q1, err := Open("afxdp:"+v.Host+"@1", Config{Index: 44, RingSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer q1.Close()
	if err := q1.prog.xsks.Update(uint32(0), uint32(q1.fd), ebpf.UpdateAny); err != nil {
		t.Fatal(err)
	}
	var tx *Queues
	if err := nettest.InNetns(v.NS, func() (err error) {
		tx, err = OpenQueues("afxdp:"+v.Peer, 2, Config{Index: 45, RingSize: 256})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	one := newPackets(1)
	const per = 50
	for i := uint64(0); i < 2*per; i++ {
		p := tx.Queue(int(i % 2))
		for p.Alloc(one) == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		one[0].Data = append(one[0].Data[:0], nettest.UDPFrame(v.HostMAC, v.PeerMAC, 46, i, 80, 7)...)
		for p.TxBurst(one) == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	m := &Queues{qs: []*Port{q1}}
	got := drainQueues(t, m, 46, 2*per)[0]
	for _, s := range got {
		if s%2 != 1 {
			t.Fatalf("frame %d sent on queue 0 reached the socket of queue 1: the kernel now delivers across queues (XDP steering would work)", s)
		}
	}
	if len(got) != per {
		t.Fatalf("queue 1's socket received %d frames, want the %d sent on queue 1", len(got), per)
	}
}

func TestOpenQueuesErrors(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{Queues: 2})
	for _, c := range []struct {
		spec string
		n    int
		want string
	}{
		{"afxdp:" + v.Host + "@1", 2, "give the interface only"},
		{"afxdp:" + v.Host, 3, "has 2 rx queues"},
	} {
		if m, err := OpenQueues(c.spec, c.n, Config{Index: 50}); err == nil || !strings.Contains(err.Error(), c.want) {
			if m != nil {
				m.Close()
			}
			t.Errorf("OpenQueues(%q, %d): %v, want an error with %q", c.spec, c.n, err, c.want)
		}
	}
}
