package report

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"sync"
)

// SchemaVersion is the `schema` field of every report line: the version
// of the contract in docs/reports.md and report/schema.json. It grows when
// a field changes meaning or type; adding a field does not change it.
const SchemaVersion = 1

// Interval is a `"type":"interval"` report line (docs/reports.md). The JSON names
// are a contract with users' scripts: add fields, never rename.
type Interval struct {
	Type      string  `json:"type"`              // always "interval"
	Segment   string  `json:"segment,omitempty"` // the measured segment's name (run, demo: --segment-name)
	Interval  int64   `json:"interval"`
	StartNs   int64   `json:"start_ns"`
	EndNs     int64   `json:"end_ns"`
	Direction string  `json:"direction"`
	MEC       string  `json:"mec"`
	Synopsis  string  `json:"synopsis"`
	Flow      string  `json:"flow,omitempty"`
	Sent      uint64  `json:"sent"`
	Received  uint64  `json:"received"`
	Lost      uint64  `json:"lost"`
	MeanNs    float64 `json:"mean_ns"`
	StddevNs  float64 `json:"stddev_ns"`
	MeanCINs  float64 `json:"mean_ci_ns"`
	Conf      float64 `json:"confidence,omitempty"`
	Samples   uint64  `json:"samples"`
	Usable    int     `json:"usable_buckets"`
	Buckets   int     `json:"total_buckets"`
	// Valid, Reason, ReasonCode, LossValid and DelayValid are rendered
	// from the line's verdict (verdict.go): set them with Invalidate,
	// Clear or SetVerdict, not by hand. Valid is true only when both
	// LossValid and DelayValid are.
	Valid      bool   `json:"valid"`
	Reason     string `json:"reason,omitempty"`      // the leading cause's sentence
	ReasonCode string `json:"reason_code,omitempty"` // the leading cause's code (Code.String)
	LossValid  bool   `json:"loss_valid"`            // no cause leaves sent, received and lost inexact
	DelayValid bool   `json:"delay_valid"`           // no cause leaves the delay estimate untrusted
	Clock      string `json:"clock,omitempty"`
	// Control traffic that carried this interval's synopses in-band
	// (Hello, End markers, fragments; Ethernet frames without FCS).
	ControlFrames int `json:"control_frames,omitempty"`
	ControlBytes  int `json:"control_bytes,omitempty"`
	// Timestamp uncertainty included in mean_ci_ns: the sender's plus the
	// receiver's (mean over the interval's frames of how far a stamp may
	// be from the frame's real departure or arrival), ns.
	StampErrNs float64 `json:"stamp_err_ns,omitempty"`
	// Config is the synopsis configuration the interval was measured
	// with (live appliance: as both ends agreed it).
	Config string `json:"config,omitempty"`
	// Its two parts: the sender's transmit stamps, the receiver's.
	TxStampErrNs float64 `json:"tx_stamp_err_ns,omitempty"`
	RxStampErrNs float64 `json:"rx_stamp_err_ns,omitempty"`
	// StampSource is where the receiver's arrival stamps came from: "hw"
	// (the NIC), "xdp" (the kernel, as the XDP program redirected the
	// frame), "poll" (the worker's clock when it polled), "port" (a port
	// that stamps frames itself: ring, pcap); "xdp+poll" and the like when
	// some frames had no port stamp.
	StampSource string `json:"stamp_source,omitempty"`

	// Ground truth, present only where the exact truth is known.
	TrueMeanNs   *float64 `json:"true_mean_ns,omitempty"`
	TrueStddevNs *float64 `json:"true_stddev_ns,omitempty"`
	TrueLost     *uint64  `json:"true_lost,omitempty"`

	// Extra carries synopsis-specific fields (RDA decode, LDS weights…).
	Extra map[string]any `json:"extra,omitempty"`

	// SampleDelaysNs: a sample line's sampled one-way delays, ascending,
	// for the metrics' histograms; nil where the line's delay is not
	// valid. Not written: the quantiles are the line's record of them.
	SampleDelaysNs []int64 `json:"-"`
	// SampleFlows: a sample line's received samples with the receiver's
	// flow of each, for the per-flow quantiles of the interval's flow
	// lines (analyze.FlowQuantiles); nil where the receiver's sample
	// keeps no flows or the line did not match. Not written.
	SampleFlows *SampleFlows `json:"-"`

	verdict Verdict // the causes the line is not valid for (verdict.go)
}

