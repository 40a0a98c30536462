package dataplane_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// TestNewWorkers: --cores none, one or two place the two lanes on one
// unpinned worker, one pinned worker, or a worker per lane; more is an
// error, as is a core the machine does not have.
func TestNewWorkers(t *testing.T) {
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 64})
	if err != nil {
		t.Fatal(err)
	}
	var lanes [2]*dataplane.Lane
	for i := range lanes {
		if lanes[i], err = dataplane.NewLane(dataplane.LaneConfig{Rx: link.A(), Tx: link.B(), Role: dataplane.RoleForward}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		cores []int
		n     int
	}{{nil, 1}, {[]int{0}, 1}, {[]int{0, 1}, 2}} {
		ws, err := dataplane.NewWorkers(lanes, c.cores, dataplane.WorkerConfig{})
		if err != nil {
			if len(c.cores) == 2 && strings.Contains(err.Error(), "is not among") {
				continue // a one-CPU machine
			}
			t.Fatalf("cores %v: %v", c.cores, err)
		}
		if len(ws) != c.n {
			t.Fatalf("cores %v: %d workers, want %d", c.cores, len(ws), c.n)
		}
	}
	if _, err := dataplane.NewWorkers(lanes, []int{0, 1, 2}, dataplane.WorkerConfig{}); err == nil {
		t.Fatal("three cores accepted")
	}
	if _, err := dataplane.NewWorkers(lanes, []int{1 << 20}, dataplane.WorkerConfig{}); err == nil {
		t.Fatal("a core the machine does not have accepted")
	}
}

// TestCheckCoreAllowedSet: core ids are checked against the CPUs the
// process may use, not 0..NumCPU−1: with this thread restricted to its
// last allowed CPU (as taskset restricts a process), that CPU is accepted
// and the others are refused.
func TestCheckCoreAllowedSet(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread() // the thread's mask is restored below
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for c := 0; c < 1024; c++ {
		if orig.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		t.Skip("needs two CPUs")
	}
	last := cpus[len(cpus)-1]
	var one unix.CPUSet
	one.Set(last)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &orig)
	if err := dataplane.CheckCore(last); err != nil {
		t.Fatalf("allowed CPU %d refused: %v", last, err)
	}
	if err := dataplane.CheckCore(cpus[0]); err == nil || !strings.Contains(err.Error(), fmt.Sprint([]int{last})) {
		t.Fatalf("CPU %d outside the allowed set: %v", cpus[0], err)
	}
}

