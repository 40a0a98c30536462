package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Delay is a distribution of one-way delays in nanoseconds.
//
// Sample draws one delay; Fill draws len(dst) delays, so that a caller that
// holds a Delay interface pays one dynamic call per batch rather than per
// packet. Both allocate nothing.
type Delay interface {
	Sample(r *rand.Rand) float64      // ns, ≥ 0
	Fill(r *rand.Rand, dst []float64) // ns, ≥ 0
	Mean() float64                    // ns; +Inf if the mean does not exist
	Stddev() float64                  // ns; +Inf if the variance does not exist
	String() string                   // canonical ParseDelay text
}

// Bounds on parameters. They keep samples and moments finite and the text
// syntax free of values nobody means (a delay model of a network segment with
// a mean of a day is a typo).
const (
	MaxDurationNs = 3600e9 // 1 h, largest accepted duration parameter, ns
	MinWeibull    = 0.1    // smaller Weibull shapes have absurd tails (mean = scale·Γ(11) at 0.1)
	MaxShape      = 1000
	// MaxDelayNs is where Nanos clamps samples: 2^62 ns, far above any
	// sensible delay but still safely inside int64/uint64 arithmetic.
	MaxDelayNs = 1 << 62
)

// Nanos converts a sample to integer nanoseconds, rounding to nearest and
// clamping into [0, MaxDelayNs].
func Nanos(ns float64) uint64 {
	if !(ns > 0) { // also NaN
		return 0
	}
	if ns >= MaxDelayNs {
		return MaxDelayNs
	}
	return uint64(ns + 0.5)
}

var errParam = errors.New("model: bad parameter")

func checkDuration(name string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > MaxDurationNs {
		return fmt.Errorf("%w: %s=%g ns outside [0, 1h]", errParam, name, v)
	}
	return nil
}

func checkPositiveDuration(name string, v float64) error {
	if err := checkDuration(name, v); err != nil {
		return err
	}
	if v == 0 {
		return fmt.Errorf("%w: %s must be > 0", errParam, name)
	}
	return nil
}

// Constant is a fixed delay.
type Constant struct {
	Ns float64 // ns
}

// NewConstant validates ns.
func NewConstant(ns float64) (Constant, error) {
	if err := checkDuration("value", ns); err != nil {
		return Constant{}, err
	}
	return Constant{Ns: ns}, nil
}

func (c Constant) Sample(*rand.Rand) float64 { return c.Ns }
func (c Constant) Fill(_ *rand.Rand, dst []float64) {
	for i := range dst {
		dst[i] = c.Ns
	}
}
func (c Constant) Mean() float64   { return c.Ns }
func (c Constant) Stddev() float64 { return 0 }
func (c Constant) String() string  { return "constant:value=" + fmtNs(c.Ns) }

// Exponential has density e^(-x/MeanNs)/MeanNs.
type Exponential struct {
	MeanNs float64
}

// NewExponential validates the mean.
func NewExponential(mean float64) (Exponential, error) {
	if err := checkPositiveDuration("mean", mean); err != nil {
		return Exponential{}, err
	}
	return Exponential{MeanNs: mean}, nil
}

func (e Exponential) Sample(r *rand.Rand) float64 { return e.MeanNs * r.ExpFloat64() }
func (e Exponential) Fill(r *rand.Rand, dst []float64) {
	for i := range dst {
		dst[i] = e.MeanNs * r.ExpFloat64()
	}
}
func (e Exponential) Mean() float64   { return e.MeanNs }
func (e Exponential) Stddev() float64 { return e.MeanNs }
func (e Exponential) String() string  { return "exp:mean=" + fmtNs(e.MeanNs) }

// Uniform is uniform on [MinNs, MaxNs).
type Uniform struct {
	MinNs, MaxNs float64
}

// NewUniform validates 0 ≤ min ≤ max.
func NewUniform(min, max float64) (Uniform, error) {
	if err := checkDuration("min", min); err != nil {
		return Uniform{}, err
	}
	if err := checkDuration("max", max); err != nil {
		return Uniform{}, err
	}
	if max < min {
		return Uniform{}, fmt.Errorf("%w: max=%g ns < min=%g ns", errParam, max, min)
	}
	return Uniform{MinNs: min, MaxNs: max}, nil
}

