package ring

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// ops is the method set shared by SPSC, MPMC and the mutex twin, so one
// property test drives all of them.
type ops[T any] interface {
	EnqueueBulk([]T) int
	EnqueueBurst([]T) int
	DequeueBulk([]T) int
	DequeueBurst([]T) int
	Count() int
	FreeCount() int
	Cap() int
}

// locked is the naive twin: a mutex around a slice used as a FIFO. It is
// what the lock-free rings must be indistinguishable from when driven by
// one goroutine.
type locked[T any] struct {
	mu  sync.Mutex
	q   []T
	cap int
}

func newLocked[T any](size int) *locked[T] { return &locked[T]{q: make([]T, 0, size), cap: size} }

func (l *locked[T]) enq(items []T, bulk bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(len(items), l.cap-len(l.q))
	if bulk && n != len(items) {
		return 0
	}
	l.q = append(l.q, items[:n]...)
	return n
}

func (l *locked[T]) deq(out []T, bulk bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(len(out), len(l.q))
	if bulk && n != len(out) {
		return 0
	}
	copy(out, l.q[:n])
	// Shift down, keeping the backing array: allocation-free once warm.
	m := copy(l.q, l.q[n:])
	l.q = l.q[:m]
	return n
}

func (l *locked[T]) EnqueueBulk(x []T) int  { return l.enq(x, true) }
func (l *locked[T]) EnqueueBurst(x []T) int { return l.enq(x, false) }
func (l *locked[T]) DequeueBulk(x []T) int  { return l.deq(x, true) }
func (l *locked[T]) DequeueBurst(x []T) int { return l.deq(x, false) }
func (l *locked[T]) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.q)
}
func (l *locked[T]) FreeCount() int { return l.cap - l.Count() }
func (l *locked[T]) Cap() int       { return l.cap }

// startAt moves a fresh ring's free-running indices to start, so the
// property tests cross the uint32 wrap-around.
func (r *ringCore[T]) startAt(start uint32) {
	r.prod.head.Store(start)
	r.prod.tail.Store(start)
	r.cons.head.Store(start)
	r.cons.tail.Store(start)
}

func TestNewSize(t *testing.T) {
	for _, tt := range []struct {
		size int
		ok   bool
	}{{0, false}, {-4, false}, {3, false}, {1000, false}, {1 << 32, false}, {1, true}, {2, true}, {1024, true}} {
		_, err := NewSPSC[int](tt.size)
		_, err2 := NewMPMC[int](tt.size)
		if (err == nil) != tt.ok || (err2 == nil) != tt.ok {
			t.Errorf("size %d: got %v, %v, want ok=%v", tt.size, err, err2, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrSize) {
			t.Errorf("size %d: error %v does not wrap ErrSize", tt.size, err)
		}
	}
}

// runOps applies an operation sequence decoded from prog to a ring and its
// twin and fails on the first difference in returned count, dequeued
// values, Count or FreeCount.
func runOps(t *testing.T, name string, r ops[uint64], prog []byte) {
	t.Helper()
	twin := newLocked[uint64](r.Cap())
	var next uint64
	in := make([]uint64, 2*r.Cap()+1)
	got, want := make([]uint64, len(in)), make([]uint64, len(in))
	for i := 0; i+1 < len(prog); i += 2 {
		op, n := prog[i]%4, int(prog[i+1])%len(in)
		switch op {
		case 0, 1:
			for j := range n {
				in[j] = next + uint64(j)
			}
			var a, b int
			if op == 0 {
				a, b = r.EnqueueBulk(in[:n]), twin.EnqueueBulk(in[:n])
			} else {
				a, b = r.EnqueueBurst(in[:n]), twin.EnqueueBurst(in[:n])
			}
			if a != b {
				t.Fatalf("%s op %d: enqueue(bulk=%v, %d) = %d, twin %d", name, i/2, op == 0, n, a, b)
			}
			next += uint64(a)
		case 2, 3:
			var a, b int
			if op == 2 {
				a, b = r.DequeueBulk(got[:n]), twin.DequeueBulk(want[:n])
			} else {
				a, b = r.DequeueBurst(got[:n]), twin.DequeueBurst(want[:n])
			}
			if a != b {
				t.Fatalf("%s op %d: dequeue(bulk=%v, %d) = %d, twin %d", name, i/2, op == 2, n, a, b)
			}
			for j := range a {
				if got[j] != want[j] {
					t.Fatalf("%s op %d: element %d = %d, twin %d", name, i/2, j, got[j], want[j])
				}
			}
		}
		if r.Count() != twin.Count() || r.FreeCount() != twin.FreeCount() {
			t.Fatalf("%s op %d: count %d/%d free, twin %d/%d", name, i/2, r.Count(), r.FreeCount(), twin.Count(), twin.FreeCount())
		}
	}
}

func newPair(t testing.TB, size int, start uint32) (*SPSC[uint64], *MPMC[uint64]) {
	s, err := NewSPSC[uint64](size)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMPMC[uint64](size)
	if err != nil {
		t.Fatal(err)
	}
	s.startAt(start)
	m.startAt(start)
	return s, m
}

// TestAgainstTwin is the property test: random operation sequences give
// the same results on the lock-free rings as on the mutex twin, for several
// sizes and with the indices starting just below the uint32 wrap.
func TestAgainstTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 2, 8, 64} {
		for _, start := range []uint32{0, 1<<32 - 5, 1 << 31} {
			for range 50 {
				prog := make([]byte, 400)
				for i := range prog {
					prog[i] = byte(rng.Uint32())
				}
				s, m := newPair(t, size, start)
				runOps(t, "spsc", s, prog)
				runOps(t, "mpmc", m, prog)
			}
		}
	}
}

