package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/report"
)

// TestRunNoPeerDegraded: an appliance with no peer on its segment says so
// within 3 intervals — a "status" line (check peer_silent), /healthz
// degraded with the reason, a warning in the log — and every line run
// writes (interval, port, status) follows report/schema.json.
func TestRunNoPeerDegraded(t *testing.T) {
	sch := reportSchema(t)
	id := fmt.Sprint(os.Getpid())
	g, s := "WG"+id, "WS"+id
	for _, name := range []string{g, s} {
		l, err := dataplane.NewRingLink(name, dataplane.LinkConfig{Size: 1024, Pool: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer l.A().Close()
	}
	const interval = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuf
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- runMain(ctx, []string{"--port-a", "ring:" + g + ".b", "--port-b", "ring:" + s + ".a", "--segment-port", "b",
			"--key-file", writeKey(t), "--interval", interval.String(), "--format", "json", "--metrics-addr", "127.0.0.1:0",
			"--idle-sleep", "50us", "--drain", "300ms", "--segment-name", "lonely"}, &out, &errb)
	}()
	re := regexp.MustCompile(`"addr":"([^"]+)"[^\n]*"message":"serving /metrics`)
	var url string
	for deadline := time.Now().Add(5 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(errb.String()); m != nil {
			url = "http://" + m[1] + "/healthz"
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no metrics address in the log:\n%s", errb.String())
	}
	// The appliance starts right after it logs the address (building it
	// can take a while on a loaded machine): the intervals count from here.
	start = time.Now()
	// /healthz turns degraded, naming the check, within 3 intervals.
	var health string
	var degradedAt time.Duration
	for deadline := start.Add(3 * interval); time.Now().Before(deadline.Add(interval)); time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if health = string(b); resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(health, `"degraded"`) {
			degradedAt = time.Since(start)
			break
		}
	}
	if degradedAt == 0 || degradedAt > 3*interval+100*time.Millisecond {
		t.Errorf("/healthz not degraded within 3 intervals (%v): %s", degradedAt, health)
	}
	var h struct {
		Status  string
		Problem string
		Checks  map[string]string
	}
	json.Unmarshal([]byte(health), &h)
	if !strings.Contains(h.Checks["peer_silent"], "nothing heard from the peer") || !strings.Contains(h.Problem, "peer_silent") {
		t.Errorf("/healthz does not say why: %s", health)
	}
	time.Sleep(2 * interval)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}

	seen := checkLines(t, sch, "run", []byte(out.String()))
	wantTypes(t, "run", seen, "port", "status") // no interval line without a peer: nothing to measure
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	statuses := 0
	for sc.Scan() {
		var st report.Status
		if json.Unmarshal(sc.Bytes(), &st) != nil || st.Type != "status" {
			continue
		}
		statuses++
		if at := time.Unix(0, st.TimeNs).Sub(start); statuses == 1 && (st.Status != "degraded" || len(st.Problems) != 1 ||
			st.Problems[0].Check != "peer_silent" || at > 3*interval+100*time.Millisecond || st.Segment != "lonely") {
			t.Errorf("first status %+v at %v, want degraded peer_silent within 3 intervals", st, at)
		}
	}
	if statuses != 1 {
		t.Errorf("%d status lines for one unchanged verdict:\n%s", statuses, out.String())
	}
	if !strings.Contains(errb.String(), "nothing heard from the peer") {
		t.Errorf("the log does not warn:\n%s", errb.String())
	}
}

// idleRuns makes runTwoIdle's ring names unique across -count runs.
var idleRuns atomic.Int64

// runTwoIdle runs two appliances back to back over ring links, no
// traffic (their control frames still flow every interval), and returns
// the second's stdout and log.
func runTwoIdle(t *testing.T, tag string, args1, args2 []string, dur time.Duration) (string, string) {
	t.Helper()
	args := []string{"--duration", dur.String()}
	_, out2, log2, _ := runTwoIdleWithin(t, tag, append(args, args1...), append(args, args2...), 30*time.Second)
	return out2, log2
}