func (u Uniform) Sample(r *rand.Rand) float64 { return u.MinNs + (u.MaxNs-u.MinNs)*r.Float64() }
func (u Uniform) Fill(r *rand.Rand, dst []float64) {
	w := u.MaxNs - u.MinNs
	for i := range dst {
		dst[i] = u.MinNs + w*r.Float64()
	}
}
func (u Uniform) Mean() float64   { return (u.MinNs + u.MaxNs) / 2 }
func (u Uniform) Stddev() float64 { return (u.MaxNs - u.MinNs) / math.Sqrt(12) }
func (u Uniform) String() string {
	return "uniform:min=" + fmtNs(u.MinNs) + ",max=" + fmtNs(u.MaxNs)
}

// Weibull has CDF 1 - exp(-(x/Scale)^Shape) (ToN paper Sec. IV, where the
// scale is called α and the shape β).
type Weibull struct {
	Shape   float64 // β, dimensionless
	ScaleNs float64 // α, ns
}

// NewWeibull returns the Weibull of the given shape scaled so that its mean
// is mean ns: scale = mean / Γ(1+1/shape).
func NewWeibull(mean, shape float64) (Weibull, error) {
	if err := checkShape("shape", shape, MinWeibull); err != nil {
		return Weibull{}, err
	}
	if err := checkPositiveDuration("mean", mean); err != nil {
		return Weibull{}, err
	}
	return Weibull{Shape: shape, ScaleNs: mean / math.Gamma(1+1/shape)}, nil
}

// NewWeibullScale returns the Weibull with the given scale (ns) and shape.
func NewWeibullScale(scale, shape float64) (Weibull, error) {
	if err := checkShape("shape", shape, MinWeibull); err != nil {
		return Weibull{}, err
	}
	if err := checkPositiveDuration("scale", scale); err != nil {
		return Weibull{}, err
	}
	return Weibull{Shape: shape, ScaleNs: scale}, nil
}

// Sample inverts the CDF: if E ~ Exp(1) then Scale·E^(1/Shape) is Weibull.
func (w Weibull) Sample(r *rand.Rand) float64 {
	return w.ScaleNs * math.Exp(math.Log(r.ExpFloat64())*(1/w.Shape))
}
func (w Weibull) Fill(r *rand.Rand, dst []float64) {
	inv := 1 / w.Shape
	for i := range dst {
		// exp(log(E)/β) rather than math.Pow: 3× faster, same value to
		// within an ulp or two (ExpFloat64 is never 0).
		dst[i] = w.ScaleNs * math.Exp(math.Log(r.ExpFloat64())*inv)
	}
}
func (w Weibull) Mean() float64 { return w.ScaleNs * math.Gamma(1+1/w.Shape) }
func (w Weibull) Stddev() float64 {
	g1 := math.Gamma(1 + 1/w.Shape)
	g2 := math.Gamma(1 + 2/w.Shape)
	return w.ScaleNs * math.Sqrt(math.Max(g2-g1*g1, 0))
}
func (w Weibull) String() string {
	return "weibull:scale=" + fmtNs(w.ScaleNs) + ",shape=" + fmtFloat(w.Shape)
}

// Pareto (type I) has CDF 1 - (x/Scale)^-Shape for x ≥ Scale (ToN paper
// Sec. IV; Scale is the minimum delay x_m).
type Pareto struct {
	Shape   float64 // β, must be > 1 for a finite mean
	ScaleNs float64 // x_m, ns
}

// NewPareto returns the Pareto of the given shape (> 1) scaled so that its
// mean is mean ns: x_m = mean·(shape-1)/shape.
func NewPareto(mean, shape float64) (Pareto, error) {
	if err := checkParetoShape(shape); err != nil {
		return Pareto{}, err
	}
	if err := checkPositiveDuration("mean", mean); err != nil {
		return Pareto{}, err
	}
	return Pareto{Shape: shape, ScaleNs: mean * (shape - 1) / shape}, nil
}

// NewParetoScale returns the Pareto with minimum scale ns and the shape.
func NewParetoScale(scale, shape float64) (Pareto, error) {
	if err := checkParetoShape(shape); err != nil {
		return Pareto{}, err
	}
	if err := checkPositiveDuration("scale", scale); err != nil {
		return Pareto{}, err
	}
	return Pareto{Shape: shape, ScaleNs: scale}, nil
}

func checkParetoShape(shape float64) error {
	if err := checkShape("shape", shape, 1); err != nil {
		return err
	}
	if shape == 1 {
		return fmt.Errorf("%w: pareto shape must be > 1 (finite mean)", errParam)
	}
	return nil
}

