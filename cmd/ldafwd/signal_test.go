package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/report"
)

// TestMain lets the signal tests run this test binary as `ldafwd`: with
// LDAFWD_AS_MAIN set it runs the command line in LDAFWD_ARGS and exits as
// main does.
func TestMain(m *testing.M) {
	if os.Getenv("LDAFWD_AS_MAIN") == "1" {
		if err := run(strings.Split(os.Getenv("LDAFWD_ARGS"), "\x1f")); err != nil {
			fmt.Fprintln(os.Stderr, "ldafwd:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lockedBuffer is a bytes.Buffer the process's output copier writes while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ldafwdProcess starts `ldafwd args…` as a process of its own.
func ldafwdProcess(t *testing.T, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LDAFWD_AS_MAIN=1", "LDAFWD_ARGS="+strings.Join(args, "\x1f"))
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cmd.Stdout = new(bytes.Buffer)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

// waitLog waits for want in the process's log.
func waitLog(t *testing.T, buf *lockedBuffer, want string, d time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(buf.String(), want) {
			return true
		}
	}
	return false
}

// TestRunSignalsStopGracefully: SIGTERM and SIGHUP both stop `ldafwd run`
// as documented — the drain runs, the final port records are written, the
// exit status is 0 — where SIGHUP used to kill it (status 129, nothing
// flushed).
func TestRunSignalsStopGracefully(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			rep := filepath.Join(t.TempDir(), "r.jsonl")
			id := fmt.Sprintf("%d%d", os.Getpid(), sig)
			cmd, stderr := ldafwdProcess(t, "run", "--port-a", "ring:A"+id+".a", "--port-b", "ring:B"+id+".a", "--segment-port", "b",
				"--insecure", "--interval", "100ms", "--drain", "300ms", "--stats-interval", "100ms", "--idle-sleep", "50us",
				"--format", "json", "--report", rep)
			if !waitLog(t, stderr, "appliance started", 5*time.Second) {
				cmd.Process.Kill()
				t.Fatalf("did not start:\n%s", stderr)
			}
			time.Sleep(250 * time.Millisecond)
			sent := time.Now()
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			took := time.Since(sent)
			if err != nil {
				t.Fatalf("exit after %v: %v\n%s", sig, err, stderr)
			}
			log := stderr.String()
			for _, want := range []string{"signalled: stopping", "appliance stopped"} {
				if !strings.Contains(log, want) {
					t.Errorf("no %q in the log:\n%s", want, log)
				}
			}
			b, _ := os.ReadFile(rep)
			if !strings.Contains(string(b), `"final":true`) {
				t.Errorf("no final port records in the report:\n%s", b)
			}
			t.Logf("%v: stopped in %v", sig, took)
		})
	}
}

// TestRunReportSinkFailing: a --report that fails while running (here
// /dev/full: every write fails with ENOSPC) is logged at once, and the run
// ends with a non-zero status.
func TestRunReportSinkFailing(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	id := fmt.Sprint(os.Getpid())
	cmd, stderr := ldafwdProcess(t, "run", "--port-a", "ring:F"+id+".a", "--port-b", "ring:G"+id+".a", "--segment-port", "b",
		"--insecure", "--interval", "100ms", "--drain", "200ms", "--stats-interval", "100ms", "--idle-sleep", "50us",
		"--report", "/dev/full", "--metrics-addr", "127.0.0.1:0")
	if !waitLog(t, stderr, "report sink failing", 3*time.Second) {
		cmd.Process.Kill()
		t.Fatalf("the failing sink was not logged while running:\n%s", stderr)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("exit status 0 with a failing report sink:\n%s", stderr)
	}
}

// TestRunKilledRestartReportsGap: `ldafwd run` killed with SIGKILL (no
// drain, nothing flushed, a partial line left at the end of --report) and
// started again on the same report file accounts for every interval of
// its direction: the restarted run reads the file back, skips the partial
// line with a log line, and reports each interval since the last line the
// killed run wrote invalid with the not-running reason before its own
// lines, so the interval numbers have no hole. Nobody drives the ring
// ends, so both runs report the peer silent, every interval by number.
func TestRunKilledRestartReportsGap(t *testing.T) {
	if raceEnabled {
		t.Skip("judges timing")
	}
	rep := filepath.Join(t.TempDir(), "r.jsonl")
	id := fmt.Sprint(os.Getpid())
	// The pairing timeout (interval + 2 s) delays the silent lines by 23
	// intervals of 100 ms: each run lives long enough to write some.
	args := []string{"run", "--port-a", "ring:KA" + id + ".a", "--port-b", "ring:KB" + id + ".a", "--segment-port", "b",
		"--insecure", "--interval", "100ms", "--drain", "300ms", "--stats-interval", "500ms", "--idle-sleep", "100us",
		"--format", "json", "--report", rep}
	lines := func() []report.Interval {
		b, _ := os.ReadFile(rep)
		var ivs []report.Interval
		for _, l := range strings.Split(string(b), "\n") {
			var r report.Interval
			if json.Unmarshal([]byte(l), &r) == nil && r.Type == "interval" {
				ivs = append(ivs, r)
			}
		}
		return ivs
	}
	waitLines := func(n int, d time.Duration) {
		for deadline := time.Now().Add(d); len(lines()) < n && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		}
	}
	cmd, stderr := ldafwdProcess(t, args...)
	waitLines(3, 6*time.Second)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	before := lines()
	if len(before) < 3 {
		t.Fatalf("the first run wrote %d interval lines:\n%s", len(before), stderr)
	}
	lastBefore := before[len(before)-1].Interval
	// What a kill in the middle of a write leaves.
	f, err := os.OpenFile(rep, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"interval","interval":`)
	f.Close()
	time.Sleep(300 * time.Millisecond) // down for a few intervals

	cmd, stderr = ldafwdProcess(t, args...)
	waitLines(len(before)+40, 8*time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("restarted run: %v\n%s", err, stderr)
	}
	log := stderr.String()
	for _, want := range []string{"partial line", `"interval":` + fmt.Sprint(lastBefore), "receiver was not running"} {
		if !strings.Contains(log, want) {
			t.Errorf("no %q in the restarted run's log:\n%s", want, log)
		}
	}
	b, _ := os.ReadFile(rep)
	if !strings.Contains(string(b), "{\"type\":\"interval\",\"interval\":\n") {
		t.Errorf("the partial line was not ended before the new lines")
	}
	all := lines()
	gap := 0
	for i, r := range all {
		if i > 0 && r.Interval != all[i-1].Interval+1 {
			t.Errorf("interval %d follows %d", r.Interval, all[i-1].Interval)
		}
		if r.Reason == appliance.ReasonNotRunning {
			gap++
			if r.Valid || i < len(before) {
				t.Errorf("gap line %+v", r)
			}
		} else if r.Valid {
			t.Errorf("valid line without a peer: %+v", r)
		}
	}
	if gap == 0 || len(all) <= len(before)+gap {
		t.Errorf("%d lines before the kill, %d gap lines, %d in all: want a gap and lines of the restarted run after it", len(before), gap, len(all))
	}
	t.Logf("killed after interval %d; %d gap lines; %d lines in all", lastBefore, gap, len(all))
}
