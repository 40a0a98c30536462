package dataplane

import (
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// A pinned worker owns its core: no other thread of the process may run
// there. Go's own threads (sysmon, the Ms that run the control and report
// goroutines, the garbage collector's) are otherwise free to land on a
// worker's core, and the kernel lets a freshly woken thread preempt the
// spinning worker. On a 2-core machine, `ldafwd run --cores 1` on AF_XDP
// measured about 24 000 such preemptions a second, each a gap in
// forwarding and a scheduler delay in the stamps taken after it. DPDK's
// EAL keeps its own threads off the lcores the same way.
//
// reserved counts the workers pinned to each core. While any core is
// reserved, every thread of the process whose CPU set is wider than one
// CPU runs on the process's original set minus the reserved cores (when
// that leaves any CPU). Threads created later inherit their creator's set:
// Go creates new threads from an unpinned thread, or, when the creator is
// locked to its thread (a worker, a cgo call), from its template thread,
// which was restricted like the rest. The workers' own threads are known
// by id and left alone, as are threads another owner pinned to one CPU (a
// generator, DPDK's lcores); when the cores are released, only the threads
// restricted here, and those born since with the set they inherited, get
// the original set back. A CPU set alone cannot tell them apart: with
// every core reserved, a thread restricted before the last one was
// reserved runs on one CPU, as a worker does.
var reserved struct {
	mu      sync.Mutex
	count   map[int]int         // pinned workers (and ReserveCore calls) per core
	workers map[int]bool        // the pinned workers' thread ids
	orig    unix.CPUSet         // the process's CPU set when the first core was reserved
	applied unix.CPUSet         // the set the last applyReserved gave
	seen    map[int]bool        // the threads that existed at the last applyReserved
	changed map[int]unix.CPUSet // the threads applyReserved has set, and to what
	running int                 // started workers, pinned or not
}

// pinWorker pins the calling thread, a worker's (locked to its
// goroutine), to core and reserves the core for it; core < 0: an unpinned
// worker, nothing pinned. Either way it makes sure GOMAXPROCS leaves a P
// for the rest of the program beside every spinning worker, so that no
// worker has to yield its P for the control goroutine to run. The thread
// is pinned under the reservation's lock, so that no other reservation
// takes it for a thread of its own in between.
func pinWorker(core int) error {
	reserved.mu.Lock()
	defer reserved.mu.Unlock()
	if core >= 0 {
		var before, set unix.CPUSet
		_ = unix.SchedGetaffinity(0, &before)
		set.Set(core)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return err
		}
		if reserved.workers == nil {
			reserved.workers = map[int]bool{}
		}
		reserved.workers[unix.Gettid()] = true
		// Nothing reserved yet: no thread has been restricted, so the
		// set before pinning is the process's.
		reserveLocked(core, before)
	}
	reserved.running++
	if want := reserved.running + 1; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	return nil
}

// ReserveCore keeps this process's threads off core until release is
// called, as a pinned worker does: for a process that hands the core to
// another one (a benchmark running a forwarder as a child), whose own
// threads would otherwise preempt it.
func ReserveCore(core int) (release func(), err error) {
	if err := CheckCore(core); err != nil {
		return nil, err
	}
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		return nil, err
	}
	reserved.mu.Lock()
	reserveLocked(core, before)
	reserved.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			reserved.mu.Lock()
			releaseLocked(core)
			reserved.mu.Unlock()
		})
	}, nil
}

func reserveLocked(core int, before unix.CPUSet) {
	if len(reserved.count) == 0 {
		reserved.orig, reserved.applied = before, before
		reserved.count, reserved.seen, reserved.changed = map[int]int{}, map[int]bool{}, map[int]unix.CPUSet{}
	}
	reserved.count[core]++
	applyReserved()
}

// releaseCore undoes pinWorker(core) on the worker's thread when it
// stops; the other threads get the core back when no worker is pinned
// there any more.
func releaseCore(core int) {
	reserved.mu.Lock()
	defer reserved.mu.Unlock()
	reserved.running--
	if core >= 0 {
		delete(reserved.workers, unix.Gettid())
		releaseLocked(core)
	}
}

