package porttest

import (
	"bytes"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"runtime"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
)

// CheckPort runs the single-port part of the Port contract on p and closes
// it at the end:
//
//   - Name is not empty; bursts on empty slices return 0 and do nothing.
//   - Alloc hands out distinct, non-overlapping buffers at least
//     traffic.MinFrameLen long (the MTU), and Free takes them back so the same
//     number can be allocated again; Alloc+Free allocate nothing.
//   - TxBurst of generated frames takes a prefix; what it takes is counted
//     in Stats (TxPackets + TxDropped); the rest stays the caller's.
//   - RxBurst never returns more than asked, returns buffers with data,
//     and Free takes them back.
//   - After Close every burst returns 0 without panicking; Close twice is
//     harmless.
//
// A port that cannot Alloc (a receive-only port with no pool) fails: every
// ldafwd port must be able to originate control frames.
func CheckPort(t *testing.T, p dataplane.Port) {
	t.Helper()
	if p.Name() == "" {
		t.Error("Name is empty")
	}
	if n := p.RxBurst(nil); n != 0 {
		t.Errorf("RxBurst(nil) = %d", n)
	}
	if n := p.TxBurst(nil); n != 0 {
		t.Errorf("TxBurst(nil) = %d", n)
	}
	if n := p.Alloc(nil); n != 0 {
		t.Errorf("Alloc(nil) = %d", n)
	}
	p.Free(nil)

	const burst = 8
	pkts := make([]*dataplane.Packet, burst)
	n := p.Alloc(pkts)
	if n == 0 {
		t.Fatal("Alloc returned no buffers")
	}
	seen := map[*byte]bool{}
	for i, q := range pkts[:n] {
		if len(q.Data) < traffic.MinFrameLen {
			t.Fatalf("Alloc: buffer %d is %d bytes, want the MTU (≥ %d)", i, len(q.Data), traffic.MinFrameLen)
		}
		if seen[&q.Data[0]] {
			t.Fatalf("Alloc: buffer %d handed out twice", i)
		}
		seen[&q.Data[0]] = true
		for j := range q.Data {
			q.Data[j] = byte(i)
		}
	}
	for i, q := range pkts[:n] {
		for _, c := range q.Data {
			if c != byte(i) {
				t.Fatalf("Alloc: buffer %d overlaps another", i)
			}
		}
	}
	p.Free(pkts[:n])
	if m := p.Alloc(pkts[:n]); m != n {
		t.Fatalf("after Free, Alloc got %d of %d buffers back", m, n)
	}
	p.Free(pkts[:n])
	if a := testing.AllocsPerRun(100, func() { p.Free(pkts[:p.Alloc(pkts)]) }); a != 0 {
		t.Errorf("Alloc+Free: %v allocations per burst, want 0", a)
	}

	g := traffic.MustGen(traffic.GenConfig{Size: traffic.MinFrameLen})
	before := p.Stats()
	n = p.Alloc(pkts)
	for i, q := range pkts[:n] {
		q.Data = g.Frame(q.Data, uint64(i))
	}
	took := p.TxBurst(pkts[:n])
	if took < 0 || took > n {
		t.Fatalf("TxBurst of %d took %d", n, took)
	}
	p.Free(pkts[took:n])
	after := p.Stats()
	if d := (after.TxPackets - before.TxPackets) + (after.TxDropped - before.TxDropped); d != uint64(took) {
		t.Errorf("TxBurst took %d, Stats counted %d (tx+dropped)", took, d)
	}
	if took > 0 && after.TxBytes-before.TxBytes > uint64(took*traffic.MinFrameLen) {
		t.Errorf("TxBytes grew by %d for %d frames of %d bytes", after.TxBytes-before.TxBytes, took, traffic.MinFrameLen)
	}

	for range 4 {
		m := p.RxBurst(pkts[:3])
		if m < 0 || m > 3 {
			t.Fatalf("RxBurst of 3 returned %d", m)
		}
		for _, q := range pkts[:m] {
			if len(q.Data) == 0 {
				t.Error("RxBurst returned an empty frame")
			}
		}
		p.Free(pkts[:m])
	}

	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if m := p.RxBurst(pkts); m != 0 {
		t.Errorf("RxBurst after Close = %d", m)
	}
	if m := p.Alloc(pkts[:1]); m == 1 {
		if k := p.TxBurst(pkts[:1]); k != 0 {
			t.Errorf("TxBurst after Close = %d", k)
		} else {
			p.Free(pkts[:1])
		}
	}
	_ = p.Close() // must not panic
}

