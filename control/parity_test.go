package control

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

var ldaOnly = []PartKey{{0, KindLDA}}

// parityInterval builds interval k of one LDA part of n bytes at frame
// loss p, and splits its frames into the fixed ones (End, Hello) and the
// part's data and parity fragments, in send order.
func parityInterval(t testing.TB, s *Sender, k uint64, n int, p float64) (payload []byte, fixed, frags [][]byte) {
	t.Helper()
	s.SetLoss(p)
	payload = payloadFor(k, ldaOnly[0], n)
	var f Frame
	for _, b := range intervalFrames(t, s, k, []Part{{PartKey: ldaOnly[0], Payload: payload}}) {
		if err := ParseFrame(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.Type == TypeFragment || f.Type == TypeParity {
			frags = append(frags, b)
		} else {
			fixed = append(fixed, b)
		}
	}
	return payload, fixed, frags
}

// TestPartFailure checks the binomial tail against cases worked by hand
// and ParityFor against it.
func TestPartFailure(t *testing.T) {
	p, q := 0.35, 0.65
	for _, c := range []struct {
		k, m int
		want float64
	}{
		{1, 0, p}, {1, 1, p * p}, {1, 3, p * p * p * p}, {3, 0, 1 - q*q*q},
		{2, 1, 1 - (q*q*q + 3*q*q*p)},
		{3, 2, 1 - (q*q*q*q*q + 5*q*q*q*q*p + 10*q*q*q*p*p)},
	} {
		if got := PartFailure(c.k, c.m, p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PartFailure(%d, %d, %v) = %v, want %v", c.k, c.m, p, got, c.want)
		}
	}
	if got, want := CopyFailure(3, 2, p), 1-math.Pow(1-p*p, 3); math.Abs(got-want) > 1e-12 {
		t.Errorf("CopyFailure = %v, want %v", got, want)
	}
	for _, loss := range []float64{0.001, 0.01, 0.1, 0.35, 0.52} {
		for _, k := range []int{1, 3, 5, 40} {
			m := ParityFor(k, loss)
			if m < MaxParity && !meetsTarget(PartFailure(k, m, loss)) || m > 0 && meetsTarget(PartFailure(k, m-1, loss)) {
				t.Errorf("ParityFor(%d, %v) = %d: failure %v, with one less %v", k, loss, m, PartFailure(k, m, loss), PartFailure(k, m-1, loss))
			}
		}
	}
	if ParityFor(3, 0) != 0 {
		t.Error("parity at no loss")
	}
}

// TestParityAnyKOfN: every subset of k of a part's k+m fragments (all of
// them when there are few, 300 drawn at random otherwise) rebuilds the
// part byte for byte; any k−1 do not, and the interval then goes out
// naming what arrived.
func TestParityAnyKOfN(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n int
		p float64
	}{{1, 0.1}, {400, 0.35}, {1438, 0.1}, {1439, 0.1}, {4000, 0.1}, {4000, 0.35}, {20000, 0.35}, {60000, 0.52}} {
		s := newTestSender(t, DefaultMTU, 1, ldaOnly)
		k := uint64(1)
		payload, fixed, frags := parityInterval(t, s, k, c.n, c.p)
		data, par := s.PartFrames(c.n)
		if data+par != len(frags) || par != ParityFor(data, c.p) || par == 0 {
			t.Fatalf("n=%d p=%v: %d frames, PartFrames %d+%d", c.n, c.p, len(frags), data, par)
		}
		var subsets [][]int
		if len(frags) <= 12 {
			for mask := 0; mask < 1<<len(frags); mask++ {
				var sub []int
				for i := range frags {
					if mask&(1<<i) != 0 {
						sub = append(sub, i)
					}
				}
				if len(sub) == data || len(sub) == data-1 {
					subsets = append(subsets, sub)
				}
			}
		} else {
			for range 300 {
				perm := rng.Perm(len(frags))
				subsets = append(subsets, perm[:data], perm[:data-1])
			}
		}
		for _, sub := range subsets {
			r := newTestReceiver(t, nil)
			// Some orders put the parity first: shuffle what arrives.
			rng.Shuffle(len(sub), func(i, j int) { sub[i], sub[j] = sub[j], sub[i] })
			consumeAll(t, r, fixed, 0)
			for _, i := range sub {
				if err := r.Consume(frags[i], 0); err != nil {
					t.Fatal(err)
				}
			}
			r.Expire(math.MaxInt64)
			res := r.Results(nil)
			if len(res) != 1 {
				t.Fatalf("n=%d subset %v: %d results", c.n, sub, len(res))
			}
			got, whole := []byte(nil), false
			if b := res[0].Bundle; b != nil {
				got, whole = b.Payloads[ldaOnly[0]]
			}
			if len(sub) == data {
				if !whole || !bytes.Equal(got, payload) {
					t.Fatalf("n=%d p=%v: fragments %v of %d+%d did not rebuild the part (result %+v)", c.n, c.p, sub, data, par, res[0].Failure)
				}
				continue
			}
			if whole {
				t.Fatalf("n=%d: %d fragments (%v) of a %d-fragment part made it whole", c.n, len(sub), sub, data)
			}
		}
	}
}

