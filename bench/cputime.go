package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time the calling OS thread has consumed
// (CLOCK_THREAD_CPUTIME_ID). The caller must hold runtime.LockOSThread
// across the two readings it subtracts, or they may come from different
// threads. It is one system call: read it around a run, never per packet.
//
// Why CPU time: the benchmarks run one goroutine on one core, the way a
// pinned worker owns a core. On a machine shared with other work the wall
// clock also counts the time the thread waited for a core, which says
// nothing about what forwarding or measuring costs; the thread's CPU time
// does not (cache and TLB interference from the other work still shows).
// On an idle machine the two agree (CPUShare ≈ 1).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