// FuzzOps lets the fuzzer search for an operation sequence where a ring
// and its twin disagree. prog[0] picks the size and start index.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 0, 3, 1, 5, 3, 4})
	f.Add([]byte{0xff, 1, 0xff, 0, 0xff, 2, 0xff, 3, 0xff})
	f.Add([]byte{3, 0, 8, 2, 8, 1, 9, 3, 1, 3, 9})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) == 0 {
			return
		}
		size := 1 << (prog[0] % 7)
		start := uint32(0)
		if prog[0]&0x80 != 0 {
			start = 1<<32 - 3
		}
		s, m := newPair(t, size, start)
		runOps(t, "spsc", s, prog[1:])
		runOps(t, "mpmc", m, prog[1:])
	})
}

func TestZeroAllocs(t *testing.T) {
	s, m := newPair(t, 64, 0)
	buf := make([]uint64, 32)
	for name, r := range map[string]ops[uint64]{"spsc": s, "mpmc": m} {
		a := testing.AllocsPerRun(1000, func() {
			r.EnqueueBurst(buf)
			r.EnqueueBulk(buf[:8])
			r.DequeueBulk(buf[:8])
			r.DequeueBurst(buf)
		})
		if a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, a)
		}
	}
	// Pointer elements take the write-barrier path of copy; still no allocation.
	p, _ := NewSPSC[*int](64)
	x := new(int)
	pb := []*int{x, x, x, x}
	if a := testing.AllocsPerRun(1000, func() { p.EnqueueBurst(pb); p.Peek(pb); p.Skip(4) }); a != 0 {
		t.Errorf("spsc of pointers: %v allocs per run, want 0", a)
	}
}

func TestPeekSkip(t *testing.T) {
	s, _ := newPair(t, 8, 1<<32-2)
	s.EnqueueBurst([]uint64{1, 2, 3, 4, 5})
	out := make([]uint64, 3)
	if n := s.Peek(out); n != 3 || out[0] != 1 || out[2] != 3 {
		t.Fatalf("Peek = %d %v", n, out)
	}
	if s.Count() != 5 {
		t.Fatalf("Peek removed elements: count %d", s.Count())
	}
	if n := s.Skip(2); n != 2 {
		t.Fatalf("Skip(2) = %d", n)
	}
	if n := s.Skip(-1); n != 0 {
		t.Fatalf("Skip(-1) = %d", n)
	}
	if n := s.DequeueBurst(out); n != 3 || out[0] != 3 || out[2] != 5 {
		t.Fatalf("after Skip: %d %v", n, out)
	}
	if n := s.Skip(10); n != 0 {
		t.Fatalf("Skip on empty = %d", n)
	}
}

