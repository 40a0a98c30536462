package classifier

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// cpuNow is this thread's CPU time in ns. Benchmarks report it beside
// wall time because the shared build machines are often overloaded: CPU
// time of a locked thread leaves out the time other processes ran.
func cpuNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// cpuTimer locks the goroutine to its thread, resets the benchmark timer
// and returns a stop function that reports ns/pkt as thread CPU time per
// iteration.
func cpuTimer(b *testing.B) (stop func()) {
	runtime.LockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	t0 := cpuNow()
	return func() {
		t := cpuNow() - t0
		b.StopTimer()
		runtime.UnlockOSThread()
		b.ReportMetric(float64(t)/float64(b.N), "ns/pkt")
	}
}
