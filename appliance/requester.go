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
	cfg    *Config
	sender *control.Sender
	ship   *shipper
	id     uint32 // the last request id given
	bufs   [][]byte
	rc     repairCounters
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
func (q *requester) send(key repairKey, kind control.Kind, peer uint64, id uint32, body []byte, what string) (frames, bytes int, ok bool) {
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
