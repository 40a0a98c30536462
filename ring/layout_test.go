package ring

import (
	"testing"
	"unsafe"
)

// TestLayout pins the cache-line separation of the read-only fields, the
// producer indices and the consumer indices (the reason for the padding in
// ringCore): each pair is at least a cache line (64 bytes) apart.
func TestLayout(t *testing.T) {
	var r ringCore[uint64]
	ro := unsafe.Offsetof(r.size)
	prod := unsafe.Offsetof(r.prod)
	cons := unsafe.Offsetof(r.cons)
	end := unsafe.Sizeof(r)
	if prod-ro < 64 || cons-prod < 64 || end-cons < 64 {
		t.Errorf("offsets: read-only %d, prod %d, cons %d, size %d: want ≥ 64 bytes between each", ro, prod, cons, end)
	}
}
