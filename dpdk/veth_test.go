//go:build dpdk

package dpdk

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// TestVethVdevs runs DPDK's kernel-interface PMDs on a veth pair whose other
// end sits in a namespace: frames a raw socket sends there must come out of
// RxBurst, and frames TxBurst sends must reach the raw socket.
func TestVethVdevs(t *testing.T) {
	needEAL(t)
	for i, drv := range []string{"net_af_packet", "net_af_xdp"} {
		t.Run(drv, func(t *testing.T) {
			v := nettest.NewVeth(t, nettest.Options{})
			spec := "dpdk:" + drv + "9" + string(rune('0'+i)) + ",iface=" + v.Host
			p, err := Open(spec, Config{Index: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			// The capability check: these PMDs do not offer the rx
			// timestamp offload, so the port falls back to software
			// stamps (the lane's poll stamps under ldafwd run).
			if src := p.TimestampSource(); src != "software" {
				t.Errorf("%s: timestamp source %q, want software (the PMD has no RTE_ETH_RX_OFFLOAD_TIMESTAMP)", drv, src)
			}
			peer, err := v.PeerSocket()
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			const n = 200
			pkts := newPackets(32)
			var next uint64
			deadline := time.Now().Add(5 * time.Second)
			for i := uint64(0); i < n; i++ {
				if err := peer.Send(nettest.Frame(v.HostMAC, v.PeerMAC, 5, i, 60+int(i))); err != nil {
					t.Fatal(err)
				}
			}
			for next < n && time.Now().Before(deadline) {
				k := p.RxBurst(pkts)
				for _, pk := range pkts[:k] {
					tag, seq, ok := nettest.ParseFrame(pk.Data)
					if !ok || tag != 5 {
						continue
					}
					if seq != next || len(pk.Data) != 60+int(seq) {
						t.Fatalf("got seq %d (%d bytes), want %d", seq, len(pk.Data), next)
					}
					next++
				}
				p.Free(pkts[:k])
				if k == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			if next != n {
				t.Fatalf("received %d of %d", next, n)
			}
			k := p.Alloc(pkts[:10])
			if k != 10 {
				t.Fatalf("alloc %d", k)
			}
			for j, pk := range pkts[:k] {
				f := nettest.Frame(v.PeerMAC, v.HostMAC, 6, uint64(j), 80)
				pk.Data = pk.Data[:len(f)]
				copy(pk.Data, f)
			}
			sent := 0
			for sent < k && time.Now().Before(deadline) {
				sent += p.TxBurst(pkts[sent:k])
			}
			buf := make([]byte, 2048)
			got := 0
			for got < k {
				m, err := peer.Recv(buf, 5*time.Second)
				if err != nil || m == 0 {
					t.Fatalf("peer got %d of %d (err %v)", got, k, err)
				}
				if tag, seq, ok := nettest.ParseFrame(buf[:m]); ok && tag == 6 {
					if seq != uint64(got) {
						t.Fatalf("peer got seq %d, want %d", seq, got)
					}
					got++
				}
			}
			s := p.Stats()
			if s.RxPackets < n || s.TxPackets != uint64(k) {
				t.Errorf("stats %+v, want ≥ %d rx and %d tx", s, n, k)
			}
		})
	}
}

// TestAfPacketFanoutClash: DPDK 22.11's net_af_packet joins the
// PACKET_FANOUT group numbered by the process's pid XOR the interface's
// index, and a group belongs to one interface of the network namespace.
// With another socket holding that number on another interface, Open
// fails with ErrNoDevice and a hint that names the clash (the bare
// "Operation not permitted" rte_dev_probe returns says nothing of it).
func TestAfPacketFanoutClash(t *testing.T) {
	needEAL(t)
	v := nettest.NewVeth(t, nettest.Options{})
	ifc, err := net.InterfaceByName(v.Host)
	if err != nil {
		t.Fatal(err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		t.Skipf("no AF_PACKET socket: %v", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: lo.Index}); err != nil {
		t.Fatal(err)
	}
	group := (os.Getpid() ^ ifc.Index) & 0xffff
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT, group|unix.PACKET_FANOUT_HASH<<16); err != nil {
		t.Fatal(err)
	}
	p, err := Open("dpdk:net_af_packet97,iface="+v.Host, Config{Index: 6})
	if err == nil {
		p.Close()
		t.Fatal("Open succeeded with its fanout group held on another interface: the PMD no longer numbers it pid XOR ifindex")
	}
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "PACKET_FANOUT") {
		t.Fatalf("Open: %v, want ErrNoDevice naming PACKET_FANOUT", err)
	}
	t.Log(err)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// TestAfPacketSocketDrops: frames net_af_packet's packet socket drops
// while nobody polls (its ring full) count in the port's RxDropped, which
// DPDK 22.11's PMD leaves at 0: after the burst is drained, every frame
// the peer sent was either received or counted dropped, exactly (the
// veth's other end sends nothing of its own).
func TestAfPacketSocketDrops(t *testing.T) {
	needEAL(t)
	v := nettest.NewVeth(t, nettest.Options{})
	// framecnt: a ring of 512 frames, far fewer than are sent.
	// A small pool, freed when the test ends: closed ports' pools stay
	// until Cleanup, and the package's tests use most of the EAL's memory.
	p, err := Open("dpdk:net_af_packet96,iface="+v.Host+",framecnt=512", Config{Index: 7, Mbufs: 1024, RxDesc: 128, TxDesc: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFreeingPool(t, p)
	if len(p.pktSocks) == 0 {
		t.Fatal("the port found no packet socket of its own on the interface")
	}
	peer, err := v.PeerSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	const n = 4000
	for i := uint64(0); i < n; i++ {
		if err := peer.Send(nettest.Frame(v.HostMAC, v.PeerMAC, 5, i, 60)); err != nil {
			t.Fatal(err)
		}
	}
	pkts := newPackets(32)
	got, idle := 0, 0
	for idle < 50 {
		k := p.RxBurst(pkts)
		for _, pk := range pkts[:k] {
			if tag, _, ok := nettest.ParseFrame(pk.Data); ok && tag == 5 {
				got++
			}
		}
		p.Free(pkts[:k])
		if k == 0 {
			idle++
			time.Sleep(2 * time.Millisecond)
		}
	}
	s := p.Stats()
	if s.RxDropped == 0 || uint64(got)+s.RxDropped != n {
		t.Fatalf("received %d of %d, %d counted dropped: want every frame one or the other", got, n, s.RxDropped)
	}
	if s.RxPackets != uint64(got) {
		t.Errorf("RxPackets %d, received %d", s.RxPackets, got)
	}
	t.Logf("received %d, dropped %d of %d", got, s.RxDropped, n)
}

// closeFreeingPool closes p and frees its mbuf pool at once (no frame of
// it is anywhere else: the test freed every one it received).
func closeFreeingPool(t *testing.T, p *Port) {
	t.Helper()
	pool := p.pool
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	freeClosedPool(pool)
}
