package service

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
)

// unmeasuredRun is how many traffic-carrying intervals in a row of one
// direction and class must have gone unmeasured before the watchdog says
// so (check "measurement"). One invalid interval now and then (an End
// marker lost, a peer restart) is normal on a lossy segment and already
// in its line; three in a row — three intervals of the packets crossing
// the segment, none with a loss or delay — is a measurement that has
// stopped working. One measured interval clears it.
const unmeasuredRun = 3

// maxReasonBytes bounds the sentence a "measurement" problem quotes from
// its latest line, so /healthz and the status line stay short whatever a
// reason holds.
const maxReasonBytes = 240

// Outcomes of one interval line for the measurement check.
const (
	lineIgnored    = iota // carried no traffic, or is invalid for a benign reason (start, stop): says nothing
	lineMeasured          // carried traffic and is valid
	lineUnmeasured        // carried traffic whose loss or delay could not be measured
)

// lineOutcome classifies one interval line for the measurement check:
// only the LDA's class lines count (the one synopsis always on; RDA and
// LDS lines of the same interval say the same and more often fail for
// their own reasons), and among them only the ones that carried traffic.
// An invalid line with traffic is unmeasured unless its reason is one of
// the appliance's own start or stop: the warm-up interval (the receiver
// started within it) and the intervals cut short by the stop ("stopped
// before …"), by the line's leading cause.
func lineOutcome(iv *report.Interval) int {
	if iv.Flow != "" || iv.Synopsis != "lda" && iv.Synopsis != "" {
		return lineIgnored
	}
	if iv.Sent == 0 && iv.Received == 0 {
		return lineIgnored
	}
	if iv.Valid {
		return lineMeasured
	}
	switch iv.Verdict().Lead().Code {
	case report.Warmup, report.Stopped:
		return lineIgnored
	}
	return lineUnmeasured
}

// measuredClass is the measurement check's state of one direction and
// class: how many traffic-carrying intervals in a row went unmeasured, and
// the latest of them.
type measuredClass struct {
	run    int
	latest report.Interval // Reason, Interval, Sent, Received are read
}

// measured tracks, per direction and class, whether the intervals that
// carried traffic were measured (observe), and says which have gone
// unmeasured unmeasuredRun times in a row (problem). Idle intervals change
// nothing: a class that went idle after failing stays failing until an
// interval with traffic is measured. Not safe for concurrent use: the
// watchdog holds its mutex.
type measured struct {
	classes map[string]*measuredClass // direction + " " + MEC
}

func (m *measured) observe(iv *report.Interval) {
	o := lineOutcome(iv)
	if o == lineIgnored {
		return
	}
	if m.classes == nil {
		m.classes = map[string]*measuredClass{}
	}
	key := iv.Direction + " " + iv.MEC
	c := m.classes[key]
	if c == nil {
		c = &measuredClass{}
		m.classes[key] = c
	}
	if o == lineMeasured {
		c.run = 0
		return
	}
	c.run++
	c.latest = report.Interval{Interval: iv.Interval, Sent: iv.Sent, Received: iv.Received}
	c.latest.SetVerdict(iv.Verdict())
}

// problem is the measurement check's finding, "" when every class that
// carried traffic lately was measured: the first failing class (by
// direction and class name) with its latest line's reason — a short code
// (the metrics' reason label) and the sentence, cut to maxReasonBytes —
// and how many other classes fail too.
func (m *measured) problem() string {
	var failing []string
	for k, c := range m.classes {
		if c.run >= unmeasuredRun {
			failing = append(failing, k)
		}
	}
	if len(failing) == 0 {
		return ""
	}
	sort.Strings(failing)
	c := m.classes[failing[0]]
	dir, mec, _ := strings.Cut(failing[0], " ")
	unknown := "loss and delay unknown"
	switch {
	case c.latest.LossValid:
		unknown = "delay unknown, loss measured"
	case c.latest.DelayValid:
		unknown = "loss unknown"
	}
	s := fmt.Sprintf("%s class %s: the last %d intervals that carried traffic were not measured (latest: %s); latest interval %d (sent %d, received %d): %s: %s",
		dir, mec, c.run, unknown, c.latest.Interval, c.latest.Sent, c.latest.Received, metrics.Reason(&c.latest), clip(c.latest.Reason, maxReasonBytes))
	if len(failing) > 1 {
		s += fmt.Sprintf(" (and %d more classes)", len(failing)-1)
	}
	return s
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
