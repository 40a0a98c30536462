// Command linetrip measures how long a cache line takes to go from one
// CPU to another and back on this machine: two threads, pinned to two
// CPUs, take turns writing one shared word, and the time per turn pair is
// the round trip. make analyze-scale prints it each round beside the
// analysis on one and two cores: the two-core analysis hands every record
// between goroutines on the two CPUs, so its speed-up follows this figure,
// which on a virtual machine changes with where the host places its
// virtual CPUs (about 120-190 ns when they share a cache, 420-500 ns when
// they do not, on the project's machine).
//
//	go run ./analyze/analyzetest/linetrip [--cpus 0,1] [--trips 200000] [--runs 5]
//
// It prints the median of the runs' round trips, in ns. Linux only (it
// pins with sched_setaffinity).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "linetrip:", err)
		os.Exit(1)
	}
}

func run() error {
	cpus := flag.String("cpus", "0,1", "the two CPUs, comma-separated")
	trips := flag.Int("trips", 200_000, "round trips per run")
	runs := flag.Int("runs", 5, "runs; the median is printed")
	flag.Parse()
	var a, b int
	if p := strings.Split(*cpus, ","); len(p) != 2 {
		return fmt.Errorf("--cpus %q: want two CPUs, e.g. 0,1", *cpus)
	} else {
		var err1, err2 error
		a, err1 = strconv.Atoi(strings.TrimSpace(p[0]))
		b, err2 = strconv.Atoi(strings.TrimSpace(p[1]))
		if err1 != nil || err2 != nil || a < 0 || b < 0 || a == b {
			return fmt.Errorf("--cpus %q: want two different CPU numbers", *cpus)
		}
	}
	if *trips < 1 || *runs < 1 {
		return fmt.Errorf("--trips and --runs must be at least 1")
	}
	var ns []float64
	for range *runs {
		d, err := measure(a, b, *trips)
		if err != nil {
			return err
		}
		ns = append(ns, d)
	}
	slices.Sort(ns)
	fmt.Printf("%.0f\n", ns[len(ns)/2])
	return nil
}

// pin locks the calling goroutine to its thread and the thread to cpu.
func pin(cpu int) error {
	runtime.LockOSThread()
	var s unix.CPUSet
	s.Set(cpu)
	if err := unix.SchedSetaffinity(0, &s); err != nil {
		return fmt.Errorf("pin to CPU %d: %w", cpu, err)
	}
	return nil
}

// measure is one run: n round trips of a word between CPUs a and b, in
// ns each.
func measure(a, b, n int) (float64, error) {
	// The word sits alone in its line, so nothing else the threads touch
	// travels with it.
	var line struct {
		_ [64]byte
		w atomic.Int64
		_ [64]byte
	}
	errc := make(chan error, 1)
	go func() {
		defer runtime.UnlockOSThread()
		if err := pin(b); err != nil {
			line.w.Store(-1)
			errc <- err
			return
		}
		for i := int64(1); i <= int64(n); i++ {
			for line.w.Load() != 2*i-1 {
			}
			line.w.Store(2 * i)
		}
		errc <- nil
	}()
	defer runtime.UnlockOSThread()
	if err := pin(a); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for i := int64(1); i <= int64(n); i++ {
		line.w.Store(2*i - 1)
		for {
			v := line.w.Load()
			if v == 2*i {
				break
			}
			if v < 0 {
				return 0, <-errc
			}
		}
	}
	d := time.Since(t0)
	if err := <-errc; err != nil {
		return 0, err
	}
	return float64(d.Nanoseconds()) / float64(n), nil
}
