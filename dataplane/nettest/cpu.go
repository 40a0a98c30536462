package nettest

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LastCPU is the highest CPU this process may use, for a test that pins a
// worker there and checks that nothing else runs on it. It skips the test
// on a machine with fewer than two allowed CPUs.
func LastCPU(t testing.TB) int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() < 2 {
		t.Skip("needs two CPUs")
	}
	last := -1
	for c := 0; c < 8*int(unsafe.Sizeof(set)); c++ {
		if set.IsSet(c) {
			last = c
		}
	}
	return last
}

// ThreadsOn counts the threads of process pid that may run on core:
// pinned, those allowed on core alone (a pinned worker), and shared, those
// allowed on it among other CPUs.
func ThreadsOn(pid, core int) (pinned, shared int) {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
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