// TestParityMissingDetail: the reason names what arrived of data and
// parity.
func TestParityMissingDetail(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, ldaOnly)
	_, fixed, frags := parityInterval(t, s, 1, 4000, 0.35)
	data, par := s.PartFrames(4000)
	r := newTestReceiver(t, nil)
	consumeAll(t, r, fixed, 0)
	consumeAll(t, r, frags[2:data], 0)      // data fragments 0 and 1 lost,
	consumeAll(t, r, frags[data:data+1], 0) // and all parity but one
	r.Expire(math.MaxInt64)
	res := r.Results(nil)
	if len(res) != 1 || res[0].Bundle == nil {
		t.Fatalf("results %+v", res)
	}
	// The End marker's class counts make it a bundle of no whole part,
	// naming what arrived of the lost one.
	want := fmt.Sprintf("1 of 3 fragments and 1 of %d parity (any 3 of %d rebuild it)", par, data+par)
	if got := res[0].Bundle.Missing[ldaOnly[0]]; got != want {
		t.Errorf("missing %q, want %q", got, want)
	}
}

// TestParityBytes: IntervalBytes and PartBytes are what AppendInterval
// writes, with and without parity.
func TestParityBytes(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 2, twoParts)
	for _, p := range []float64{0, 0.01, 0.1, 0.35} {
		for _, n := range []int{0, 1, 1437, 1438, 1439, 1444, 1445, 9000, 70000} {
			s.SetLoss(p)
			fr := intervalFrames(t, s, 3, makeParts(3, twoParts, n, 17))
			total, ends := 0, 0
			for i, f := range fr {
				total += len(f)
				if i < 2 { // intervalFramesAt: the lanes' End markers first
					ends += len(f)
				}
				if len(f) > EthHeaderLen+DefaultMTU {
					t.Fatalf("frame of %d bytes at MTU %d", len(f), DefaultMTU)
				}
			}
			// Exact but for the End markers' class counts, which
			// IntervalBytes estimates (EndBytes).
			if want := s.IntervalBytes(2, n, 17) - 2*s.EndBytes(); total-ends != want {
				t.Errorf("p=%v n=%d: frames hold %d bytes besides the End markers, IntervalBytes says %d", p, n, total-ends, want)
			}
		}
	}
}

