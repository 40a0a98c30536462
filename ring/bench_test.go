package ring

import (
	"strconv"
	"testing"
)

// The benchmarks move bursts through a ring in one goroutine (enqueue then
// dequeue the same burst), so they measure the per-element cost of the
// ring operations themselves, not of cross-core cache traffic; the
// Concurrent variants add that. ns/elem is the unit to compare.

type burstOps interface {
	EnqueueBurst([]uint64) int
	DequeueBurst([]uint64) int
}

// chanRing adapts a buffered channel to the burst interface, element by
// element — what Go code would do without a ring.
type chanRing chan uint64

func (c chanRing) EnqueueBurst(x []uint64) int {
	for i, v := range x {
		select {
		case c <- v:
		default:
			return i
		}
	}
	return len(x)
}

func (c chanRing) DequeueBurst(x []uint64) int {
	for i := range x {
		select {
		case x[i] = <-c:
		default:
			return i
		}
	}
	return len(x)
}

func benchImpls(b *testing.B) map[string]func() burstOps {
	return map[string]func() burstOps{
		"spsc":  func() burstOps { r, _ := NewSPSC[uint64](1024); return r },
		"mpmc":  func() burstOps { r, _ := NewMPMC[uint64](1024); return r },
		"mutex": func() burstOps { return newLocked[uint64](1024) },
		"chan":  func() burstOps { return make(chanRing, 1024) },
	}
}

func BenchmarkBurst(b *testing.B) {
	for _, impl := range []string{"spsc", "mpmc", "mutex", "chan"} {
		for _, burst := range []int{1, 8, 32} {
			b.Run(impl+"/burst="+strconv.Itoa(burst), func(b *testing.B) {
				r := benchImpls(b)[impl]()
				buf := make([]uint64, burst)
				b.ReportAllocs()
				for b.Loop() {
					r.EnqueueBurst(buf)
					r.DequeueBurst(buf)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*burst), "ns/elem")
			})
		}
	}
}

// BenchmarkConcurrent has a producer goroutine and the benchmark goroutine
// as consumer, so the indices and slots cross cores.
func BenchmarkConcurrent(b *testing.B) {
	for _, impl := range []string{"spsc", "mpmc", "mutex", "chan"} {
		for _, burst := range []int{1, 8, 32} {
			b.Run(impl+"/burst="+strconv.Itoa(burst), func(b *testing.B) {
				r := benchImpls(b)[impl]()
				total := b.N * burst
				done := make(chan struct{})
				go func() {
					defer close(done)
					buf := make([]uint64, burst)
					for sent := 0; sent < total; {
						sent += r.EnqueueBurst(buf[:min(burst, total-sent)])
					}
				}()
				buf := make([]uint64, burst)
				b.ReportAllocs()
				b.ResetTimer()
				for got := 0; got < total; {
					got += r.DequeueBurst(buf)
				}
				<-done
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/elem")
			})
		}
	}
}
