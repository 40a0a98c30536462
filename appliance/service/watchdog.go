package service

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// peerSilentIntervals is how many intervals without an authentic control
// frame from the peer make it "silent". The peer sends at least its End
// marker every interval (--control-copies times), so two quiet intervals
// are not a lost frame or two; the verdict comes within three intervals.
const peerSilentIntervals = 2

// peerConfigHold is how long a configuration mismatch stays reported
// after the last interval it spoiled, in intervals.
const peerConfigHold = 3

// peerSource is what the watchdog reads of the appliance.
type peerSource interface {
	ControlCounters() control.Counters
	PeerConfigMismatch() *appliance.PeerMismatch
	Lanes() (sender, receiver *dataplane.Lane)
}

// watchdog is run's peer watchdog: every half interval it checks that
// the peer appliance is heard, authenticates, agrees on the configuration,
// that the clocks agree beyond what delays can explain, and that the
// intervals that carried traffic were measured; when its
// verdict changes it logs, writes a "status" report line and sets
// /healthz (degraded, with the reasons). Measurement goes on either way:
// the interval lines say which intervals the problem spoiled.
type watchdog struct {
	interval time.Duration
	segment  string // --segment-port: a or b
	src      peerSource
	out      *runOutput
	m        *metrics.Metrics
	log      zerolog.Logger

	heardN    uint64           // authentic control frames from the peer so far
	lastHeard time.Time        // when heardN last grew (start until then)
	heard     bool             // anything heard since start
	agreed    bool             // an interval from the peer completed: its configuration was compared and agrees
	prev      control.Counters // at the previous check
	blocked   uint64           // the sender lane's ControlBlocked at the previous check
	wiredAt   time.Time        // when ControlBlocked last grew (zero: never)
	atHeard   control.Counters // at lastHeard

	mu    sync.Mutex        // clock and meas are written from the report callback
	clock map[string]string // direction (its offset estimate: direction + " offset") → why its delays say the clocks disagree
	meas  measured          // whether the intervals that carried traffic were measured (check "measurement")

	verdict   string    // the last status written ("" none yet)
	checkedAt time.Time // the previous check
}

func newWatchdog(o *Config, src peerSource, out *runOutput, m *metrics.Metrics, log zerolog.Logger, start time.Time) *watchdog {
	return &watchdog{interval: o.Interval, segment: o.Segment, src: src, out: out, m: m, log: log, lastHeard: start, clock: map[string]string{}}
}

// observe takes every interval line the appliance reports: its delays
// tell whether the clocks disagree. A delay cannot be negative, so a
// valid mean whose whole confidence interval lies below zero, or buckets
// below the encoding's --min-delay, say the receiver's clock is behind
// the sender's by more than the path's delay; a later valid line of the
// direction without that clears it.
//
// It also feeds the measurement check (measured.go): intervals that
// carried traffic but could not be measured.
func (w *watchdog) observe(iv *report.Interval) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.meas.observe(iv)
	if iv.Synopsis != "lda" || iv.Flow != "" {
		return
	}
	switch {
	case iv.Valid && iv.Samples > 0 && iv.MeanNs+iv.MeanCINs < 0:
		w.clock[iv.Direction] = fmt.Sprintf("%s interval %d: mean one-way delay %.1f ± %.1f µs, negative beyond its uncertainty: this end's clock is behind the peer's by at least %.1f µs; synchronize both clocks (PTP or chrony, docs/run.md)",
			iv.Direction, iv.Interval, iv.MeanNs/1e3, iv.MeanCINs/1e3, -(iv.MeanNs+iv.MeanCINs)/1e3)
	case !iv.Valid && iv.Verdict().Lead().Code == report.DelayBelowMin:
		w.clock[iv.Direction] = fmt.Sprintf("%s interval %d: %s; synchronize both clocks (PTP or chrony, docs/run.md)", iv.Direction, iv.Interval, iv.Reason)
	case iv.Valid && iv.Samples > 0:
		delete(w.clock, iv.Direction)
	}
	w.observeOffset(iv)
}

