package sim

import (
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"

	"github.com/ldafwd/ldafwd/model"
)

// BatchSize is the number of packets handed to a Method per Observe call:
// large enough that the dynamic call per batch is negligible, small enough
// that the batch stays in L1 (1024 × 25 bytes).
const BatchSize = 1024

// epochNs is where simulated time starts: 2025-06-15 in Unix ns. Absolute
// timestamps this large make every LDA timestamp sum wrap around uint64
// after a dozen packets, so the wrap-around arithmetic of the synopses is
// exercised by every simulation, as it is on the wire.
const epochNs uint64 = 1_750_000_000 * 1_000_000_000

// Trace is the delay of every packet of one simulated interval, drawn once
// from a delay model and reused by every run and loss rate (ToN paper
// Sec. IV-A: "we first generate a packet trace according to the desired
// delay distribution using a particular random seed, and then impose
// varying levels of loss"). It is read-only once built and shared by the
// workers.
type Trace struct {
	Delay    model.Delay
	Seed     uint64
	DelaysNs []uint64 // per packet, integer ns (model.Nanos of a sample)
}

// NewTrace draws n delays from d with a PCG seeded by seed.
func NewTrace(d model.Delay, n int, seed uint64) *Trace {
	t := &Trace{Delay: d, Seed: seed, DelaysNs: make([]uint64, n)}
	r := rand.New(rand.NewPCG(seed, 0x7472616365)) // "trace"
	var buf [BatchSize]float64
	for i := 0; i < n; i += BatchSize {
		k := min(BatchSize, n-i)
		d.Fill(r, buf[:k])
		for j, x := range buf[:k] {
			t.DelaysNs[i+j] = model.Nanos(x)
		}
	}
	return t
}

// Batch is a run of consecutive packets of one simulated interval, as both
// ends of the segment see them. Slices are valid only during Observe.
type Batch struct {
	First  int      // index of the first packet in the interval
	Hash   []uint64 // packet identity hash (what classifier.Meta.Hash would be)
	SendNs []uint64 // absolute timestamp at the sender, ns
	RecvNs []uint64 // absolute timestamp at the receiver, ns (SendNs + delay); ignore when Lost
	Lost   []bool
}

// Truth is the exact answer for one run, accumulated packet by packet.
type Truth struct {
	Sent, Received, Lost uint64
	MeanNs               float64 // mean delay over received packets
	StddevNs             float64 // population std-dev over received packets
}

// LossRate is Lost/Sent.
func (t Truth) LossRate() float64 {
	if t.Sent == 0 {
		return 0
	}
	return float64(t.Lost) / float64(t.Sent)
}

// acc128 is an exact unsigned 128-bit accumulator: sums of delays and of
// squared delays stay exact whatever the delay model (5·10^6 squared
// delays of 10^9 ns already exceed 2^64).
type acc128 struct{ hi, lo uint64 }

func (a *acc128) add(x uint64) {
	var c uint64
	a.lo, c = bits.Add64(a.lo, x, 0)
	a.hi += c
}

func (a *acc128) addSquare(x uint64) {
	hi, lo := bits.Mul64(x, x)
	var c uint64
	a.lo, c = bits.Add64(a.lo, lo, 0)
	a.hi += hi + c
}

func (a acc128) big() *big.Int {
	v := new(big.Int).SetUint64(a.hi)
	v.Lsh(v, 64)
	return v.Or(v, new(big.Int).SetUint64(a.lo))
}

// truthFrom computes mean and population std-dev exactly (in big
// arithmetic: R·Σw² − (Σw)² loses nothing) and rounds once.
func truthFrom(sent, recv uint64, sum, sumSq acc128) Truth {
	t := Truth{Sent: sent, Received: recv, Lost: sent - recv}
	if recv == 0 {
		return t
	}
	s := sum.big()
	r := new(big.Int).SetUint64(recv)
	num := new(big.Int).Mul(r, sumSq.big())
	num.Sub(num, new(big.Int).Mul(s, s)) // R²·σ²
	fs, _ := new(big.Float).SetInt(s).Float64()
	fn, _ := new(big.Float).SetInt(num).Float64()
	t.MeanNs = fs / float64(recv)
	t.StddevNs = math.Sqrt(math.Max(fn, 0)) / float64(recv)
	return t
}

// batchBuf holds one worker's batch arrays, reused across runs.
type batchBuf struct {
	hash, send, recv [BatchSize]uint64
	lost             [BatchSize]bool
}

// runSeeds are the independent random streams of one run.
type runSeeds struct {
	hash, loss, method uint64
}

// replay plays one interval: every packet of tr in order, one in flight at
// a time (a packet leaves the sender only after the previous one reached the
// receiver, paper Sec. IV, so there is no reordering), each with a fresh
// random identity hash, lost or not by loss; it feeds every method batch
// by batch and returns the exact truth.
func replay(tr *Trace, loss model.Loss, methods []Method, seeds runSeeds, buf *batchBuf) Truth {
	// Identity hashes: splitmix64 of a counter seeded per run — a bijection
	// with full 64-bit avalanche, so distinct packets get distinct,
	// uniformly spread hashes (what a good packet hash gives), at a
	// fraction of a PCG draw's cost.
	hashCtr := seeds.hash
	lossRNG := rand.New(rand.NewPCG(seeds.loss, 0x6c6f7373))
	// Start somewhere in the first day after the epoch so that runs do not
	// share timestamps.
	ts := epochNs + seeds.hash%(86_400*1_000_000_000)
	n := len(tr.DelaysNs)
	var sent, recv uint64
	var sum, sumSq acc128
	b := Batch{}
	for first := 0; first < n; first += BatchSize {
		k := min(BatchSize, n-first)
		delays := tr.DelaysNs[first : first+k]
		lost := buf.lost[:k]
		loss.Fill(lossRNG, lost)
		hash, send, rcv := buf.hash[:k], buf.send[:k], buf.recv[:k]
		for j, d := range delays {
			hashCtr += 0x9e3779b97f4a7c15
			hash[j] = splitmix(hashCtr)
			send[j] = ts
			rcv[j] = ts + d
			if !lost[j] {
				recv++
				sum.add(d)
				sumSq.addSquare(d)
			}
			ts += d + 1 // next packet leaves 1 ns after this one arrived
		}
		sent += uint64(k)
		b = Batch{First: first, Hash: hash, SendNs: send, RecvNs: rcv, Lost: lost}
		for _, m := range methods {
			m.Observe(&b)
		}
	}
	return truthFrom(sent, recv, sum, sumSq)
}

// splitmix is the splitmix64 output function.
func splitmix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