// TestParityRejects: forged and truncated parity frames are dropped with
// their counter; authentic parity whose counts disagree with its header
// or with the part is dropped and counted, never rebuilds anything, and
// never panics; the part still completes from its data.
func TestParityRejects(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, ldaOnly)
	payload, fixed, frags := parityInterval(t, s, 1, 4000, 0.1)
	data, _ := s.PartFrames(4000)
	parity := frags[data]

	r := newTestReceiver(t, nil)
	forged := append([]byte(nil), parity...)
	forged[len(forged)-TagLen-3] ^= 1
	if err := r.Consume(forged, 0); !errors.Is(err, ErrBadTag) {
		t.Errorf("forged parity: %v", err)
	}
	for _, cut := range []int{EthHeaderLen + HeaderLen - 1, EthHeaderLen + HeaderLen + 3, len(parity) - 1} {
		if err := r.Consume(parity[:cut], 0); !errors.Is(err, ErrTruncated) {
			t.Errorf("parity cut to %d: %v", cut, err)
		}
	}
	// A header announcing less than the parity prefix.
	short := append([]byte(nil), parity...)
	binary.BigEndian.PutUint16(short[EthHeaderLen+38:], ParityHeaderLen)
	if err := r.Consume(short, 0); !errors.Is(err, ErrBadPayload) {
		t.Errorf("parity of %d payload bytes: %v", ParityHeaderLen, err)
	}
	c := r.Counters()
	if c.BadTag != 1 || c.Truncated != 3 || c.BadPayload != 1 || c.Accepted != 0 {
		t.Errorf("counters %+v", c)
	}

	// Authentic but inconsistent: signed with the key, as a broken sender
	// (or a key holder) would.
	var f Frame
	if err := ParseFrame(parity, &f); err != nil {
		t.Fatal(err)
	}
	pp, _ := parseParity(&f)
	a, _ := NewAuthenticator(testKey)
	seq := uint64(1000)
	sign := func(h Header, p []byte) []byte {
		seq++
		h.Seq = seq
		b, err := AppendFrame(nil, a, s.cfg.SrcMAC, &h, p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bad := []struct {
		name string
		h    func(*Header)
		p    []byte
		ctr  func(Counters) uint64
	}{
		{"m 0", nil, appendParityPayload(nil, 0, pp.n, pp.shard), func(c Counters) uint64 { return c.BadPayload }},
		{"index ≥ m", func(h *Header) { h.FragIndex = uint16(pp.m) }, appendParityPayload(nil, pp.m, pp.n, pp.shard), func(c Counters) uint64 { return c.BadPayload }},
		{"k+m > 256", nil, appendParityPayload(nil, 254, pp.n, pp.shard), func(c Counters) uint64 { return c.BadPayload }},
		{"length 0", nil, appendParityPayload(nil, pp.m, 0, pp.shard), func(c Counters) uint64 { return c.BadPayload }},
		{"length past k shards", nil, appendParityPayload(nil, pp.m, data*len(pp.shard)+1, pp.shard), func(c Counters) uint64 { return c.BadPayload }},
		{"other m", nil, appendParityPayload(nil, pp.m+1, pp.n, pp.shard), func(c Counters) uint64 { return c.Inconsistent }},
		{"other shard size", nil, appendParityPayload(nil, pp.m, pp.n-1, pp.shard[:len(pp.shard)-1]), func(c Counters) uint64 { return c.BadPayload + c.Inconsistent }},
	}
	r = newTestReceiver(t, nil)
	consumeAll(t, r, fixed, 0)
	if err := r.Consume(parity, 0); err != nil { // the genuine one first: the others disagree with it
		t.Fatal(err)
	}
	for _, b := range bad {
		before := b.ctr(r.Counters())
		h := f.Header
		if b.h != nil {
			b.h(&h)
		}
		fr := sign(h, b.p)
		if err := r.Consume(fr, 0); err != nil && !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s: %v", b.name, err)
		}
		if b.ctr(r.Counters()) == before && r.Counters().BadHeader == 0 {
			t.Errorf("%s: no counter moved", b.name)
		}
	}
	consumeAll(t, r, frags[:data], 0)
	res := r.Results(nil)
	if len(res) != 1 || res[0].Bundle == nil || !bytes.Equal(res[0].Bundle.Payloads[ldaOnly[0]], payload) {
		t.Fatalf("the part did not complete from its data: %+v", res)
	}

	// A data fragment that disagrees with the parity's shard size (a
	// broken sender) stops the rebuild, counted.
	r = newTestReceiver(t, nil)
	consumeAll(t, r, fixed, 0)
	var d0 Frame
	if err := ParseFrame(frags[0], &d0); err != nil {
		t.Fatal(err)
	}
	consumeAll(t, r, frags[data:2*data-1], 0) // k−1 parity fragments
	if err := r.Consume(sign(d0.Header, d0.Payload[:10]), 0); err != nil {
		t.Fatal(err)
	}
	r.Expire(math.MaxInt64)
	if res := r.Results(nil); len(res) != 1 || res[0].Bundle != nil && res[0].Bundle.Payloads[ldaOnly[0]] != nil {
		t.Fatalf("rebuilt around a data fragment of the wrong size: %+v", res)
	}
	if r.Counters().Inconsistent == 0 {
		t.Error("the wrong-size data fragment was not counted")
	}
}