// Microburst is one burst of losses, listed in an interval line's
// extra "microbursts" (docs/reports.md): losses whose send times are at
// most the microburst gap apart, at least the microburst minimum of them.
type Microburst struct {
	StartNs uint64 `json:"start_ns"` // send time of the first loss, ns since the Unix epoch (sender's clock)
	EndNs   uint64 `json:"end_ns"`   // send time of the last loss
	Losses  int    `json:"losses"`   // lost packets in the burst
}

// Quantile is one delay quantile of a sample line's extra "quantiles"
// (docs/reports.md, docs/sample.md): the estimate and the bounds the true
// quantile lies within at the line's confidence, with the order
// statistics' ranks they are; or, where the sample cannot bound it or the
// line is not valid, null numbers and the reason.
type Quantile struct {
	EstimateNs *int64 `json:"estimate_ns"`
	LoNs       *int64 `json:"lo_ns"`
	HiNs       *int64 `json:"hi_ns"`
	LoRank     int    `json:"lo_rank,omitempty"`
	HiRank     int    `json:"hi_rank,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// SampleFlows are the received samples of one sample line with their
// flows (Interval.SampleFlows).
type SampleFlows struct {
	// Threshold both ends' samples were cut to (synopsis.Sample.Threshold):
	// a packet is kept when its Select is below it.
	Threshold uint64
	// Delays: one per received sample, ascending by delay.
	Delays []FlowDelay
}

// FlowDelay is one sampled delay with the flow the receiver recorded it
// under.
type FlowDelay struct {
	FlowHash uint64 // the receiver's flow hash (the LDS lines' flow_hash)
	Select   uint32 // the top 32 bits of the packet's remixed identity: what a deeper level compares
	DelayNs  int64
}

// Port is a `"type":"port"` report line.
type Port struct {
	Type      string  `json:"type"`              // "port"
	Segment   string  `json:"segment,omitempty"` // the measured segment's name (run: --segment-name)
	Port      string  `json:"port"`              // "a" or "b"
	Name      string  `json:"name,omitempty"`
	RxPackets uint64  `json:"rx_packets"`
	TxPackets uint64  `json:"tx_packets"`
	RxDropped uint64  `json:"rx_dropped"`
	TxDropped uint64  `json:"tx_dropped"`
	ElapsedS  float64 `json:"elapsed_s"`
	RxMpps    float64 `json:"rx_mpps"`
	TxMpps    float64 `json:"tx_mpps"`
	Final     bool    `json:"final,omitempty"`
	Excluded  uint64  `json:"excluded,omitempty"` // received here, forwarded, measured in no class (link-local: docs/mec.md)
}

// Bench is a `"type":"bench"` report line.
type Bench struct {
	Type     string         `json:"type"` // "bench"
	Name     string         `json:"name"`
	Mpps     float64        `json:"mpps"`
	NsPerPkt float64        `json:"ns_per_pkt"`
	Baseline string         `json:"baseline,omitempty"`
	Ratio    float64        `json:"ratio,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`
}

// DemoSummary is the `"type":"demo_summary"` line `demo` ends with: the
// generator's and the segment's exact counts beside how the reports did.
type DemoSummary struct {
	Type                    string  `json:"type"`                       // "demo_summary"
	Generated               uint64  `json:"generated"`                  // frames the generator sent
	Delivered               uint64  `json:"delivered"`                  // frames the sink received
	SegmentLost             uint64  `json:"segment_lost"`               // frames the impaired segment dropped (the truth the reports estimate)
	ApplianceDropped        uint64  `json:"appliance_dropped"`          // frames the appliances could not transmit
	Intervals               int     `json:"intervals"`                  // LDA lines (a>b, every class) with traffic, the one the receiver started in excluded
	IdleIntervals           int     `json:"idle_intervals"`             // LDA lines without traffic, or the one the receiver started in (partial by construction)
	Valid                   int     `json:"valid_intervals"`            // of those with traffic, reported valid
	LossExact               int     `json:"loss_exact_intervals"`       // of the valid ones, whose lost equals the true loss
	MeanInBound             int     `json:"mean_in_bound_intervals"`    // of the valid ones, whose true mean lies within mean_ns ± mean_ci_ns
	Confidence              float64 `json:"confidence"`                 // the confidence level of those bounds
	Duplicated              uint64  `json:"duplicated"`                 // frames the segment duplicated
	Reordered               uint64  `json:"reordered"`                  // frames the segment held back behind the next one
	Remarked                uint64  `json:"remarked"`                   // frames the segment remarked to another DSCP
	LinkLocalSent           uint64  `json:"link_local_sent"`            // link-local frames the generator sent
	LinkLocalConsumed       uint64  `json:"link_local_consumed"`        // of them, consumed by the segment
	LinkLocalOriginated     uint64  `json:"link_local_originated"`      // link-local frames the segment sent toward ldafwd#2
	UnmeasuredSender        uint64  `json:"unmeasured_sender"`          // frames ldafwd#1 forwarded without measuring (link-local)
	UnmeasuredReceiver      uint64  `json:"unmeasured_receiver"`        // frames ldafwd#2 forwarded without measuring
	ControlBytesPerInterval float64 `json:"control_bytes_per_interval"` // in-band control bytes per interval a→b, every copy
	Synopses                string  `json:"synopses"`                   // --synopsis
	ControlCopies           int     `json:"control_copies"`             // --control-copies
}

