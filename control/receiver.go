package control

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ReceiverConfig configures a Receiver. Zero limits take the defaults.
type ReceiverConfig struct {
	// Key is the pre-shared HMAC key; nil or empty means insecure mode,
	// which must be asked for explicitly with Insecure.
	Key       []byte
	Insecure  bool
	Direction uint16 // frames of another direction are rejected
	// ConfigHash is the hash of our own synopsis configurations; a sender
	// announcing another makes every interval fail with
	// ReasonConfigMismatch. 0 disables the check.
	ConfigHash uint64
	// Config is our own configuration in Hello.Config form; with it a
	// mismatch's failure detail names the settings that differ.
	Config string
	// Timeout is how long an interval may stay incomplete after its first
	// frame, in ns (default 2 s). It must cover the sender's pacing of
	// one interval's frames plus the path delay.
	Timeout int64
	// MaxIntervals bounds the intervals in flight (default 4); the oldest
	// gives way to a newer one.
	MaxIntervals int
	// MaxBytes bounds the payload bytes held in flight, all intervals
	// together (default 16 MiB).
	MaxBytes int
	// MaxFragments bounds one part's fragment count (default 4096, ≈ 5.9 MB
	// per part at MTU 1500).
	MaxFragments int
	// MaxParts bounds the parts, and separately the End lanes, of one
	// interval (default 1024).
	MaxParts int
	// MaxClockSkew (ns) bounds how far the signed time of the frame that
	// starts a new session (a Hello's SentNs or an End's EndNs) may lie
	// from its receive time; see sessionGuard for the whole rule. 0 means
	// DefaultMaxClockSkew; NoClockCheck turns the check off (tests, old
	// captures). A session is live only after a fresh, newer Hello or End:
	// a restarted sender's first fragments before it are dropped.
	MaxClockSkew int64
}

// Receiver limits' defaults.
const (
	DefaultTimeout      = int64(2e9) // ns
	DefaultMaxIntervals = 4
	DefaultMaxBytes     = 16 << 20
	DefaultMaxFragments = 4096
	DefaultMaxParts     = 1024
)

// retiredSessions is how many previous session ids a Receiver refuses to
// go back to, so replayed frames of an older (authenticated) session
// cannot drag it away from the live one.
const retiredSessions = 8

// Receive errors, one per reject reason; ParseFrame's errors are returned
// as they are. Each increments its counter.
var (
	ErrBadTag         = errors.New("control: tag does not authenticate the frame")
	ErrWrongDirection = errors.New("control: frame for another direction")
	ErrStaleSession   = errors.New("control: frame of a retired session")
	ErrReplayed       = errors.New("control: sequence number seen before (duplicate or replay)")
	ErrTooOld         = errors.New("control: sequence number older than the replay window")
	ErrNoFreshHello   = errors.New("control: new session not yet adopted: waiting for its fresh hello or end")
	ErrStaleHello     = errors.New("control: signed time of a new session's hello or end is outside the clock-skew window")
	ErrOlderSession   = errors.New("control: new session's hello or end is not newer than the live session (a replay)")
)

// Counters are the Receiver's counts by outcome, for logs and Prometheus.
type Counters struct {
	Accepted        uint64 // authenticated frames that passed the replay window
	NotControl      uint64 // EtherType is not ours
	Truncated       uint64 // shorter than the header or its announced payload
	BadMagic        uint64
	BadVersion      uint64
	BadHeader       uint64 // impossible type, flags, kind, seq or fragment fields
	BadPayload      uint64 // an authenticated Hello/End payload that does not decode
	BadTag          uint64 // forged, corrupted, wrong key, or keyed/insecure mismatch
	WrongDirection  uint64
	StaleSession    uint64 // frames of a session the receiver has moved on from
	UnknownSession  uint64 // fragments of a new session before its fresh Hello or End
	StaleHello      uint64 // a new session's Hello or End signed outside ±MaxClockSkew
	OlderSession    uint64 // a new session's Hello or End signed before the live session's latest: a replay
	SessionRestarts uint64 // new session ids adopted after the first
	Replayed        uint64 // seq seen before: a network duplicate or a replay
	TooOld          uint64 // seq behind the replay window
	OutOfOrder      uint64 // accepted, but behind the highest seq seen
	Duplicate       uint64 // a fragment or End already held, under a new seq
	Late            uint64 // for an interval already finished, or far behind
	UnknownPart     uint64 // a fragment for a part the Hello does not announce
	Inconsistent    uint64 // fragments of one part disagree on their count, or a Hello on the configuration
	Oversize        uint64 // over MaxFragments, MaxParts or MaxBytes
	Evicted         uint64 // intervals pushed out by MaxIntervals
	Timeout         uint64 // intervals failed by Expire
	Bundles         uint64 // intervals completed
	Failures        uint64 // intervals failed, any reason
	Exchanges       uint64 // requests and replies reassembled (exchange.go)
	// Rebuilt counts parts whose lost data fragments were rebuilt from
	// their parity (parity.go), RebuiltFragments those fragments.
	Rebuilt          uint64
	RebuiltFragments uint64
	// Of BadTag, the frames whose insecure flag differs from this end's:
	// the peer runs --insecure and we have a key (PeerInsecure), or the
	// peer has a key and we run --insecure (PeerKeyed). The rest of BadTag
	// is a wrong key, forgery or corruption.
	PeerInsecure uint64
	PeerKeyed    uint64
}

