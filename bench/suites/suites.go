package suites

import (
	"sort"
	"time"

	"github.com/ldafwd/ldafwd/bench"
	"github.com/ldafwd/ldafwd/report"
)

// Options are what `ldafwd bench` passes every suite.
type Options struct {
	Rounds   int           // rounds per measurement; rounds are interleaved and the median kept
	Duration time.Duration // duration of each forwarding run, split over the rounds
	Frames   int           // distinct frames per per-packet round
	Size     int           // frame size in bytes (per-packet suite)
}

// Suite produces bench records; each suite registers itself in init.
type Suite struct {
	Name string
	Run  func(o *Options, emit func(report.Bench)) error
}

var suites []Suite

func register(name string, run func(o *Options, emit func(report.Bench)) error) {
	suites = append(suites, Suite{name, run})
}

// All returns the suites sorted by name.
func All() []Suite {
	s := append([]Suite(nil), suites...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	return s
}

func init() { register("perpacket", benchPerPacket) }

// benchPerPacket measures the per-packet cost in one run: the full
// per-packet measurement (identity hash + MEC classify + synopsis update)
// against the identity hash alone, and their ratio. Every record also carries, in extra, its ratio to bare
// XXH64 over invariant bytes gathered beforehand (pkt-xxhash-window), the
// stricter yardstick earlier rounds held the code to (docs/performance.md).
func benchPerPacket(o *Options, emit func(report.Bench)) error {
	frames, err := bench.Frames(o.Frames, o.Size, 1024)
	if err != nil {
		return err
	}
	stages, err := bench.PerPacketStages(frames)
	if err != nil {
		return err
	}
	ms := bench.Compare(stages, frames, o.Rounds)
	xx, _ := bench.Find(ms, "xxhash-window")
	id, _ := bench.Find(ms, "identity-hash")
	for _, m := range ms {
		b := report.Bench{Name: "pkt-" + m.Name, Mpps: m.Mpps, NsPerPkt: m.NsPerPkt,
			Extra: map[string]any{"rounds_ns_per_pkt": m.Rounds}}
		switch m.Name {
		case "xxhash-window":
		case "identity-hash":
			// What locating and gathering the invariant bytes add to
			// hashing them.
			b.Baseline, b.Ratio = "pkt-xxhash-window", m.NsPerPkt/xx.NsPerPkt
		default:
			b.Baseline, b.Ratio = "pkt-identity-hash", m.NsPerPkt/id.NsPerPkt
			b.Extra["ratio_xxhash_window"] = m.NsPerPkt / xx.NsPerPkt
		}
		emit(b)
	}
	return nil
}