// TestSPSCConcurrent runs a producer and a consumer goroutine with random
// burst sizes and checks every element arrives exactly once, in order.
func TestSPSCConcurrent(t *testing.T) {
	total := uint64(2_000_000)
	if testing.Short() {
		total = 200_000
	}
	r, _ := NewSPSC[uint64](256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(3, 4))
		buf := make([]uint64, 64)
		for next := uint64(0); next < total; {
			n := min(1+rng.IntN(64), int(total-next))
			for i := range n {
				buf[i] = next + uint64(i)
			}
			var k int
			if rng.IntN(2) == 0 {
				k = r.EnqueueBulk(buf[:n])
			} else {
				k = r.EnqueueBurst(buf[:n])
			}
			next += uint64(k)
			if k == 0 {
				runtime.Gosched()
			}
		}
	}()
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]uint64, 64)
	for want := uint64(0); want < total; {
		n := 1 + rng.IntN(64)
		var k int
		if rng.IntN(2) == 0 {
			k = r.DequeueBulk(buf[:n])
		} else {
			k = r.DequeueBurst(buf[:n])
		}
		for _, v := range buf[:k] {
			if v != want {
				t.Fatalf("got %d, want %d", v, want)
			}
			want++
		}
		if k == 0 {
			runtime.Gosched()
		}
	}
	<-done
	if r.Count() != 0 {
		t.Fatalf("ring not empty at end: %d", r.Count())
	}
}

// TestMPMCConcurrent runs several producers and consumers. Each element is
// producer<<32|seq; every element must arrive exactly once, and within one
// consumer the elements of one producer must come in that producer's order
// (the ring is FIFO, reservations are serialised).
func TestMPMCConcurrent(t *testing.T) {
	const producers, consumers = 3, 3
	per := uint64(400_000)
	if testing.Short() {
		per = 40_000
	}
	r, _ := NewMPMC[uint64](128)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			buf := make([]uint64, 32)
			for next := uint64(0); next < per; {
				n := min(1+rng.IntN(32), int(per-next))
				for i := range n {
					buf[i] = uint64(p)<<32 | (next + uint64(i))
				}
				var k int
				if rng.IntN(2) == 0 {
					k = r.EnqueueBulk(buf[:n])
				} else {
					k = r.EnqueueBurst(buf[:n])
				}
				next += uint64(k)
				if k == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	seen := make([][]uint64, consumers)
	var mu sync.Mutex
	received := uint64(0)
	var cwg sync.WaitGroup
	for c := range consumers {
		cwg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 9))
			buf := make([]uint64, 32)
			last := [producers]int64{-1, -1, -1}
			var mine []uint64
			for {
				mu.Lock()
				finished := received == producers*per
				mu.Unlock()
				if finished {
					break
				}
				n := 1 + rng.IntN(32)
				var k int
				if rng.IntN(2) == 0 {
					k = r.DequeueBulk(buf[:n])
				} else {
					k = r.DequeueBurst(buf[:n])
				}
				for _, v := range buf[:k] {
					p, s := v>>32, int64(v&0xffffffff)
					if s <= last[p] {
						t.Errorf("consumer %d: producer %d seq %d after %d", c, p, s, last[p])
					}
					last[p] = s
				}
				mine = append(mine, buf[:k]...)
				mu.Lock()
				received += uint64(k)
				mu.Unlock()
				if k == 0 {
					runtime.Gosched()
				}
			}
			seen[c] = mine
		})
	}
	wg.Wait()
	cwg.Wait()
	count := make([][]uint8, producers)
	for p := range count {
		count[p] = make([]uint8, per)
	}
	for _, s := range seen {
		for _, v := range s {
			count[v>>32][v&0xffffffff]++
		}
	}
	for p := range count {
		for i, c := range count[p] {
			if c != 1 {
				t.Fatalf("producer %d seq %d arrived %d times", p, i, c)
			}
		}
	}
}