func releaseLocked(core int) {
	if reserved.count[core] == 0 {
		return
	}
	if reserved.count[core]--; reserved.count[core] == 0 {
		delete(reserved.count, core)
	}
	applyReserved()
	if len(reserved.count) == 0 {
		reserved.count, reserved.seen, reserved.changed = nil, nil, nil
	}
}

// applyReserved sets every wide thread's CPU set to the original set minus
// the reserved cores, or back to the original set when nothing is
// reserved or nothing would be left. Best effort: a thread that exits
// meanwhile, or a set the kernel refuses, only leaves that thread as it
// was. reserved.mu is held.
//
// A thread born while a pass runs, of a creator not yet restricted,
// inherits the old set and is not in the listing the pass walks: the
// runtime starts threads at any time (sysmon hands a P on when a syscall
// blocks, as this pass's own may on a loaded machine). So the listing is
// walked again until a walk finds no thread the earlier ones did not.
func applyReserved() {
	want := reserved.orig
	for c := range reserved.count {
		want.Clear(c)
	}
	if want.Count() == 0 {
		want = reserved.orig
	}
	seen := map[int]bool{}
	for pass := 0; pass < maxApplyPasses; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			break
		}
		if pass == 0 && testHookListed != nil {
			testHookListed(tasks)
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || seen[tid] {
				continue
			}
			seen[tid], fresh = true, true
			applyThread(tid, want, pass > 0)
		}
		if !fresh {
			break
		}
	}
	reserved.seen, reserved.applied = seen, want
}

// testHookListed, when set (tests), runs after applyReserved's first
// listing of the threads, before any is restricted.
var testHookListed func(tasks []os.DirEntry)

// maxApplyPasses bounds applyReserved's walks: each finds only the
// threads born during the one before.
const maxApplyPasses = 8

// applyThread is applyReserved's work on one thread; bornNow: the thread
// was born while applyReserved ran, so that it inherited its creator's
// set from before the call or from this call.
func applyThread(tid int, want unix.CPUSet, bornNow bool) {
	var cur unix.CPUSet
	if unix.SchedGetaffinity(tid, &cur) != nil {
		return
	}
	if reserved.workers[tid] {
		delete(reserved.changed, tid)
		return
	}
	// Ours: set here and not changed since by its owner, or born
	// since the last call with the set its creator had from here (from
	// this call too, when born during it).
	set, ours := reserved.changed[tid]
	if ours && cur != set {
		ours = false
		delete(reserved.changed, tid)
	} else if !ours {
		ours = !reserved.seen[tid] && (cur == reserved.applied || bornNow && cur == want)
	}
	if !ours && cur.Count() <= 1 {
		return // pinned by its owner
	}
	if cur == want || unix.SchedSetaffinity(tid, &want) == nil {
		reserved.changed[tid] = want
	}
}

// unreservedSet is cur, a thread's CPU set, with the cores reserved from
// it given back: what the process may use.
func unreservedSet(cur unix.CPUSet) unix.CPUSet {
	reserved.mu.Lock()
	defer reserved.mu.Unlock()
	if reserved.count == nil {
		return cur
	}
	for c := range reserved.count {
		if reserved.orig.IsSet(c) {
			cur.Set(c)
		}
	}
	return cur
}

// Unreserved runs f on a thread allowed on every CPU of the process's
// original set, for starting a child process that is to run on a reserved
// core: a child inherits the CPU set of the thread that forks it.
func Unreserved(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	reserved.mu.Lock()
	orig, active := reserved.orig, reserved.count != nil
	reserved.mu.Unlock()
	var cur unix.CPUSet
	if !active || unix.SchedGetaffinity(0, &cur) != nil || cur == orig {
		return f()
	}
	if err := unix.SchedSetaffinity(0, &orig); err != nil {
		return f()
	}
	defer func() { _ = unix.SchedSetaffinity(0, &cur) }()
	return f()
}
