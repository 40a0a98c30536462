package report

import "strings"

// Code is the typed cause of a report line that is not valid: one of a
// small fixed set (Codes), each with the scope of what it leaves unknown
// (Scope) and a place in one precedence order (the order of the
// constants: the lower leads). The line's reason sentence says what was
// seen, with measured numbers; the code is what scripts and metric labels
// match on, so it never carries a number.
type Code uint8

// The codes, in precedence order: when a line has several causes, the
// first of them in this list leads its reason sentence and reason_code.
// Causes that leave nothing of the interval measured come first, then
// those of the session and the control channel, then the estimators'
// own, then the checks of the interval's boundaries and of the
// receiver.
const (
	_ Code = iota
	CaptureDamage
	Warmup
	NotRunning
	Stopped
	Recut
	Silent
	PeerMismatch
	Session
	ControlLost
	FragmentLost
	SynopsisLost
	Budget
	Decode
	ClassChange
	BanksDisagree
	NoPackets
	ExtrasUnchecked
	Extras
	// Stamps uncertain beyond the limit explain delays outside the range
	// (a receiver that polled late stamps frames early): they lead, so
	// that a busy host is not reported as clocks out of sync.
	StampsUncertain
	DelayBelowMin
	DelayAboveMax
	ClockStep
	FlowShared
	LossyCells
	FewSamples
	AllLost
	NextMissing
	PrevMissing
	Crossing
	LossUnverified
	ExactCrossed
	ReceiverDrops
	IPFragments
	numCodes
)

// Scope is what a cause leaves unknown: the line's loss, its delay, or
// both.
type Scope uint8

const (
	ScopeLoss  Scope = 1 << iota // sent, received and lost are not exact
	ScopeDelay                   // mean_ns, stddev_ns and mean_ci_ns are not to be trusted
	ScopeBoth  = ScopeLoss | ScopeDelay
)

// String is "loss", "delay" or "both".
func (s Scope) String() string {
	switch s {
	case ScopeLoss:
		return "loss"
	case ScopeDelay:
		return "delay"
	case ScopeBoth:
		return "both"
	}
	return "none"
}

// codeInfo is one row of the code table.
type codeInfo struct {
	name    string
	scope   Scope
	meaning string
}

// codeTable is the code table (docs/reports.md, docs/metrics.md), indexed
// by Code. A cause is scoped to the loss alone only where the code path
// that finds it has established the line's delay, and to the delay alone
// only where the loss checks (counts, extras, the boundary crossings) run
// all the same; where that is not so, both.
var codeTable = [numCodes]codeInfo{
	CaptureDamage:   {"capture_damage", ScopeBoth, "analyze: the captures are damaged or ambiguous around this interval"},
	Warmup:          {"warmup", ScopeBoth, "the receiver started during this interval: its copy misses the frames before its start"},
	NotRunning:      {"not_running", ScopeBoth, "the receiver was not running when this interval ended"},
	Stopped:         {"stopped", ScopeBoth, "the appliance stopped before the interval's other half arrived"},
	Recut:           {"recut", ScopeBoth, "a second cut of an interval already reported (the sender restarted within it)"},
	Silent:          {"silent", ScopeBoth, "nothing came from the sender for this interval"},
	PeerMismatch:    {"peer_mismatch", ScopeBoth, "the two ends are set up differently (synopsis configuration, queues, steering)"},
	Session:         {"session", ScopeBoth, "a sender restart, or a copy at either end that spans more than this interval"},
	ControlLost:     {"control_lost", ScopeBoth, "the interval's control frames (End marker, synopses) were lost or failed to reassemble"},
	FragmentLost:    {"fragment_lost", ScopeBoth, "this line's synopsis was lost on the segment or not sent (the interval's other parts are measured)"},
	SynopsisLost:    {"synopsis_lost", ScopeDelay, "this line's synopsis was lost on the segment or left out: no delay; its sent, received and lost come from the End markers' per-class counts"},
	Budget:          {"budget", ScopeBoth, "the control budget left this line's synopsis (or flow) out"},
	Decode:          {"decode", ScopeBoth, "the synopses could not be estimated against each other (did not decode or match, or a setting is out of range)"},
	ClassChange:     {"class_change", ScopeBoth, "packets changed measurement class inside the segment"},
	BanksDisagree:   {"banks_disagree", ScopeBoth, "the RDA's banks disagree after repair: a corrupted synopsis or timestamps"},
	NoPackets:       {"no_packets", ScopeBoth, "no packets in the interval (or of the flow)"},
	ExtrasUnchecked: {"extras_unchecked", ScopeBoth, "the receiver recorded packets the sender did not, and the delay could not be checked clear of them"},
	Extras:          {"extras", ScopeLoss, "the receiver recorded packets the sender did not (duplicated, injected, remarked, crossed in): each may hide a loss; the delay rests on buckets none entered"},
	DelayBelowMin:   {"delay_below_min", ScopeDelay, "delays below --min-delay (the receiver's clock is behind the sender's)"},
	DelayAboveMax:   {"delay_above_max", ScopeDelay, "delays above --max-delay"},
	ClockStep:       {"clock_step", ScopeDelay, "the sender's or the receiver's clock stepped during the interval: the stamps before and after the step are on different time bases"},
	FlowShared:      {"flow_shared", ScopeBoth, "an LDS flow's cells hold other flows' packets: its counts and delay are not its own"},
	LossyCells:      {"lossy_cells", ScopeBoth, "every cell of an LDS flow lost or reordered packets: nothing to measure it by"},
	FewSamples:      {"few_samples", ScopeDelay, "too few usable buckets or cells for a mean with a bound (loss too high for the synopsis), or too few samples for any quantile with one"},
	AllLost:         {"all_lost", ScopeDelay, "every packet of the flow, or every sampled packet, was lost: no delay to measure"},
	StampsUncertain: {"stamps_uncertain", ScopeDelay, "the timestamps are uncertain by more than --max-stamp-err allows"},
	NextMissing:     {"next_missing", ScopeLoss, "the next interval could not be checked for packets that arrived after this one's end"},
	PrevMissing:     {"prev_missing", ScopeLoss, "the previous interval could not be checked for packets that overtook this one's start"},
	Crossing:        {"crossing", ScopeLoss, "packets that crossed the interval's boundary could not be told from losses"},
	LossUnverified:  {"loss_unverified", ScopeLoss, "an extra packet could hide in the synopsis's lossy buckets with more than the allowed probability"},
	ExactCrossed:    {"exact_crossed", ScopeDelay, "the RDA's exact mean leaves out the packets that crossed the interval's boundary, and has no bound for them"},
	ReceiverDrops:   {"receiver_drops", ScopeLoss, "the receiving appliance's port dropped frames around this interval: they would count as loss"},
	IPFragments:     {"ip_fragments", ScopeLoss, "later IP fragments between an LDS flow's hosts, counted apart in their ports-0 flow, were lost: some may be of this flow's datagrams"},
}

