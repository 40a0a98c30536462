package dataplane_test

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestLanePriorityTaggedControl: a receiving lane takes priority-tagged
// control frames (fragments, parity, requests) off the wire like untagged
// ones, hands them to the control side byte for byte, flips on the
// untagged End markers, and forwards every data frame; the control side
// then reassembles the interval from what the lane handed over.
func TestLanePriorityTaggedControl(t *testing.T) {
	cl, _ := classifier.NewClassifier(nil)
	syn := dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: cl.NumClasses()}
	rbuf, err := dataplane.NewSynBuffer(syn)
	if err != nil {
		t.Fatal(err)
	}
	var in, out *dataplane.RingLink
	for _, l := range []**dataplane.RingLink{&in, &out} {
		if *l, err = dataplane.NewRingLink("", dataplane.LinkConfig{Size: 1024, Pool: 4096}); err != nil {
			t.Fatal(err)
		}
	}
	toCtl, _ := dataplane.NewFrameQueue(256, 2048)
	endr, _ := control.NewEndReader(nil, true, 1)
	rcv, err := dataplane.NewLane(dataplane.LaneConfig{Rx: in.B(), Tx: out.A(), Role: dataplane.RoleReceiver, Classifier: cl,
		Buffer: rbuf, EndReader: endr, ToControl: toCtl})
	if err != nil {
		t.Fatal(err)
	}
	parts := []control.PartKey{{MEC: 0, Kind: control.KindLDA}}
	s, err := control.NewSender(control.SenderConfig{Insecure: true, MTU: 576, Direction: 1, Priority: control.PCP(6),
		Hello: control.Hello{IntervalNs: 1e9, ConfigHash: 9, Lanes: 1, MECs: []string{"all"}, Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	s.SetLoss(0.2)
	w, _ := s.NewEndWriter(0)
	gen := traffic.MustGen(traffic.GenConfig{Flows: 16})
	var sent [][]byte // control frames in the order they go
	payloads := map[uint64][]byte{}
	data, tagged := 0, 0
	pk := make([]*dataplane.Packet, 1)
	put := func(b []byte) {
		if in.A().Alloc(pk) != 1 {
			t.Fatal("ring pool empty")
		}
		pk[0].Data = append(pk[0].Data[:0], b...)
		if in.A().TxBurst(pk) != 1 {
			t.Fatal("ring full")
		}
	}
	for k := uint64(5); k <= 7; k++ {
		for i := 0; i < 20; i++ {
			data++
			put(gen.Frame(nil, uint64(data)))
		}
		// Signed times near the ring's receive clock: the End reader
		// adopts a session only on a fresh End or Hello.
		ts := time.Now().UnixNano()
		ctl := [][]byte{w.AppendEnd(nil, k, &control.End{StartNs: ts - 1e6, EndNs: ts, Frames: 20, Bytes: 1})}
		payloads[k] = bytes.Repeat([]byte{byte(k)}, 1500)
		fr, err := s.AppendInterval(nil, k, ts, []control.Part{{PartKey: parts[0], Payload: payloads[k]}})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fr {
			ctl = append(ctl, append([]byte(nil), f...))
		}
		req, _ := s.AppendExchange(nil, control.TypeRequest, k, 0, control.KindRDA, 0x1234, uint32(k), []byte("why"))
		ctl = append(ctl, append([]byte(nil), req[0]...))
		for _, f := range ctl {
			if binary.BigEndian.Uint16(f[12:]) == 0x8100 {
				tagged++
			}
			sent = append(sent, f)
			put(f)
		}
		for rcv.Poll() {
		}
		rcv.Drain()
	}
	if tagged < 9 {
		t.Fatalf("%d tagged control frames sent", tagged)
	}
	fwd := 0
	for {
		n := out.B().RxBurst(pk)
		if n == 0 {
			break
		}
		if control.IsControlFrame(pk[0].Data) {
			t.Errorf("control frame forwarded: % x", pk[0].Data[:18])
		}
		fwd++
		out.B().Free(pk[:n])
	}
	if fwd != data {
		t.Errorf("%d data frames sent, %d forwarded", data, fwd)
	}
	if got := rcv.Stats.ControlStripped.Load(); got != uint64(len(sent)) {
		t.Errorf("%d control frames stripped, %d sent", got, len(sent))
	}
	if got := rcv.Stats.EndsSeen.Load(); got != 3 {
		t.Errorf("%d End markers seen, want 3", got)
	}
	r, err := control.NewReceiver(control.ReceiverConfig{Insecure: true, Direction: 1, ConfigHash: 9, MaxClockSkew: control.NoClockCheck})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		f, _, ok := toCtl.Get()
		if !ok {
			if i != len(sent) {
				t.Fatalf("the control side got %d frames, %d sent", i, len(sent))
			}
			break
		}
		if !bytes.Equal(f, sent[i]) {
			t.Fatalf("control frame %d differs from the one sent", i)
		}
		if err := r.Consume(f, 0); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		toCtl.Done()
	}
	got := 0
	for _, res := range r.Results(nil) {
		if b := res.Bundle; b != nil {
			if !bytes.Equal(b.Payloads[parts[0]], payloads[b.Interval]) {
				t.Errorf("interval %d: payload differs", b.Interval)
			}
			got++
		}
	}
	if got != 3 || len(r.Exchanges(nil)) != 3 {
		t.Errorf("%d bundles, %d requests; want 3 and 3", got, len(r.Exchanges(nil)))
	}
}
