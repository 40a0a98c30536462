package dataplane

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// TestReserveCoreThreadBornDuringPass: a thread the runtime starts while
// a core is being reserved, after the reservation listed the threads and
// before it restricted any (so that it inherits the whole set), ends up
// off the core as well. Such threads are started whenever a syscall
// blocks long enough for sysmon to hand its P on, which the reservation's
// own syscalls do on a loaded machine.
func TestReserveCoreThreadBornDuringPass(t *testing.T) {
	core := nettest.LastCPU(t)
	var hold sync.WaitGroup
	hold.Add(1)
	defer hold.Done()
	born := -1 // a thread started after the listing
	testHookListed = func(tasks []os.DirEntry) {
		listed := map[int]bool{}
		for _, e := range tasks {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				listed[tid] = true
			}
		}
		// Occupy threads until the runtime has to start a new one.
		for i := 0; i < 256 && born < 0; i++ {
			tids := make(chan int)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				tids <- unix.Gettid()
				hold.Wait()
			}()
			if tid := <-tids; !listed[tid] {
				born = tid
			}
		}
	}
	defer func() { testHookListed = nil }()
	release, err := ReserveCore(core)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	testHookListed = nil
	if born < 0 {
		t.Skip("the runtime started no thread during the reservation")
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(born, &set); err != nil {
		t.Fatal(err)
	}
	if set.IsSet(core) {
		t.Errorf("thread %d, born while core %d was being reserved, may run on it (%d CPUs)", born, core, set.Count())
	}
}
