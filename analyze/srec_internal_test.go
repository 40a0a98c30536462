package analyze

import (
	"testing"
	"unsafe"
)

// TestRecordIsOneCacheLine: a record in flight fills one 64-byte line
// (the size class Go allocates it in is then aligned to 64 bytes), so
// that reading it back a window later, or copying it into the queue of
// records fed to the shards, moves one line.
func TestRecordIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(srec{}); n != 64 {
		t.Fatalf("srec is %d bytes, want 64", n)
	}
	var p srecPool
	x := p.get()
	if uintptr(unsafe.Pointer(x))%64 != 0 {
		t.Fatalf("a pooled record starts at %p, not on a 64-byte boundary", x)
	}
	// The flow is out of line and stays with its record in the pool.
	f := p.part(x)
	f.hash = 7
	p.put(x)
	y := p.get()
	if y != x || y.fk != f || y.fk.hash != 7 || y.ts != 0 {
		t.Fatalf("the pool did not keep the record's flowPart: %+v", y)
	}
}
