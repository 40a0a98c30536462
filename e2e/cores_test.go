package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRunOwnsItsCore: `ldafwd run --cores C` keeps every thread of the
// process but its worker off core C, the threads that exist once it runs
// and those the Go runtime starts later alike (read from the kernel with
// sched_getaffinity on each of the running binary's threads).
func TestRunOwnsItsCore(t *testing.T) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	if all.Count() < 2 {
		t.Skip("needs two CPUs")
	}
	core := -1
	for c := 0; c < 1024; c++ {
		if all.IsSet(c) {
			core = c
		}
	}
	bin := ldafwdBinary(t, false)
	id := fmt.Sprint(os.Getpid())
	p := startLdafwd(t, "cores", bin, "--forward-only", "--port-a", "ring:CA"+id+".a", "--port-b", "ring:CB"+id+".b",
		"--cores", strconv.Itoa(core), "--duration", "6s", "--stats-interval", "100ms", "--format", "json")
	defer p.stop(t, 10*time.Second)
	pid := p.cmd.Process.Pid
	// threads: the process's threads pinned to core alone, and those
	// that may run there beside it.
	threads := func() (pinned, shared int) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
		for _, task := range tasks {
			tid, err := strconv.Atoi(filepath.Base(task))
			if err != nil {
				continue
			}
			var s unix.CPUSet
			if unix.SchedGetaffinity(tid, &s) != nil || !s.IsSet(core) {
				continue
			}
			if s.Count() == 1 {
				pinned++
			} else {
				shared++
			}
		}
		return
	}
	deadline := time.Now().Add(4 * time.Second)
	for {
		pinned, shared := threads()
		if pinned >= 1 && shared == 0 {
			break
		}
		if p.hasExited() || time.Now().After(deadline) {
			t.Fatalf("worker on core %d: %d threads pinned there, %d others may run there\n%s", core, pinned, shared, p.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if pinned, shared := threads(); pinned < 1 || shared != 0 {
		t.Errorf("a second later: %d threads pinned to core %d, %d others may run there", pinned, core, shared)
	}
}
