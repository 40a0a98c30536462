//go:build dpdk

package dpdk

/*
#cgo pkg-config: libdpdk
#cgo CFLAGS: -O3
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Built reports whether this binary links DPDK.
const Built = true

var eal struct {
	mu      sync.Mutex
	done    bool // rte_eal_init was called (whatever its outcome)
	err     error
	argv    []string
	cleaned bool
	mask    unix.CPUSet // the process's CPU mask before EAL pinned anything
}

// Init initialises the EAL with the user's arguments (see EALArgs for the
// defaults added). It is InitEAL(EALConfig{Args: args}) with the first
// allowed CPU as the only core.
func Init(args []string) error {
	return InitEAL(EALConfig{Args: args})
}

// InitEAL initialises DPDK's EAL once per process; later calls return the
// first call's error. The calling goroutine's thread is pinned by EAL to the
// main lcore during rte_eal_init; InitEAL restores its CPU mask afterwards
// so the Go scheduler keeps using every CPU.
func InitEAL(cfg EALConfig) error {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	if eal.done {
		return eal.err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var mask unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mask); err != nil {
		return fmt.Errorf("%w: sched_getaffinity: %v", ErrEALInit, err)
	}
	if len(cfg.Cores) == 0 {
		for c := 0; c < 1024; c++ {
			if mask.IsSet(c) {
				cfg.Cores = []int{c}
				break
			}
		}
	}
	SweepRuntimeDirs(RuntimeDir)
	_, statErr := os.Stat(PMDDir)
	argv, err := EALArgs(cfg, HugePagesFree(), os.Getpid(), statErr == nil)
	if err != nil {
		return err
	}
	eal.done = true
	eal.argv = argv
	eal.mask = mask
	// rte_eal_init keeps pointers into argv (e.g. for --file-prefix), so the
	// strings are allocated in C and never freed.
	cargv := (**C.char)(C.calloc(C.size_t(len(argv)+1), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	av := unsafe.Slice(cargv, len(argv)+1)
	for i, a := range argv {
		av[i] = C.CString(a)
	}
	ret := C.ldaf_eal_init(C.int(len(argv)), cargv)
	_ = unix.SchedSetaffinity(0, &mask)
	if ret < 0 {
		eal.err = fmt.Errorf("%w (%q): %s", ErrEALInit, argv[1:], C.GoString(C.rte_strerror(-ret)))
		return eal.err
	}
	return nil
}

// EALArgv returns the argv rte_eal_init was given (nil before Init).
func EALArgv() []string {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	return append([]string(nil), eal.argv...)
}

// Cleanup frees the mbuf pools of closed ports and releases EAL resources
// (rte_eal_cleanup). Close every port first; after Cleanup no DPDK call may be made and EAL cannot be
// initialised again in this process.
func Cleanup() error {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	if !eal.done || eal.err != nil || eal.cleaned {
		return nil
	}
	eal.cleaned = true
	freeClosedPools()
	if ret := C.rte_eal_cleanup(); ret < 0 {
		return fmt.Errorf("dpdk: rte_eal_cleanup: %s", C.GoString(C.rte_strerror(-ret)))
	}
	// EAL leaves its (by now empty) runtime directory behind.
	_ = os.Remove(RuntimeDir + "/ldafwd-" + strconv.Itoa(os.Getpid()))
	return nil
}

func ealReady() error {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	switch {
	case !eal.done:
		return fmt.Errorf("%w: call dpdk.Init before opening a port", ErrEALInit)
	case eal.cleaned:
		return fmt.Errorf("%w: EAL was cleaned up", ErrEALInit)
	}
	return eal.err
}

// RegisterThread locks the calling goroutine to its OS thread, pins the
// thread to cpu (cpu < 0 leaves the mask alone) and registers it with EAL
// as an lcore (rte_thread_register), so mempool gets and puts on this
// thread use a per-lcore cache instead of the shared ring. It returns the
// lcore id. Call UnregisterThread on the same goroutine when done.
func RegisterThread(cpu int) (lcore int, err error) {
	if err := ealReady(); err != nil {
		return -1, err
	}
	runtime.LockOSThread()
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			runtime.UnlockOSThread()
			return -1, fmt.Errorf("dpdk: pin thread to cpu %d: %w", cpu, err)
		}
	}
	ret := C.ldaf_thread_register()
	if ret < 0 {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("dpdk: rte_thread_register: %s", C.GoString(C.rte_strerror(-ret)))
	}
	return int(ret), nil
}

// UnregisterThread undoes RegisterThread on the calling goroutine and
// gives the thread back the process's CPU mask before Go reuses it.
func UnregisterThread() {
	C.ldaf_thread_unregister()
	eal.mu.Lock()
	mask := eal.mask
	eal.mu.Unlock()
	_ = unix.SchedSetaffinity(0, &mask)
	runtime.UnlockOSThread()
}

// LcoreID is the calling thread's lcore id, -1 for a thread EAL does not know.
func LcoreID() int {
	id := C.rte_lcore_id()
	if id == C.LCORE_ID_ANY {
		return -1
	}
	return int(id)
}