// observeOffset checks a line's clock offset estimate (extra
// clock_offset_ns, from both directions' means). Path asymmetry alone
// makes the estimate at most half the round trip, (d_fwd + d_rev)/2 (the
// offset cancels in the sum), so an estimate beyond that by more than its
// bound is the clocks'. Its key is the direction with " offset": the end
// whose own mean is the negative one also raises the check above.
func (w *watchdog) observeOffset(iv *report.Interval) {
	key := iv.Direction + " offset"
	th, ok := iv.Extra["clock_offset_ns"].(float64)
	ci, ok2 := iv.Extra["clock_offset_ci_ns"].(float64)
	rev, ok3 := iv.Extra["clock_reverse_mean_ns"].(float64)
	if !iv.Valid || !ok || !ok2 || !ok3 {
		return
	}
	half := (iv.MeanNs + rev) / 2
	if math.Abs(th)-ci <= half {
		delete(w.clock, key)
		return
	}
	ahead := "ahead of"
	if th < 0 {
		ahead = "behind"
	}
	w.clock[key] = fmt.Sprintf("%s interval %d: this end's clock is %s the peer's by %.1f ± %.1f µs (from both directions' mean delays), more than half the round trip (%.1f µs) that path asymmetry could explain; synchronize both clocks (PTP or chrony, docs/run.md)",
		iv.Direction, iv.Interval, ahead, math.Abs(th)/1e3, ci/1e3, half/1e3)
}

// wiredHold is how long, in intervals, the wiring check stays failed after
// the last authentic control frame arrived on the wrong port.
const wiredHold = 3

// wiring is the check "wiring": authentic control frames of this pair
// (they carry its key) arriving on the port that --segment-port says faces
// away from the segment. The sender lane drops them (a recording replayed
// from upstream must never reach the peer), so the watchdog would only
// see a silent peer; but the usual cause is not a replay, it is this end's
// --segment-port naming the wrong port (two ends both given the same
// letter while wired a→b, b→a; swapped cables). The peer whose ports are
// right sees this end as silent; this end names what to change.
func (w *watchdog) wiring(now time.Time) (report.StatusProblem, bool) {
	snd, _ := w.src.Lanes()
	b := snd.Stats.ControlBlocked.Load()
	grew := b - w.blocked
	if b > w.blocked {
		w.wiredAt = now
	}
	w.blocked = b
	if w.wiredAt.IsZero() || now.Sub(w.wiredAt) > wiredHold*w.interval {
		return report.StatusProblem{}, false
	}
	other := "a"
	if w.segment == "a" {
		other = "b"
	}
	return report.StatusProblem{Check: "wiring", Reason: fmt.Sprintf(
		"authentic control frames of this appliance pair arrive on port %s (%d since the last check), which --segment-port %s says faces away from the segment: the segment is on port %s, so give this end --segment-port %s (or swap its cables); a recording of the pair's control frames replayed from that side looks the same, and is dropped",
		other, grew, w.segment, other, other)}, true
}

