package control

import "encoding/binary"

// DefaultMaxClockSkew is how far (ns) the signed sender time of a frame
// that would start a new session may lie from the receive time. The two
// appliances' clocks are synchronised (one-way delay needs it), so the gap
// is the path delay, the sender's queueing and the clocks' offset: well
// under a second on any segment this product measures. A recording older
// than this cannot start a session.
const DefaultMaxClockSkew = int64(1e9)

// NoClockCheck as ReceiverConfig.MaxClockSkew turns the freshness check
// off: only the monotonic rule (a new session must be newer than the live
// one) remains. For tests and replays of old captures, never for a live
// segment.
const NoClockCheck = int64(-1)

// frameTime returns the sender's signed wall-clock time in f: a Hello's
// SentNs or an End's EndNs. Fragments carry no time. It reads the fields in
// place (no allocation), so the receiving worker and the Receiver take the
// same decision on the same frame.
func frameTime(f *Frame) (int64, bool) {
	switch f.Type {
	case TypeHello:
		if len(f.Payload) >= 8 {
			return int64(binary.BigEndian.Uint64(f.Payload[0:])), true
		}
	case TypeEnd:
		if validEndLen(len(f.Payload)) {
			return int64(binary.BigEndian.Uint64(f.Payload[8:])), true
		}
	}
	return 0, false
}

// admission is sessionGuard.admit's verdict on one authentic frame.
type admission uint8

const (
	admitLive    admission = iota // a frame of the live session
	admitNew                      // a fresh, newer frame of a new session: it is live now
	admitRetired                  // a frame of a session that was live before
	admitUntimed                  // a new session's frame without a time (fragment): not adopted
	admitUnfresh                  // a new session's time outside ±skew of the receive time
	admitOlder                    // a new session's time not after the live session's newest
)

// sessionGuard decides which session is live. It is the one rule the
// Receiver (control goroutine) and every EndReader (receiving workers)
// apply, each on its own copy, to the same frames in the same order, so
// they agree on the live session without sharing state:
//
//   - A frame of the live session is the live session's.
//   - Another session becomes live only through an authentic Hello or End
//     whose signed time is within ±skew of the receive time (fresh) and
//     later than every fresh time the live session has signed (newer).
//     The live session is retired.
//   - A retired session (the last retiredSessions) never comes back, and
//     fragments never start a session.
//
// A recording is thus useless once it is older than the skew, and even a
// fresh one cannot displace a session that has signed anything later: a
// replayed frame of an older session, retired or not, is refused while the
// live session keeps talking.
type sessionGuard struct {
	skew    int64 // ns; < 0: no freshness check
	have    bool
	session uint64
	newest  int64 // latest fresh signed time of the live session
	retired [retiredSessions]uint64
	nRet    int
}

func (g *sessionGuard) fresh(t, now int64) bool {
	if g.skew < 0 {
		return true
	}
	d := t - now
	return d <= g.skew && d >= -g.skew
}

// admit applies the rule to authentic frame f received at now (ns, the
// receiver's clock) and, for admitNew, makes f's session live.
func (g *sessionGuard) admit(f *Frame, now int64) admission {
	t, timed := frameTime(f)
	if g.have && f.Session == g.session {
		if timed && t > g.newest && g.fresh(t, now) {
			g.newest = t
		}
		return admitLive
	}
	for i := 0; i < g.nRet; i++ {
		if g.retired[i] == f.Session {
			return admitRetired
		}
	}
	switch {
	case !timed:
		return admitUntimed
	case !g.fresh(t, now):
		return admitUnfresh
	case g.have && t <= g.newest:
		return admitOlder
	}
	if g.have {
		copy(g.retired[1:], g.retired[:retiredSessions-1])
		g.retired[0] = g.session
		g.nRet = min(g.nRet+1, retiredSessions)
	}
	g.have, g.session, g.newest = true, f.Session, t
	return admitNew
}
