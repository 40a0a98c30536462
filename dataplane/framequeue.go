package dataplane

import (
	"fmt"

	"github.com/ldafwd/ldafwd/ring"
)

// FrameQueue carries copies of frames from a worker to the control side
// without allocating: a fixed pool of slots, a ring of free slot numbers
// and a ring of full ones. The worker is the only producer (Put), the
// control side the only consumer (Get/Done).
type FrameQueue struct {
	slots [][]byte
	ts    []uint64
	free  *ring.SPSC[uint32]
	full  *ring.SPSC[uint32]
	one   [1]uint32
	out   [1]uint32
}

// NewFrameQueue makes a queue of n slots (a power of two) of size bytes.
func NewFrameQueue(n, size int) (*FrameQueue, error) {
	free, err := ring.NewSPSC[uint32](n)
	if err != nil {
		return nil, fmt.Errorf("dataplane: frame queue: %w", err)
	}
	full, err := ring.NewSPSC[uint32](n)
	if err != nil {
		return nil, fmt.Errorf("dataplane: frame queue: %w", err)
	}
	q := &FrameQueue{slots: make([][]byte, n), ts: make([]uint64, n), free: free, full: full}
	for i := range q.slots {
		q.slots[i] = make([]byte, 0, size)
		q.one[0] = uint32(i)
		free.EnqueueBurst(q.one[:])
	}
	return q, nil
}

// Put copies frame (truncated to the slot size) with its timestamp;
// false when no slot is free (worker side).
func (q *FrameQueue) Put(frame []byte, ts uint64) bool {
	if q.free.DequeueBurst(q.one[:]) != 1 {
		return false
	}
	i := q.one[0]
	s := q.slots[i]
	n := min(len(frame), cap(s))
	q.slots[i] = append(s[:0], frame[:n]...)
	q.ts[i] = ts
	return q.full.EnqueueBurst(q.one[:]) == 1
}

// Get returns the oldest queued frame, valid until Done (control side).
func (q *FrameQueue) Get() (frame []byte, ts uint64, ok bool) {
	if q.full.Peek(q.out[:]) != 1 {
		return nil, 0, false
	}
	i := q.out[0]
	return q.slots[i], q.ts[i], true
}

// Done releases the frame Get returned (control side).
func (q *FrameQueue) Done() {
	if q.full.DequeueBurst(q.out[:]) == 1 {
		q.free.EnqueueBurst(q.out[:])
	}
}
