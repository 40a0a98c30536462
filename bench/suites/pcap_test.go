package suites

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestRunChildSpan pins how a child's rate is read from its port
// records: the span from the first tick at or after the warm-up to the
// last non-final one, both ports' tx summed; the final records give the
// whole run's total and the "appliance stopped" log line the counters.
func TestRunChildSpan(t *testing.T) {
	rec := func(port string, el float64, tx int, final bool) string {
		f := ""
		if final {
			f = `,"final":true`
		}
		return fmt.Sprintf(`{"type":"port","port":%q,"tx_packets":%d,"elapsed_s":%g%s}`, port, tx, el, f)
	}
	lines := []string{
		rec("a", 0.5, 1, false), rec("b", 0.5, 500, false), // before the warm-up
		rec("a", 0.8, 2, false), rec("b", 0.8, 800, false),
		`{"type":"interval","tx_packets":99999}`,
		rec("a", 1.3, 3, false), rec("b", 1.3, 1300, false),
		rec("a", 1.8, 4, false), rec("b", 1.8, 1800, false),
		rec("a", 1.9, 5, true), rec("b", 1.9, 1900, true),
	}
	script := "cat <<'E'\n" + strings.Join(lines, "\n") + "\nE\n" +
		`echo '{"level":"info","sent_recorded":1850,"received_recorded":5,"sender_fast_bursts":7,"message":"appliance stopped"}' >&2`
	r, err := runChild("/bin/sh", []string{"-c", script}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.frames != 1804-802 || r.wall != time.Second || r.finalTx != 1905 || r.recorded != 1855 || r.fastBursts != 7 {
		t.Errorf("%+v", r)
	}
	if got := r.wallMpps(); math.Abs(got-1002e-6) > 1e-9 {
		t.Errorf("wall rate %g Mpps", got)
	}
}

// TestSpinPlausible: a pinned worker's CPU time under half the span is a
// bad reading, which runSpinning measures again.
func TestSpinPlausible(t *testing.T) {
	for _, c := range []struct {
		cpu, wall time.Duration
		want      bool
	}{
		{980 * time.Millisecond, time.Second, true},
		{500 * time.Millisecond, time.Second, true},
		{45 * time.Millisecond, time.Second, false}, // 22 × the rate the frames say
		{0, time.Second, false},
	} {
		if got := (childRun{workerCPU: c.cpu, wall: c.wall}).spinPlausible(); got != c.want {
			t.Errorf("worker %v over %v: plausible %v, want %v", c.cpu, c.wall, got, c.want)
		}
	}
}