const (
	cAccepted = iota
	cNotControl
	cTruncated
	cBadMagic
	cBadVersion
	cBadHeader
	cBadPayload
	cBadTag
	cWrongDirection
	cStaleSession
	cUnknownSession
	cStaleHello
	cOlderSession
	cSessionRestarts
	cReplayed
	cTooOld
	cOutOfOrder
	cDuplicate
	cLate
	cUnknownPart
	cInconsistent
	cOversize
	cEvicted
	cTimeout
	cBundles
	cFailures
	cExchanges
	cRebuilt
	cRebuiltFragments
	cPeerInsecure
	cPeerKeyed
	numCounters
)

// counterSet is written by the Receiver's goroutine and read by anyone
// (Prometheus scrapes), hence atomic.
type counterSet [numCounters]atomic.Uint64

func (c *counterSet) inc(i int) { c[i].Add(1) }

// Receiver validates control frames of one direction, follows the sender's
// session, reassembles each interval's synopses and emits Results. It is
// for one goroutine (the control goroutine); only Counters may be called
// concurrently.
type Receiver struct {
	cfg    ReceiverConfig
	auth   *Authenticator
	guard  sessionGuard
	replay replayFilter
	asm    reassembler
	xasm   exchangeAsm
	out    []Result
	c      counterSet
	f      Frame
	seqs   seqLoss
}

// NewReceiver validates cfg and returns a Receiver.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	auth, err := newAuthenticatorMode(cfg.Key, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	def := func(v *int, d int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 1 {
			return fmt.Errorf("control: %s %d must be ≥ 1", name, *v)
		}
		return nil
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("control: timeout %d ns must be > 0", cfg.Timeout)
	}
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = DefaultMaxClockSkew
	}
	if cfg.MaxClockSkew < 0 && cfg.MaxClockSkew != NoClockCheck {
		return nil, fmt.Errorf("control: max clock skew %d ns must be > 0 (or NoClockCheck)", cfg.MaxClockSkew)
	}
	for _, e := range []error{
		def(&cfg.MaxIntervals, DefaultMaxIntervals, "max intervals"),
		def(&cfg.MaxBytes, DefaultMaxBytes, "max bytes"),
		def(&cfg.MaxFragments, DefaultMaxFragments, "max fragments"),
		def(&cfg.MaxParts, DefaultMaxParts, "max parts"),
	} {
		if e != nil {
			return nil, e
		}
	}
	if cfg.MaxFragments > 0xFFFF {
		cfg.MaxFragments = 0xFFFF
	}
	r := &Receiver{cfg: cfg, auth: auth, guard: sessionGuard{skew: cfg.MaxClockSkew}}
	r.asm.cfg = &r.cfg
	r.asm.direction = cfg.Direction
	r.asm.c = &r.c
	r.asm.out = &r.out
	r.asm.reset(0, 0)
	return r, nil
}

