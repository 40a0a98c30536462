package control

import (
	"crypto/sha256"
	"testing"
)

// newTestSender returns a keyed Sender with lanes End lanes and the given
// parts (MEC 0 "all", MEC 1 "voice").
func newTestSender(t testing.TB, mtu, lanes int, parts []PartKey) *Sender {
	t.Helper()
	return newTestSenderKey(t, mtu, lanes, parts, testKey, 0)
}

func newTestSenderKey(t testing.TB, mtu, lanes int, parts []PartKey, key []byte, session uint64) *Sender {
	t.Helper()
	s, err := NewSender(SenderConfig{Key: key, Insecure: len(key) == 0, MTU: mtu, Session: session, Direction: 1,
		Hello: Hello{IntervalNs: 1e9, ConfigHash: 77, Lanes: uint16(lanes), Clock: "CLOCK_REALTIME",
			MECs: []string{"all", "voice"}, Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTestSenderPriority is newTestSender with session id session (0:
// random) and priority p.
func newTestSenderPriority(t testing.TB, mtu, lanes int, parts []PartKey, session uint64, p Priority) *Sender {
	t.Helper()
	s, err := NewSender(SenderConfig{Key: testKey, MTU: mtu, Session: session, Direction: 1, Priority: p,
		Hello: Hello{IntervalNs: 1e9, ConfigHash: 77, Lanes: uint16(lanes), Clock: "CLOCK_REALTIME",
			MECs: []string{"all", "voice"}, Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newTestReceiver(t testing.TB, mod func(*ReceiverConfig)) *Receiver {
	t.Helper()
	// Most tests feed frames at made-up receive times: no freshness check
	// unless the test sets a skew (the session rule's tests do).
	cfg := ReceiverConfig{Key: testKey, Direction: 1, ConfigHash: 77, MaxClockSkew: NoClockCheck}
	if mod != nil {
		mod(&cfg)
	}
	r, err := NewReceiver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// intervalFrames returns every frame of interval k in send order: one End
// per lane, then the Hello and the fragments.
func intervalFrames(t testing.TB, s *Sender, k uint64, parts []Part) [][]byte {
	t.Helper()
	return intervalFramesAt(t, s, k, parts, 0)
}

// intervalFramesAt is intervalFrames with every signed time (End, Hello)
// shifted by base ns.
func intervalFramesAt(t testing.TB, s *Sender, k uint64, parts []Part, base int64) [][]byte {
	t.Helper()
	var out [][]byte
	for l := uint16(0); l < s.cfg.Hello.Lanes; l++ {
		w, err := s.NewEndWriter(l)
		if err != nil {
			t.Fatal(err)
		}
		frames := 1000*k + uint64(l)
		e := End{StartNs: base + int64(k)*1e9, EndNs: base + int64(k+1)*1e9, Frames: frames, Bytes: 64000 * k,
			Classes: []uint64{frames / 3, frames - frames/3}}
		out = append(out, w.AppendEnd(nil, k, &e))
	}
	fr, err := s.AppendInterval(nil, k, base+int64(k+1)*1e9, parts)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, fr...)
}

// payloadFor is deterministic content for (interval, part, size).
func payloadFor(k uint64, p PartKey, n int) []byte {
	b := make([]byte, n)
	x := k*0x9E3779B97F4A7C15 + uint64(p.MEC)<<8 + uint64(p.Kind) + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

func consumeAll(t testing.TB, r *Receiver, frames [][]byte, now int64) {
	t.Helper()
	for _, f := range frames {
		if err := r.Consume(f, now); err != nil {
			t.Fatalf("consume: %v", err)
		}
	}
}

// referenceHMAC is HMAC-SHA256 written out from RFC 2104 with crypto/sha256
// only, the naive twin of Authenticator.
func referenceHMAC(key, msg []byte) []byte {
	var ipad, opad [64]byte
	copy(ipad[:], key)
	copy(opad[:], key)
	for i := range ipad {
		ipad[i] ^= 0x36
		opad[i] ^= 0x5c
	}
	inner := sha256.Sum256(append(ipad[:], msg...))
	outer := sha256.Sum256(append(opad[:], inner[:]...))
	return outer[:]
}
