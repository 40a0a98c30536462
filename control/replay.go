package control

// ReplayWindow is the number of sequence numbers behind the highest seen
// that are still accepted once (a bitmap of this many bits). Control frames
// come from several transmit queues (one End per sender lane, fragments from
// the control goroutine), so they arrive reordered: an End marker, numbered
// when its lane writes it, overtakes every frame waiting in the control
// goroutine's inject ring (1024 frames in the appliance, which numbers a
// frame as it enters the ring: SenderConfig.NumberAtSend). 4096 spans the
// ring four times over. Must be a multiple of 64.
const ReplayWindow = 4096

// replayVerdict is what replayFilter.check says about a sequence number.
type replayVerdict uint8

const (
	seqNew       replayVerdict = iota // ahead of everything seen: accept
	seqReordered                      // behind the highest, not seen yet: accept, count as out of order
	seqReplayed                       // seen before: reject
	seqTooOld                         // older than the window: reject (cannot tell)
)

// replayFilter is a sliding bitmap over frame sequence numbers (RFC 4303
// §3.4.3 / RFC 6479 style). Bit seq%ReplayWindow is set when seq was
// accepted; moving the window forward clears the bits it slides over. The
// zero value has seen nothing. Sequence number 0 is never valid (ParseFrame
// rejects it), so highest == 0 means "nothing yet".
type replayFilter struct {
	highest uint64
	bits    [ReplayWindow / 64]uint64
}

// check says what accepting seq would mean, without changing the filter:
// only authenticated frames may move the window (accept), or a forger could
// push it forward and make the real sender's frames look too old.
func (r *replayFilter) check(seq uint64) replayVerdict {
	switch {
	case seq > r.highest:
		return seqNew
	case r.highest-seq >= ReplayWindow:
		return seqTooOld
	case r.bits[(seq/64)%(ReplayWindow/64)]&(1<<(seq%64)) != 0:
		return seqReplayed
	}
	return seqReordered
}

// accept marks seq as seen; call it only after check said seqNew or
// seqReordered.
func (r *replayFilter) accept(seq uint64) {
	if seq > r.highest {
		if seq-r.highest >= ReplayWindow {
			r.bits = [ReplayWindow / 64]uint64{}
		} else {
			for s := r.highest + 1; s <= seq; s++ {
				r.bits[(s/64)%(ReplayWindow/64)] &^= 1 << (s % 64)
			}
		}
		r.highest = seq
	}
	r.bits[(seq/64)%(ReplayWindow/64)] |= 1 << (seq % 64)
}
