package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/report"
)

// TestCongestionSmallFrames measures a segment congested from its first
// frame to its last by small frames, the case where a queue kept full
// takes a control frame only when it is about the data's size and comes
// alone:
//
//	gen ns ─veth─ [a ldafwd#1 b] ─veth─ wire ns: br0 (tbf 8 Mbit/s, 16 KB burst, 20 ms latency toward #2) ─veth─ [a ldafwd#2 b] ─veth─ sink ns
//
// tcpreplay sends 10 000 frames a second of 120–136 bytes for
// smallSeconds: about 10.5 Mbit/s into 8, so the tbf holds ~36 ms and
// drops ~22 % of what it is offered, all the time. Both appliances run
// with the default flags (a key, JSON lines, --capture-a on ldafwd#2 for
// the hop into its stamps, as TestCongestionLab). Truth: dumpcap on the
// bridge's two ports.
//
// Asserted:
//   - the harness congested (≥ 15 % lost) and every interval with
//     traffic has a line;
//   - the a>b control traffic that entered the segment stays within 4 %
//     of the data bytes (the default budget is 1 % and at least 20 KB an
//     interval; requests' replies come on top): the measurement does not
//     add to the congestion it measures; the b>a control traffic (the
//     edge check's lists travel there, on its requests) within 2 %;
//   - the intervals' LDA parts arrive, as shipped or fetched: at most one
//     line (the first congested interval's, shipped before the peer
//     reported any loss) says its LDA part was lost;
//   - every valid line is exact against the captures, and at least 80 %
//     of them hold the true mean within mean_ci_ns;
//   - from the fourth interval with traffic on, at least two thirds are
//     valid: the edge check (the End markers' counts corrected at both
//     cuts against the sender's timestamp caches) proves their loss
//     without waiting for the segment to be checked in order for 18
//     intervals. At the traffic's start the receiver's timestamp caches
//     sample for an interval or two while their size follows the
//     traffic up; an End marker lost in all its copies costs its
//     interval and the next.
func TestCongestionSmallFrames(t *testing.T) {
	l, bin := startBridgeLab(t, "congestion lab", "lds", "rate", "8mbit", "burst", "16kb", "latency", "20ms")
	const pps, seconds = 10_000, smallSeconds
	frames := mixedFrames(pps*seconds, 120, 136, 0)
	pcap := filepath.Join(l.dir, "small.pcap")
	if err := writePcap(pcap, frames); err != nil {
		t.Fatal(err)
	}
	cIn, cOut := l.capture(l.nsW, l.S1+"p"), l.capture(l.nsW, l.S2+"p")
	common := []string{"--key-file", l.keyFile, "--format", "json", "--idle-sleep", "50us", "--log-level", "info", "--min-delay", "-50ms"}
	capA := filepath.Join(l.dir, "ldafwd2-a.pcapng")
	p1, p2 := l.startAppliances(bin, common, []string{"--capture-a", capA})
	time.Sleep(time.Duration(1e9 - time.Now().UnixNano()%1e9 + 5e8))
	start := time.Now()
	out := l.replay(pcap, fmt.Sprintf("--pps=%d", pps))
	t.Logf("tcpreplay (%d frames, %.2f s): %s", len(frames), time.Since(start).Seconds(), out)
	waitLine(p2, time.Now().UnixNano()/1e9+1, 15*time.Second)
	for _, p := range []*proc{p1, p2} {
		if _, killed := p.terminate(30 * time.Second); killed {
			t.Errorf("%s did not exit within 30 s of SIGTERM", p.name)
		}
		if s := p.stderr(); strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
			t.Errorf("%s panicked:\n%s", p.name, s)
		}
	}
	l.stopCaptures()
	recs := readCaptures(t, cIn, cOut)
	in, outRecs := recs[0], recs[1]
	st := newSegTruth(t, in, outRecs, frames, isUserFrame)
	hops := hopIn(t, capA, st)
	ctl := controlTraffic(in, outRecs)

	ivs, _ := p2.records(t)
	lines := map[int64]report.Interval{}
	for _, r := range ivs {
		if r.Direction == "a>b" && r.MEC == "all" && r.Synopsis == "lda" && r.Flow == "" {
			lines[r.Interval] = r
		}
	}
	var ks []int64
	for k, tr := range st.iv {
		if tr.sent > 0 && k != 0 {
			ks = append(ks, int64(k))
		}
	}
	slices.Sort(ks)
	withTraffic := map[uint64]bool{}
	for _, k := range ks {
		withTraffic[uint64(k)] = true
	}
	var b strings.Builder
	var dataBytes uint64
	var valid, exactValid, delayOK, partLost, late, lateValid int
	for i, k := range ks {
		tr := st.iv[uint64(k)]
		dataBytes += tr.bytes
		c := ctl.iv[uint64(k)]
		if c == nil {
			c = &[2]ctlCount{}
		}
		r, ok := lines[k]
		if !ok {
			t.Errorf("interval %d carried %d frames and has no line", k, tr.sent)
			continue
		}
		if i >= smallSettle {
			late++
		}
		if strings.Contains(r.Reason, "control fragment lost: the sender's LDA") {
			partLost++
		}
		exact := absDiff(r.Sent, tr.sent) <= tr.crossed && absDiff(r.Lost, tr.sent-tr.recv) <= tr.crossed
		trueMean := tr.mean() + hops[uint64(k)].mean()
		inBound := tr.recv > 0 && math.Abs(r.MeanNs-trueMean) <= r.MeanCINs
		if r.Valid {
			valid++
			if i >= smallSettle {
				lateValid++
			}
			if exact {
				exactValid++
			} else {
				t.Errorf("interval %d is valid and wrong: sent %d lost %d, captures %d/%d (%d crossed an End marker)", k, r.Sent, r.Lost, tr.sent, tr.sent-tr.recv, tr.crossed)
			}
			if inBound {
				delayOK++
			}
		}
		reason := r.Reason
		if len(reason) > 80 {
			reason = reason[:80] + "…"
		}
		fmt.Fprintf(&b, "%-10d %6d %6d | %6d %6d %-5v %-5v | %8.3f %8.3f %7.1f %-5v | %6d %6d %6s | %s\n", k, tr.sent, tr.sent-tr.recv,
			r.Sent, r.Lost, r.Valid, exact, trueMean/1e6, r.MeanNs/1e6, r.MeanCINs/1e3, inBound, c[0].bytes, c[1].bytes, fmt.Sprintf("%d/%d", c[0].frames, c[1].frames), reason)
	}
	t.Logf("ldafwd#2's a>b LDA lines against the captures (t.: truth, mean with the hop into ldafwd#2's stamp; ctl: a>b control bytes entering/leaving the segment, frames entering/leaving):\n%-10s %6s %6s | %6s %6s %-5s %-5s | %8s %8s %7s %-5s | %6s %6s %6s | %s\n%s",
		"interval", "t.sent", "t.lost", "sent", "lost", "valid", "exact", "t.ms", "mean.ms", "ci.µs", "ok", "ctl.in", "ctl.out", "frames", "reason", b.String())
	t.Logf("captures: %d frames entered the segment, %d left it (%.1f %% lost); control a>b: %d bytes entered (%.2f %% of %d data bytes), %d left; by frame size: %s",
		st.sent, st.recv, 100*float64(st.sent-st.recv)/float64(max(st.sent, 1)), ctl.in.bytes, 100*float64(ctl.in.bytes)/float64(max(dataBytes, 1)), dataBytes, ctl.out.bytes, ctl.bySize(withTraffic))
	t.Logf("control b>a (ldafwd#2's, entering the segment): %d frames, %d bytes (%.2f %% of the a>b data bytes), of them requests %d frames, %d bytes",
		ctl.back.frames, ctl.back.bytes, 100*float64(ctl.back.bytes)/float64(max(dataBytes, 1)), ctl.backReq.frames, ctl.backReq.bytes)
	t.Logf("%d intervals with traffic: %d valid (%d exact, %d within the delay bound), %d said their LDA part was lost; from the %dth on %d of %d valid", len(ks), valid, exactValid, delayOK, partLost, smallSettle+1, lateValid, late)

	if float64(st.sent-st.recv) < 0.15*float64(st.sent) {
		t.Errorf("the harness did not congest: %d of %d frames lost, want ≥ 15 %%", st.sent-st.recv, st.sent)
	}
	if float64(ctl.in.bytes) > 0.04*float64(dataBytes) {
		t.Errorf("the a>b control traffic was %d bytes, %.1f %% of the %d data bytes: want ≤ 4 %%", ctl.in.bytes, 100*float64(ctl.in.bytes)/float64(dataBytes), dataBytes)
	}
	if float64(ctl.back.bytes) > 0.02*float64(dataBytes) {
		t.Errorf("the b>a control traffic (ldafwd#2's requests among it) was %d bytes, %.1f %% of the %d a>b data bytes: want ≤ 2 %%", ctl.back.bytes, 100*float64(ctl.back.bytes)/float64(dataBytes), dataBytes)
	}
	if partLost > 1 {
		t.Errorf("%d intervals lost their LDA part (neither shipped nor fetched): want at most the first", partLost)
	}
	if valid > 0 && float64(delayOK) < 0.8*float64(valid) {
		t.Errorf("%d of %d valid intervals hold the true mean within their bound: want ≥ 80 %%", delayOK, valid)
	}
	if late == 0 || 3*lateValid < 2*late {
		t.Errorf("from the %dth interval with traffic on, %d of %d are valid: want at least two thirds", smallSettle+1, lateValid, late)
	}
}

// smallSeconds is how long TestCongestionSmallFrames sends, and
// smallSettle how many intervals with traffic it leaves out of its
// validity count: the traffic's start (above).
const smallSeconds, smallSettle = 30, 3
