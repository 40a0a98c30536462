//go:build dpdk

package dpdk

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ldafwd/ldafwd/dataplane"
)

// EAL can be initialised once per process, so TestMain does it for every
// test of the package; tests that need it skip when it failed.
var ealErr error

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		ealErr = errors.New("not root")
	} else {
		ealErr = InitEAL(EALConfig{Args: []string{"--log-level", "lib.eal:error"}})
	}
	code := m.Run()
	if ealErr == nil {
		if err := Cleanup(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func needEAL(t testing.TB) {
	t.Helper()
	if ealErr != nil {
		t.Skipf("DPDK EAL not initialised (needs root and DPDK): %v", ealErr)
	}
}

func newPackets(n int) []*dataplane.Packet {
	pkts := make([]*dataplane.Packet, n)
	for i := range pkts {
		pkts[i] = new(dataplane.Packet)
	}
	return pkts
}

func TestNullRxTx(t *testing.T) {
	needEAL(t)
	a, err := Open("dpdk:net_null0,copy=1", Config{Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open("dpdk:net_null1", Config{Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := a.TimestampSource(); got != "software" {
		t.Errorf("net_null timestamp source %q, want software", got)
	}
	pkts := newPackets(32)
	var rx, tx uint64
	for i := 0; i < 100; i++ {
		n := a.RxBurst(pkts)
		if n == 0 {
			t.Fatalf("burst %d: net_null gave no frames", i)
		}
		for _, p := range pkts[:n] {
			if len(p.Data) != 64 || p.Port != 0 || p.Handle == 0 || p.TS == 0 {
				t.Fatalf("packet %+v: want 64 bytes from port 0 with handle and timestamp", p)
			}
		}
		rx += uint64(n)
		m := b.TxBurst(pkts[:n])
		tx += uint64(m)
		b.Free(pkts[m:n])
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.RxPackets != rx { // net_null counts packets, not bytes
		t.Errorf("port a stats %+v, counted rx %d", sa, rx)
	}
	if sb.TxPackets != tx || tx == 0 {
		t.Errorf("port b stats %+v, counted tx %d", sb, tx)
	}
	up, _, err := a.Link()
	if err != nil || !up {
		t.Errorf("link up=%v err=%v, want up", up, err)
	}
	xs, err := a.XStats()
	if err != nil {
		t.Fatal(err)
	}
	if xs["rx_good_packets"] != rx {
		t.Errorf("xstats rx_good_packets %d, want %d", xs["rx_good_packets"], rx)
	}
}

// TestRingLoopback sends frames with known bytes through net_ring (whose
// single ring is both its tx and rx) and checks they come back unchanged,
// including one whose start moved inside the mbuf.
func TestRingLoopback(t *testing.T) {
	needEAL(t)
	p, err := Open("dpdk:net_ring0", Config{Index: 3, Burst: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := newPackets(16)
	if n := p.Alloc(out); n != 16 {
		t.Fatalf("alloc %d of 16", n)
	}
	for i, pk := range out {
		if len(pk.Data) < 2048 {
			t.Fatalf("alloc data room %d", len(pk.Data))
		}
		if i == 5 {
			pk.Data = pk.Data[10:110] // moved start: the mbuf data offset must follow
		} else {
			pk.Data = pk.Data[:60+i]
		}
		for j := range pk.Data {
			pk.Data[j] = byte(i*7 + j)
		}
	}
	if n := p.TxBurst(out); n != 16 {
		t.Fatalf("tx %d of 16", n)
	}
	in := newPackets(16)
	n := p.RxBurst(in)
	if n != 16 {
		t.Fatalf("rx %d of 16", n)
	}
	for i, pk := range in[:n] {
		want := 60 + i
		if i == 5 {
			want = 100
		}
		if len(pk.Data) != want || pk.Port != 3 {
			t.Fatalf("frame %d: %d bytes port %d, want %d bytes port 3", i, len(pk.Data), pk.Port, want)
		}
		for j, c := range pk.Data {
			if c != byte(i*7+j) {
				t.Fatalf("frame %d byte %d = %d, want %d", i, j, c, byte(i*7+j))
			}
		}
	}
	p.Free(in[:n])
	if s := p.Stats(); s.TxPackets != 16 || s.RxPackets != 16 {
		t.Errorf("stats %+v, want 16 tx and 16 rx", s)
	}
}

func TestOpenErrors(t *testing.T) {
	needEAL(t)
	for _, tt := range []struct {
		spec string
		want error
	}{
		{"dpdk:", ErrBadSpec},
		{"dpdk:eth0", ErrBadSpec},
		{"dpdk:net_null0,copy", ErrBadSpec},
		{"dpdk:net_nosuchdriver0", ErrNoDevice},
		{"dpdk:net_af_packet0,iface=ldafwd-missing", ErrNoDevice},
		{"dpdk:0000:ff:1f.7", ErrNoDevice},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			p, err := Open(tt.spec, Config{})
			if !errors.Is(err, tt.want) {
				if p != nil {
					p.Close()
				}
				t.Fatalf("Open(%q) = %v, want %v", tt.spec, err, tt.want)
			}
			t.Log(err)
		})
	}
}

// TestBurstAllocs pins zero Go allocations per rx + tx burst.
func TestBurstAllocs(t *testing.T) {
	needEAL(t)
	a, err := Open("dpdk:net_null2", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open("dpdk:net_null3", Config{Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pkts := newPackets(32)
	allocs := testing.AllocsPerRun(1000, func() {
		n := a.RxBurst(pkts)
		m := b.TxBurst(pkts[:n])
		b.Free(pkts[m:n])
	})
	if allocs != 0 {
		t.Errorf("%v allocations per burst, want 0", allocs)
	}
}

func TestRegisterThread(t *testing.T) {
	needEAL(t)
	done := make(chan error)
	go func() {
		lc, err := RegisterThread(0)
		if err == nil {
			if LcoreID() != lc || lc < 0 {
				err = fmt.Errorf("lcore id %d, registered as %d", LcoreID(), lc)
			}
			UnregisterThread()
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// BenchmarkNullForward is a single-core forward loop between two net_null
// vdevs in both directions (as testpmd's io mode with two streams): rx
// burst on one, tx burst on the other, free what tx refused. The thread is
// pinned to CPU 1 and registered as an lcore, as testpmd's forwarding core
// in bench.RunTestpmd's default setup.
func BenchmarkNullForward(b *testing.B) {
	needEAL(b)
	for _, burst := range []int{32, 64} {
		b.Run(fmt.Sprintf("burst=%d", burst), func(b *testing.B) {
			x, err := Open(fmt.Sprintf("dpdk:net_null1%d,copy=1", burst), Config{Burst: burst})
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			y, err := Open(fmt.Sprintf("dpdk:net_null2%d,copy=1", burst), Config{Index: 1, Burst: burst})
			if err != nil {
				b.Fatal(err)
			}
			defer y.Close()
			if _, err := RegisterThread(1); err != nil {
				b.Fatal(err)
			}
			defer UnregisterThread()
			pkts := newPackets(burst)
			var fwd uint64
			cpu0 := threadCPU()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, d := range [2][2]*Port{{x, y}, {y, x}} {
					n := d[0].RxBurst(pkts)
					m := d[1].TxBurst(pkts[:n])
					if m < n {
						d[1].Free(pkts[m:n])
					}
					fwd += uint64(m)
				}
			}
			cpu := (threadCPU() - cpu0).Seconds()
			el := b.Elapsed().Seconds()
			b.ReportMetric(float64(fwd)/el/1e6, "Mpps")
			b.ReportMetric(el*1e9/float64(fwd), "ns/pkt")
			// CPU time of this thread only: what a dedicated core would
			// do, whatever else the machine is running.
			b.ReportMetric(cpu*1e9/float64(fwd), "cpu-ns/pkt")
		})
	}
}

// threadCPU is the calling thread's user+system CPU time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestQueues opens net_null with two queue pairs: each queue view moves
// its own bursts and Stats sums them.
func TestQueues(t *testing.T) {
	needEAL(t)
	p, err := Open("dpdk:net_null7", Config{Queues: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Queues() != 2 {
		t.Fatalf("%d queues", p.Queues())
	}
	pkts := newPackets(32)
	var rx uint64
	for q := 0; q < 2; q++ {
		n := p.Queue(q).RxBurst(pkts)
		if n == 0 {
			t.Fatalf("queue %d received nothing", q)
		}
		rx += uint64(n)
		m := p.Queue(q).TxBurst(pkts[:n])
		p.Queue(q).Free(pkts[m:n])
	}
	if s := p.Stats(); s.RxPackets != rx {
		t.Errorf("stats rx %d, want %d", s.RxPackets, rx)
	}
	if _, err := Open("dpdk:net_null8", Config{Queues: 1000}); err == nil {
		t.Error("1000 queues accepted")
	}
}