// runTwoIdleWithin is runTwoIdle with each end's --duration in its
// arguments; it fails unless both have returned within limit, and returns
// both stdouts, the second's log and how long the two ran.
func runTwoIdleWithin(t *testing.T, tag string, args1, args2 []string, limit time.Duration) (string, string, string, time.Duration) {
	t.Helper()
	id := fmt.Sprintf("%s%dx%d", tag, os.Getpid(), idleRuns.Add(1))
	g, s, k := "G"+id, "S"+id, "K"+id
	// {g}, {s} and {k} in the arguments name the three links.
	names := strings.NewReplacer("{g}", g, "{s}", s, "{k}", k)
	for _, args := range [][]string{args1, args2} {
		for i := range args {
			args[i] = names.Replace(args[i])
		}
	}
	for _, name := range []string{g, s, k} {
		l, err := dataplane.NewRingLink(name, dataplane.LinkConfig{Size: 1024, Pool: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer l.A().Close()
	}
	common := []string{"--format", "json", "--stats-interval", "1h", "--drain", "300ms", "--idle-sleep", "50us"}
	var out1, out2, err1, err2 syncBuf
	errs := make(chan error, 2)
	start := time.Now()
	go func() {
		errs <- runMain(context.Background(), append(append([]string{"--port-a", "ring:" + g + ".b", "--port-b", "ring:" + s + ".a", "--segment-port", "b"}, common...), args1...), &out1, &err1)
	}()
	go func() {
		errs <- runMain(context.Background(), append(append([]string{"--port-a", "ring:" + s + ".b", "--port-b", "ring:" + k + ".a", "--segment-port", "a"}, common...), args2...), &out2, &err2)
	}()
	timeout := time.After(limit)
	for i := range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("run: %v\n%s\n%s", err, err1.String(), err2.String())
			}
		case <-timeout:
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			t.Fatalf("%d of the two runs still running after %v (heap %d MiB)\n%s", 2-i, limit, m.HeapAlloc>>20, tail(err2.String(), 2000))
		}
	}
	return out1.String(), out2.String(), err2.String(), time.Since(start)
}

// tail is the last n bytes of s.
func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// statusProblems returns the problems of the status lines in out.
func statusProblems(out string) []report.StatusProblem {
	var ps []report.StatusProblem
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var st report.Status
		if json.Unmarshal(sc.Bytes(), &st) == nil && st.Type == "status" {
			ps = append(ps, st.Problems...)
		}
	}
	return ps
}

// TestRunPeerMismatchNamed: a wrong key, a peer running --insecure
// against a keyed end, a different --interval, and an end whose
// --segment-port names the wrong port are each reported by name in a
// status line and in the log — not only as a counter.
func TestRunPeerMismatchNamed(t *testing.T) {
	k1, k2 := writeKey(t), writeKey(t)
	const iv = "100ms"
	for _, c := range []struct {
		name         string
		args1, args2 []string
		check, want  string
	}{
		{"wrong key", []string{"--key-file", k1, "--interval", iv}, []string{"--key-file", k2, "--interval", iv}, "peer_auth", "different --key-file keys"},
		{"peer insecure", []string{"--insecure", "--interval", iv}, []string{"--key-file", k2, "--interval", iv}, "peer_auth", "it runs --insecure"},
		{"we insecure", []string{"--key-file", k1, "--interval", iv}, []string{"--insecure", "--interval", iv}, "peer_auth", "this end runs --insecure"},
		{"interval differs", []string{"--key-file", k1, "--interval", "200ms"}, []string{"--key-file", k1, "--interval", iv}, "peer_config", "interval: sender 200ms, ours 100ms"},
		// Both ends given --segment-port b: the second end's port b faces
		// away from the segment, and the first end's control frames arrive
		// on its port a. That end names the change.
		{"both segment b", []string{"--key-file", k1, "--interval", iv}, []string{"--key-file", k1, "--interval", iv, "--segment-port", "b"}, "wiring", "arrive on port a"},
		// The second end's ports swapped (its port b on the segment, as
		// --segment-port a says of port a): the same, named the same way.
		{"swapped ports", []string{"--key-file", k1, "--interval", iv}, []string{"--key-file", k1, "--interval", iv, "--port-a", "ring:{k}.a", "--port-b", "ring:{s}.b"}, "wiring", "give this end --segment-port b"},
		// The end whose ports are right hears nothing and says what may
		// be wrong at the other end.
		{"peer's segment port wrong", []string{"--key-file", k1, "--interval", iv, "--segment-port", "a"}, []string{"--key-file", k1, "--interval", iv}, "peer_silent", "--segment-port names its port away from the segment"},
		// Both ends' --segment-port name the port facing their own users:
		// each sends toward its own side, neither hears the other.
		{"both segment ports wrong", []string{"--key-file", k1, "--interval", iv, "--segment-port", "a"}, []string{"--key-file", k1, "--interval", iv, "--segment-port", "b"}, "peer_silent", "if both ends name theirs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A check other than peer_silent needs the peer's first
			// control frame, due one (200 ms) interval in. Under the
			// race detector, beside other packages' tests on two cores,
			// an end once received nothing within 900 ms and reported
			// peer_silent: give those runs longer there.
			dur := 900 * time.Millisecond
			if raceEnabled && c.check != "peer_silent" {
				dur = 3 * time.Second
			}
			out, log := runTwoIdle(t, strings.ReplaceAll(c.name, " ", ""), c.args1, c.args2, dur)
			found := false
			for _, p := range statusProblems(out) {
				if p.Check == c.check && strings.Contains(p.Reason, c.want) {
					found = true
					if c.check == "peer_config" && (len(p.Settings) != 1 || p.Settings[0] != "interval") {
						t.Errorf("settings %q, want [interval]", p.Settings)
					}
				}
			}
			if !found {
				t.Errorf("no status problem %s naming %q:\n%s", c.check, c.want, out)
			}
			if !strings.Contains(log, `"check":"`+c.check+`"`) {
				t.Errorf("the log does not name %s:\n%s", c.check, log)
			}
		})
	}
}