// Status is a `"type":"status"` line: `run`'s peer watchdog writes one
// whenever its verdict changes (docs/reports.md, docs/run.md).
type Status struct {
	Type     string          `json:"type"`              // "status"
	Segment  string          `json:"segment,omitempty"` // --segment-name
	TimeNs   int64           `json:"time_ns"`           // when the verdict changed, ns since the Unix epoch
	Status   string          `json:"status"`            // "ok" or "degraded"
	Problems []StatusProblem `json:"problems"`          // what is wrong, empty when ok
}

// StatusProblem is one finding of the watchdog.
type StatusProblem struct {
	Check    string   `json:"check"`              // peer_silent, peer_auth, peer_config, clock, measurement or wiring
	Reason   string   `json:"reason"`             // what was seen and what to do
	Settings []string `json:"settings,omitempty"` // peer_config: the settings that differ
}

// MarshalJSON writes the line with null, not a number, where there is no
// estimate: mean_ns, stddev_ns and mean_ci_ns of a line that is not valid
// or has no delay sample (an average over lines must not take them in),
// of a sample line (its delays are its quantiles: the LDA's line of the
// class has the mean), and stddev_ns of an LDS flow line (the LDS
// estimates no per-flow spread). NaN and ±Inf, which JSON cannot carry, are null as well.
func (iv Interval) MarshalJSON() ([]byte, error) {
	type plain Interval // no MarshalJSON: no recursion
	if iv.Valid {
		// A line built by hand as valid (no verdict) is valid for both.
		iv.LossValid, iv.DelayValid = true, true
	}
	noDelay := !iv.Valid || iv.Samples == 0 || iv.Synopsis == "sample"
	num := func(f float64, none bool) *float64 {
		if none || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return &f
	}
	// The outer fields shadow plain's of the same JSON name. No HTML
	// escaping here either (Encode's setting does not reach inside).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		plain
		MeanNs   *float64 `json:"mean_ns"`
		StddevNs *float64 `json:"stddev_ns"`
		MeanCINs *float64 `json:"mean_ci_ns"`
	}{plain(iv), num(iv.MeanNs, noDelay), num(iv.StddevNs, noDelay || iv.Synopsis == "lds"), num(iv.MeanCINs, noDelay)})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// Writer writes JSON lines to one or more sinks (stdout and --report FILE).
// It is safe for concurrent use. Every line it writes carries the schema
// version (SchemaVersion) right after its type.
type Writer struct {
	mu  sync.Mutex
	out []io.Writer
}

// NewWriter returns a Writer that copies every line to each of ws.
func NewWriter(ws ...io.Writer) *Writer { return &Writer{out: ws} }

// Write encodes v, a struct with a "type" field first, as one JSON line
// on every sink.
func (w *Writer) Write(v any) error {
	if iv, ok := v.(*Interval); ok {
		iv.Type = "interval"
	}
	b, err := Encode(v)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var first error
	for _, o := range w.out {
		if _, err := o.Write(b); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Encode is one report line of v, newline included: JSON without HTML
// escaping (flows and directions contain '>', "6 a:1>b:2", which users
// grep for literally), with "schema":SchemaVersion after the leading
// "type" member.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the newline
		return nil, err
	}
	return withSchema(buf.Bytes()), nil
}

var typePrefix = []byte(`{"type":"`)

// withSchema inserts the schema member after the type member of an
// encoded object (type values are plain words: no escaped quote).
func withSchema(b []byte) []byte {
	if !bytes.HasPrefix(b, typePrefix) {
		return b
	}
	end := bytes.IndexByte(b[len(typePrefix):], '"')
	if end < 0 {
		return b
	}
	at := len(typePrefix) + end + 1
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:at]...)
	out = append(out, `,"schema":`...)
	out = strconv.AppendInt(out, SchemaVersion, 10)
	return append(out, b[at:]...)
}
