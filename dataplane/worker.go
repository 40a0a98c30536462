package dataplane

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WorkerConfig configures one worker: a goroutine locked to an OS thread,
// pinned to a core, polling its lanes run-to-completion.
type WorkerConfig struct {
	ID    int
	Core  int // CPU to pin to; < 0: not pinned (shared machines, tests)
	Lanes []*Lane
	// IdleSleep, when > 0, makes an idle worker wait up to this long
	// after a run of empty polls, so that a demo on a laptop does not burn
	// a core per worker. 0 (the appliance on dedicated cores) spins. When every lane's rx port can
	// be waited on (RxWaiter: AF_XDP sockets) the worker waits in ppoll(2)
	// and wakes as soon as a frame arrives; otherwise it sleeps with
	// nanosleep(2), which on Linux lasts the asked time plus the timer
	// slack (~50 µs), where Go's time.Sleep below a millisecond lasts
	// about a millisecond (the runtime's timer granularity).
	IdleSleep time.Duration
	// OnStart runs on the worker's thread after pinning, before the first
	// poll (DPDK registers the thread as an EAL lcore here); OnExit after
	// the last.
	OnStart func() error
	OnExit  func()
}

// RxWaiter is implemented by rx ports with a file descriptor that polls
// readable when frames wait (an AF_XDP socket). A worker whose lanes all
// receive from such ports waits for frames in ppoll(2) instead of sleeping
// blind.
type RxWaiter interface {
	// RxFD is the descriptor to poll for POLLIN; < 0: none (closed).
	RxFD() int
}

// Worker runs its lanes until closed. A measuring worker stops in two
// steps so that the last interval is measured and shipped: EndInterval asks
// its sender lanes to end their interval (End marker, flip) while
// forwarding goes on — the control side still needs the lanes to carry its
// frames — and Close ends the loop after a final drain.
//
// Close is the one way to stop a worker: it may be called any number of
// times, from any goroutine, before or after Start; a worker closed before
// it started never starts.
type Worker struct {
	cfg    WorkerConfig
	ending atomic.Bool // EndInterval was called
	ended  atomic.Bool // the lanes have ended their last interval
	quit   atomic.Bool
	done   chan error
	ready  chan error // the outcome of pinning and OnStart, once

	mu    sync.Mutex // Start and Close
	state workerState
	err   error // the loop's (or setup's) error, once closed

	reserved bool // setup reserved the worker's core (cores.go); the loop's goroutine only
}

type workerState uint8

const (
	workerNew workerState = iota
	workerRunning
	workerClosed
)

// ErrWorkerClosed is Start's error for a worker already closed.
var ErrWorkerClosed = errors.New("dataplane: worker closed")

// NewWorker checks cfg.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if len(cfg.Lanes) == 0 {
		return nil, fmt.Errorf("dataplane: worker %d has no lanes", cfg.ID)
	}
	if cfg.Core >= 0 {
		if err := CheckCore(cfg.Core); err != nil {
			return nil, fmt.Errorf("dataplane: worker %d: %w", cfg.ID, err)
		}
	}
	return &Worker{cfg: cfg, done: make(chan error, 1), ready: make(chan error, 1)}, nil
}

// CheckCore says whether this process may run on CPU core: it must be in
// the process's allowed CPU set (taskset, cgroups), which need not start
// at 0 nor be as large as runtime.NumCPU says.
func CheckCore(core int) error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return fmt.Errorf("reading the allowed CPUs: %w", err)
	}
	set = unreservedSet(set)
	if core < 0 || core >= 8*int(unsafe.Sizeof(set)) || !set.IsSet(core) {
		var allowed []int
		for c := 0; c < 8*int(unsafe.Sizeof(set)); c++ {
			if set.IsSet(c) {
				allowed = append(allowed, c)
			}
		}
		return fmt.Errorf("CPU %d is not among the CPUs this process may use %v", core, allowed)
	}
	return nil
}

// Start runs the worker on its own goroutine and returns once it has
// pinned itself and run OnStart: their error, if any (the worker has then
// stopped, and Close returns the same error). A worker starts once: a
// second Start is an error, and so is a Start after Close
// (ErrWorkerClosed).
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.state {
	case workerClosed:
		return ErrWorkerClosed
	case workerRunning:
		return fmt.Errorf("dataplane: worker %d already started", w.cfg.ID)
	}
	w.state = workerRunning
	go func() { w.done <- w.run() }()
	if err := <-w.ready; err != nil {
		w.err, w.state = <-w.done, workerClosed
		return err
	}
	return nil
}

// Close stops the loop after forwarding what is in flight and draining the
// tx buffers, and returns the loop's error. It returns once the worker has
// stopped; every later (or concurrent) call returns the same error. A
// worker never started is closed at once.
func (w *Worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == workerRunning {
		w.quit.Store(true)
		w.err = <-w.done
	}
	w.state = workerClosed
	return w.err
}

// EndInterval ends the current interval of every sender lane (at the
// worker's next poll) and keeps forwarding.
func (w *Worker) EndInterval() { w.ending.Store(true) }

// IntervalEnded reports whether EndInterval has taken effect.
func (w *Worker) IntervalEnded() bool { return w.ended.Load() }

func (w *Worker) run() error {
	err := w.setup()
	if w.reserved {
		defer releaseCore(w.cfg.Core)
	}
	w.ready <- err
	if err != nil {
		return err
	}
	if w.cfg.OnExit != nil {
		defer w.cfg.OnExit()
	}
	wait := idleWaiter(w.cfg.Lanes, w.cfg.IdleSleep)
	emptyRun := 0
	for !w.quit.Load() {
		if w.Turn() {
			emptyRun = 0
		} else {
			emptyRun++
			// A spinning worker never yields: pinWorker left a P for
			// the rest of the program, and yielding a locked thread's P
			// costs two thread hand-offs and lets another thread onto
			// the core.
			if w.cfg.IdleSleep > 0 && emptyRun >= wait.after {
				wait.wait()
			}
		}
	}
	w.Finish()
	return nil
}

