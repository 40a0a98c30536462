package bench

import (
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"math"
	"runtime"
	"sort"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Frames returns n valid frames (IPv4/IPv6 × UDP/TCP over many flows) of the
// given size, generated once, for per-packet benchmarks.
func Frames(n, size, flows int) ([][]byte, error) {
	g, err := traffic.NewGen(traffic.GenConfig{Flows: flows, Size: size})
	if err != nil {
		return nil, err
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = g.Frame(make([]byte, size), uint64(i)*0x9e3779b97f4a7c15)
	}
	return out, nil
}

// Stage is one per-packet pipeline measured over a frame set: it processes
// every frame once per call and returns something the compiler cannot drop.
type Stage struct {
	Name string
	Run  func(frames [][]byte) uint64
}

// PerPacketStages are the stages of the per-packet cost question, cheapest first:
// XXH64 over a pre-gathered invariant window (xxhash-window), the identity
// hash alone (identity-hash: locate the invariant bytes, gather, hash —
// the baseline), Parse (identity, flow key and flow hash), and the
// full per-packet measurement (identity + MEC classify + synopsis update),
// each with the parse a lane with that synopsis calls: the LDA with the
// default and with three MEC rules, the LDA as a default sender does it
// (no classify), RDA, LDS, and all of them at once.
func PerPacketStages(frames [][]byte) ([]Stage, error) {
	// The baseline hashes exactly as many bytes as the identity does for
	// each frame — the 48 invariant bytes of an IPv4 packet, 80 of an
	// IPv6 one, 64 otherwise (classifier/parse.go) — gathered beforehand
	// into a contiguous window.
	windows := make([][80]byte, len(frames))
	wlen := make([]int, len(frames))
	var pm classifier.Meta
	for i, f := range frames {
		copy(windows[i][:], f[min(14, len(f)):])
		classifier.Parse(f, &pm)
		switch {
		case pm.Flags&classifier.FlagIPv4 != 0:
			wlen[i] = 48
		case pm.Flags&classifier.FlagIPv6 != 0:
			wlen[i] = 80
		default:
			wlen[i] = 64
		}
	}
	cl, err := classifier.NewClassifier(nil)
	if err != nil {
		return nil, err
	}
	rules := []string{"voice=dscp:46,proto:udp", "web=dport:80|443", "mgmt=src:10.0.0.0/8,vlan:100"}
	cl3, err := classifier.NewClassifierFromSpecs(rules)
	if err != nil {
		return nil, err
	}
	// The LDA a live appliance records by default (RecordLDAConfig,
	// shipped folded to each interval's traffic); fixed is the
	// DefaultLDAConfig shape (8 banks × 128 rows), which --lda-* flags
	// or analyze use, for the cost of the larger recording shape
	// (identity-classify-lda against identity-classify-lda-8x128).
	ldas := make([]*synopsis.LDA, cl3.NumClasses())
	for i := range ldas {
		ldas[i] = synopsis.MustNewLDA(synopsis.RecordLDAConfig())
	}
	lda := ldas[0]
	fixed := []*synopsis.LDA{synopsis.MustNewLDA(synopsis.DefaultLDAConfig())} // indexed by MEC as ldas (one class)
	// The same LDA without digests, for the integrity checks' own cost
	// (identity-lean-lda against identity-lean-lda-nodigest).
	noDig := synopsis.RecordLDAConfig()
	noDig.Digest = false
	ldaNoDig := synopsis.MustNewLDA(noDig)
	rda := synopsis.MustNewRDA(synopsis.DefaultRDAConfig())
	// The trajectory sample as recorded by default (every packet kept
	// until 16 384 fill it), and at level 6 (1 in 64: what a busy link
	// reaches once the level has risen): the selection reuses the
	// identity hash, remixed with the sample's salt.
	smp, err := synopsis.NewSample(synopsis.DefaultSampleConfig())
	if err != nil {
		return nil, err
	}
	smp64, err := synopsis.NewSample(synopsis.SampleConfig{Level: 6, Capacity: synopsis.DefaultSampleConfig().Capacity})
	if err != nil {
		return nil, err
	}
	var meta classifier.Meta
	ts := uint64(1_700_000_000_000_000_000)
	stages := []Stage{
		{"xxhash-window", func(fr [][]byte) uint64 {
			var x uint64
			for i := range fr {
				x ^= xxhash.Sum64(windows[i][:wlen[i]])
			}
			return x
		}},
		// The baseline, "identity hash alone":
		// the identity hash of each frame and nothing else — locate the
		// invariant bytes, gather them, XXH64 — which is ParseLean on the
		// common frame (no flow key, no flow hash). Its loop is identity's
		// with the other parse: each stage calls its parse directly, as a
		// lane does, so that what is timed has no indirect call in it.
		{"identity-hash", func(fr [][]byte) uint64 {
			var x uint64
			for _, f := range fr {
				classifier.ParseLean(f, &meta)
				x ^= meta.Hash
			}
			return x
		}},
		{"identity", func(fr [][]byte) uint64 {
			var x uint64
			for _, f := range fr {
				classifier.Parse(f, &meta)
				x ^= meta.Hash
			}
			return x
		}},
		// The full per-packet measurement: identity hash, MEC
		// classify, LDA update, with the parse a lane with MEC rules and
		// no LDS calls (the flow key for the rules, no flow hash).
		{"identity-classify-lda", func(fr [][]byte) uint64 {
			for _, f := range fr {
				classifier.ParseNoFlowHash(f, &meta)
				mec := cl.Classify(&meta)
				ts += 100
				ldas[mec].Add(meta.Hash, ts)
			}
			return lda.Count()
		}},
		{"identity-classify-lda-8x128", func(fr [][]byte) uint64 {
			for _, f := range fr {
				classifier.ParseNoFlowHash(f, &meta)
				mec := cl.Classify(&meta)
				ts += 100
				fixed[mec].Add(meta.Hash, ts)
			}
			return fixed[0].Count()
		}},
		// What a sender lane with only the default MEC and no LDS does
		// per frame: ParseLean (no flow key: nothing reads it), no
		// Classify (one class), LDA.Add.
		{"identity-lean-lda", func(fr [][]byte) uint64 {
			for _, f := range fr {
				classifier.ParseLean(f, &meta)
				ts += 100
				lda.Add(meta.Hash, ts)
			}
			return lda.Count()
		}},
		{"identity-lean-lda-nodigest", func(fr [][]byte) uint64 {
			for _, f := range fr {
				classifier.ParseLean(f, &meta)
				ts += 100
				ldaNoDig.Add(meta.Hash, ts)
			}
			return ldaNoDig.Count()
		}},
		// ParseLean + Sample.Add, the sample reset per pass (4 096
		// frames: each stored, none over the capacity).
		{"identity-lean-sample", func(fr [][]byte) uint64 {
			smp.Reset()
			for _, f := range fr {
				classifier.ParseLean(f, &meta)
				ts += 100
				smp.Add(meta.Hash, ts)
			}
			return uint64(smp.Len())
		}},
		// The selection alone, nearly: 1 packet in 64 stored.
		{"identity-lean-sample-1in64", func(fr [][]byte) uint64 {
			smp64.Reset()
			for _, f := range fr {
				classifier.ParseLean(f, &meta)
				ts += 100
				smp64.Add(meta.Hash, ts)
			}
			return uint64(smp64.Len())
		}},
		{"identity-classify3-lda", func(fr [][]byte) uint64 {
			for _, f := range fr {
				classifier.ParseNoFlowHash(f, &meta)
				mec := cl3.Classify(&meta)
				ts += 100
				ldas[mec].Add(meta.Hash, ts)
			}
			return lda.Count()
		}},
		{"identity-classify-rda", func(fr [][]byte) uint64 {
			var x uint64
			for _, f := range fr {
				classifier.ParseNoFlowHash(f, &meta)
				_ = cl.Classify(&meta)
				ts += 100
				rda.Add(meta.Hash, ts)
				x ^= meta.Hash
			}
			return x
		}},
	}
	ldsCfg, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 10_000})
	if err != nil {
		return nil, err
	}
	lds, err := synopsis.NewLDS(ldsCfg)
	if err != nil {
		return nil, err
	}
	// The measuring lane's per-packet work with every synopsis: exactly
	// what dataplane.SynSet.Record does (LDA + RDA per MEC, LDS with the
	// packed flow key for the flow table).
	syn := dataplane.SynConfig{LDA: synopsis.RecordLDAConfig(), Classes: 1}
	rdaCfg := synopsis.DefaultRDAConfig()
	syn.RDA, syn.LDS = &rdaCfg, &ldsCfg
	set, err := dataplane.NewSynSet(syn)
	if err != nil {
		return nil, err
	}
	reserveCaches(set)
	stages = append(stages,
		Stage{"identity-classify-lds", func(fr [][]byte) uint64 {
			var x uint64
			for _, f := range fr {
				classifier.Parse(f, &meta)
				_ = cl.Classify(&meta)
				ts += 100
				if meta.FlowHash != 0 { // as SynSet.Record
					if k := lds.AddFlowKey(meta.FlowHash, meta.Hash, ts, 0, 1); k != nil {
						*k = synopsis.PackFlowKey(meta.Flow.Src, meta.Flow.Dst, meta.Flow.SrcPort, meta.Flow.DstPort, meta.Flow.Proto, meta.Flow.IPv6)
					}
				}
				x ^= meta.Hash
			}
			return x
		}},
		Stage{"identity-classify-all", func(fr [][]byte) uint64 {
			for _, f := range fr {
				classifier.Parse(f, &meta)
				mec := cl.Classify(&meta)
				ts += 100
				set.Record(&meta, mec, ts, 0)
			}
			return set.Frames
		}},
	)
	return stages, nil
}

