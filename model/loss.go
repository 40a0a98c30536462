package model

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Loss decides, packet by packet in order, whether each packet is lost.
//
// Lost and Fill allocate nothing. A Loss may keep state between calls
// (Bursty does), so it must not be shared between goroutines; Clone gives
// an independent copy in the start state.
type Loss interface {
	Lost(r *rand.Rand) bool
	Fill(r *rand.Rand, lost []bool) // lost[i] for the next len(lost) packets
	Rate() float64                  // long-run fraction of packets lost
	Clone() Loss                    // fresh copy, start state, same parameters
	String() string                 // canonical ParseLoss text
}

// NoLoss never loses a packet.
type NoLoss struct{}

func (NoLoss) Lost(*rand.Rand) bool { return false }
func (NoLoss) Fill(_ *rand.Rand, lost []bool) {
	for i := range lost {
		lost[i] = false
	}
}
func (NoLoss) Rate() float64  { return 0 }
func (NoLoss) Clone() Loss    { return NoLoss{} }
func (NoLoss) String() string { return "none" }

// UniformLoss loses each packet independently with probability rate.
//
// It does not draw a random number per packet: the number of packets
// passing between two losses of a Bernoulli process is geometric, so it
// draws that gap (one ExpFloat64 per loss) and counts down. The sequence
// of losses has exactly the Bernoulli distribution; at the paper's rates
// (10^-4 … 0.2) this is 5 … 10 000 times fewer draws.
type UniformLoss struct {
	rate float64
	c    float64 // 1/-ln(1-rate): gap = floor(c·E), E ~ Exp(1)

	started bool
	left    uint64 // packets still to pass before the next loss
}

// NewUniformLoss validates rate ∈ [0, 1].
func NewUniformLoss(rate float64) (*UniformLoss, error) {
	if math.IsNaN(rate) || rate < 0 || rate > 1 {
		return nil, fmt.Errorf("%w: loss rate=%g outside [0, 1]", errParam, rate)
	}
	u := &UniformLoss{rate: rate}
	if rate > 0 && rate < 1 {
		u.c = 1 / -math.Log1p(-rate)
	}
	return u, nil
}

// gap draws the number of packets that pass before the next loss.
func (u *UniformLoss) gap(r *rand.Rand) uint64 {
	x := u.c * r.ExpFloat64()
	if x >= 1<<62 {
		return 1 << 62
	}
	return uint64(x)
}

func (u *UniformLoss) Lost(r *rand.Rand) bool {
	switch {
	case u.rate == 0:
		return false
	case u.rate == 1:
		return true
	}
	if !u.started {
		u.started, u.left = true, u.gap(r)
	}
	if u.left > 0 {
		u.left--
		return false
	}
	u.left = u.gap(r)
	return true
}

func (u *UniformLoss) Fill(r *rand.Rand, lost []bool) {
	if u.rate == 0 || u.rate == 1 {
		for i := range lost {
			lost[i] = u.rate == 1
		}
		return
	}
	if !u.started {
		u.started, u.left = true, u.gap(r)
	}
	for i := 0; i < len(lost); {
		// Pass min(left, rest) packets, then lose one.
		n := min(u.left, uint64(len(lost)-i))
		for j := uint64(0); j < n; j++ {
			lost[i] = false
			i++
		}
		u.left -= n
		if i < len(lost) {
			lost[i] = true
			i++
			u.left = u.gap(r)
		}
	}
}

func (u *UniformLoss) Rate() float64 { return u.rate }
func (u *UniformLoss) Clone() Loss {
	c := *u
	c.started, c.left = false, 0
	return &c
}
func (u *UniformLoss) String() string { return "uniform:rate=" + fmtFloat(u.rate) }