// TestWorkerStartError: a worker whose start fails says so from Start
// (the appliance then refuses to run), and Wait returns at once.
func TestWorkerStartError(t *testing.T) {
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 64})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := dataplane.NewLane(dataplane.LaneConfig{Rx: link.A(), Tx: link.B(), Role: dataplane.RoleForward})
	w, err := dataplane.NewWorker(dataplane.WorkerConfig{Core: -1, Lanes: []*dataplane.Lane{l},
		OnStart: func() error { return errors.New("no lcore") }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err == nil || !strings.Contains(err.Error(), "no lcore") {
		t.Fatalf("start error %v", err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "no lcore") {
		t.Fatalf("Close lost the start error: %v", err)
	}
	never, _ := dataplane.NewWorker(dataplane.WorkerConfig{Core: -1, Lanes: []*dataplane.Lane{l}})
	if err := never.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerCloseAnyOrder: Close is a worker's one stop path: before Start
// (the worker then never starts), during a run from several goroutines at
// once (each returns once the loop has ended), and again afterwards.
func TestWorkerCloseAnyOrder(t *testing.T) {
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer link.A().Close()
	defer link.B().Close()
	newWorker := func() *dataplane.Worker {
		l, err := dataplane.NewLane(dataplane.LaneConfig{Rx: link.A(), Tx: link.B(), Role: dataplane.RoleForward})
		if err != nil {
			t.Fatal(err)
		}
		w, err := dataplane.NewWorker(dataplane.WorkerConfig{Core: -1, Lanes: []*dataplane.Lane{l}, IdleSleep: 50 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}

	early := newWorker()
	if err := early.Close(); err != nil {
		t.Fatal(err)
	}
	if err := early.Start(); !errors.Is(err, dataplane.ErrWorkerClosed) {
		t.Fatalf("Start after Close: %v, want ErrWorkerClosed", err)
	}

	var exited atomic.Int32
	l, _ := dataplane.NewLane(dataplane.LaneConfig{Rx: link.A(), Tx: link.B(), Role: dataplane.RoleForward})
	w, err := dataplane.NewWorker(dataplane.WorkerConfig{Core: -1, Lanes: []*dataplane.Lane{l}, IdleSleep: 50 * time.Microsecond,
		OnExit: func() { exited.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err == nil {
		t.Fatal("a second Start succeeded")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Close(); err != nil {
				t.Error(err)
			}
			if exited.Load() != 1 {
				t.Error("Close returned before the loop ended")
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil || exited.Load() != 1 {
		t.Fatalf("a later Close: %v, loop exits %d", err, exited.Load())
	}
	if err := w.Start(); !errors.Is(err, dataplane.ErrWorkerClosed) {
		t.Fatalf("Start after Close: %v, want ErrWorkerClosed", err)
	}
}

// TestWorkerOwnsItsCore: while a worker is pinned to a core, no other
// thread of the process runs there — those that existed, and those the
// runtime creates afterwards — and GOMAXPROCS leaves a P beside it; once
// the worker stops, the core is everyone's again. The same when the process
// reserved the core beforehand (ReserveCore, as a benchmark does), which
// restricted the thread the worker then pins.
func TestWorkerOwnsItsCore(t *testing.T) {
	t.Run("worker", func(t *testing.T) { ownsItsCore(t, false) })
	t.Run("reserved first", func(t *testing.T) { ownsItsCore(t, true) })
	t.Run("every core", everyCoreReserved)
}

// newThreadSets returns the CPU sets of n goroutines locked to threads at
// the same time, which makes the runtime create threads if it has too few.
func newThreadSets(n int) []unix.CPUSet {
	sets := make(chan unix.CPUSet, n)
	var hold sync.WaitGroup
	hold.Add(1)
	for i := 0; i < n; i++ {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var s unix.CPUSet
			_ = unix.SchedGetaffinity(0, &s)
			sets <- s
			hold.Wait()
		}()
	}
	var out []unix.CPUSet
	for i := 0; i < n; i++ {
		out = append(out, <-sets)
	}
	hold.Done()
	return out
}

// everyCoreReserved: with a worker pinned to every CPU the process may use
// (nothing is left for the other threads, which then keep the whole set)
// and all of them stopped, every CPU is the process's again, for the
// threads that existed and for new ones.
func everyCoreReserved(t *testing.T) {
	nettest.LastCPU(t) // two CPUs at least
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer link.A().Close()
	defer link.B().Close()
	var ws []*dataplane.Worker
	for c := 0; c < 8*int(unsafe.Sizeof(orig)); c++ {
		if !orig.IsSet(c) {
			continue
		}
		l, err := dataplane.NewLane(dataplane.LaneConfig{Rx: link.A(), Tx: link.B(), Role: dataplane.RoleForward})
		if err != nil {
			t.Fatal(err)
		}
		w, err := dataplane.NewWorker(dataplane.WorkerConfig{Core: c, Lanes: []*dataplane.Lane{l}, IdleSleep: 50 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for c := 0; c < 8*int(unsafe.Sizeof(orig)); c++ {
		if err := dataplane.CheckCore(c); orig.IsSet(c) && err != nil {
			t.Errorf("after the workers stopped: %v", err)
		}
	}
	for _, s := range newThreadSets(4) {
		if s != orig {
			t.Errorf("a thread after the workers stopped may use %d CPUs, the process %d", s.Count(), orig.Count())
		}
	}
}

func ownsItsCore(t *testing.T, reserveFirst bool) {
	core := nettest.LastCPU(t)
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer link.A().Close()
	defer link.B().Close()
	l, err := dataplane.NewLane(dataplane.LaneConfig{Rx: link.A(), Tx: link.B(), Role: dataplane.RoleForward})
	if err != nil {
		t.Fatal(err)
	}
	release := func() {}
	if reserveFirst {
		if release, err = dataplane.ReserveCore(core); err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	var wtid atomic.Int64 // the worker's thread
	w, err := dataplane.NewWorker(dataplane.WorkerConfig{Core: core, Lanes: []*dataplane.Lane{l},
		OnStart: func() error { wtid.Store(int64(unix.Gettid())); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var ws unix.CPUSet
	if err := unix.SchedGetaffinity(int(wtid.Load()), &ws); err != nil || ws.Count() != 1 || !ws.IsSet(core) {
		t.Errorf("the worker's thread may run on %d CPUs (%v), want its core %d alone", ws.Count(), err, core)
	}
	// onCore: the process's threads allowed on core beside others, and
	// those pinned to it alone.
	onCore := func() (shared, pinned int) {
		pinned, shared = nettest.ThreadsOn(os.Getpid(), core)
		return
	}
	// Pinned threads may be more than the worker: a worker that ran on
	// the main thread leaves it parked there when it ends (Go keeps the
	// main thread of a goroutine that exits locked).
	if shared, pinned := onCore(); shared != 0 || pinned < 1 {
		t.Errorf("worker running: %d other threads may run on core %d, %d pinned there (want 0 and the worker)", shared, core, pinned)
	}
	if err := dataplane.CheckCore(core); err != nil {
		t.Errorf("a reserved core is still the process's to use: %v", err)
	}
	if p := runtime.GOMAXPROCS(0); p < 2 {
		t.Errorf("GOMAXPROCS %d beside a spinning worker", p)
	}
	// New threads: goroutines locked to threads at once force the runtime
	// to create some.
	for _, s := range newThreadSets(6) {
		if s.IsSet(core) {
			t.Errorf("a thread running beside the worker may use its core %d", core)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	release()
	if shared, _ := onCore(); shared == 0 {
		t.Errorf("worker stopped: no thread may use core %d any more", core)
	}
}
