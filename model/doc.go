// Package model provides the delay and loss models that the simulator
// (package sim) and the demo's impaired link draw from.
//
// # Delay distributions
//
// A Delay is one of Constant, Exponential, Uniform, Weibull, Pareto, Mix
// (two modes) or Shift (a constant offset added to another distribution).
// Samples are float64 nanoseconds. Weibull and Pareto are constructed from
// a mean and a shape, as in the ToN LDA paper Sec. IV (Weibull shape
// 0.6–0.8 after Papagiannaki et al., Pareto shape 3–5, each scaled to a mean
// of 0.2 µs): NewWeibull(200, 0.6) has scale 0.133 µs and standard
// deviation ≈ 0.35 µs, NewPareto(200, 3) has x_m = 0.133 µs and variance
// 0.013 µs², the numbers the paper quotes. Mean and Stddev are analytic
// (+Inf where the moment does not exist, e.g. Pareto shape ≤ 2).
//
// # Loss models
//
// A Loss decides per packet, in order, whether that packet is lost:
// UniformLoss (independent, fixed rate) and BurstyLoss (loss episodes
// whose length in packets is geometric — the discrete exponential — with
// a given mean, separated by geometric gaps chosen so that the long-run
// loss fraction is the given rate; the paper's Sec. IV-C model after Misra
// et al. and Sommers et al.). NoLoss never loses.
//
// # Text syntax
//
// ParseDelay and ParseLoss read the flag syntax "kind:key=value,…":
//
//	constant:value=50us        (or constant:50us)
//	exp:mean=50us              (or exp:50us)
//	uniform:min=10us,max=90us
//	weibull:mean=50us,shape=0.7  (or scale=… instead of mean)
//	pareto:mean=50us,shape=3     (or scale=…, the Pareto x_m)
//	mix:p=0.99;weibull:mean=50us,shape=0.7;constant:2ms
//	any of the above with ,offset=10us (a constant propagation delay)
//
//	none
//	uniform:rate=0.001         (or uniform:0.1%)
//	bursty:rate=0.001,burst=100  (burst = mean episode length, packets)
//
// Durations take ns, us, µs, ms or s; a bare number is ns. Errors name the
// bad token. String returns a canonical text that parses back to the same
// model.
//
// # Concurrency and hazards
//
// Delay values are immutable and safe to share between goroutines; each
// goroutine must use its own *rand.Rand. UniformLoss and BurstyLoss keep
// state (packets left until the next loss, or in the current episode or
// gap — both draw one random number per loss event rather than per packet),
// so a Loss must not be shared: give every goroutine, and every link
// direction, its own via Clone. Sample, Fill and Lost allocate
// nothing and, with a seeded rand.Rand (math/rand/v2 PCG), are
// deterministic. Samples of heavy-tailed models can be very large; callers
// converting to integer nanoseconds should clamp (see Nanos).
package model