// Measurement is a stage's cost, median over rounds.
type Measurement struct {
	Name     string
	NsPerPkt float64   // thread CPU time per packet, ns (see threadCPU)
	Mpps     float64   // 1e3 / NsPerPkt
	Rounds   []float64 // ns/pkt of each round
	// WallNsPerPkt is the median wall-clock cost; it exceeds NsPerPkt
	// when the machine's load kept the thread off a core.
	WallNsPerPkt float64
	wall         []float64
}

// stageTarget is how long one stage runs per round.
const stageTarget = 100 * time.Millisecond

// Compare measures the stages in the same run, interleaved: each round runs
// every stage once for about stageTarget (the pass count calibrated on the
// first pass), and the median over rounds is reported. Interleaving makes
// the ratios robust to the machine's load changing during the run, and
// timing the thread's CPU time rather than the wall clock keeps the time
// the thread waited for a core out of them (threadCPU).
func Compare(stages []Stage, frames [][]byte, rounds int) []Measurement {
	if rounds < 1 {
		rounds = 1
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ms := make([]Measurement, len(stages))
	passes := make([]int, len(stages))
	var sink uint64
	for i, s := range stages {
		// Calibrate: double the passes until a run takes ≥ 1/8 of the
		// target (and warm the caches and branch predictors).
		n := 1
		for {
			c0 := threadCPU()
			for k := 0; k < n; k++ {
				sink ^= s.Run(frames)
			}
			if d := threadCPU() - c0; d >= stageTarget/8 || n >= 1<<20 {
				passes[i] = max(1, int(float64(n)*float64(stageTarget)/float64(max(d, time.Microsecond))))
				break
			}
			n *= 2
		}
	}
	for r := 0; r < rounds; r++ {
		for i, s := range stages {
			n := passes[i]
			w0, c0 := time.Now(), threadCPU()
			for k := 0; k < n; k++ {
				sink ^= s.Run(frames)
			}
			cpu, wall := threadCPU()-c0, time.Since(w0)
			pk := float64(n) * float64(len(frames))
			ms[i].Name = s.Name
			ms[i].Rounds = append(ms[i].Rounds, float64(cpu.Nanoseconds())/pk)
			ms[i].wall = append(ms[i].wall, float64(wall.Nanoseconds())/pk)
		}
	}
	benchSink = sink
	for i := range ms {
		ms[i].NsPerPkt = median(ms[i].Rounds)
		ms[i].WallNsPerPkt = median(ms[i].wall)
		if ms[i].NsPerPkt > 0 {
			ms[i].Mpps = 1e3 / ms[i].NsPerPkt
		}
	}
	return ms
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	r := append([]float64(nil), v...)
	sort.Float64s(r)
	return r[len(r)/2]
}

var benchSink uint64

// Find returns the measurement named name.
func Find(ms []Measurement, name string) (Measurement, error) {
	for _, m := range ms {
		if m.Name == name {
			return m, nil
		}
	}
	return Measurement{}, fmt.Errorf("bench: no measurement %q", name)
}

// reserveCaches gives the set's RDA timestamp caches their whole budget:
// an appliance sizes them between intervals from the traffic (at most the
// budget), and a benchmark that never turns an interval over measures the
// largest.
func reserveCaches(set *dataplane.SynSet) {
	for _, r := range set.RDA {
		if c := r.Cache(); c != nil {
			c.Reserve(math.MaxUint32)
		}
	}
}