// TestRunPeerIntervalStops: two ends of different --interval each stop
// within their drain, in bounded memory, the survivor too (here the end
// that runs longer). A 200 ms end numbers its intervals half as high as a
// 100 ms peer: the final report at stop once counted from its own
// numbers to the peer's, billions of intervals (100 % CPU, GBs, no exit).
// Both ways round: each end is once the one with the longer interval.
func TestRunPeerIntervalStops(t *testing.T) {
	const drain = 300 * time.Millisecond // runTwoIdleWithin's --drain
	for _, c := range []struct{ name, iv1, iv2 string }{
		{"survivor slower", "100ms", "200ms"},
		{"survivor faster", "200ms", "100ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// #1 stops first; #2, the survivor, runs on past the pairing
			// timeout (an interval + 2 s), so that it has declared
			// intervals of its own numbering silent too: the span from
			// those to the peer's numbers was the one counted.
			const dur1, dur2 = time.Second, 3500 * time.Millisecond
			k := writeKey(t)
			out1, out2, log2, took := runTwoIdleWithin(t, "IV"+c.iv1,
				[]string{"--key-file", k, "--interval", c.iv1, "--duration", dur1.String()},
				[]string{"--key-file", k, "--interval", c.iv2, "--duration", dur2.String()}, 15*time.Second)
			// Start-up (building both appliances) is not the stop's:
			// allow 1.5 s of it and of a loaded machine on top.
			if limit := dur2 + drain + 1500*time.Millisecond; took > limit {
				t.Errorf("the two ran %v, want at most %v (--duration %v, --drain %v)", took, limit, dur2, drain)
			}
			// Lines: each end reports one direction, a line per interval of
			// its own numbering (silent) and per interval of the peer's
			// (the mismatch): at most dur/100ms of each, with the warm-up
			// and the stop's.
			for i, out := range []string{out1, out2} {
				ivs, _ := runLines(t, out)
				t.Logf("#%d: %d interval lines", i+1, len(ivs))
				if max := int(2*dur2/(100*time.Millisecond)) + 10; len(ivs) > max {
					t.Errorf("#%d reported %d interval lines in %v, want at most %d", i+1, len(ivs), dur2, max)
				}
			}
			if !strings.Contains(log2, "interval: sender "+c.iv1+", ours "+c.iv2) {
				t.Errorf("#2 does not name the interval mismatch:\n%s", tail(log2, 3000))
			}
			t.Logf("ran %v", took)
		})
	}
}