// BurstyLoss loses packets in episodes (ToN LDA paper Sec. IV-C: loss
// episodes after Misra et al., each dropping a burst of packets after
// Sommers et al.). It alternates between a gap, in which packets pass, and
// an episode, in which every packet is lost. Both lengths are geometric in
// packets — the discrete exponential, so the process is memoryless — with
// mean Burst for episodes and Burst·(1-rate)/rate for gaps, which makes the
// long-run loss fraction rate. The process starts in its stationary state
// (inside an episode with probability rate).
//
// It draws one random number per episode or gap, not per packet.
type BurstyLoss struct {
	rate, burst float64
	gap         float64 // mean gap length, packets
	cBurst      float64 // 1/-ln(1-1/burst): geometric sampling constant
	cGap        float64

	started bool
	bad     bool   // inside an episode
	left    uint64 // packets left in the current episode or gap
}

// NewBurstyLoss validates rate ∈ [0, 1) and burst ≥ 1, and that gaps are at
// least one packet long on average (rate ≤ burst/(burst+1)); above that
// episodes would merge and the rate could not be met.
func NewBurstyLoss(rate, burst float64) (*BurstyLoss, error) {
	if math.IsNaN(rate) || rate < 0 || rate >= 1 {
		return nil, fmt.Errorf("%w: bursty loss rate=%g outside [0, 1)", errParam, rate)
	}
	if math.IsNaN(burst) || burst < 1 || burst > 1e9 {
		return nil, fmt.Errorf("%w: burst=%g outside [1, 1e9] packets", errParam, burst)
	}
	b := &BurstyLoss{rate: rate, burst: burst}
	if rate > 0 {
		b.gap = burst * (1 - rate) / rate
		if b.gap < 1 {
			return nil, fmt.Errorf("%w: bursty loss rate=%g too high for burst=%g (max %g)",
				errParam, rate, burst, burst/(burst+1))
		}
		b.cBurst = geomConst(burst)
		b.cGap = geomConst(b.gap)
	}
	return b, nil
}

// geomConst returns c such that 1 + floor(c·E), E ~ Exp(1), is geometric on
// {1, 2, …} with mean m (success probability q = 1/m per packet).
func geomConst(m float64) float64 {
	if m <= 1 {
		return 0
	}
	return 1 / -math.Log1p(-1/m)
}

func geom(r *rand.Rand, c float64) uint64 {
	x := c * r.ExpFloat64()
	if x >= 1<<62 {
		return 1 << 62
	}
	return 1 + uint64(x)
}

func (b *BurstyLoss) Lost(r *rand.Rand) bool {
	if b.rate == 0 {
		return false
	}
	if b.left == 0 {
		b.next(r)
	}
	b.left--
	return b.bad
}

// next starts the next episode or gap.
func (b *BurstyLoss) next(r *rand.Rand) {
	if !b.started {
		b.started = true
		b.bad = r.Float64() < b.rate
	} else {
		b.bad = !b.bad
	}
	if b.bad {
		b.left = geom(r, b.cBurst)
	} else {
		b.left = geom(r, b.cGap)
	}
}

func (b *BurstyLoss) Fill(r *rand.Rand, lost []bool) {
	if b.rate == 0 {
		for i := range lost {
			lost[i] = false
		}
		return
	}
	for i := 0; i < len(lost); {
		if b.left == 0 {
			b.next(r)
		}
		n := uint64(len(lost) - i)
		if n > b.left {
			n = b.left
		}
		for j := uint64(0); j < n; j++ {
			lost[i] = b.bad
			i++
		}
		b.left -= n
	}
}

func (b *BurstyLoss) Rate() float64 { return b.rate }

// Burst is the mean episode length in packets.
func (b *BurstyLoss) Burst() float64 { return b.burst }

func (b *BurstyLoss) Clone() Loss {
	c := *b
	c.started, c.bad, c.left = false, false, 0
	return &c
}

func (b *BurstyLoss) String() string {
	return "bursty:rate=" + fmtFloat(b.rate) + ",burst=" + fmtFloat(b.burst)
}