// Consume takes one received control frame (an Ethernet frame, possibly
// VLAN-tagged) at receiver time nowNs. It returns nil when the frame was
// accepted, otherwise the reason it was dropped; either way the matching
// counter moved and any interval that finished because of it is waiting in
// Results. frame is not retained.
func (r *Receiver) Consume(frame []byte, nowNs int64) error {
	f := &r.f
	if err := ParseFrame(frame, f); err != nil {
		r.c.inc(parseCounter(err))
		return err
	}
	if !r.auth.Verify(f) {
		r.c.inc(cBadTag)
		// Which end is insecure is not secret (the flag is on the wire):
		// counting it lets the operator be told the fix.
		switch peerInsecure := f.Flags&FlagInsecure != 0; {
		case peerInsecure && r.auth.mac != nil:
			r.c.inc(cPeerInsecure)
		case !peerInsecure && r.auth.mac == nil:
			r.c.inc(cPeerKeyed)
		}
		return ErrBadTag
	}
	// From here the frame is authentic: the sender (or a replay of it)
	// wrote it.
	if f.Direction != r.cfg.Direction {
		r.c.inc(cWrongDirection)
		return ErrWrongDirection
	}
	had := r.guard.have
	switch r.guard.admit(f, nowNs) {
	case admitRetired:
		r.c.inc(cStaleSession)
		return ErrStaleSession
	case admitUntimed:
		r.c.inc(cUnknownSession)
		return ErrNoFreshHello
	case admitUnfresh:
		r.c.inc(cStaleHello)
		return ErrStaleHello
	case admitOlder:
		r.c.inc(cOlderSession)
		return ErrOlderSession
	case admitNew:
		r.adopt(had)
	}
	switch r.replay.check(f.Seq) {
	case seqReplayed:
		r.c.inc(cReplayed)
		return ErrReplayed
	case seqTooOld:
		r.c.inc(cTooOld)
		return ErrTooOld
	case seqReordered:
		r.c.inc(cOutOfOrder)
	}
	r.replay.accept(f.Seq)
	r.seqs.add(f.Seq)
	r.c.inc(cAccepted)
	n := len(frame)
	switch f.Type {
	case TypeHello:
		h := new(Hello)
		if err := h.UnmarshalBinary(f.Payload); err != nil {
			r.c.inc(cBadPayload)
			return err
		}
		r.asm.addHello(h, f.Interval, n)
	case TypeEnd:
		var e End
		if err := e.UnmarshalBinary(f.Payload); err != nil {
			r.c.inc(cBadPayload)
			return err
		}
		r.asm.addEnd(f.Interval, &e, nowNs, n)
	case TypeFragment:
		r.asm.addFragment(f, nowNs, n)
	case TypeParity:
		r.asm.addParity(f, nowNs, n)
	case TypeRequest, TypeReply:
		r.xasm.add(f, nowNs, n, &r.c)
	}
	return nil
}

// adopt starts the guard's new session: the previous one (if any) has been
// retired and its intervals in flight fail with ReasonSessionRestart; the
// replay window and the Hello start afresh.
func (r *Receiver) adopt(had bool) {
	if had {
		r.c.inc(cSessionRestarts)
	}
	r.asm.reset(r.guard.session, ReasonSessionRestart)
	r.xasm.inflight = nil
	r.replay = replayFilter{}
	r.seqs.restart()
}

func parseCounter(err error) int {
	switch err {
	case ErrNotControl:
		return cNotControl
	case ErrTruncated:
		return cTruncated
	case ErrBadMagic:
		return cBadMagic
	case ErrBadVersion:
		return cBadVersion
	case ErrBadPayload:
		return cBadPayload
	}
	return cBadHeader
}

// Expire fails, with the reason they are stuck on, every interval that has
// waited Timeout or longer at receiver time nowNs. Call it periodically
// (e.g. every interval tick) from the same goroutine as Consume.
func (r *Receiver) Expire(nowNs int64) {
	r.asm.expire(nowNs)
	r.xasm.expire(nowNs, r.cfg.Timeout)
}

// Results appends the intervals finished since the last call to dst, in
// the order they finished, and forgets them.
func (r *Receiver) Results(dst []Result) []Result {
	dst = append(dst, r.out...)
	clear(r.out)
	r.out = r.out[:0]
	return dst
}