// TestControlFrames: the receiver's count of the sender's numbered
// frames and of those that arrived matches what was dropped.
func TestControlFrames(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, ldaOnly)
	r := newTestReceiver(t, nil)
	sent, arrived, last := 0, 0, 0
	for k := uint64(1); k <= 20; k++ {
		_, fixed, frags := parityInterval(t, s, k, 3000, 0.1)
		for i, b := range append(fixed, frags...) {
			sent++
			if (sent%3 == 0) && i >= 2 { // keep End and Hello
				continue
			}
			if err := r.Consume(b, 0); err != nil {
				t.Fatal(err)
			}
			arrived, last = arrived+1, sent
		}
	}
	// Frames lost after the last that arrived are not seen yet.
	gotSent, got := r.ControlFrames()
	if int(gotSent) != last || int(got) != arrived || last < sent-1 {
		t.Errorf("ControlFrames = %d sent, %d got; want %d, %d", gotSent, got, last, arrived)
	}
	if c := r.Counters(); c.Rebuilt == 0 || c.Bundles == 0 {
		t.Errorf("no part rebuilt at 1 in 3 lost: %+v", c)
	}
}

// FuzzParityRebuild feeds a receiver one interval whose LDA part carries
// parity, with the fragments a mask keeps and one parity frame's payload
// replaced by the fuzzer's bytes (authentic: insecure mode), in an order
// the fuzzer picks. It must not panic, must stay within its memory
// bound, finish the interval once, and, when the replaced frame is
// dropped or left as it was, rebuild exactly the part sent.
func FuzzParityRebuild(f *testing.F) {
	f.Add(uint64(0b1011), uint16(4000), byte(35), []byte{}, byte(0))
	f.Add(uint64(0xFFFF), uint16(1), byte(10), []byte{0, 1, 0, 0, 0, 1, 7}, byte(3))
	f.Add(uint64(0b110), uint16(1439), byte(52), []byte{0, 9, 0, 0, 5, 0xA0, 1, 2, 3}, byte(1))
	f.Fuzz(func(t *testing.T, keep uint64, n uint16, lossPct byte, fake []byte, order byte) {
		s := newTestSenderKey(t, MinMTU, 1, ldaOnly, nil, 0)
		s.SetLoss(float64(lossPct%90) / 100)
		payload := payloadFor(1, ldaOnly[0], int(n))
		frames := intervalFrames(t, s, 1, []Part{{PartKey: ldaOnly[0], Payload: payload}})
		r := newTestReceiver(t, func(c *ReceiverConfig) { c.Key, c.Insecure, c.MaxBytes = nil, true, 64<<10 })
		a, _ := NewAuthenticator(nil)
		replaced := false
		var fr Frame
		var in [][]byte
		for i, b := range frames {
			if err := ParseFrame(b, &fr); err != nil {
				t.Fatal(err)
			}
			if fr.Type == TypeParity && len(fake) > 0 && !replaced {
				h := fr.Header
				if nb, err := AppendFrame(nil, a, s.cfg.SrcMAC, &h, fake); err == nil {
					b, replaced = nb, !bytes.Equal(fake, fr.Payload)
				}
			}
			if i < 2 || keep&(1<<((i-2)%64)) != 0 {
				in = append(in, b)
			}
		}
		if order&1 != 0 {
			for i, j := 0, len(in)-1; i < j; i, j = i+1, j-1 {
				in[i], in[j] = in[j], in[i]
			}
		}
		for _, b := range in {
			_ = r.Consume(b, 0)
			if _, by := r.InFlight(); by > 64<<10 {
				t.Fatalf("%d bytes in flight, limit %d", by, 64<<10)
			}
		}
		r.Expire(math.MaxInt64)
		res := r.Results(nil)
		if len(res) != 1 {
			t.Fatalf("%d results", len(res))
		}
		if b := res[0].Bundle; b != nil && !replaced {
			if got, ok := b.Payloads[ldaOnly[0]]; ok && !bytes.Equal(got, payload) {
				t.Fatalf("rebuilt part differs from the one sent")
			}
		}
	})
}