// Turn is one iteration of the worker's loop: the interval EndInterval
// asked for is ended, then every lane is polled once. It reports whether
// any lane had work. The loop calls it; so does a caller that drives the
// worker itself on simulated time (a worker never Started), which must
// then end with Finish. Nothing here allocates, locks or sleeps.
func (w *Worker) Turn() bool {
	lanes := w.cfg.Lanes
	if w.ending.Load() && !w.ended.Load() {
		for _, l := range lanes {
			l.CloseInterval()
		}
		w.ended.Store(true)
	}
	work := false
	for _, l := range lanes {
		if l.Poll() {
			work = true
		}
	}
	return work
}

// Finish is the end of the worker's loop: what is still in flight is
// forwarded (a bounded number of polls), then the tx buffers are
// flushed. The loop calls it as it stops; a caller driving the worker
// with Turn calls it once, instead of Close's stop.
func (w *Worker) Finish() {
	lanes := w.cfg.Lanes
	for i := 0; i < 64; i++ {
		work := false
		for _, l := range lanes {
			if l.Poll() {
				work = true
			}
		}
		if !work {
			break
		}
	}
	for _, l := range lanes {
		l.Drain()
	}
}

// idleWait is how an idle worker waits: ppoll(2) on its lanes' rx
// descriptors, or nanosleep(2), for at most d.
type idleWait struct {
	fds   []unix.PollFd // nil: no descriptors, sleep
	d     time.Duration
	ts    unix.Timespec
	after int // empty polls in a row before waiting
}

// Empty polls before an idle worker waits: a blind sleep can miss a burst
// by its whole length, so the worker first spins a while; a ppoll wakes
// with the next frame, so spinning long would only burn the core that the
// traffic and the rest of the machine need (at 20 kpps a worker that spun
// 256 polls after every frame stayed busy half the time).
const (
	spinBeforeSleep = 256
	spinBeforePoll  = 16
)

func idleWaiter(lanes []*Lane, d time.Duration) *idleWait {
	w := &idleWait{d: d, ts: unix.NsecToTimespec(d.Nanoseconds()), after: spinBeforeSleep}
	var fds []unix.PollFd
	for _, l := range lanes {
		rw, ok := l.cfg.Rx.(RxWaiter)
		if !ok || rw.RxFD() < 0 {
			return w
		}
		fds = append(fds, unix.PollFd{Fd: int32(rw.RxFD()), Events: unix.POLLIN})
	}
	w.fds, w.after = fds, spinBeforePoll
	return w
}

// Polling reports whether the worker waits in ppoll(2) when idle.
func (w *Worker) Polling() bool { return len(idleWaiter(w.cfg.Lanes, 0).fds) > 0 }

// wait blocks for at most d: until a frame arrives on one of the fds, or
// d has passed. A signal cuts it short, which is harmless: the worker
// polls its lanes and comes back here.
func (w *idleWait) wait() {
	ts := w.ts
	if w.fds != nil {
		_, _ = unix.Ppoll(w.fds, &ts, nil)
		return
	}
	_ = unix.Nanosleep(&ts, nil)
}

// setup pins the worker and runs OnStart. A pinned worker keeps its OS
// thread locked for good: the thread's affinity is one CPU, and handing it
// back to Go's scheduler would leave an ordinary goroutine stuck there; the
// runtime ends a locked thread when its goroutine exits.
func (w *Worker) setup() error {
	if w.cfg.Core >= 0 {
		runtime.LockOSThread()
	}
	if err := pinWorker(w.cfg.Core); err != nil {
		return fmt.Errorf("dataplane: worker %d: pin to core %d: %w", w.cfg.ID, w.cfg.Core, err)
	}
	w.reserved = true
	if w.cfg.IdleSleep > 0 {
		// An idle worker's wait is the poll gap its receive stamps carry
		// as uncertainty: the kernel's default 50 µs timer slack nearly
		// doubles a 50 µs nanosleep (p50 105 µs, 60 µs with 1 ns slack,
		// measured on this kernel). Slack is per thread, so the worker
		// keeps this one.
		runtime.LockOSThread()
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) // best effort: only a longer wait without it
	}
	if w.cfg.OnStart != nil {
		if err := w.cfg.OnStart(); err != nil {
			return fmt.Errorf("dataplane: worker %d: %w", w.cfg.ID, err)
		}
	}
	return nil
}

// NewWorkers places a bump in the wire's two lanes (one per direction) on
// workers the way --cores asks: no core — one unpinned worker for both;
// one core — one worker pinned there for both; two cores — a worker per
// lane, pinned in order. tmpl gives the rest of every worker's
// configuration (IdleSleep, OnStart, OnExit); its ID, Core and Lanes are
// set here.
func NewWorkers(lanes [2]*Lane, cores []int, tmpl WorkerConfig) ([]*Worker, error) {
	groups := [][]*Lane{{lanes[0], lanes[1]}}
	pin := []int{-1}
	switch len(cores) {
	case 0:
	case 1:
		pin = cores
	case 2:
		groups, pin = [][]*Lane{{lanes[0]}, {lanes[1]}}, cores
	default:
		return nil, fmt.Errorf("dataplane: %d cores for two lanes: want none, one or two", len(cores))
	}
	var ws []*Worker
	for i, g := range groups {
		cfg := tmpl
		cfg.ID, cfg.Core, cfg.Lanes = i, pin[i], g
		w, err := NewWorker(cfg)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}