// seqLoss counts the live session's control frames by sequence number:
// the sender numbers every control frame of the session 1, 2, 3 … (End
// markers, Hellos, fragments, parity, requests and replies alike), so the
// numbers between the first and the highest accepted that never arrived
// are the frames the segment (or the sender's port) lost.
type seqLoss struct {
	lo, hi uint64 // first and highest accepted (0: none yet)
	got    uint64 // accepted, distinct
	base   uint64 // sent and got of the sessions before (cumulative)
	baseGt uint64
	// seen: the accepted numbers among the latest seenBits up to hi
	// (bit n%seenBits); mark: the highest at the last ControlFramesSettled
	// (0: none of the live session).
	seen [seenBits / 64]uint64
	mark uint64
}

// seenBits is how far below the highest number seqLoss remembers which
// arrived: the frames a control side sends in a few intervals.
const seenBits = 8192

func (q *seqLoss) add(seq uint64) {
	if q.lo == 0 {
		q.lo = seq
	}
	if seq > q.hi {
		if seq-q.hi >= seenBits {
			clear(q.seen[:])
		} else {
			for n := q.hi + 1; n < seq; n++ {
				q.seen[n%seenBits/64] &^= 1 << (n % 64)
			}
		}
	}
	q.lo, q.hi = min(q.lo, seq), max(q.hi, seq)
	if q.hi-seq < seenBits {
		q.seen[seq%seenBits/64] |= 1 << (seq % 64)
	}
	q.got++
}

// settled is the live session's numbered and arrived frames up to mark,
// counted now; all of them when mark is past the remembered range.
func (q *seqLoss) settled() (sent, got uint64) {
	if q.lo == 0 || q.mark < q.lo {
		return 0, 0
	}
	h := min(q.mark, q.hi)
	if q.hi-h >= seenBits {
		return q.hi - q.lo + 1, q.got
	}
	above := uint64(0)
	for n := h + 1; n <= q.hi; n++ {
		above += q.seen[n%seenBits/64] >> (n % 64) & 1
	}
	return h - q.lo + 1, q.got - above
}

func (q *seqLoss) restart() {
	if q.lo != 0 {
		q.base += q.hi - q.lo + 1
		q.baseGt += q.got
	}
	q.lo, q.hi, q.got, q.mark = 0, 0, 0, 0
	clear(q.seen[:])
}

// ControlFrames returns how many control frames the peer's sender
// numbered and how many of them arrived, cumulative over the sessions
// this Receiver followed (within a session: from the first frame it
// accepted to the highest): sent − got is what the segment lost, so the
// difference of two calls is the control-frame loss between them. A
// frame arriving late after later ones counts as lost until it arrives.
func (r *Receiver) ControlFrames() (sent, got uint64) {
	q := &r.seqs
	sent, got = q.base, q.baseGt
	if q.lo != 0 {
		sent += q.hi - q.lo + 1
		got += q.got
	}
	return sent, got
}

// ControlFramesSettled is ControlFrames counted only up to the highest
// number the previous call saw (cumulative like it), then moves that mark
// to the highest now. A frame built before a later one but sent after it
// (a paced reply, a fragment waiting behind the data while the lane
// sends an End marker) is then never counted lost while it is on its
// way: the counts lag one call behind, by the frames then in flight.
func (r *Receiver) ControlFramesSettled() (sent, got uint64) {
	q := &r.seqs
	s, g := q.settled()
	q.mark = q.hi
	return q.base + s, q.baseGt + g
}

// Session returns the current session id and whether there is one.
func (r *Receiver) Session() (uint64, bool) { return r.guard.session, r.guard.have }

// Hello returns the current session's configuration, nil until its Hello
// has arrived.
func (r *Receiver) Hello() *Hello { return r.asm.hello }

// InFlight returns the number of intervals being reassembled and the
// payload bytes they hold.
func (r *Receiver) InFlight() (intervals, bytes int) { return len(r.asm.inflight), r.asm.bytes }

// OldestInFlight returns the oldest interval being reassembled that is
// at least from (ok false: none). Its bundle or its failure is still to
// come: a caller that reports intervals in order holds the later ones.
func (r *Receiver) OldestInFlight(from uint64) (k uint64, ok bool) {
	for j := range r.asm.inflight {
		if j >= from && (!ok || j < k) {
			k, ok = j, true
		}
	}
	return k, ok
}

