package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
