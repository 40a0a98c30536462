package ring

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// MaxSize is the largest ring size: indices are free-running uint32s and
// the distance between producer and consumer must stay below 2^31 for the
// wrap-around subtraction to be unambiguous.
const MaxSize = 1 << 31

// ErrSize is returned (wrapped) by the constructors for a size that is not
// a power of two in [1, MaxSize].
var ErrSize = errors.New("ring: size must be a power of two between 1 and 2^31")

// headTail is one side (producer or consumer) of a ring, as in DPDK's
// struct rte_ring_headtail: head is where the next reservation starts,
// tail is how far the side has published. For a single-producer or
// single-consumer side head is unused (the side's tail is its head).
type headTail struct {
	head atomic.Uint32
	tail atomic.Uint32
}

// ringCore is the layout shared by SPSC and MPMC. The read-only fields,
// the producer indices and the consumer indices each sit on cache lines of
// their own so a producer and a consumer on two cores do not bounce a line
// between them (false sharing), the same reason DPDK aligns prod and cons
// to RTE_CACHE_LINE_SIZE.
type ringCore[T any] struct {
	slots []T    // len is size; written by producers, read by consumers
	mask  uint32 // size-1, size is a power of two
	size  uint32
	_     cpu.CacheLinePad
	prod  headTail
	_     cpu.CacheLinePad
	cons  headTail
	_     cpu.CacheLinePad
}

func (r *ringCore[T]) init(size int) error {
	if size < 1 || size > MaxSize || size&(size-1) != 0 {
		return fmt.Errorf("%w: got %d", ErrSize, size)
	}
	r.slots = make([]T, size)
	r.mask = uint32(size - 1)
	r.size = uint32(size)
	return nil
}

// Cap is the number of elements the ring holds when full. Unlike a
// default DPDK ring (which keeps one slot empty) a ring of size N holds N:
// full and empty are told apart by the free-running indices, not by the
// masked positions.
func (r *ringCore[T]) Cap() int { return int(r.size) }

// Count is a snapshot of the number of elements in the ring. With
// concurrent producers or consumers it may be stale by the time it is
// used; it never exceeds Cap.
func (r *ringCore[T]) Count() int {
	// Load the consumer tail first: it only grows, so reading it before
	// the producer tail can only overestimate, and the clamp bounds that.
	c := r.cons.tail.Load()
	p := r.prod.tail.Load()
	n := p - c
	if n > r.size {
		n = r.size
	}
	return int(n)
}

// FreeCount is Cap - Count.
func (r *ringCore[T]) FreeCount() int { return int(r.size) - r.Count() }

// Empty reports whether Count is zero (a snapshot).
func (r *ringCore[T]) Empty() bool { return r.Count() == 0 }

// Full reports whether FreeCount is zero (a snapshot).
func (r *ringCore[T]) Full() bool { return r.Count() == int(r.size) }

// copyIn writes items into the slots starting at index head (unmasked).
// Two copies instead of a per-element mask: the compiler turns each into a
// memmove (with write barriers when T holds pointers).
func (r *ringCore[T]) copyIn(head uint32, items []T) {
	i := head & r.mask
	n := copy(r.slots[i:], items)
	if n < len(items) {
		copy(r.slots, items[n:])
	}
}

// copyOut reads len(out) elements starting at index head (unmasked).
func (r *ringCore[T]) copyOut(head uint32, out []T) {
	i := head & r.mask
	n := copy(out, r.slots[i:])
	if n < len(out) {
		copy(out[n:], r.slots)
	}
}

// waitTail spins until side's tail reaches want, i.e. until the
// producers (or consumers) that reserved before us have published. This
// is the step that makes the DPDK MP/MC ring not strictly lock-free: a
// preempted earlier reserver delays later ones. Go preempts goroutines
// asynchronously, so after a short spin we yield to let it run.
func waitTail(side *headTail, want uint32) {
	for spins := 0; side.tail.Load() != want; spins++ {
		if spins >= 64 {
			runtime.Gosched()
			spins = 0
		}
	}
}

// clampLen converts a slice length to the number of elements one call may
// move: at most the ring size.
func clampLen(n int, size uint32) uint32 {
	if n > int(size) {
		return size
	}
	return uint32(n)
}
