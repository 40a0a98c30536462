package appliance

// rxDrops counts, per receiver copy, the frames the receiver's segment
// port dropped before the receiver saw them (a full receive ring: the
// worker fell behind). The segment delivered them, so they would look
// exactly like its loss (receiverDropped, countProof). The coordinator
// reads the port's counter once per copy and hands it in: the part
// holds no port.
type rxDrops struct {
	// seen is the port's count as of the last receiver copy; by holds,
	// per receiver copy k, the frames dropped since the copy before it
	// (frames of k, or of k+1 arriving just after the flip).
	seen uint64
	by   map[uint64]uint64
}

func newRxDrops() rxDrops { return rxDrops{by: map[uint64]uint64{}} }

// start counts from the port's count at the start.
func (d *rxDrops) start(count uint64) { d.seen = count }

// note records the frames the port dropped since the previous receiver
// copy (its counter now reads count) as copy k's.
func (d *rxDrops) note(k, count uint64) {
	if count > d.seen {
		d.by[k] = count - d.seen
	}
	d.seen = count
	for j := range d.by {
		if j+16 < k || j > k+16 { // numbers that went back too (spans)
			delete(d.by, j)
		}
	}
}

// around is the frames dropped around interval k: counted at k's copy,
// or at the copy before it, whose count includes frames of k that
// arrived right after its flip.
func (d *rxDrops) around(k uint64) uint64 {
	return d.by[k] + d.by[k-1]
}
