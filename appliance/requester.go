package appliance

import (
	"github.com/ldafwd/ldafwd/control"
)

// requester is the receiver's transport for the in-band exchanges (the
// timestamp repairs, the RDA cells and the LDA parts fetched): it numbers
// the requests, builds their frames and queues them through the shipper,
// whose later budgets pay their bytes, and keeps the requester's
// counters. The exchanges share it so that their request ids are one
// sequence.
type requester struct {
	cfg      *Config
	sender   *control.Sender
	receiver *control.Receiver // where the replies are reassembled (ReplyMissing)
	miss     []bool
	resend   []byte
	ship     *shipper
	id       uint32 // the last request id given
	// frame: the mean frame size of the data this end receives (Ethernet
	// bytes, from its latest copy with frames; 0: none yet), for the
	// fragment size a request asks its reply in (replyFrag).
	frame int
	bufs  [][]byte
	rc    repairCounters
}

// nextID is a fresh request id.
func (q *requester) nextID() uint32 {
	q.id++
	return q.id
}

// send queues a Request of kind about key's interval and
// class to the peer's session, under request id, and counts its bytes as
// exchanged (paid from later shipments, budget.go); it returns the frames
// and bytes it took, ok false (logged as what) when it cannot be built.
//
// A retry whose reply came in part asks for the fragments still missing
// alone (a resend request, control.AppendResend): a reply is not sent
// whole again for the few fragments the segment lost, and on a congested
// segment the retries do not add to the queue that lost them.
func (q *requester) send(key repairKey, kind control.Kind, peer uint64, id uint32, body []byte, what string) (frames, bytes int, ok bool) {
	if q.receiver != nil {
		var partial bool
		if q.miss, partial = q.receiver.ReplyMissing(peer, q.sender.Session(), id, q.miss); partial {
			q.resend = control.AppendResend(q.resend[:0], q.miss)
			kind, body, what = control.KindMeta, q.resend, what+" (resend)"
		}
	}
	fs, err := q.sender.AppendExchange(q.bufs, control.TypeRequest, key.k, key.mec, kind, peer, id, body)
	if err != nil {
		q.cfg.Log.Warn().Err(err).Uint64("interval", key.k).Msg(what + " not sent")
		return 0, 0, false
	}
	q.bufs = fs[:cap(fs)]
	for _, fr := range fs {
		q.ship.queue(append([]byte(nil), fr...))
		bytes += len(fr)
	}
	q.ship.paid(bytes)
	return len(fs), bytes, true
}

// replyFrag is the body bytes per fragment a request asks its reply in:
// partFetchFrag, or less so that a reply fragment is no larger than the
// data's mean frame (at least control.MinFrameLimit): a reply is asked
// for because the segment lost control frames, and a congested queue
// full of small frames takes a frame of their size far more often than a
// larger one (pacing.go).
func (q *requester) replyFrag() int {
	if q.frame == 0 {
		return partFetchFrag
	}
	limit := max(q.frame, control.MinFrameLimit) - q.sender.FragmentOverhead() - control.ExchangeHeaderLen
	return max(minReplyFrag, min(partFetchFrag, limit))
}