// check runs the checks at now and reports a changed verdict. The final
// check, after the appliance drained, adds what the drain learned (a
// configuration mismatch found in the last intervals) but does not judge
// silence: the peer may have stopped first.
func (w *watchdog) check(now time.Time, final bool) {
	cc := w.src.ControlCounters()
	if cc.Bundles > 0 {
		w.agreed = true
	}
	// Heard: authentic control frames the receiving worker took off the
	// wire (End markers at once, even while a loaded control goroutine
	// lags) or the receiver accepted.
	_, rcv := w.src.Lanes()
	if n := cc.Accepted + rcv.Stats.ControlStripped.Load(); n != w.heardN {
		w.heardN, w.lastHeard, w.heard, w.atHeard = n, now, true, cc
	}
	var probs []report.StatusProblem
	if quiet := now.Sub(w.lastHeard); !final && quiet >= peerSilentIntervals*w.interval {
		since := "since start"
		if w.heard {
			since = fmt.Sprintf("for %v", quiet.Round(time.Millisecond))
		}
		refused := cc.BadTag - w.atHeard.BadTag
		switch {
		case cc.PeerInsecure > w.atHeard.PeerInsecure:
			probs = append(probs, report.StatusProblem{Check: "peer_auth", Reason: fmt.Sprintf(
				"the peer's control frames are unauthenticated (it runs --insecure) and this end has --key-file: %d refused, nothing accepted %s; give both ends the same --key-file", refused, since)})
		case cc.PeerKeyed > w.atHeard.PeerKeyed:
			probs = append(probs, report.StatusProblem{Check: "peer_auth", Reason: fmt.Sprintf(
				"the peer authenticates its control frames with a key and this end runs --insecure: %d refused, nothing accepted %s; give both ends the same --key-file", refused, since)})
		case refused > 0:
			probs = append(probs, report.StatusProblem{Check: "peer_auth", Reason: fmt.Sprintf(
				"%d control frames from the peer failed authentication, nothing accepted %s: the two ends have different --key-file keys (or something corrupts or forges control frames)", refused, since)})
		default:
			probs = append(probs, report.StatusProblem{Check: "peer_silent", Reason: fmt.Sprintf(
				"nothing heard from the peer %s (%d intervals of %v): it is not running, not on this segment, on another --segment-name, the segment drops control frames, or an end's --segment-port names its port away from the segment (an end that receives the pair's frames on that port reports wiring; if both ends name theirs, each sends toward its own side and neither hears the other: give each the port cabled to the segment)", since, int(quiet/w.interval), w.interval)})
		}
	}
	if p, ok := w.wiring(now); ok {
		probs = append(probs, p)
	}
	// The final check reports a mismatch found since the last check
	// however long the drain took: no later check will.
	if pm := w.src.PeerConfigMismatch(); pm != nil && (now.Sub(pm.At) <= peerConfigHold*w.interval || final && pm.At.After(w.checkedAt)) {
		probs = append(probs, report.StatusProblem{Check: "peer_config", Settings: pm.Settings, Reason: fmt.Sprintf(
			"the peer's synopsis configuration differs (interval %d): %s; give both ends the same --interval, --synopsis, --mec and sizing flags", pm.Interval, pm.Detail)})
	}
	if cc.StaleHello > w.prev.StaleHello {
		probs = append(probs, report.StatusProblem{Check: "clock", Reason: fmt.Sprintf(
			"%d session frames from the peer were signed further than --max-clock-skew from this end's clock: the clocks disagree by more than that; synchronize both clocks (PTP or chrony, docs/run.md)", cc.StaleHello-w.prev.StaleHello)})
	}
	w.mu.Lock()
	dirs := make([]string, 0, len(w.clock))
	for d := range w.clock {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		probs = append(probs, report.StatusProblem{Check: "clock", Reason: w.clock[d]})
	}
	if p := w.meas.problem(); p != "" {
		probs = append(probs, report.StatusProblem{Check: "measurement", Reason: p})
	}
	w.mu.Unlock()
	w.prev = cc
	w.checkedAt = now

	if len(probs) == 0 && (!w.heard || !w.agreed) {
		// Nothing to say yet: the peer may still be starting, or it is
		// heard but no interval of it has been compared with our
		// configuration (a slow control side pairs its first interval
		// late) — "ok" would promise an agreement not yet seen.
		return
	}
	// A new status line when the checks that fail (or the settings that
	// differ) change, not for every new count in a reason; /healthz shows
	// the reasons as of this check.
	var key strings.Builder
	checks := map[string]string{}
	for _, p := range probs {
		fmt.Fprintf(&key, "%s%v;", p.Check, p.Settings)
		if checks[p.Check] != "" {
			checks[p.Check] += "; "
		}
		checks[p.Check] += p.Reason
	}
	if len(probs) > 0 {
		w.m.SetChecks(checks)
	}
	if key.String() == w.verdict && w.verdict != "" || len(probs) == 0 && w.verdict == "ok" {
		return
	}
	st := &report.Status{Type: "status", TimeNs: now.UnixNano(), Status: "ok", Problems: probs}
	if len(probs) > 0 {
		st.Status = "degraded"
		w.verdict = key.String()
		for _, p := range probs {
			w.log.Warn().Str("check", p.Check).Strs("settings", p.Settings).Msg(p.Reason)
		}
	} else {
		st.Problems = []report.StatusProblem{}
		w.verdict = "ok"
		w.log.Info().Msg("peer watchdog: the peer is heard, authenticates and agrees")
	}
	w.m.SetChecks(checks)
	w.out.status(st)
}
