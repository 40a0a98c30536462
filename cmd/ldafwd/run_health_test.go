package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
)

// switchLoss is a loss model the test turns on and off: while on, the
// segment loses what loss draws (data and control frames alike).
type switchLoss struct {
	on   atomic.Bool
	loss model.Loss
}

func (s *switchLoss) Fill(r *rand.Rand, lost []bool) {
	if s.on.Load() {
		s.loss.Fill(r, lost)
		return
	}
	clear(lost)
}

// TestRunHealthUnmeasured: two `ldafwd run` ends, traffic flowing, the
// segment losing four frames in five. The intervals that carry traffic
// come out invalid (their synopses lost beyond what parity and the fetches
// rebuild: no delay; at two thirds the fetches and the edge check often
// carry them through, and the measurement is then working), and within a
// few of them /healthz (503 "degraded", check measurement naming the latest
// line's reason) and the watchdog's status line say so; once the segment
// stops losing, measured intervals come back and both return to ok.
// The truth is the report lines themselves: the verdict must follow the
// three traffic-carrying unmeasured lines before it, and the recovery a
// valid one.
func TestRunHealthUnmeasured(t *testing.T) {
	id := fmt.Sprint(os.Getpid())
	g, s, k := "HG"+id, "HS"+id, "HK"+id
	heavy, err := model.NewUniformLoss(0.8)
	if err != nil {
		t.Fatal(err)
	}
	loss := &switchLoss{loss: heavy}
	loss.on.Store(true)
	mk := func(name string, c dataplane.LinkConfig) *dataplane.RingLink {
		l, err := dataplane.NewRingLink(name, c)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	lg := mk(g, dataplane.LinkConfig{Size: 4096, Pool: 16384})
	mk(s, dataplane.LinkConfig{Size: 4096, Pool: 16384, AtoB: &dataplane.ImpairConfig{Loss: loss, Seed: 5}})
	lk := mk(k, dataplane.LinkConfig{Size: 16384, Pool: 4096})
	defer func() {
		lg.A().Close()
		lk.B().Close()
	}()
	const iv = 200 * time.Millisecond
	common := []string{"--interval", iv.String(), "--insecure", "--format", "json", "--stats-interval", "1h", "--drain", "500ms",
		"--max-delay", "500ms", "--min-delay", "-50ms", "--idle-sleep", "20us"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out1, out2, err1, err2 syncBuf
	errs := make(chan error, 2)
	go func() {
		errs <- runMain(ctx, append([]string{"--port-a", "ring:" + g + ".b", "--port-b", "ring:" + s + ".a", "--segment-port", "b"}, common...), &out1, &err1)
	}()
	go func() {
		errs <- runMain(ctx, append([]string{"--port-a", "ring:" + s + ".b", "--port-b", "ring:" + k + ".a", "--segment-port", "a",
			"--metrics-addr", "127.0.0.1:0"}, common...), &out2, &err2)
	}()
	var url string
	re := regexp.MustCompile(`"addr":"([^"]+)"[^\n]*"message":"serving /metrics`)
	for deadline := time.Now().Add(5 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(err2.String()); m != nil {
			url = "http://" + m[1] + "/healthz"
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no metrics address in the log:\n%s", err2.String())
	}
	health := func() (int, metrics.Health) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var h metrics.Health
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatalf("/healthz: %v: %s", err, b)
		}
		return resp.StatusCode, h
	}

	// Traffic all along (10 kpps), a sink downstream.
	gen := traffic.MustGen(traffic.GenConfig{Flows: 50, Size: 128})
	stop, sent := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sent)
		next := uint64(1)
		for {
			select {
			case <-stop:
				return
			default:
				next = sendPaced(lg.A(), gen, 10_000, 100*time.Millisecond, next)
			}
		}
	}()
	sinkDone := sinkPort(lk.B(), sent, nil)

	// Degraded within a few intervals of lossy traffic, after the pairing
	// timeout (an interval + 2 s): a copy whose synopses were lost waits
	// that long for them, and the lines after it wait in order. Generous
	// for a loaded machine.
	const within = 50 * iv
	var h metrics.Health
	code := 0
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, h = health(); h.Checks["measurement"] != "" {
			break
		}
	}
	degradedAt := len(linesOf(t, out2.String()))
	t.Logf("degraded after %d lines", degradedAt)
	if code != http.StatusServiceUnavailable || h.Status != "degraded" || !strings.Contains(h.Checks["measurement"], "intervals that carried traffic were not measured") {
		close(stop)
		<-sinkDone
		cancel()
		t.Fatalf("/healthz after %v of four fifths lost: %d %+v\n%s", within, code, h, out2.String())
	}
	t.Logf("degraded: %s", h.Checks["measurement"])
	// Recovered within a few intervals of a clean segment.
	loss.on.Store(false)
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, h = health(); h.Checks["measurement"] == "" {
			break
		}
	}
	if h.Checks["measurement"] != "" {
		t.Errorf("/healthz %v after the loss stopped: %d %+v", within, code, h)
	} else {
		t.Logf("recovered: %d %s", code, h.Status)
	}
	close(stop)
	<-sinkDone
	time.Sleep(2 * iv)
	stopRunMains(t, cancel, errs)

	// The lines say the same: three unmeasured traffic-carrying LDA
	// lines of class all before the verdict (the latest of them quoted),
	// a valid one before the recovery.
	lines := linesOf(t, out2.String())
	var run []report.Interval
	verdicts := 0
	sawOk := false
	for i, l := range lines {
		switch {
		case l.iv != nil && l.iv.Synopsis == "lda" && l.iv.MEC == "all" && (l.iv.Sent > 0 || l.iv.Received > 0):
			if l.iv.Valid {
				run = run[:0]
			} else if !strings.HasPrefix(l.iv.Reason, "receiver started") && !strings.HasPrefix(l.iv.Reason, "stopped before") {
				run = append(run, *l.iv)
			}
		case l.st != nil && hasCheck(l.st, "measurement"):
			verdicts++
			if len(run) < 3 {
				t.Errorf("status line %d: measurement degraded after %d unmeasured intervals: %+v", i, len(run), l.st)
				continue
			}
			last := run[len(run)-1]
			if r := reasonOf(l.st, "measurement"); !strings.Contains(r, fmt.Sprintf("latest interval %d", last.Interval)) || !strings.Contains(r, metrics.Reason(&last)) {
				t.Errorf("status names %q, the latest unmeasured line is %d: %s", r, last.Interval, last.Reason)
			}
		case l.st != nil && verdicts > 0 && l.st.Status == "ok":
			sawOk = true
			if len(run) != 0 {
				t.Errorf("ok with %d unmeasured intervals since the last measured one", len(run))
			}
		}
	}
	if verdicts != 1 || !sawOk {
		t.Errorf("%d degraded measurement status lines, ok after: %v (lines at the verdict: %d)\n%s", verdicts, sawOk, degradedAt, out2.String())
	}
}

// runLine is one JSON line of run's stdout: an interval or a status.
type runLine struct {
	iv *report.Interval
	st *report.Status
}

func linesOf(t *testing.T, out string) []runLine {
	t.Helper()
	var ls []runLine
	for _, s := range strings.Split(out, "\n") {
		var typ struct{ Type string }
		if json.Unmarshal([]byte(s), &typ) != nil {
			continue
		}
		switch typ.Type {
		case "interval":
			var r report.Interval
			json.Unmarshal([]byte(s), &r)
			ls = append(ls, runLine{iv: &r})
		case "status":
			var st report.Status
			json.Unmarshal([]byte(s), &st)
			ls = append(ls, runLine{st: &st})
		}
	}
	return ls
}

func hasCheck(st *report.Status, check string) bool { return reasonOf(st, check) != "" }

func reasonOf(st *report.Status, check string) string {
	for _, p := range st.Problems {
		if p.Check == check {
			return p.Reason
		}
	}
	return ""
}