// Sample inverts the CDF: if E ~ Exp(1) then x_m·e^(E/Shape) is Pareto.
func (p Pareto) Sample(r *rand.Rand) float64 {
	return p.ScaleNs * math.Exp(r.ExpFloat64()*(1/p.Shape))
}
func (p Pareto) Fill(r *rand.Rand, dst []float64) {
	inv := 1 / p.Shape
	for i := range dst {
		dst[i] = p.ScaleNs * math.Exp(r.ExpFloat64()*inv)
	}
}
func (p Pareto) Mean() float64 { return p.ScaleNs * p.Shape / (p.Shape - 1) }
func (p Pareto) Stddev() float64 {
	if p.Shape <= 2 {
		return math.Inf(1)
	}
	a := p.Shape
	return p.ScaleNs / (a - 1) * math.Sqrt(a/(a-2))
}
func (p Pareto) String() string {
	return "pareto:scale=" + fmtNs(p.ScaleNs) + ",shape=" + fmtFloat(p.Shape)
}

func checkShape(name string, v, min float64) error {
	if math.IsNaN(v) || v < min || v > MaxShape {
		return fmt.Errorf("%w: %s=%g outside [%g, %g]", errParam, name, v, min, float64(MaxShape))
	}
	return nil
}

// Mix draws from A with probability P and from B otherwise: a two-mode
// delay, e.g. a fast path with occasional slow-path (punted) packets.
type Mix struct {
	P    float64 // probability of A, in [0, 1]
	A, B Delay
}

// NewMix validates p and that neither component is itself a Mix (one level
// keeps the text syntax unambiguous).
func NewMix(p float64, a, b Delay) (Mix, error) {
	if math.IsNaN(p) || p < 0 || p > 1 {
		return Mix{}, fmt.Errorf("%w: mix p=%g outside [0, 1]", errParam, p)
	}
	if a == nil || b == nil {
		return Mix{}, fmt.Errorf("%w: mix needs two components", errParam)
	}
	for _, d := range []Delay{a, b} {
		if isMix(d) {
			return Mix{}, fmt.Errorf("%w: mix components cannot be mixes", errParam)
		}
	}
	return Mix{P: p, A: a, B: b}, nil
}

func isMix(d Delay) bool {
	switch d := d.(type) {
	case Mix:
		return true
	case Shift:
		return isMix(d.D)
	}
	return false
}

func (m Mix) Sample(r *rand.Rand) float64 {
	if r.Float64() < m.P {
		return m.A.Sample(r)
	}
	return m.B.Sample(r)
}
func (m Mix) Fill(r *rand.Rand, dst []float64) {
	for i := range dst {
		dst[i] = m.Sample(r)
	}
}
func (m Mix) Mean() float64 { return m.P*m.A.Mean() + (1-m.P)*m.B.Mean() }
func (m Mix) Stddev() float64 {
	ma, mb := m.A.Mean(), m.B.Mean()
	sa, sb := m.A.Stddev(), m.B.Stddev()
	mu := m.P*ma + (1-m.P)*mb
	// E[X²] of each mode, weighted; subtract the square of the mixture mean.
	v := m.P*(sa*sa+ma*ma) + (1-m.P)*(sb*sb+mb*mb) - mu*mu
	return math.Sqrt(math.Max(v, 0))
}
func (m Mix) String() string {
	return "mix:p=" + fmtFloat(m.P) + ";" + m.A.String() + ";" + m.B.String()
}

// Shift adds a constant OffsetNs (e.g. propagation delay) to D.
type Shift struct {
	D        Delay
	OffsetNs float64
}

func (s Shift) Sample(r *rand.Rand) float64 { return s.OffsetNs + s.D.Sample(r) }
func (s Shift) Fill(r *rand.Rand, dst []float64) {
	s.D.Fill(r, dst)
	for i := range dst {
		dst[i] += s.OffsetNs
	}
}
func (s Shift) Mean() float64   { return s.OffsetNs + s.D.Mean() }
func (s Shift) Stddev() float64 { return s.D.Stddev() }
func (s Shift) String() string {
	// The offset belongs to the head of the text: for a mix it precedes the
	// first ';' so that it shifts the whole mixture, not the last mode.
	txt := s.D.String()
	head, rest, found := cut(txt, ';')
	if found {
		return head + ",offset=" + fmtNs(s.OffsetNs) + ";" + rest
	}
	return txt + ",offset=" + fmtNs(s.OffsetNs)
}

func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
