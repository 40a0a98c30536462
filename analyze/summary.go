package analyze

// Summary is the last JSON line of `ldafwd analyze`: what was compared,
// what was left out and why, so that a reader of the interval lines can
// tell how much of the two captures they cover.
type Summary struct {
	Type                  string   `json:"type"` // "analyze_summary"
	Intervals             int      `json:"intervals"`
	SenderFrames          uint64   `json:"sender_frames"`
	ReceiverFrames        uint64   `json:"receiver_frames"`
	SenderMalformed       uint64   `json:"sender_malformed"`
	ReceiverMalformed     uint64   `json:"receiver_malformed"`
	SenderSnapped         uint64   `json:"sender_snapped"`
	ReceiverSnapped       uint64   `json:"receiver_snapped"`
	SenderSnapExcluded    uint64   `json:"sender_snap_excluded"`
	ReceiverSnapExcluded  uint64   `json:"receiver_snap_excluded"`
	SenderControl         uint64   `json:"sender_control"`
	ReceiverControl       uint64   `json:"receiver_control"`
	SenderLinkLocal       uint64   `json:"sender_link_local"`
	ReceiverLinkLocal     uint64   `json:"receiver_link_local"`
	Matched               uint64   `json:"matched"`
	MatchedShare          float64  `json:"matched_share"`
	SenderAmbiguous       uint64   `json:"sender_ambiguous"`
	ReceiverAmbiguous     uint64   `json:"receiver_ambiguous"`
	Crossed               uint64   `json:"crossed"`
	ExtraReceived         uint64   `json:"extra_received"`
	RangeStartNs          uint64   `json:"range_start_ns"`
	RangeEndNs            uint64   `json:"range_end_ns"`
	TrimmedSenderBefore   uint64   `json:"trimmed_sender_before"`
	TrimmedSenderAfter    uint64   `json:"trimmed_sender_after"`
	TrimmedReceiverBefore uint64   `json:"trimmed_receiver_before"`
	TrimmedReceiverAfter  uint64   `json:"trimmed_receiver_after"`
	SenderDisordered      uint64   `json:"sender_disordered"`
	ReceiverDisordered    uint64   `json:"receiver_disordered"`
	MaxBackStepNs         uint64   `json:"max_back_step_ns"`
	Damage                []string `json:"damage,omitempty"`
}

// NewSummary is st as a summary line.
func NewSummary(st Stats) *Summary {
	s := &Summary{Type: "analyze_summary", Intervals: st.Intervals,
		SenderFrames: st.SenderFrames, ReceiverFrames: st.ReceiverFrames,
		SenderMalformed: st.SenderMalformed, ReceiverMalformed: st.ReceiverMalformed,
		SenderSnapped: st.SenderSnapped, ReceiverSnapped: st.ReceiverSnapped,
		SenderSnapExcluded: st.SenderSnapExcluded, ReceiverSnapExcluded: st.ReceiverSnapExcluded,
		SenderControl: st.SenderControl, ReceiverControl: st.ReceiverControl,
		SenderLinkLocal: st.SenderLinkLocal, ReceiverLinkLocal: st.ReceiverLinkLocal,
		Matched: st.Matched, MatchedShare: st.MatchedShare,
		SenderAmbiguous: st.SenderAmbiguous, ReceiverAmbiguous: st.ReceiverAmbiguous,
		Crossed: st.Crossed, ExtraReceived: st.ExtraReceived,
		RangeStartNs: st.RangeStartNs, RangeEndNs: st.RangeEndNs,
		TrimmedSenderBefore: st.TrimmedSenderBefore, TrimmedSenderAfter: st.TrimmedSenderAfter,
		TrimmedReceiverBefore: st.TrimmedReceiverBefore, TrimmedReceiverAfter: st.TrimmedReceiverAfter,
		SenderDisordered: st.SenderDisordered, ReceiverDisordered: st.ReceiverDisordered, MaxBackStepNs: st.MaxBackStepNs}
	for _, d := range st.Damage {
		s.Damage = append(s.Damage, d.Error())
	}
	return s
}