// Codes is every code, in precedence order.
func Codes() []Code {
	cs := make([]Code, 0, numCodes-1)
	for c := Code(1); c < numCodes; c++ {
		cs = append(cs, c)
	}
	return cs
}

// String is the code's name: the reason_code field and the metrics'
// reason label ("" for the zero Code).
func (c Code) String() string {
	if c == 0 || c >= numCodes {
		return ""
	}
	return codeTable[c].name
}

// Scope is what the code leaves unknown.
func (c Code) Scope() Scope {
	if c == 0 || c >= numCodes {
		return ScopeBoth
	}
	return codeTable[c].scope
}

// Meaning is the code's one-line description (docs/reports.md).
func (c Code) Meaning() string {
	if c == 0 || c >= numCodes {
		return ""
	}
	return codeTable[c].meaning
}

// Cause is one reason a line is not valid: its code and the sentence
// that says what was seen.
type Cause struct {
	Code Code
	Why  string
}

// Verdict is the causes a line is not valid for, at most one per code;
// none: valid.
type Verdict struct {
	causes []Cause
}

// Add adds a cause; one of the same code already there keeps its
// sentence (the first found names it).
func (v *Verdict) Add(code Code, why string) {
	if code == 0 {
		code = Decode // a cause without a code is not valid either
	}
	if v.Has(code) {
		return
	}
	// A fresh array: copies of a line (analyze copies them by value)
	// must not share one.
	v.causes = append(v.causes[:len(v.causes):len(v.causes)], Cause{Code: code, Why: why})
}

// Remove removes the causes of the given codes (a later check answered
// them).
func (v *Verdict) Remove(codes ...Code) {
	var out []Cause // a fresh array, as Add
	for _, c := range v.causes {
		keep := true
		for _, code := range codes {
			keep = keep && c.Code != code
		}
		if keep {
			out = append(out, c)
		}
	}
	v.causes = out
}

// Has says whether the verdict holds a cause of code.
func (v Verdict) Has(code Code) bool {
	for _, c := range v.causes {
		if c.Code == code {
			return true
		}
	}
	return false
}

// Causes are the verdict's causes in precedence order.
func (v Verdict) Causes() []Cause {
	out := append([]Cause(nil), v.causes...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Code < out[j-1].Code; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Lead is the cause that leads (the first in precedence order); the zero
// Cause when there is none.
func (v Verdict) Lead() Cause {
	var lead Cause
	for _, c := range v.causes {
		if lead.Code == 0 || c.Code < lead.Code {
			lead = c
		}
	}
	return lead
}

// Valid says whether the verdict holds no cause.
func (v Verdict) Valid() bool { return len(v.causes) == 0 }

// Unknown is the union of the causes' scopes.
func (v Verdict) Unknown() Scope {
	var s Scope
	for _, c := range v.causes {
		s |= c.Code.Scope()
	}
	return s
}

// String lists the causes' codes in precedence order, "ok" for none.
func (v Verdict) String() string {
	if v.Valid() {
		return "ok"
	}
	var names []string
	for _, c := range v.Causes() {
		names = append(names, c.Code.String())
	}
	return strings.Join(names, ",")
}

// Invalidate adds a cause to the line's verdict and renders it.
func (iv *Interval) Invalidate(code Code, why string) {
	iv.verdict.Add(code, why)
	iv.render()
}

// Clear removes the causes of the given codes from the line's verdict
// and renders it.
func (iv *Interval) Clear(codes ...Code) {
	iv.verdict.Remove(codes...)
	iv.render()
}

// SetVerdict replaces the line's verdict (a line filled from an
// estimate) and renders it.
func (iv *Interval) SetVerdict(v Verdict) {
	iv.verdict = Verdict{causes: append([]Cause(nil), v.causes...)}
	iv.render()
}

// Verdict is the line's causes.
func (iv *Interval) Verdict() Verdict { return iv.verdict }

// render writes the verdict into the fields the JSON line carries:
// valid, reason (the leading cause's sentence), reason_code, loss_valid
// and delay_valid.
func (iv *Interval) render() {
	lead := iv.verdict.Lead()
	unknown := iv.verdict.Unknown()
	iv.Valid = iv.verdict.Valid()
	iv.Reason, iv.ReasonCode = lead.Why, lead.Code.String()
	iv.LossValid, iv.DelayValid = unknown&ScopeLoss == 0, unknown&ScopeDelay == 0
}
