package report

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
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
	Valid     bool    `json:"valid"`
	Reason    string  `json:"reason,omitempty"`
	Clock     string  `json:"clock,omitempty"`
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

// Writer writes JSON lines to one or more sinks (stdout and --report FILE).
// It is safe for concurrent use; NaN and Inf are written as null-free 0 with
// valid=false expected to be set by the caller.
type Writer struct {
	mu  sync.Mutex
	out []io.Writer
}

// NewWriter returns a Writer that copies every line to each of ws.
func NewWriter(ws ...io.Writer) *Writer { return &Writer{out: ws} }

// Write encodes v as one JSON line on every sink.
func (w *Writer) Write(v any) error {
	if iv, ok := v.(*Interval); ok {
		iv.Type = "interval"
		iv.MeanNs, iv.StddevNs, iv.MeanCINs = finite(iv.MeanNs), finite(iv.StddevNs), finite(iv.MeanCINs)
	}
	// No HTML escaping: flows and directions contain '>' ("6 a:1>b:2"),
	// which users grep for literally.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the newline
		return err
	}
	b := buf.Bytes()
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

// finite maps NaN and ±Inf, which JSON cannot carry, to 0; such numbers only
// occur in invalid intervals whose Reason explains them.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
