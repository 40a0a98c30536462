package dataplane_test

import (
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
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
			if len(c.cores) == 2 && strings.Contains(err.Error(), "does not exist") {
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
