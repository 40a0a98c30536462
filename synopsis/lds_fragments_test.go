package synopsis

import (
	"testing"

	"github.com/ldafwd/ldafwd/report"
)

func fragFlow(a, b byte, sp, dp uint16, proto uint8, lost uint64, valid bool) FlowEstimate {
	var s, d [16]byte
	s[15], d[15] = a, b
	f := FlowEstimate{Key: PackFlowKey(s, d, sp, dp, proto, false), Named: true}
	f.Valid, f.Lost = valid, lost
	return f
}

// TestApplyFragments: a flow line is invalid for loss exactly when its
// hosts' fragments flow (same protocol, ports 0) lost packets or has no
// exact loss; other pairs, protocols without ports, and the fragments
// flow itself are left alone.
func TestApplyFragments(t *testing.T) {
	flows := []FlowEstimate{
		fragFlow(1, 2, 1000, 53, 17, 0, true),  // 0: pair 1>2 UDP, its fragments lost 2
		fragFlow(1, 2, 0, 0, 17, 2, true),      // 1: the fragments flow of 1>2 UDP
		fragFlow(1, 2, 1000, 80, 6, 0, true),   // 2: 1>2 TCP: no TCP fragments flow
		fragFlow(3, 4, 1000, 53, 17, 0, true),  // 3: pair 3>4, fragments lost none
		fragFlow(3, 4, 0, 0, 17, 0, true),      // 4
		fragFlow(5, 6, 1000, 53, 17, 1, true),  // 5: pair 5>6, fragments loss unknown
		fragFlow(5, 6, 0, 0, 17, 0, false),     // 6
		fragFlow(7, 8, 1000, 53, 17, 0, true),  // 7: no fragments flow named
		fragFlow(9, 10, 8, 0, 1, 0, true),      // 8: ICMP echo
		fragFlow(9, 10, 0, 0, 1, 3, true),      // 9: ICMP echo reply (type 0 code 0), not fragments
		fragFlow(2, 1, 53, 1000, 17, 0, true),  // 10: the reverse pair: not 1>2
		fragFlow(1, 2, 1001, 53, 17, 0, false), // 11: already invalid: keeps its cause
	}
	flows[11].Code = report.Extras
	ApplyFragments(flows)
	want := map[int]bool{0: false, 1: true, 2: true, 3: true, 4: true, 5: false, 6: false, 7: true, 8: true, 9: true, 10: true, 11: false}
	for i, v := range want {
		if flows[i].Valid != v {
			t.Errorf("flow %d: valid %v, want %v (%s)", i, flows[i].Valid, v, flows[i].Reason)
		}
	}
	for _, i := range []int{0, 5} {
		if flows[i].Code != report.IPFragments || flows[i].Reason == "" {
			t.Errorf("flow %d: code %v reason %q", i, flows[i].Code, flows[i].Reason)
		}
	}
	if flows[11].Code != report.Extras {
		t.Errorf("an invalid line's cause replaced: %v", flows[11].Code)
	}
	// What each line says it counts: the flows with ports of a pair that
	// has a fragments flow count whole packets and first fragments (valid
	// or not), and name that flow; the fragments flows count later ones.
	wantCount := map[int]FragmentCount{0: FragmentsWholeAndFirst, 1: FragmentsLater, 2: FragmentsNone, 3: FragmentsWholeAndFirst,
		4: FragmentsLater, 5: FragmentsWholeAndFirst, 6: FragmentsLater, 7: FragmentsNone, 8: FragmentsNone, 9: FragmentsNone,
		10: FragmentsNone, 11: FragmentsWholeAndFirst}
	for i, c := range wantCount {
		if flows[i].Fragments != c {
			t.Errorf("flow %d: fragments %q, want %q", i, flows[i].Fragments, c)
		}
		pair := flows[i].Key
		pair[2], pair[3], pair[4], pair[5] = 0, 0, 0, 0
		if c == FragmentsWholeAndFirst && flows[i].FragmentsFlow != pair {
			t.Errorf("flow %d: fragments flow %x, want its pair's %x", i, flows[i].FragmentsFlow, pair)
		}
	}
}
