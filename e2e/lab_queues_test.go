package e2e

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/afxdp"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
	"github.com/ldafwd/ldafwd/report"
)

// relayHold is how long the lab's relay holds every frame: the one-way
// delay of every frame is at least this.
const relayHold = time.Millisecond

// TestLabQueues runs two `ldafwd run --queues 2` processes over 2-queue
// veth pairs with afxdp: ports, one socket per queue:
//
//	gen ns ─veth─ [a ldafwd#1 b] ─veth─ w1 ns ⇄ relay ⇄ w2 ns ─veth─ [a ldafwd#2 b] ─veth─ sink ns
//
// The XDP program cannot move a frame to another queue's socket
// (afxdp.TestCrossQueueRefused), so the queue a frame arrives on is the
// queue its sender transmitted on (afxdp.TestQueueIdentity). The
// generator therefore plays a NIC with RSS: it transmits each frame on
// queue dataplane.SteerQueue(frame, 2) of its AF_XDP sockets. The relay
// (AF_XDP, queue q to queue q, both ways) holds every frame relayHold and
// drops every 97th IPv4 frame a→b. Checked: every frame in a valid
// interval and every interval with traffic valid, loss exact (Σ lost =
// what the relay dropped = sent − sunk), the appliances dropped nothing,
// every valid interval's mean with its bound reaches the relay's hold,
// per-flow order kept at the sink, and both queues carried traffic.
func TestLabQueues(t *testing.T) {
	if raceEnabled {
		t.Skip("requires every interval valid; under -race the appliances lose intervals to control timeouts")
	}
	runLabQueues(t, false)
}

// TestLabQueuesMissteered is the same lab with a generator that puts
// every frame on the other queue than SteerQueue gives it — an upstream
// that does not steer like the appliances. The receiver lanes' steering
// check finds it: every a>b interval with traffic is reported invalid,
// naming the steering, none valid.
func TestLabQueuesMissteered(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestLabQueues covers the path")
	}
	runLabQueues(t, true)
}

