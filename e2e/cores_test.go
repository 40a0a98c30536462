package e2e

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// TestRunOwnsItsCore: `ldafwd run --cores C` keeps every thread of the
// process but its worker off core C, the threads that exist once it runs
// and those the Go runtime starts later alike (read from the kernel with
// sched_getaffinity on each of the running binary's threads).
func TestRunOwnsItsCore(t *testing.T) {
	core := nettest.LastCPU(t)
	bin := ldafwdBinary(t, false)
	id := fmt.Sprint(os.Getpid())
	p := startLdafwd(t, "cores", bin, "--forward-only", "--port-a", "ring:CA"+id+".a", "--port-b", "ring:CB"+id+".b",
		"--cores", strconv.Itoa(core), "--duration", "6s", "--stats-interval", "100ms", "--format", "json")
	defer p.stop(t, 10*time.Second)
	pid := p.cmd.Process.Pid
	// threads: the process's threads pinned to core alone, and those
	// that may run there beside it.
	threads := func() (pinned, shared int) { return nettest.ThreadsOn(pid, core) }
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
