package control

import "sync/atomic"

// EndStatus is what EndReader.Read says about a frame.
type EndStatus uint8

// Verdicts on a frame of the control EtherType, for the receiving worker.
const (
	// EndForeign: not a control frame of this appliance pair — it does not
	// parse as one or its tag does not authenticate it under our key (in
	// insecure mode: it is not an unkeyed control frame). It is a user's
	// frame: forward it, never consume it.
	EndForeign EndStatus = iota
	// EndNotMarker: an authentic control frame that is not an End of our
	// direction (a Hello, a fragment, another direction's frame): hand it
	// to the control side, never forward it, never flip on it.
	EndNotMarker
	// EndStale: an authentic End that must not flip: another lane's, a
	// duplicate, a replay, or one of a session that is not live (retired,
	// older than the live one, or not fresh).
	EndStale
	// EndNew: an authentic End of the live session (or of a new session it
	// adopts) for a later interval: flip here.
	EndNew
	// EndOtherLane: an authentic End of the live session whose lane is not
	// the one this reader cuts (OnlyLane): steered to the wrong queue.
	// Hand it to the control side (the Receiver counts it for its
	// interval), never flip on it.
	EndOtherLane
)

// EndReader is the receiving worker's check of control frames in the hot
// path: ParseFrame, the tag, the direction, the session rule the Receiver
// applies (sessionGuard: a session becomes live only through a fresh,
// newer signed time, and retired sessions never come back) and, within
// the live session, a monotonic interval guard, so a replayed or
// duplicated End(k) cannot flip the synopses twice and an old session's
// End cannot flip them at all. It does not allocate. Each worker owns one
// (it keeps HMAC state). The Receiver still gets every authentic control
// frame for the full checks and the counters; both see the same frames
// with the same receive times and decide the same live session.
type EndReader struct {
	auth      *Authenticator
	direction uint16
	f         Frame
	guard     sessionGuard
	lastK     uint64 // last interval returned as EndNew in the live session
	lane      uint16 // with oneLane: the only lane whose End markers flip
	oneLane   bool
	// unauth counts frames that parse as control frames but do not
	// authenticate (forwarded as a user's): [0] all, [1] flagged insecure
	// while we have a key, [2] keyed while we run insecure. Read by the
	// watchdog from another goroutine; written only on that rare path.
	unauth [3]atomic.Uint64
}

// Unauthenticated returns how many frames parsed as control frames but
// did not authenticate, and of them how many because the peer runs
// insecure and we do not (peerInsecure) or the other way (peerKeyed).
func (r *EndReader) Unauthenticated() (all, peerInsecure, peerKeyed uint64) {
	return r.unauth[0].Load(), r.unauth[1].Load(), r.unauth[2].Load()
}

// OnlyLane makes the reader flip on End markers of lane l only; those of
// other lanes read EndOtherLane. A receiving lane of an N-queue port cuts
// its interval at the End of the sender lane whose frames are steered to
// its queue (docs/protocol.md, "Several lanes"). Without it every lane's
// End may flip (one lane: there is one).
func (r *EndReader) OnlyLane(l uint16) { r.lane, r.oneLane = l, true }

// NewEndReader returns an EndReader for a receiver's key (nil/empty with
// insecure) and direction, with DefaultMaxClockSkew.
func NewEndReader(key []byte, insecure bool, direction uint16) (*EndReader, error) {
	return NewEndReaderConfig(ReceiverConfig{Key: key, Insecure: insecure, Direction: direction})
}

// NewEndReaderConfig returns the EndReader that agrees with the Receiver
// of cfg (key, direction and MaxClockSkew; the other fields do not matter).
func NewEndReaderConfig(cfg ReceiverConfig) (*EndReader, error) {
	a, err := newAuthenticatorMode(cfg.Key, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	skew := cfg.MaxClockSkew
	if skew == 0 {
		skew = DefaultMaxClockSkew
	}
	return &EndReader{auth: a, direction: cfg.Direction, guard: sessionGuard{skew: skew}}, nil
}

// Read classifies frame b, received at nowNs (the receiver's clock, the
// same time the Receiver is given). For EndNew and EndStale it also
// returns the interval number and the End payload.
func (r *EndReader) Read(b []byte, nowNs int64) (k uint64, e End, st EndStatus) {
	f := &r.f
	if ParseFrame(b, f) != nil {
		return 0, End{}, EndForeign
	}
	if !r.auth.Verify(f) {
		r.unauth[0].Add(1)
		switch peerInsecure := f.Flags&FlagInsecure != 0; {
		case peerInsecure && r.auth.mac != nil:
			r.unauth[1].Add(1)
		case !peerInsecure && r.auth.mac == nil:
			r.unauth[2].Add(1)
		}
		return 0, End{}, EndForeign
	}
	if f.Direction != r.direction {
		return 0, End{}, EndNotMarker
	}
	// Hellos move the session rule too, exactly as in the Receiver.
	adm := r.guard.admit(f, nowNs)
	if adm == admitNew {
		r.lastK = 0
	}
	if f.Type != TypeEnd {
		if adm == admitNew {
			// A Hello of interval k follows End(k): the next End to flip
			// on is k+1's.
			r.lastK = f.Interval
		}
		return 0, End{}, EndNotMarker
	}
	if e.unmarshalFixed(f.Payload) != nil {
		return 0, End{}, EndNotMarker
	}
	if r.oneLane && e.Lane != r.lane && (adm == admitNew || adm == admitLive) {
		return f.Interval, e, EndOtherLane
	}
	switch adm {
	case admitNew:
	case admitLive:
		if f.Interval <= r.lastK {
			return f.Interval, e, EndStale
		}
	default:
		return f.Interval, e, EndStale
	}
	r.lastK = f.Interval
	return f.Interval, e, EndNew
}

// ControlCheck tells the sending worker which frames arriving from
// upstream would be taken for this appliance pair's own control traffic:
// those that parse as control frames and authenticate under the key (in
// insecure mode: every unkeyed control frame). Forwarding one into the
// segment would let anyone upstream replay recorded control frames at the
// peer; everything else of the control EtherType is a user's frame and is
// forwarded. It does not allocate; one per worker.
type ControlCheck struct {
	auth *Authenticator
	f    Frame
}

// NewControlCheck returns the check for a key (nil/empty with insecure).
func NewControlCheck(key []byte, insecure bool) (*ControlCheck, error) {
	a, err := newAuthenticatorMode(key, insecure)
	if err != nil {
		return nil, err
	}
	return &ControlCheck{auth: a}, nil
}

// Ours reports whether b is an authentic control frame of this key.
func (c *ControlCheck) Ours(b []byte) bool {
	return ParseFrame(b, &c.f) == nil && c.auth.Verify(&c.f)
}
