package afxdp

import (
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// BenchmarkVethLink sends frames from an AF_XDP port on one end of a veth
// pair to an AF_XDP port on the other (inside the namespace), one
// goroutine doing both: Alloc + TxBurst on one side, RxBurst + Free on the
// other. The rate is what copy-mode AF_XDP on veth sustains in both
// syscall paths (tx kick, rx in softirq).
func BenchmarkVethLink(b *testing.B) {
	for _, size := range []int{traffic.MinFrameLen, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			v := nettest.NewVeth(b, nettest.Options{})
			tx, err := Open("afxdp:"+v.Host, Config{Index: 60, RingSize: 2048})
			if err != nil {
				b.Fatal(err)
			}
			defer tx.Close()
			var rx *Port
			if err := nettest.InNetns(v.NS, func() (err error) {
				rx, err = Open("afxdp:"+v.Peer, Config{Index: 61, RingSize: 2048})
				return err
			}); err != nil {
				b.Fatal(err)
			}
			defer rx.Close()
			g := traffic.MustGen(traffic.GenConfig{Size: size})
			out := make([]*dataplane.Packet, 32)
			in := make([]*dataplane.Packet, 32)
			var got uint64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := tx.Alloc(out)
				for j, q := range out[:k] {
					q.Data = g.Frame(q.Data, uint64(j))
				}
				m := tx.TxBurst(out[:k])
				tx.Free(out[m:k])
				n := rx.RxBurst(in)
				rx.Free(in[:n])
				got += uint64(n)
			}
			el := b.Elapsed().Seconds()
			b.ReportMetric(float64(got)/el/1e6, "Mpps")
			if got > 0 {
				b.ReportMetric(el*1e9/float64(got), "ns/pkt")
			}
		})
	}
}