// Each calls fn with a stable snake_case name and the value of every
// counter, in declaration order, so exporters (Prometheus, logs) need no
// list of their own.
func (c Counters) Each(fn func(name string, v uint64)) {
	for _, x := range []struct {
		n string
		v uint64
	}{
		{"accepted", c.Accepted}, {"not_control", c.NotControl}, {"truncated", c.Truncated},
		{"bad_magic", c.BadMagic}, {"bad_version", c.BadVersion}, {"bad_header", c.BadHeader},
		{"bad_payload", c.BadPayload}, {"bad_tag", c.BadTag}, {"wrong_direction", c.WrongDirection},
		{"stale_session", c.StaleSession}, {"unknown_session", c.UnknownSession}, {"stale_hello", c.StaleHello}, {"older_session", c.OlderSession},
		{"session_restarts", c.SessionRestarts}, {"replayed", c.Replayed}, {"too_old", c.TooOld},
		{"out_of_order", c.OutOfOrder}, {"duplicate", c.Duplicate}, {"late", c.Late},
		{"unknown_part", c.UnknownPart}, {"inconsistent", c.Inconsistent}, {"oversize", c.Oversize},
		{"evicted", c.Evicted}, {"timeout", c.Timeout}, {"bundles", c.Bundles}, {"failures", c.Failures}, {"exchanges", c.Exchanges},
		{"rebuilt", c.Rebuilt}, {"rebuilt_fragments", c.RebuiltFragments},
		{"peer_insecure", c.PeerInsecure}, {"peer_keyed", c.PeerKeyed},
	} {
		fn(x.n, x.v)
	}
}

// Counters returns a snapshot of the counters. It is safe to call from any
// goroutine.
func (r *Receiver) Counters() Counters {
	c := &r.c
	return Counters{
		Accepted: c[cAccepted].Load(), NotControl: c[cNotControl].Load(), Truncated: c[cTruncated].Load(),
		BadMagic: c[cBadMagic].Load(), BadVersion: c[cBadVersion].Load(), BadHeader: c[cBadHeader].Load(),
		BadPayload: c[cBadPayload].Load(), BadTag: c[cBadTag].Load(), WrongDirection: c[cWrongDirection].Load(),
		StaleSession: c[cStaleSession].Load(), UnknownSession: c[cUnknownSession].Load(), StaleHello: c[cStaleHello].Load(), OlderSession: c[cOlderSession].Load(),
		SessionRestarts: c[cSessionRestarts].Load(),
		Replayed:        c[cReplayed].Load(), TooOld: c[cTooOld].Load(), OutOfOrder: c[cOutOfOrder].Load(),
		Duplicate: c[cDuplicate].Load(), Late: c[cLate].Load(), UnknownPart: c[cUnknownPart].Load(),
		Inconsistent: c[cInconsistent].Load(), Oversize: c[cOversize].Load(), Evicted: c[cEvicted].Load(),
		Timeout: c[cTimeout].Load(), Bundles: c[cBundles].Load(), Failures: c[cFailures].Load(),
		Exchanges: c[cExchanges].Load(), Rebuilt: c[cRebuilt].Load(), RebuiltFragments: c[cRebuiltFragments].Load(), PeerInsecure: c[cPeerInsecure].Load(), PeerKeyed: c[cPeerKeyed].Load(),
	}
}

// Incomplete appends to dst the parts of interval k that have not arrived
// whole, while k is being reassembled with the Hello and every lane's End
// marker and a frame of a later interval has arrived (ok false otherwise:
// not in flight, already emitted or failed, an End marker still missing,
// or what is missing may still be on its way). A receiver that can fetch a part from its
// sender by other means (an exchange) asks for these.
func (r *Receiver) Incomplete(k uint64, dst []PartKey) ([]PartKey, bool) {
	return r.asm.incomplete(k, dst)
}

// SupplyPart completes part key of interval k, still in flight, with its
// payload obtained from the sender by other means (the caller has
// authenticated it: an exchange reply of the live session). The interval
// is emitted, in Results, once that makes it whole; fragments of the
// part that arrive later count as duplicates. It reports whether the part
// was taken (false: k not in flight, the part whole already, not
// announced, or over the memory limit).
func (r *Receiver) SupplyPart(k uint64, key PartKey, payload []byte) bool {
	return r.asm.supply(k, key, payload)
}
