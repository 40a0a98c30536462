package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
)

// Method is one way of measuring the simulated segment: a synopsis at both
// ends (LDA here; RDA and LDS plug in the same way) or an active-probe
// baseline. A Method is used by one goroutine; each worker builds its own
// from a MethodSpec. Per run: Start, Observe for every batch in order,
// Finish.
type Method interface {
	Start(seed uint64, packets int)
	Observe(b *Batch)
	Finish(t *Truth) Outcome
}

// Outcome is what a Method estimated for one run.
type Outcome struct {
	MeanOK   bool    // a mean was estimated (at least one sample)
	StddevOK bool    // a std-dev and a confidence bound were estimated
	MeanNs   float64 // estimated mean delay
	StddevNs float64 // estimated std-dev
	BoundNs  float64 // half-width of the confidence interval of MeanNs (Hoeffding, eq. 1)
	Samples  uint64  // (effective) sample size behind MeanNs
	// LostOK: the method reports loss; Lost is its count.
	LostOK bool
	Lost   uint64
	Reason string // why MeanOK or StddevOK is false
}

// MethodSpec names a method and builds instances of it.
type MethodSpec struct {
	Label  string // curve label: "LDA 1 bank tuned", "probes 144 Hz"
	Kind   string // "lda", "probe", …
	Config string // parameters, e.g. the LDA banks "1024@2^-3"
	New    func() Method
}

// LDASpec is an LDA with configuration cfg at both ends, estimated with
// synopsis.EstimateLDA at confidence conf.
func LDASpec(label string, cfg synopsis.LDAConfig, conf float64) (MethodSpec, error) {
	if err := cfg.Validate(); err != nil {
		return MethodSpec{}, fmt.Errorf("sim: %s: %w", label, err)
	}
	return MethodSpec{
		Label:  label,
		Kind:   "lda",
		Config: cfg.String(),
		New: func() Method {
			return &ldaMethod{
				snd:  synopsis.MustNewLDA(cfg),
				rcv:  synopsis.MustNewLDA(cfg),
				conf: conf,
			}
		},
	}, nil
}

type ldaMethod struct {
	snd, rcv *synopsis.LDA
	conf     float64
}

func (m *ldaMethod) Start(uint64, int) { m.snd.Reset(); m.rcv.Reset() }

func (m *ldaMethod) Observe(b *Batch) {
	snd, rcv := m.snd, m.rcv
	for i, h := range b.Hash {
		snd.Add(h, b.SendNs[i])
		if !b.Lost[i] {
			rcv.Add(h, b.RecvNs[i])
		}
	}
}

func (m *ldaMethod) Finish(*Truth) Outcome {
	e, err := synopsis.EstimateLDA(m.snd, m.rcv, m.conf)
	if err != nil { // configurations are equal by construction
		return Outcome{Reason: err.Error()}
	}
	return Outcome{
		MeanOK:   e.Samples > 0,
		StddevOK: e.Valid,
		MeanNs:   e.MeanNs,
		StddevNs: e.StddevNs,
		BoundNs:  e.MeanCINs,
		Samples:  e.Samples,
		LostOK:   true,
		Lost:     e.Lost,
		Reason:   e.Reason,
	}
}

// ProbeSpec is the active-probe baseline of ToN paper Sec. IV-C: probes
// sent as a Poisson process of rateHz over an interval of intervalNs,
// each delayed by a fresh draw from delay (the traffic's distribution) and
// lost exactly when the data packet it travels among is lost (so probes
// meet the same loss episodes). As in the paper, probes do not perturb
// the data packets' delays. conf is the confidence of the Hoeffding bound,
// computed like the LDA's from the probes' sample std-dev.
func ProbeSpec(rateHz float64, intervalNs float64, delay model.Delay, conf float64) (MethodSpec, error) {
	if conf == 0 {
		conf = synopsis.DefaultConfidence
	}
	if !(conf > 0 && conf < 1) {
		return MethodSpec{}, fmt.Errorf("sim: confidence %g not in (0,1)", conf)
	}
	if !(rateHz > 0) || math.IsInf(rateHz, 0) || !(intervalNs > 0) || rateHz*intervalNs/1e9 > 1e8 {
		return MethodSpec{}, fmt.Errorf("sim: probe rate %g Hz over %g ns: want a positive rate and at most 1e8 probes", rateHz, intervalNs)
	}
	return MethodSpec{
		Label:  fmt.Sprintf("probes %g Hz", rateHz),
		Kind:   "probe",
		Config: fmt.Sprintf("poisson %g Hz", rateHz),
		New: func() Method {
			return &probeMethod{rate: rateHz, interval: intervalNs, delay: delay, conf: conf}
		},
	}, nil
}

type probeMethod struct {
	rate, interval float64 // Hz, ns
	delay          model.Delay
	conf           float64

	r   *rand.Rand
	pos []int // packet index each probe travels beside, ascending
	nxt int   // next probe in pos

	// Welford's running mean and sum of squared deviations of the received
	// probes' delays (ns): stable when the mean dwarfs the spread.
	n        uint64
	mean, m2 float64
}

func (m *probeMethod) Start(seed uint64, packets int) {
	m.r = rand.New(rand.NewPCG(seed, 0x70726f6265)) // "probe"
	m.pos, m.nxt, m.n, m.mean, m.m2 = m.pos[:0], 0, 0, 0, 0
	// Poisson arrivals: exponential gaps of mean 1/rate s; a probe at time
	// t travels among the data packets at position t/interval·packets (the
	// packets fill the interval evenly).
	meanGapNs := 1e9 / m.rate
	for t := meanGapNs * m.r.ExpFloat64(); t < m.interval; t += meanGapNs * m.r.ExpFloat64() {
		m.pos = append(m.pos, min(int(t/m.interval*float64(packets)), packets-1))
	}
}

func (m *probeMethod) Observe(b *Batch) {
	end := b.First + len(b.Lost)
	for m.nxt < len(m.pos) && m.pos[m.nxt] < end {
		if !b.Lost[m.pos[m.nxt]-b.First] {
			d := float64(model.Nanos(m.delay.Sample(m.r)))
			m.n++
			dm := d - m.mean
			m.mean += dm / float64(m.n)
			m.m2 += dm * (d - m.mean)
		}
		m.nxt++
	}
}

func (m *probeMethod) Finish(*Truth) Outcome {
	o := Outcome{Samples: m.n}
	if m.n == 0 {
		o.Reason = "no probe received"
		return o
	}
	n := float64(m.n)
	o.MeanOK, o.MeanNs = true, m.mean
	if m.n < 2 {
		o.Reason = "one probe received: no std-dev"
		return o
	}
	// Sample std-dev (n−1), then the same eq. 1 bound the LDA reports.
	o.StddevOK = true
	o.StddevNs = math.Sqrt(m.m2 / (n - 1))
	o.BoundNs = o.StddevNs * math.Sqrt(2*math.Log(2/(1-m.conf))/n)
	return o
}
