package ring

// MPMC is a multi-producer multi-consumer ring with DPDK's algorithm
// (rte_ring MP/MC "default" sync mode): a side reserves a range of slots by
// compare-and-swap on its head, copies, then waits for the reservations
// made before it to publish and publishes its own by storing its tail.
// Any number of goroutines may enqueue and dequeue at once.
type MPMC[T any] struct {
	ringCore[T]
}

// NewMPMC returns an empty MPMC ring of size elements; size must be a
// power of two.
func NewMPMC[T any](size int) (*MPMC[T], error) {
	r := new(MPMC[T])
	if err := r.init(size); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *MPMC[T]) enqueue(items []T, bulk bool) int {
	want := clampLen(len(items), r.size)
	if bulk && int(want) != len(items) {
		return 0
	}
	var head, n uint32
	for {
		head = r.prod.head.Load()
		// free may come out huge if head is stale and consumers have since
		// passed it; the CAS below then fails because head moved, exactly
		// as in DPDK's __rte_ring_move_prod_head.
		free := r.size - (head - r.cons.tail.Load())
		n = want
		if n > free {
			if bulk {
				return 0
			}
			n = free
		}
		if n == 0 {
			return 0
		}
		if r.prod.head.CompareAndSwap(head, head+n) {
			break
		}
	}
	r.copyIn(head, items[:n])
	waitTail(&r.prod, head)
	r.prod.tail.Store(head + n)
	return int(n)
}

func (r *MPMC[T]) dequeue(out []T, bulk bool) int {
	want := clampLen(len(out), r.size)
	if bulk && int(want) != len(out) {
		return 0
	}
	var head, n uint32
	for {
		head = r.cons.head.Load()
		avail := r.prod.tail.Load() - head
		n = want
		if n > avail {
			if bulk {
				return 0
			}
			n = avail
		}
		if n == 0 {
			return 0
		}
		if r.cons.head.CompareAndSwap(head, head+n) {
			break
		}
	}
	r.copyOut(head, out[:n])
	waitTail(&r.cons, head)
	r.cons.tail.Store(head + n)
	return int(n)
}

// EnqueueBulk enqueues all of items or none; it returns len(items) or 0.
func (r *MPMC[T]) EnqueueBulk(items []T) int { return r.enqueue(items, true) }

// EnqueueBurst enqueues as many of items as fit and returns the count.
func (r *MPMC[T]) EnqueueBurst(items []T) int { return r.enqueue(items, false) }

// DequeueBulk fills all of out or nothing; it returns len(out) or 0.
func (r *MPMC[T]) DequeueBulk(out []T) int { return r.dequeue(out, true) }

// DequeueBurst fills out[:n] with up to len(out) elements and returns n.
func (r *MPMC[T]) DequeueBurst(out []T) int { return r.dequeue(out, false) }
