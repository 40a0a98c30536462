package appliance

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/internal/eachtest"
	"github.com/ldafwd/ldafwd/ring"
	"github.com/rs/zerolog"
)

// TestShipperReplies: with the lane taking one frame a poll (as a busy
// worker under congestion does) and far more reply frames due than it
// can carry, the shipper
//   - numbers every frame as it hands it over, so the receiver sees one
//     increasing sequence: none too old, none counted lost;
//   - sends a shipment made while the replies wait behind at most
//     replyRingDepth of them, and its second copy copySpacing after its
//     first left, not after the replies;
//   - drops the replies queued longer than an interval unsent, and counts
//     them.
func TestShipperReplies(t *testing.T) {
	key := bytes.Repeat([]byte{3}, control.KeyLen)
	parts := []control.PartKey{{MEC: 0, Kind: control.KindLDA}}
	s, err := control.NewSender(control.SenderConfig{Key: key, MTU: 1500, Session: 0xC0FFEE, Direction: 1, NumberAtSend: true,
		Hello: control.Hello{IntervalNs: 1e9, ConfigHash: 5, Lanes: 1, Clock: "CLOCK_REALTIME", MECs: []string{"all"}, Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := control.NewReceiver(control.ReceiverConfig{Key: key, Direction: 1, ConfigHash: 5, MaxClockSkew: control.NoClockCheck})
	if err != nil {
		t.Fatal(err)
	}
	inject, err := ring.NewSPSC[[]byte](1024)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Interval: time.Second, Log: zerolog.Nop()}
	sh := newShipper(cfg, s, inject)
	end, err := s.NewEndWriter(0)
	if err != nil {
		t.Fatal(err)
	}

	// 3 000 reply frames due at t=0 (twelve requests' answers, paced and
	// due), built first.
	const ms = uint64(time.Millisecond)
	var rep int
	for id := uint32(1); id <= 12; id++ {
		fs, err := s.AppendExchangeSized(nil, control.TypeReply, 7, 0, control.KindRDA, 0xABC, id, bytes.Repeat([]byte{9}, 250*58), 58)
		if err != nil || len(fs) != 250 {
			t.Fatalf("%d reply frames, %v", len(fs), err)
		}
		for _, f := range fs {
			sh.queueReply(replyFrame{frame: bytes.Clone(f), expires: uint64(time.Second)})
		}
		rep += len(fs)
	}

	// The session is adopted at its first End marker (interval 7's).
	if err := r.Consume(end.AppendEnd(nil, 7, &control.End{StartNs: 7e9, EndNs: 8e9}), 0); err != nil {
		t.Fatal(err)
	}
	var (
		lastSeq       uint64
		replyFrames   int // reply frames the lane sent
		sentAt        = map[int]uint64{}
		firstCopyLeft uint64
	)
	lane := func(now uint64) {
		var one [1][]byte
		if inject.DequeueBurst(one[:]) != 1 {
			return
		}
		var fr control.Frame
		if err := control.ParseFrame(one[0], &fr); err != nil {
			t.Fatal(err)
		}
		if fr.Seq <= lastSeq {
			t.Fatalf("frame numbered %d sent after %d", fr.Seq, lastSeq)
		}
		lastSeq = fr.Seq
		if err := r.Consume(one[0], int64(now)); err != nil {
			t.Fatalf("receiver: %v", err)
		}
		if fr.Type == control.TypeReply {
			replyFrames++
			return
		}
		// The shipment's frames: copy 0 is FragCount+1 frames (a Hello,
		// the fragments); the first of copy 1 follows.
		sentAt[len(sentAt)] = now
	}
	// The controller ticks every millisecond; the lane takes one frame a
	// poll, a poll every 500 µs (2 000 frames a second).
	const poll = ms / 2
	var shipped bool
	var shipFrames int
	for now := uint64(0); now < 1500*ms; now += poll {
		if now%ms == 0 {
			if now == 100*ms {
				// Interval 8 ends: its End marker, then its copies.
				e := end.AppendEnd(nil, 8, &control.End{StartNs: 8e9, EndNs: 9e9})
				if err := r.Consume(e, int64(now)); err != nil {
					t.Fatal(err)
				}
				sh.frame(8, int64(now), 2, []control.Part{{PartKey: parts[0], Payload: bytes.Repeat([]byte{1}, 20000)}})
				shipFrames = len(sh.pending)
				shipped = true
			}
			sh.dueCopies(now)
			sh.handOver(now)
			sh.dueCopies(now)
		}
		lane(now)
		if shipped && firstCopyLeft == 0 && len(sentAt) == shipFrames {
			firstCopyLeft = now
		}
	}
	if !shipped || len(sentAt) != 2*shipFrames {
		t.Fatalf("%d shipment frames sent, want 2 copies of %d", len(sentAt), shipFrames)
	}
	// The first copy waited behind at most the ring's replies (and the
	// frames the lane took in the tick it was made).
	if wait := sentAt[0] - 100*ms; wait > uint64(replyRingDepth+4)*poll {
		t.Errorf("the shipment's first frame left %v after it was made, behind the replies", time.Duration(wait))
	}
	// The second copy: copySpacing after the first left (and the ticks
	// and replies around it), not once the replies drained.
	if gap := sentAt[shipFrames] - firstCopyLeft; gap < uint64(sh.copySpacing()) || gap > uint64(sh.copySpacing())+uint64(replyRingDepth+8)*poll {
		t.Errorf("second copy left %v after the first, want about %v", time.Duration(gap), sh.copySpacing())
	}
	// Replies went while the lane had room, until they expired at 1 s;
	// the rest were dropped unsent.
	if got := sh.expired.Load(); got == 0 || int(got)+replyFrames != rep {
		t.Errorf("%d reply frames sent, %d expired, of %d", replyFrames, got, rep)
	}
	if len(sh.replies) != 0 {
		t.Errorf("%d replies still waiting after they expired", len(sh.replies))
	}
	c := r.Counters()
	if c.TooOld != 0 || c.Replayed != 0 || c.Bundles != 1 {
		t.Errorf("receiver: %d too old, %d replayed, %d bundles, want 0, 0, 1", c.TooOld, c.Replayed, c.Bundles)
	}
	if snt, got := r.ControlFrames(); snt != got {
		t.Errorf("receiver counts %d of %d control frames: %d lost", got, snt, snt-got)
	}
}

// TestRepairCountersEach: Each names every RepairCounters field once and
// reports the field it names (each field set alone, by reflection, so a
// field added without a name fails here).
func TestRepairCountersEach(t *testing.T) {
	eachtest.Check(t, reflect.TypeOf(RepairCounters{}).NumField(), func(i int, v uint64) func(func(string, uint64)) {
		var c RepairCounters
		reflect.ValueOf(&c).Elem().Field(i).SetUint(v)
		return c.Each
	})
}
