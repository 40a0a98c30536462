package synopsis

import (
	"fmt"

	"github.com/ldafwd/ldafwd/report"
)

// IP fragments and flows. A fragmented datagram's first fragment carries
// the L4 header and goes to its flow; the later fragments carry no ports,
// so the classifier puts them in the flow of their address pair and
// protocol with ports 0 — the pair's fragments flow, which holds the later
// fragments of every datagram between the two hosts. Attributing each of
// them to its first fragment's flow would take a table of datagrams
// (source, destination, protocol, IP identification) looked up per
// packet on the hot path, filled in arrival order that differs between
// the two ends (a later fragment may come first), with its own overflow
// and expiry to agree on; the sketch keeps no such state. So a flow line
// counts its whole packets and its first fragments, and the fragments
// flow's line counts the rest. A flow's own counts can then be exact
// while fragments of its datagrams were lost: ApplyFragments makes such
// lines invalid for loss, and marks every line of a pair that has a
// fragments flow with what it counts (FlowEstimate.Fragments), so a
// report says so beside its numbers.

// FragmentCount says how a flow line counts IP fragments
// (FlowEstimate.Fragments, set by ApplyFragments).
type FragmentCount uint8

const (
	// FragmentsNone: no fragments flow of the line's hosts was named in
	// the interval; a flow with ports counts its packets, and any first
	// fragments among them, as for every line.
	FragmentsNone FragmentCount = iota
	// FragmentsWholeAndFirst: a flow with ports whose hosts (same
	// protocol) have a fragments flow: the line counts its whole packets
	// and its datagrams' first fragments; their later fragments are in
	// FlowEstimate.FragmentsFlow, with every other datagram's of the pair.
	FragmentsWholeAndFirst
	// FragmentsLater: the fragments flow itself (ports 0): the later
	// fragments of every datagram between its hosts.
	FragmentsLater
)

// String is the value reports give the line's "fragments" field.
func (c FragmentCount) String() string {
	switch c {
	case FragmentsWholeAndFirst:
		return "whole_and_first"
	case FragmentsLater:
		return "later"
	}
	return ""
}

// fragmentPorts reports whether proto's flows have ports, so that ports
// 0/0 mean "later fragments" (ICMP's type and code 0/0 is an echo reply).
func fragmentPorts(proto byte) bool {
	switch proto {
	case 6, 17, 132, 136: // TCP, UDP, SCTP, UDP-Lite
		return true
	}
	return false
}

// ApplyFragments invalidates, among the estimates of one interval's flows
// (EstimateLDSFlows, EstimateLDSFlowsRepaired), each valid flow line whose
// address pair and protocol also have a fragments flow (ports 0) that lost
// packets or whose loss is not known (invalid): those later fragments may
// belong to this flow's datagrams, and which flow's they were cannot be
// told. A pair whose fragments flow is not in flows (no flow table named
// it) is left as it is: nothing says its later fragments were lost. It
// also sets every named line's Fragments (and FragmentsFlow) to what the
// line counts. Call it before TopFlows cuts the list.
func ApplyFragments(flows []FlowEstimate) {
	var rest map[FlowKeyBytes]int // pair key (ports zeroed) → its fragments flow
	for i := range flows {
		f := &flows[i]
		f.Fragments, f.FragmentsFlow = FragmentsNone, FlowKeyBytes{}
		if f.Named && fragmentPorts(f.Key[0]) && f.Key[2]|f.Key[3]|f.Key[4]|f.Key[5] == 0 {
			if rest == nil {
				rest = make(map[FlowKeyBytes]int)
			}
			rest[f.Key] = i
			f.Fragments = FragmentsLater
		}
	}
	if rest == nil {
		return
	}
	for i := range flows {
		f := &flows[i]
		if !f.Named || !fragmentPorts(f.Key[0]) {
			continue
		}
		pair := f.Key
		pair[2], pair[3], pair[4], pair[5] = 0, 0, 0, 0
		j, ok := rest[pair]
		if !ok || j == i {
			continue
		}
		f.Fragments, f.FragmentsFlow = FragmentsWholeAndFirst, pair
		if !f.Valid {
			continue
		}
		g := &flows[j]
		switch {
		case !g.Valid:
			f.Valid, f.Code = false, report.IPFragments
			f.Reason = "the later IP fragments between this flow's hosts (counted in their ports-0 flow) have no exact loss: some may be of this flow's datagrams; this line counts its whole packets and first fragments"
		case g.Lost > 0:
			f.Valid, f.Code = false, report.IPFragments
			f.Reason = fmt.Sprintf("%d later IP fragments between this flow's hosts (counted in their ports-0 flow) were lost: some may be of this flow's datagrams; this line counts its whole packets and first fragments", g.Lost)
		}
	}
}
