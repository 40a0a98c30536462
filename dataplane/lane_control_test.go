package dataplane_test

import (
	"encoding/binary"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
)

// TestControlFrameVLANAgreement: for every number of VLAN tags the
// classifier walks, a control frame it marks as control is one the control
// parser reads too (the receiving lane strips it and flips on it), so no
// tagged End marker is taken for control and then dropped as unparsable.
func TestControlFrameVLANAgreement(t *testing.T) {
	s, err := control.NewSender(control.SenderConfig{Insecure: true, Direction: 1,
		Hello: control.Hello{IntervalNs: 1e9, Lanes: 1, MECs: []string{"all"}}})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := s.NewEndWriter(0)
	end := w.AppendEnd(nil, 5, &control.End{StartNs: 1, EndNs: 2})
	for tags := 0; tags <= control.MaxVLANTags+1; tags++ {
		b := append([]byte(nil), end[:12]...)
		for i := 0; i < tags; i++ {
			tpid := []uint16{0x8100, 0x88a8, 0x9100}[i%3]
			b = binary.BigEndian.AppendUint16(b, tpid)
			b = binary.BigEndian.AppendUint16(b, uint16(i+1))
		}
		b = append(b, end[12:]...)
		var m classifier.Meta
		classifier.Parse(b, &m)
		var f control.Frame
		perr := control.ParseFrame(b, &f)
		isCtl := m.Flags&classifier.FlagControl != 0
		if isCtl != (perr == nil) {
			t.Errorf("%d tags: classifier control %v, control parser %v", tags, isCtl, perr)
		}
		rd, _ := control.NewEndReader(nil, true, 1)
		if _, _, st := rd.Read(b, 2); isCtl && st != control.EndNew {
			t.Errorf("%d tags: End marker read as %d", tags, st)
		}
	}
}