// TestParitySurvival checks PartFailure against frames: a part of
// 4000 bytes (3 data fragments at MTU 1500) crosses a segment that loses
// each frame with probability p, 400 times, with the parity ParityFor
// gives, with none, and in two whole copies. The failures counted must
// agree with PartFailure and CopyFailure (within about four standard
// deviations, at least 4).
func TestParitySurvival(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const trials = 400
	for _, p := range []float64{0.10, 0.35} {
		for _, c := range []struct {
			name   string
			parity bool
			copies int
		}{{"parity", true, 1}, {"none", false, 1}, {"2 copies", false, 2}} {
			s := newTestSender(t, DefaultMTU, 1, ldaOnly)
			failed := 0
			var k, m int
			for i := range trials {
				loss := 0.0
				if c.parity {
					loss = p
				}
				payload, fixed, frags := parityInterval(t, s, uint64(i+1), 4000, loss)
				k, m = s.PartFrames(4000)
				r := newTestReceiver(t, nil)
				consumeAll(t, r, fixed, 0)
				for range c.copies {
					for _, b := range frags {
						if rng.Float64() >= p {
							_ = r.Consume(b, 0) // a second copy is a duplicate
						}
					}
					if c.copies > 1 { // the next copy: fresh sequence numbers
						_, _, frags = parityInterval(t, s, uint64(i+1), 4000, loss)
					}
				}
				r.Expire(math.MaxInt64)
				res := r.Results(nil)
				if len(res) != 1 || res[0].Bundle == nil || !bytes.Equal(res[0].Bundle.Payloads[ldaOnly[0]], payload) {
					failed++
				}
			}
			want := PartFailure(k, m, p)
			if c.copies > 1 {
				want = CopyFailure(k, c.copies, p)
			}
			sd := math.Sqrt(trials * want * (1 - want))
			t.Logf("p=%v %s: k=%d m=%d: %d of %d failed, expected %.1f", p, c.name, k, m, failed, trials, trials*want)
			if math.Abs(float64(failed)-trials*want) > max(4, 4*sd) {
				t.Errorf("p=%v %s: %d of %d failed, expected %.1f ± %.1f", p, c.name, failed, trials, trials*want, sd)
			}
		}
	}
}

// TestParityVersusCopies: for the same survival — a part lost at most
// once in a thousand intervals (ParityTarget) — the frames whole copies
// need (each copy k frames; --control-copies stops at 4, the table does
// not) and the frames parity needs, by loss and part size. Parity never
// needs more, and from 10 % loss on needs at most 60 % of what copies do
// (docs/protocol.md prints the table: go test -run TestParityVersusCopies -v ./control).
func TestParityVersusCopies(t *testing.T) {
	var b strings.Builder
	b.WriteString("\n| loss | data fragments k | copies needed | frames with copies | parity m | frames with parity | parity / copies |\n|---|---|---|---|---|---|---|\n")
	for _, p := range []float64{0.01, 0.10, 0.35, 0.52} {
		for _, k := range []int{1, 3, 5} {
			c := 1
			for !meetsTarget(CopyFailure(k, c, p)) {
				c++
			}
			m := ParityFor(k, p)
			ratio := float64(k+m) / float64(c*k)
			fmt.Fprintf(&b, "| %g %% | %d | %d | %d | %d | %d | %.2f |\n", 100*p, k, c, c*k, m, k+m, ratio)
			if k+m > c*k || p >= 0.10 && k > 1 && ratio > 0.6 {
				t.Errorf("p=%v k=%d: parity %d frames, copies %d", p, k, k+m, c*k)
			}
		}
	}
	t.Log(b.String())
}
