package ring

// SPSC is a single-producer single-consumer ring: at any moment at most
// one goroutine enqueues and at most one dequeues (they may be different
// goroutines on different cores). It needs no compare-and-swap: each side
// owns its tail and only reads the other's (DPDK RING_F_SP_ENQ|RING_F_SC_DEQ).
type SPSC[T any] struct {
	ringCore[T]
}

// NewSPSC returns an empty SPSC ring of size elements; size must be a
// power of two.
func NewSPSC[T any](size int) (*SPSC[T], error) {
	r := new(SPSC[T])
	if err := r.init(size); err != nil {
		return nil, err
	}
	return r, nil
}

// enqueue copies up to len(items) elements (all or nothing when bulk) and
// returns how many it took.
func (r *SPSC[T]) enqueue(items []T, bulk bool) int {
	n := clampLen(len(items), r.size)
	if bulk && int(n) != len(items) {
		return 0
	}
	head := r.prod.tail.Load() // our own index: no other writer
	free := r.size - (head - r.cons.tail.Load())
	if n > free {
		if bulk {
			return 0
		}
		n = free
	}
	if n == 0 {
		return 0
	}
	r.copyIn(head, items[:n])
	// The atomic store publishes the slot writes above to the consumer's
	// atomic load of prod.tail (Go memory model: synchronized-before).
	r.prod.tail.Store(head + n)
	return int(n)
}

func (r *SPSC[T]) dequeue(out []T, bulk bool) int {
	n := clampLen(len(out), r.size)
	if bulk && int(n) != len(out) {
		return 0
	}
	head := r.cons.tail.Load()
	avail := r.prod.tail.Load() - head
	if n > avail {
		if bulk {
			return 0
		}
		n = avail
	}
	if n == 0 {
		return 0
	}
	r.copyOut(head, out[:n])
	r.cons.tail.Store(head + n)
	return int(n)
}

// EnqueueBulk enqueues all of items or none; it returns len(items) or 0.
func (r *SPSC[T]) EnqueueBulk(items []T) int { return r.enqueue(items, true) }

// EnqueueBurst enqueues as many of items as fit and returns the count.
func (r *SPSC[T]) EnqueueBurst(items []T) int { return r.enqueue(items, false) }

// DequeueBulk fills all of out or nothing; it returns len(out) or 0.
func (r *SPSC[T]) DequeueBulk(out []T) int { return r.dequeue(out, true) }

// DequeueBurst fills out[:n] with up to len(out) elements and returns n.
func (r *SPSC[T]) DequeueBurst(out []T) int { return r.dequeue(out, false) }

// Peek fills out[:n] with up to len(out) elements from the head of the ring
// without removing them and returns n. Only the consumer may call it; a
// following Skip(k) with k <= n removes the first k of them. Together they
// let a consumer take only the elements that pass a test (e.g. a delivery
// time) without putting any back.
func (r *SPSC[T]) Peek(out []T) int {
	n := clampLen(len(out), r.size)
	head := r.cons.tail.Load()
	avail := r.prod.tail.Load() - head
	if n > avail {
		n = avail
	}
	r.copyOut(head, out[:n])
	return int(n)
}

// Skip removes the first n elements, which the consumer has seen with
// Peek; n beyond the ring's count is clamped to the count.
func (r *SPSC[T]) Skip(n int) int {
	head := r.cons.tail.Load()
	avail := r.prod.tail.Load() - head
	k := clampLen(n, r.size)
	if n < 0 {
		k = 0
	}
	if k > avail {
		k = avail
	}
	r.cons.tail.Store(head + k)
	return int(k)
}