// LinkOptions tune CheckLink.
type LinkOptions struct {
	Frames int // frames to send; default 10000
	Burst  int // burst size; default 32
	Gen    traffic.GenConfig
	// MaxIdlePolls is how many consecutive empty RxBursts (each followed by
	// runtime.Gosched) mean the link has stalled; default 1,000,000. It is
	// a failure bound, not a speed measurement.
	MaxIdlePolls int
}

// CheckLink checks a perfect (unimpaired) link from tx to rx: frames
// generated with IDs 0..Frames-1 and sent in bursts on tx (allocated from
// tx) all arrive on rx exactly once, in order, byte for byte, with a
// non-decreasing non-zero TS; both ports' Stats count them; and a
// steady-state burst round trip (Alloc, TxBurst, RxBurst, Free) allocates
// nothing. It uses ports that are already open and leaves them open.
func CheckLink(t *testing.T, tx, rx dataplane.Port, o LinkOptions) {
	t.Helper()
	if o.Frames == 0 {
		o.Frames = 10000
	}
	if o.Burst == 0 {
		o.Burst = 32
	}
	if o.MaxIdlePolls == 0 {
		o.MaxIdlePolls = 1_000_000
	}
	g, err := traffic.NewGen(o.Gen)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, g.Size())
	txb, rxb := tx.Stats(), rx.Stats()
	out := make([]*dataplane.Packet, o.Burst)
	in := make([]*dataplane.Packet, o.Burst)
	pending := 0 // frames allocated and written but not yet taken by TxBurst
	next, got := uint64(0), uint64(0)
	var lastTS uint64
	idle := 0
	for got < uint64(o.Frames) {
		if pending == 0 && next < uint64(o.Frames) {
			k := min(o.Burst, o.Frames-int(next))
			pending = tx.Alloc(out[:k])
			for i, q := range out[:pending] {
				q.Data = g.Frame(q.Data, next+uint64(i))
			}
		}
		if pending > 0 {
			took := tx.TxBurst(out[:pending])
			next += uint64(took)
			copy(out, out[took:pending])
			pending -= took
		}
		m := rx.RxBurst(in)
		if m == 0 {
			if idle++; idle > o.MaxIdlePolls {
				t.Fatalf("link stalled: %d of %d frames received, %d sent", got, o.Frames, next)
			}
			runtime.Gosched()
			continue
		}
		idle = 0
		for _, q := range in[:m] {
			id, ok := traffic.FrameID(q.Data)
			if !ok || id != got {
				t.Fatalf("frame %d: got id %d (ok=%v): lost, duplicated or reordered", got, id, ok)
			}
			if !bytes.Equal(q.Data, g.Frame(want, id)) {
				t.Fatalf("frame %d: bytes differ", id)
			}
			if q.TS == 0 || q.TS < lastTS {
				t.Fatalf("frame %d: TS %d after %d", id, q.TS, lastTS)
			}
			lastTS = q.TS
			got++
		}
		rx.Free(in[:m])
	}
	if m := rx.RxBurst(in); m != 0 {
		t.Fatalf("%d extra frames after all %d arrived", m, o.Frames)
	}
	txa, rxa := tx.Stats(), rx.Stats()
	if d := txa.TxPackets - txb.TxPackets; d != uint64(o.Frames) {
		t.Errorf("tx Stats: TxPackets grew by %d, want %d", d, o.Frames)
	}
	if d := rxa.RxPackets - rxb.RxPackets; d != uint64(o.Frames) {
		t.Errorf("rx Stats: RxPackets grew by %d, want %d", d, o.Frames)
	}
	if d := rxa.RxBytes - rxb.RxBytes; d != uint64(o.Frames*g.Size()) {
		t.Errorf("rx Stats: RxBytes grew by %d, want %d", d, o.Frames*g.Size())
	}

	// Steady state allocates nothing. Frames are sent and drained in the
	// same run; a link with latency may deliver them in a later run.
	a := testing.AllocsPerRun(200, func() {
		k := tx.Alloc(out)
		took := tx.TxBurst(out[:k])
		tx.Free(out[took:k])
		rx.Free(in[:rx.RxBurst(in)])
	})
	if a != 0 {
		t.Errorf("burst round trip: %v allocations, want 0", a)
	}
	for range o.MaxIdlePolls {
		m := rx.RxBurst(in)
		rx.Free(in[:m])
		if m == 0 {
			break
		}
	}
}