func runLabQueues(t *testing.T, missteer bool) {
	nettest.Require(t)
	bin := ldafwdBinary(t, false)
	const nq = 2
	gen := nettest.NewVeth(t, nettest.Options{Queues: nq})
	w1 := nettest.NewVeth(t, nettest.Options{Queues: nq})
	w2 := nettest.NewVeth(t, nettest.Options{Queues: nq})
	sink := nettest.NewVeth(t, nettest.Options{Queues: nq})
	openIn := func(ns, ifname string, index uint8) *afxdp.Queues {
		var m *afxdp.Queues
		if err := nettest.InNetns(ns, func() (err error) {
			m, err = afxdp.OpenQueues("afxdp:"+ifname, nq, afxdp.Config{Index: index})
			return err
		}); err != nil {
			t.Fatalf("AF_XDP queues on %s in %s: %v", ifname, ns, err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	gq := openIn(gen.NS, gen.Peer, 100)
	r1 := openIn(w1.NS, w1.Peer, 110)
	r2 := openIn(w2.NS, w2.Peer, 120)

	// The relay: one goroutine, both directions, queue q to queue q.
	var dropped, relayed, relayedBack, txStuck atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		type held struct {
			pk *dataplane.Packet
			at time.Time
		}
		type hop struct {
			from, to *afxdp.Port
			drop     bool
			n        *atomic.Uint64
			q        []held
		}
		var hops []*hop
		for q := 0; q < nq; q++ {
			hops = append(hops, &hop{from: r1.Queue(q), to: r2.Queue(q), drop: true, n: &relayed},
				&hop{from: r2.Queue(q), to: r1.Queue(q), n: &relayedBack})
		}
		pkts := make([]*dataplane.Packet, 32)
		out := make([]*dataplane.Packet, 0, 4096)
		data := uint64(0)
		for {
			select {
			case <-stop:
				for _, h := range hops {
					for _, x := range h.q {
						h.from.Free([]*dataplane.Packet{x.pk})
					}
				}
				return
			default:
			}
			busy := false
			for _, h := range hops {
				n := h.from.RxBurst(pkts)
				now := time.Now()
				for _, pk := range pkts[:n] {
					if h.drop && len(pk.Data) >= 14 && binary.BigEndian.Uint16(pk.Data[12:14]) == 0x0800 {
						data++
						if data%97 == 0 {
							dropped.Add(1)
							h.from.Free([]*dataplane.Packet{pk})
							continue
						}
					}
					h.q = append(h.q, held{pk, now})
				}
				k := 0
				for k < len(h.q) && now.Sub(h.q[k].at) >= relayHold {
					k++
				}
				if k == 0 {
					continue
				}
				busy = true
				out = out[:0]
				for _, x := range h.q[:k] {
					out = append(out, x.pk)
				}
				sent := 0
				for deadline := now.Add(time.Second); sent < k; {
					m := h.to.TxBurst(out[sent:])
					sent += m
					if m == 0 {
						if time.Now().After(deadline) {
							txStuck.Add(uint64(k - sent))
							h.from.Free(out[sent:])
							break
						}
						time.Sleep(20 * time.Microsecond)
					}
				}
				h.n.Add(uint64(sent))
				h.q = append(h.q[:0], h.q[k:]...)
			}
			if !busy {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	stopRelay := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopRelay)

	// The sink: our frames counted, per-flow order checked (flow = UDP
	// source port).
	sk := openRaw(t, sink.NS, sink.Peer)
	var sunk, strays, reordered atomic.Uint64
	sinkStop, sinkDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sinkDone)
		last := map[uint16]uint64{}
		buf := make([]byte, 2048)
		for {
			select {
			case <-sinkStop:
				return
			default:
			}
			n := sk.recv(buf, 20*time.Millisecond)
			if n == 0 {
				continue
			}
			tag, seq, ok := nettest.ParseFrame(buf[:n])
			if !ok || tag != labTag {
				strays.Add(1)
				continue
			}
			sunk.Add(1)
			sport := binary.BigEndian.Uint16(buf[34:36])
			if l, seen := last[sport]; seen && seq <= l {
				reordered.Add(1)
			}
			last[sport] = seq
		}
	}()
	stopSink := sync.OnceFunc(func() { close(sinkStop); <-sinkDone })
	t.Cleanup(stopSink)

	keyFile := filepath.Join(t.TempDir(), "lab.key")
	key, err := control.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := control.WriteKeyFile(keyFile, key, false); err != nil {
		t.Fatal(err)
	}
	interval := 200 * time.Millisecond
	common := []string{"--queues", fmt.Sprint(nq), "--interval", interval.String(), "--key-file", keyFile, "--format", "json",
		"--max-delay", "2s", "--idle-sleep", "50us", "--min-delay", "-50ms", "--stats-interval", "1s", "--log-level", "info",
		"--max-stamp-err", "1ms"} // as TestLabTwoProcesses: copy-mode transmit stamps on a busy host
	p1 := startLdafwd(t, "ldafwd#1", bin, append([]string{"--port-a", "afxdp:" + gen.Host, "--port-b", "afxdp:" + w1.Host, "--segment-port", "b"}, common...)...)
	p2 := startLdafwd(t, "ldafwd#2", bin, append([]string{"--port-a", "afxdp:" + w2.Host, "--port-b", "afxdp:" + sink.Host, "--segment-port", "a"}, common...)...)
	(&lab{t: t}).waitAB(p2, 2, p1)

	// The generator: 64 UDP flows at about 10 kpps, each frame on the
	// queue SteerQueue gives it.
	dur := 3 * time.Second
	if testing.Short() {
		dur = 1500 * time.Millisecond
	}
	var perQ [nq]uint64
	seq := uint64(0)
	one := make([]*dataplane.Packet, 1)
	start := time.Now()
	for time.Since(start) < dur {
		due := uint64(time.Since(start).Seconds() * 10_000)
		for ; seq < due; seq++ {
			f := nettest.UDPFrame(gen.HostMAC, gen.PeerMAC, labTag, seq, 128, uint16(1000+seq%64))
			q := dataplane.SteerQueue(f, nq)
			if missteer {
				q = (q + 1) % nq
			}
			p := gq.Queue(q)
			for tries := 0; p.Alloc(one) == 0; tries++ {
				if tries > 10000 {
					t.Fatal("generator: no free tx frame for 1 s")
				}
				time.Sleep(100 * time.Microsecond)
			}
			one[0].Data = append(one[0].Data[:0], f...)
			for tries := 0; p.TxBurst(one) == 0; tries++ {
				if tries > 10000 {
					t.Fatal("generator: tx ring full for 1 s")
				}
				time.Sleep(100 * time.Microsecond)
			}
			perQ[q]++
		}
		time.Sleep(200 * time.Microsecond)
	}
	sent := seq
	time.Sleep(2 * interval)
	p1.stop(t, 10*time.Second)
	p2.stop(t, 10*time.Second)
	stopRelay()
	stopSink()

	ivs, ports2 := p2.records(t)
	_, ports1 := p1.records(t)
	final := func(ports []report.Port, port string) report.Port { return finalPort(t, ports, port) }
	in1, out1 := final(ports1, "a"), final(ports1, "b")
	in2, out2 := final(ports2, "a"), final(ports2, "b")
	var sumSent, sumRecv, sumLost uint64
	valid, withTraffic := 0, 0
	var means []string
	for _, r := range ivs {
		if r.Direction != "a>b" || r.MEC != "all" || r.Synopsis != "lda" {
			continue
		}
		if r.Sent+r.Received > 0 {
			withTraffic++
		}
		if !r.Valid {
			if r.Sent+r.Received > 0 && !missteer {
				t.Errorf("interval %d with traffic invalid: %s", r.Interval, r.Reason)
			}
			continue
		}
		valid++
		sumSent += r.Sent
		sumRecv += r.Received
		sumLost += r.Lost
		if r.Received > 0 {
			means = append(means, fmt.Sprintf("%.0f±%.0f", r.MeanNs/1e3, r.MeanCINs/1e3))
		}
		if r.Received > 0 && r.MeanNs+r.MeanCINs < float64(relayHold.Nanoseconds()) {
			t.Errorf("interval %d: mean %.0f ns ± %.0f, below the %v every frame was held", r.Interval, r.MeanNs, r.MeanCINs, relayHold)
		}
		if r.Received > 0 && r.MeanNs > float64((500*time.Millisecond).Nanoseconds()) {
			t.Errorf("interval %d: mean %.0f ns", r.Interval, r.MeanNs)
		}
	}
	relayRxDrops := r1.Stats().RxDropped + r2.Stats().RxDropped
	t.Logf("generator sent %d (queue 0: %d, queue 1: %d); #1 a rx %d (dropped %d), b tx %d; relay dropped %d, passed %d a→b and %d b→a (stuck %d, rx ring drops %d); #2 a rx %d (dropped %d), b tx %d; sink %d (+%d other, %d out of flow order)",
		sent, perQ[0], perQ[1], in1.RxPackets, in1.RxDropped, out1.TxPackets, dropped.Load(), relayed.Load(), relayedBack.Load(), txStuck.Load(), relayRxDrops,
		in2.RxPackets, in2.RxDropped, out2.TxPackets, sunk.Load(), strays.Load(), reordered.Load())
	t.Logf("#2: %d a>b intervals with traffic, %d valid: Σ sent %d, Σ received %d, Σ lost %d; means (µs) %s", withTraffic, valid, sumSent, sumRecv, sumLost, strings.Join(means, " "))
	if missteer {
		named := 0
		for _, r := range ivs {
			if r.Direction != "a>b" || r.MEC != "all" || r.Synopsis != "lda" || r.Sent+r.Received == 0 {
				continue
			}
			if r.Valid {
				t.Errorf("interval %d with traffic from a missteering upstream reported valid", r.Interval)
			}
			if strings.Contains(r.Reason, "flow hash does not steer") {
				named++
			} else {
				// Another reason can come first (a lost fragment).
				t.Logf("interval %d invalid: %s", r.Interval, r.Reason)
			}
		}
		if withTraffic < 3 || named < withTraffic/2 {
			t.Errorf("%d intervals with traffic, %d of them invalid for the steering", withTraffic, named)
		}
		if in1.RxPackets != sent || sunk.Load() != sent-dropped.Load() {
			t.Errorf("forwarding: #1 received %d of %d, the sink got %d (relay dropped %d)", in1.RxPackets, sent, sunk.Load(), dropped.Load())
		}
		return
	}
	if perQ[0] == 0 || perQ[1] == 0 {
		t.Errorf("one queue carried nothing: %v", perQ)
	}
	if in1.RxPackets != sent || in1.RxDropped != 0 || in2.RxDropped != 0 || out1.TxDropped != 0 || out2.TxDropped != 0 {
		t.Errorf("the appliances lost frames: #1 received %d of %d (rx dropped %d, tx dropped %d), #2 rx dropped %d, tx dropped %d",
			in1.RxPackets, sent, in1.RxDropped, out1.TxDropped, in2.RxDropped, out2.TxDropped)
	}
	if txStuck.Load() != 0 {
		t.Errorf("the relay could not pass %d frames", txStuck.Load())
	}
	if sumSent != in1.RxPackets {
		t.Errorf("Σ sent over valid intervals %d ≠ %d frames ldafwd#1 received: not every frame is in a valid interval", sumSent, in1.RxPackets)
	}
	if sumRecv != sunk.Load() || out2.TxPackets != sunk.Load() {
		t.Errorf("Σ received %d, ldafwd#2 transmitted %d, the sink got %d", sumRecv, out2.TxPackets, sunk.Load())
	}
	if sumLost != sent-sunk.Load() || sumLost != dropped.Load() {
		t.Errorf("Σ lost %d; sent − received at the sink = %d; the relay dropped %d", sumLost, sent-sunk.Load(), dropped.Load())
	}
	if reordered.Load() != 0 {
		t.Errorf("%d frames reached the sink out of their flow's order", reordered.Load())
	}
	if dropped.Load() == 0 || valid < 3 {
		t.Errorf("too little measured: %d dropped, %d valid intervals", dropped.Load(), valid)
	}
	if t.Failed() {
		t.Logf("#1 stderr:\n%s\n#2 stderr:\n%s", p1.stderr(), p2.stderr())
	}
}
