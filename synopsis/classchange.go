package synopsis

import "strconv"

// ClassChanges looks across one interval's estimates of one direction
// and one synopsis, es[m] for MEC m (nil where the class has no
// estimate; names[m] its name), for packets that changed class inside
// the segment, and returns the reason each affected class's line must be
// invalid ("" for the others).
//
// A router that rewrites DSCP (or a switch that retags a VLAN) moves
// packets from the class the sender put them in into another one. The
// sender's class then counts them as lost, and the class they moved into
// holds packets its sender never recorded: Extra, which the estimators
// prove bucket by bucket. Extra alone already makes that class invalid
// (it may be duplication or injection); loss elsewhere in the same
// interval may be those very packets, so every class showing loss is
// invalid too, with a reason naming remarking, and the class with extras
// gets the same reason instead of a bare "extra packets". Extras an
// estimate proves without counting them (ExtraBuckets: an RDA decode's
// residual cells that hold receiver-only packets, none of them decoded)
// count as extras too: the packets remarked into a class are what leaves
// its decode incomplete. With a single class, or extras and no loss
// anywhere else, nothing changes.
//
// Pure over its arguments: the appliance's controller and analyze call it
// on the lines they are about to report.
func ClassChanges(es []*Estimate, names []string) []string {
	var why []string
	if len(es) < 2 {
		return why
	}
	lossy := func(e *Estimate) bool { return e != nil && (e.Lost > 0 || e.Sent > e.Received) }
	name := func(m int) string {
		if m < len(names) {
			return names[m]
		}
		return strconv.Itoa(m)
	}
	// extras is what e proves it holds beyond its sender's packets: its
	// counted extras, else at least one for cells that prove uncounted
	// ones.
	extras := func(e *Estimate) uint64 {
		switch {
		case e == nil:
			return 0
		case e.Extra > 0:
			return e.Extra
		case e.ExtraBuckets > 0:
			return 1
		}
		return 0
	}
	// The class with the most extras names the move in every reason.
	into := -1
	for m, e := range es {
		if extras(e) > 0 && (into < 0 || extras(e) > extras(es[into])) {
			into = m
		}
	}
	if into < 0 {
		return why
	}
	// A class with loss is suspect when some other class has extras: the
	// packets it lost may be there. (Not only the class with the most
	// extras: a class that lost packets to remarking may itself hold the
	// most extras, its own duplicates.)
	extraElsewhere := func(m int) bool {
		for o, e := range es {
			if o != m && extras(e) > 0 {
				return true
			}
		}
		return false
	}
	suspect := false
	for m, e := range es {
		if lossy(e) && extraElsewhere(m) {
			suspect = true
			break
		}
	}
	if !suspect {
		return why
	}
	why = make([]string, len(es))
	moved := "packets changed class inside the segment (DSCP remarked, VLAN retagged?): " +
		strconv.FormatUint(extras(es[into]), 10) + "+ in class " + name(into) + " that the sender classed elsewhere"
	for m, e := range es {
		switch {
		case e == nil:
		case extras(e) > 0:
			why[m] = moved
		case lossy(e) && extraElsewhere(m):
			why[m] = moved + "; the " + strconv.FormatUint(lossOf(e), 10) + " lost here may be among them"
		}
	}
	return why
}

func lossOf(e *Estimate) uint64 {
	if e.Sent > e.Received {
		return e.Sent - e.Received
	}
	return e.Lost
}
