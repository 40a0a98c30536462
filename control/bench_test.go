package control

import (
	"fmt"
	"testing"
)

// BenchmarkEndFrame measures the worker's cost of an End marker: building
// it (with its HMAC) into a preallocated buffer, and parsing + verifying it
// on the receiving worker.
func BenchmarkEndFrame(b *testing.B) {
	s := newTestSender(b, DefaultMTU, 1, twoParts)
	w, _ := s.NewEndWriter(0)
	buf := make([]byte, 0, EndFrameLen)
	e := End{StartNs: 1, EndNs: 2, Frames: 3, Bytes: 4}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			buf = w.AppendEnd(buf[:0], uint64(i), &e)
		}
	})
	buf = w.AppendEnd(buf[:0], 1, &e)
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		var f Frame
		for b.Loop() {
			if ParseFrame(buf, &f) != nil {
				b.Fatal("parse")
			}
		}
	})
	b.Run("parse+verify", func(b *testing.B) {
		b.ReportAllocs()
		a := mustAuth(b, testKey)
		var f Frame
		for b.Loop() {
			if ParseFrame(buf, &f) != nil || !a.Verify(&f) {
				b.Fatal("parse")
			}
		}
	})
}

// BenchmarkFragmentHMAC measures the tag of one full fragment (the HMAC
// cost per fragment), against the insecure zero tag as the baseline.
func BenchmarkFragmentHMAC(b *testing.B) {
	for _, mtu := range []int{DefaultMTU, 9000} {
		payload := make([]byte, FragmentPayload(mtu))
		h := Header{Type: TypeFragment, Kind: KindLDA, Session: 1, Interval: 1, Seq: 1, FragCount: 1}
		for _, mode := range []string{"hmac", "insecure"} {
			key := testKey
			if mode == "insecure" {
				key = nil
			}
			a := mustAuth(b, key)
			buf := make([]byte, 0, EthHeaderLen+mtu)
			b.Run(fmt.Sprintf("mtu%d/%s", mtu, mode), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(payload)))
				for b.Loop() {
					buf, _ = AppendFrame(buf[:0], a, [6]byte{}, &h, payload)
				}
			})
		}
	}
}

// BenchmarkReceiveInterval: the control goroutine's cost to validate and
// reassemble one interval of a 4 KiB and a 64 KiB synopsis.
func BenchmarkReceiveInterval(b *testing.B) {
	for _, n := range []int{4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			s := newTestSender(b, DefaultMTU, 1, twoParts[:1])
			r := newTestReceiver(b, nil)
			w, _ := s.NewEndWriter(0)
			parts := makeParts(1, twoParts[:1], n)
			var bufs [][]byte
			end := make([]byte, 0, EndFrameLen)
			e := End{EndNs: 1}
			b.ReportAllocs()
			b.SetBytes(int64(n))
			var res []Result
			for k := uint64(1); b.Loop(); k++ {
				end = w.AppendEnd(end[:0], k, &e)
				bufs, _ = s.AppendInterval(bufs, k, 0, parts)
				r.Consume(end, 0)
				for _, f := range bufs {
					r.Consume(f, 0)
				}
				res = r.Results(res[:0])
				if len(res) != 1 || res[0].Bundle == nil {
					b.Fatal("interval did not complete")
				}
			}
		})
	}
}

// BenchmarkParity: the control goroutine's cost of parity for one
// interval of a 4 KiB part (3 data fragments) at 35 % loss (7 parity
// fragments): building the frames (encode), and receiving the interval
// with its first two data fragments lost (rebuild, End and Hello
// included).
func BenchmarkParity(b *testing.B) {
	const n = 4 << 10
	parts := makeParts(1, twoParts[:1], n)
	b.Run("encode", func(b *testing.B) {
		s := newTestSender(b, DefaultMTU, 1, twoParts[:1])
		s.SetLoss(0.35)
		var bufs [][]byte
		b.ReportAllocs()
		b.SetBytes(n)
		for k := uint64(1); b.Loop(); k++ {
			bufs, _ = s.AppendInterval(bufs, k, 0, parts)
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		s := newTestSender(b, DefaultMTU, 1, twoParts[:1])
		s.SetLoss(0.35)
		r := newTestReceiver(b, nil)
		w, _ := s.NewEndWriter(0)
		var bufs [][]byte
		end := make([]byte, 0, EndFrameLen)
		e := End{EndNs: 1}
		b.ReportAllocs()
		b.SetBytes(n)
		var res []Result
		for k := uint64(1); b.Loop(); k++ {
			end = w.AppendEnd(end[:0], k, &e)
			bufs, _ = s.AppendInterval(bufs, k, 0, parts)
			b.StopTimer()
			r.Consume(end, 0)
			b.StartTimer()
			for i, f := range bufs {
				if i != 1 && i != 2 { // bufs[0] is the Hello
					r.Consume(f, 0)
				}
			}
			res = r.Results(res[:0])
			if len(res) != 1 || res[0].Bundle == nil {
				b.Fatal("interval not rebuilt")
			}
		}
	})
}
