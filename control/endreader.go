package control

// EndStatus is what EndReader.Read says about a frame.
type EndStatus uint8

// End marker verdicts, for the receiving worker.
const (
	EndNotMarker EndStatus = iota // malformed, not ours, another direction, or not an End
	EndForged                     // an End whose tag does not verify: never flip on it
	EndStale                      // authentic, but not newer than the last End of its session (another lane's, a duplicate or a replay)
	EndNew                        // authentic and newer: flip here
)

// EndReader is the receiving worker's check of End markers in the hot
// path: ParseFrame, the tag, the direction, and a per-session monotonic
// interval guard, so a replayed or duplicated End(k) cannot flip the
// synopses twice. It does not allocate. Each worker owns one (it keeps HMAC
// state). It complements the Receiver, which still gets every control frame
// for the full checks and the counters.
type EndReader struct {
	auth      *Authenticator
	direction uint16
	f         Frame
	have      bool
	session   uint64
	last      uint64 // last interval returned as EndNew in session
}

// NewEndReader returns an EndReader for a receiver's key (nil/empty with
// insecure) and direction.
func NewEndReader(key []byte, insecure bool, direction uint16) (*EndReader, error) {
	a, err := newAuthenticatorMode(key, insecure)
	if err != nil {
		return nil, err
	}
	return &EndReader{auth: a, direction: direction}, nil
}

// Read classifies frame b. For EndNew and EndStale it also returns the
// interval number and the End payload. A new session id resets the guard:
// after a sender restart its End(1) flips even though an earlier session
// reached higher intervals (the Receiver, not the worker, refuses to go
// back to retired sessions).
func (r *EndReader) Read(b []byte) (k uint64, e End, st EndStatus) {
	f := &r.f
	if ParseFrame(b, f) != nil || f.Type != TypeEnd || f.Direction != r.direction {
		return 0, End{}, EndNotMarker
	}
	if !r.auth.Verify(f) {
		return 0, End{}, EndForged
	}
	if e.UnmarshalBinary(f.Payload) != nil {
		return 0, End{}, EndNotMarker
	}
	if r.have && f.Session == r.session && f.Interval <= r.last {
		return f.Interval, e, EndStale
	}
	r.have, r.session, r.last = true, f.Session, f.Interval
	return f.Interval, e, EndNew
}
