package service

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// healthz is what /healthz answers now.
func healthz(t *testing.T, m *metrics.Metrics) (int, metrics.Health) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var h metrics.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatalf("/healthz: %v: %s", err, rec.Body.String())
	}
	return rec.Code, h
}

// statuses are the status lines of out.
func statuses(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"type":"status"`) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestLineOutcome: which lines the measurement check counts.
func TestLineOutcome(t *testing.T) {
	for _, tc := range []struct {
		name string
		iv   report.Interval
		want int
	}{
		{"valid with traffic", report.Interval{Synopsis: "lda", Sent: 10, Received: 9, Valid: true}, lineMeasured},
		{"invalid, received only", withCause(report.Interval{Synopsis: "lda", Received: 9}, report.Silent, "no synopses from the sender for this interval"), lineUnmeasured},
		{"invalid, sent only", withCause(report.Interval{Synopsis: "lda", Sent: 9}, report.ControlLost, "end marker lost in the segment"), lineUnmeasured},
		{"idle", withCause(report.Interval{Synopsis: "lda"}, report.NoPackets, "no packets in the interval"), lineIgnored},
		{"idle and valid", report.Interval{Synopsis: "lda", Valid: true}, lineIgnored},
		{"warm-up", withCause(report.Interval{Synopsis: "lda", Received: 9}, report.Warmup, appliance.ReasonWarmup), lineIgnored},
		{"stopped", withCause(report.Interval{Synopsis: "lda", Received: 9}, report.Stopped, appliance.ReasonStopped), lineIgnored},
		{"rda line", withCause(report.Interval{Synopsis: "rda", Received: 9}, report.Decode, "x"), lineIgnored},
		{"flow line", withCause(report.Interval{Synopsis: "lda", Flow: "f", Received: 9}, report.Decode, "x"), lineIgnored},
	} {
		if got := lineOutcome(&tc.iv); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestWatchdogMeasurement: through run's output and the watchdog, three
// intervals in a row that carried traffic but are invalid turn the status
// and /healthz degraded (check "measurement", naming the latest reason
// with its short code); two do not, nor do idle intervals between them,
// nor the warm-up interval; one measured interval brings both back to ok.
// A reason of any length stays bounded in /healthz.
func TestWatchdogMeasurement(t *testing.T) {
	buf, o, m, out, now := newWatchdogRig()
	w := newWatchdog(o, &fakePeer{}, out, m, zerolog.Nop(), now)
	out.setWatchdog(w)
	m.SetState(metrics.StateRunning)
	long := "no synopses from the sender for this interval (control frames lost or sender stopped)" + strings.Repeat(" and more", 1000)
	k := int64(100)
	step := func(iv report.Interval) {
		k++
		iv.Type, iv.Interval, iv.Direction, iv.MEC, iv.Synopsis = "interval", k, "a>b", "all", "lda"
		out.interval(&iv)
		w.check(now.Add(time.Duration(k)*50*time.Millisecond), false)
	}
	bad := withCause(report.Interval{Received: 600}, report.Silent, long)
	idle := withCause(report.Interval{}, report.NoPackets, "no packets in the interval")
	good := report.Interval{Sent: 600, Received: 400, Lost: 200, Valid: true, Samples: 300}

	step(withCause(report.Interval{Received: 300}, report.Warmup, appliance.ReasonWarmup))
	step(bad)
	step(idle)
	step(bad)
	if code, h := healthz(t, m); code != http.StatusOK || h.Status != "running" {
		t.Fatalf("after the warm-up and two unmeasured intervals: %d %+v", code, h)
	}
	if strings.Contains(statuses(buf.String()), `"degraded"`) {
		t.Fatalf("degraded after two unmeasured intervals:\n%s", statuses(buf.String()))
	}
	step(bad)
	code, h := healthz(t, m)
	if code != http.StatusServiceUnavailable || h.Status != "degraded" {
		t.Fatalf("after three unmeasured intervals: %d %+v", code, h)
	}
	r := h.Checks["measurement"]
	if !strings.Contains(r, "a>b class all: the last 3 intervals that carried traffic were not measured") ||
		!strings.Contains(r, "latest interval 105 (sent 0, received 600): silent: no synopses from the sender") {
		t.Errorf("measurement check: %q", r)
	}
	if len(r) > 600 || len(h.Problem) > 600 {
		t.Errorf("unbounded: check %d bytes, problem %d bytes", len(r), len(h.Problem))
	}
	if st := statuses(buf.String()); !strings.Contains(st, `"check":"measurement"`) || strings.Count(st, `"status":"degraded"`) != 1 {
		t.Errorf("status lines:\n%s", st)
	}
	// Still failing: /healthz follows the latest interval, no new status line.
	step(bad)
	if _, h := healthz(t, m); !strings.Contains(h.Checks["measurement"], "the last 4 intervals") || !strings.Contains(h.Checks["measurement"], "latest interval 106") {
		t.Errorf("measurement check after a fourth: %q", h.Checks["measurement"])
	}
	if st := statuses(buf.String()); strings.Count(st, `"status":"degraded"`) != 1 {
		t.Errorf("a new status line for the same verdict:\n%s", st)
	}
	// Idle intervals change nothing; a measured one clears it.
	step(idle)
	if code, _ := healthz(t, m); code != http.StatusServiceUnavailable {
		t.Errorf("an idle interval cleared the check")
	}
	buf.Reset()
	step(good)
	if code, h := healthz(t, m); code != http.StatusOK || h.Status != "running" || len(h.Checks) != 0 {
		t.Errorf("after a measured interval: %d %+v", code, h)
	}
	if st := statuses(buf.String()); !strings.Contains(st, `"status":"ok"`) {
		t.Errorf("no ok status line:\n%s", st)
	}
}

// withCause is iv made invalid for one cause.
func withCause(iv report.Interval, code report.Code, why string) report.Interval {
	iv.Invalidate(code, why)
	return iv
}
