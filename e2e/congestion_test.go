package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane/pcapfile"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
)

// congestionPhases is TestCongestionLab's replay: tcpreplay --mbps for
// each phase in turn, frames of congestionFrameSize bytes on average. The
// calm phase is long enough for the receiver to check 18 intervals for
// packets crossing their End markers: at the default confidence the loss
// from the End markers' counts alone stands only after that many.
var congestionPhases = []struct {
	name    string
	mbps    int
	seconds float64
}{{"before", 8, 21}, {"during", 40, 4}, {"after", 8, 3}}

const congestionFrameSize = 250 // bytes, the mean of 150..350

// congestionStrictEnv turns on TestCongestionLab's target assertions.
const congestionStrictEnv = "LDAFWD_CONGESTION_STRICT"

// congestionKeepEnv names a directory TestCongestionLab copies its
// captures into (in.pcap and out.pcap at the bridge, ldafwd2-a.pcapng at
// ldafwd#2's port a), for ldafwd analyze --truth to replay offline.
const congestionKeepEnv = "LDAFWD_CONGESTION_KEEP"

// TestCongestionLab measures through congestion, as a user's lab did:
//
//	gen ns ─veth─ [a ldafwd#1 b] ─veth─ wire ns: br0 (tbf 20 Mbit/s, 32 KB burst, 50 ms of queue toward #2) ─veth─ [a ldafwd#2 b] ─veth─ sink ns
//
// Two `ldafwd run` with afxdp: ports and the default flags but a key,
// JSON lines, --idle-sleep 50us and --min-delay -50ms (a shared host, as
// the other labs) and --metrics-addr on ldafwd#2. tcpreplay sends 8 Mbit/s for 21 s, 40 Mbit/s for 4 s, then 8
// Mbit/s for 3 s (≈176 000 frames): in the middle phase the tbf queues
// ~50 ms and drops about half of what it is offered, control frames too.
// Truth is dumpcap on the bridge's two ports (segTruth: frames matched by
// content, cut into ldafwd#1's intervals at its End markers).
//
// The test logs, per interval with traffic and per phase (an interval
// with frames of the 40 Mbit/s phase is "during"): the reported lost
// against the true loss, valid and reason, the mean against the true mean
// within mean_ci_ns, the control bytes ldafwd#1 sent and the tbf let
// through against the data bytes; ldafwd_lost_packets_total against the
// true loss; what /healthz said while lines were invalid.
//
// Always asserted (the harness worked and the product does no harm): the
// truth shows ≥ 10 % loss during congestion and ~none outside it; both
// appliances ran, ldafwd#2 wrote a line for every interval with traffic,
// no valid line's counts differ from the captures', nothing panicked.
//
// Asserted: every interval with traffic has its loss measured (loss_valid)
// and exact against the captures — but an interval whose End marker, or
// the one before it, lost every copy in the segment (the receiver cannot
// cut it) — and, when no End marker was lost so, the lost counter of
// /metrics equals the captures' loss; at least 60 % of the congested
// intervals (but those not cut) carry a delay within its mean_ci_ns of the
// true mean (the tbf drops most of the full-size synopsis fragments after
// each End marker: their LDA parts come on demand, in short paced frames).
// The true mean is the captures' plus each interval's mean hop from the
// bridge's output to ldafwd#2's receive stamp, read from ldafwd#2's
// --capture-a file (1–5 µs here); the sender's stamp, taken around its
// transmit call, has no tap to read it, and its error stays in the bound
// (tx_stamp_err_ns).
//
// Why 60 % and not the 80 % LDAFWD_CONGESTION_STRICT=1 asks: there are
// five congested intervals, and under this queue the bound misses more
// often than its 98 %. The full queue's delays have a thin tail (about 1 %
// of the packets 0.5–2 ms below the rest) and at half the packets lost
// the LDA shipped within the budget keeps a sample of ~200–400 of
// ~10 000: a sample that holds none of the tail reads a narrow std-dev and
// a mean off by the tail's share. Offline, on two runs' captures with
// exact stamps (ldafwd analyze --truth, intervals of 0.1–1 s), the bound
// held in 92 % of the lossy intervals at analyze's default LDA (8 × 128
// rows) and 99 % at run's recorded shape (8 × 1024); live, with the
// shipped LDA alone, 43 of 45 congested intervals in nine runs (and a CI
// run once missed two of five). At 95 % two misses of five come about
// once in 40 runs, three about once in 900. The receiver now asks for the
// congested intervals' LDA at more rows (appliance/ldarows.go), which the
// lines' lda_rows_fetch_* show: in five runs under STRICT, 25 of 25
// congested intervals fetched (678–1 045 samples) and held their bound.
//
// Asserted only when LDAFWD_CONGESTION_STRICT=1: at least 80 % of the
// congested intervals carry a delay within its bound (above); /healthz
// (it depends on when the test happens to poll) says degraded while intervals' loss is
// reported unmeasured (in at least one poll while such an interval is the
// latest reported).
//
//	sudo LDAFWD_CONGESTION_STRICT=1 go test -tags dpdk -pgo=off -count=1 -run TestCongestionLab -v ./e2e/
//
// The offline figures: keep the captures and replay them with exact stamps.
//
//	sudo LDAFWD_CONGESTION_KEEP=/tmp/cong go test -tags dpdk -pgo=off -count=1 -run TestCongestionLab ./e2e/
//	ldafwd analyze --sender /tmp/cong/in.pcap --receiver /tmp/cong/out.pcap --truth --format json --interval 100ms
func TestCongestionLab(t *testing.T) {
	l, bin := startBridgeLab(t, "congestion lab", "ldc", "rate", "20mbit", "burst", "32kb", "latency", "50ms")
	strict := os.Getenv(congestionStrictEnv) == "1"

	// The replay, one pcap per phase; phaseOf[i] is frame i's phase.
	var counts []int
	total := 0
	for _, ph := range congestionPhases {
		n := int(float64(ph.mbps) * 1e6 / 8 * ph.seconds / congestionFrameSize)
		counts = append(counts, n)
		total += n
	}
	frames := mixedFrames(total, congestionFrameSize-100, congestionFrameSize+100, 0)
	phaseOf := make([]int, 0, total)
	var pcaps []string
	for p, n := range counts {
		f := filepath.Join(l.dir, congestionPhases[p].name+".pcap")
		lo := len(phaseOf)
		if err := writePcap(f, frames[lo:lo+n]); err != nil {
			t.Fatal(err)
		}
		pcaps = append(pcaps, f)
		for range n {
			phaseOf = append(phaseOf, p)
		}
	}

	cIn, cOut := l.capture(l.nsW, l.S1+"p"), l.capture(l.nsW, l.S2+"p")
	// --min-delay -50ms, as every lab here: on a busy 2-core host the
	// copy-mode AF_XDP sender stamps after its transmit call, which runs
	// the whole veth and bridge path, so an idle segment's delays come out
	// below the default -10µs and every interval is invalid for that. No
	// --max-delay: the default range is what congestion tests.
	common := []string{"--key-file", l.keyFile, "--format", "json", "--idle-sleep", "50us", "--log-level", "info", "--min-delay", "-50ms"}
	// ldafwd#2 also writes what its port a receives, stamped with the
	// receive times it measures with: the hop from the bridge's output
	// to that stamp (the veth, and the wait for a worker on a shared
	// 2-core host) is inside what the appliances measure and outside the
	// bridge's captures.
	capA := filepath.Join(l.dir, "ldafwd2-a.pcapng")
	p1, p2 := l.startAppliances(bin, common, []string{"--metrics-addr", "127.0.0.1:0", "--capture-a", capA})
	addr := metricsAddr(p2)
	if addr == "" {
		t.Fatalf("ldafwd#2 logged no metrics address:\n%s", p2.stderr())
	}
	health := pollHealth(addr, 250*time.Millisecond)

	// Start half-way into an interval (1 s, the default), so no phase
	// change falls on a boundary.
	time.Sleep(time.Duration(1e9 - time.Now().UnixNano()%1e9 + 5e8))
	for p, ph := range congestionPhases {
		start := time.Now()
		out := l.replay(pcaps[p], "--mbps="+strconv.Itoa(ph.mbps))
		t.Logf("phase %s (%d Mbit/s, %d frames, %.2f s): tcpreplay: %s", ph.name, ph.mbps, counts[p], time.Since(start).Seconds(), out)
	}
	lastTraffic := time.Now().UnixNano() / 1e9
	// The queue drains within 50 ms; wait for the line of the interval
	// after the last one with traffic (its End marker ends the traffic's
	// last interval), 15 s at most, then read the lost counter.
	waitLine(p2, lastTraffic+1, 15*time.Second)
	lostMetric, haveMetric := scrapeLost(addr)
	samples := health.stop()

	stops := map[string]string{}
	for _, p := range []*proc{p1, p2} {
		took, killed := p.terminate(30 * time.Second)
		stops[p.name] = fmt.Sprintf("%.1f s", took.Seconds())
		if killed {
			stops[p.name] += " (killed: no exit within 30 s of SIGTERM)"
			t.Errorf("%s did not exit within 30 s of SIGTERM", p.name)
		} else if p.waitErr != nil {
			t.Errorf("%s exited with %v after SIGTERM", p.name, p.waitErr)
		}
		if s := p.stderr(); strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
			t.Errorf("%s panicked:\n%s", p.name, s)
		}
	}
	t.Logf("stop took: ldafwd#1 %s, ldafwd#2 %s", stops["ldafwd#1"], stops["ldafwd#2"])
	l.stopCaptures()

	recs := readCaptures(t, cIn, cOut)
	if dir := os.Getenv(congestionKeepEnv); dir != "" {
		keepCaptures(t, dir, map[string]string{"in.pcap": cIn.file, "out.pcap": cOut.file, "ldafwd2-a.pcapng": capA})
		keepLines(t, dir, p1, p2)
	}
	st := newSegTruth(t, recs[0], recs[1], frames, isUserFrame)
	hops := hopIn(t, capA, st)
	ctl := controlTraffic(recs[0], recs[1])
	_, ports1 := p1.records(t)
	for _, pr := range ports1 {
		if pr.Final && pr.Port == "a" {
			// Drops here (rx ring full: a starved worker) are before the
			// segment: the truth starts at its input.
			t.Logf("ldafwd#1's port a took in %d and dropped %d of the %d replayed frames", pr.RxPackets, pr.RxDropped, total)
		}
	}
	t.Logf("captures: %d of %d replayed frames entered the segment, %d left it: %d lost (%.1f %%), mean delay %.1f ms; %d a>b End markers, %d frames after the last; %d frames crossed an End marker in the capture",
		st.sent, total, st.recv, st.sent-st.recv, 100*float64(st.sent-st.recv)/float64(max(st.sent, 1)), st.sum/float64(max(st.recv, 1))/1e6, st.endMarker, st.ivTruth(0).sent, st.crossed)
	t.Logf("control frames a>b: %d (%d bytes) entered the segment, %d (%d bytes) left it; largest %d bytes; by type entered/left: %s",
		ctl.in.frames, ctl.in.bytes, ctl.out.frames, ctl.out.bytes, ctl.largest, ctl.byType())

	// ldafwd#2's a>b lines of class "all" against the truth.
	ivs, _ := p2.records(t)
	lines := map[int64]report.Interval{}
	for _, r := range ivs {
		if r.Direction == "a>b" && r.MEC == "all" && r.Synopsis == "lda" {
			if _, dup := lines[r.Interval]; dup {
				t.Logf("interval %d: ldafwd#2 wrote two LDA lines (the later one is judged)", r.Interval)
			}
			lines[r.Interval] = r
		}
	}
	verdicts := lineVerdicts(p2)
	rdaValid := map[int64]bool{}
	for _, r := range ivs {
		if r.Direction == "a>b" && r.MEC == "all" && r.Synopsis == "rda" && r.Valid {
			rdaValid[r.Interval] = true
		}
	}

	type phaseSum struct {
		intervals, valid, lossMeasured, lossExact, delayOK int
		endLost                                            int // intervals cut by an End marker lost in every copy
		sent, lost, reportedLost                           uint64
		delaySum                                           float64
		recv                                               uint64
		dataBytes, ctlIn, ctlOut, ctlReported              uint64
	}
	sums := make([]phaseSum, len(congestionPhases))
	var ks []int64
	for k, tr := range st.iv {
		if tr.sent > 0 && k != 0 {
			ks = append(ks, int64(k))
		}
	}
	slices.Sort(ks)
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-6s %6s %6s %6s | %6s %6s %6s %-5s %-5s %-5s | %8s %8s %6s %7s %7s %-3s | %7s %7s %7s %7s %8s | %s\n",
		"interval", "phase", "t.sent", "t.lost", "cross", "sent", "recv", "lost", "valid", "lossV", "exact",
		"t.ms", "mean.ms", "hop.µs", "d.µs", "ci.µs", "ok", "ctl.in", "ctl.out", "ctl.rep", "ctl.fr", "data", "reason")
	congested := map[uint64]bool{} // the intervals with frames of the 40 Mbit/s phase
	var missing []int64
	var unmeasured []int64 // intervals with traffic whose loss the line does not measure
	for _, k := range ks {
		tr := st.iv[uint64(k)]
		p := 0 // the latest phase with frames in the interval, "during" if it had any
		dur := false
		for i, iv := range st.ivOf {
			if int64(iv) == k && st.sentAt[i] != 0 {
				p = max(p, phaseOf[i])
				dur = dur || phaseOf[i] == 1
			}
		}
		if dur {
			p = 1
			congested[uint64(k)] = true
		}
		s := &sums[p]
		s.intervals++
		s.sent += tr.sent
		s.lost += tr.sent - tr.recv
		s.recv += tr.recv
		s.delaySum += tr.sum
		s.dataBytes += tr.bytes
		c := ctl.iv[uint64(k)]
		if c == nil {
			c = &[2]ctlCount{}
		}
		s.ctlIn += c[0].bytes
		s.ctlOut += c[1].bytes
		r, ok := lines[k]
		if !ok {
			missing = append(missing, k)
			fmt.Fprintf(&b, "%-10d %-6s %6d %6d %6d | no line from ldafwd#2\n", k, congestionPhases[p].name, tr.sent, tr.sent-tr.recv, tr.crossed)
			continue
		}
		v := verdicts[k]
		lossMeasured, delayMeasured := r.Valid, r.Valid
		if v.loss != nil {
			lossMeasured = *v.loss
		}
		if v.delay != nil {
			delayMeasured = *v.delay
		}
		exact := absDiff(r.Sent, tr.sent) <= tr.crossed && absDiff(r.Lost, tr.sent-tr.recv) <= tr.crossed
		// The truth of the delay the appliances measure: the captures'
		// mean, plus the interval's mean hop into ldafwd#2's stamp.
		hop := hops[uint64(k)]
		trueMean := tr.mean() + hop.mean()
		delayOK := delayMeasured && tr.recv > 0 && math.Abs(r.MeanNs-trueMean) <= r.MeanCINs
		if r.Valid {
			s.valid++
			if !exact {
				t.Errorf("interval %d is valid and wrong: sent %d lost %d, captures %d/%d (%d crossed an End marker)", k, r.Sent, r.Lost, tr.sent, tr.sent-tr.recv, tr.crossed)
			}
		}
		if ctl.endsOut[uint64(k)] == 0 || ctl.iv[uint64(k)-1] != nil && ctl.endsOut[uint64(k)-1] == 0 {
			// Every copy of its End marker (or of the one before it,
			// which starts it) was lost in the segment: the receiver
			// could not cut it, and no count stands for it alone.
			s.endLost++
		}
		if !lossMeasured {
			unmeasured = append(unmeasured, k)
		} else {
			s.lossMeasured++
			s.reportedLost += r.Lost
			if exact {
				s.lossExact++
			}
		}
		if delayOK {
			s.delayOK++
		}
		s.ctlReported += uint64(r.ControlBytes)
		reason := r.Reason
		if len(reason) > 90 {
			reason = reason[:90] + "…"
		}
		if rdaValid[k] {
			reason = "(rda valid) " + reason
		}
		fmt.Fprintf(&b, "%-10d %-6s %6d %6d %6d | %6d %6d %6d %-5v %-5v %-5v | %8.2f %8.2f %6.1f %7.1f %7.1f %-3v | %7d %7d %7d %7s %8d | %s\n",
			k, congestionPhases[p].name, tr.sent, tr.sent-tr.recv, tr.crossed, r.Sent, r.Received, r.Lost, r.Valid, lossMeasured, exact,
			tr.mean()/1e6, r.MeanNs/1e6, hop.mean()/1e3, (r.MeanNs-trueMean)/1e3, r.MeanCINs/1e3, delayOK, c[0].bytes, c[1].bytes, r.ControlBytes, fmt.Sprintf("%d/%d", c[0].frames, c[1].frames), tr.bytes, reason)
	}
	t.Logf("ldafwd#2's a>b LDA lines against the captures (t.: truth; cross: frames the capture put across an End marker, the counts' tolerance; lossV: loss measured; ok: delay measured and within ci of the truth; ctl.in/ctl.out: a>b control bytes of the interval entering/leaving the segment, ctl.rep: the line's control_bytes; ctl.fr: its frames entering/leaving; data: bytes entering):\n%s", b.String())

	b.Reset()
	fmt.Fprintf(&b, "%-6s %5s %5s %6s %6s %6s | %7s %7s %6s %8s %9s | %9s %8s %8s %8s %7s\n",
		"phase", "ivs", "valid", "lossV", "exact", "delay", "t.sent", "t.lost", "t.loss", "t.ms", "rep.lost", "data.B", "ctl.in", "ctl.out", "ctl.rep", "ctl/dat")
	var trueLost uint64
	for p, s := range sums {
		trueLost += s.lost
		fmt.Fprintf(&b, "%-6s %5d %5d %6d %6d %6d | %7d %7d %5.1f%% %8.2f %9d | %9d %8d %8d %8d %6.2f%%\n",
			congestionPhases[p].name, s.intervals, s.valid, s.lossMeasured, s.lossExact, s.delayOK,
			s.sent, s.lost, 100*float64(s.lost)/float64(max(s.sent, 1)), s.delaySum/float64(max(s.recv, 1))/1e6, s.reportedLost,
			s.dataBytes, s.ctlIn, s.ctlOut, s.ctlReported, 100*float64(s.ctlIn)/float64(max(s.dataBytes, 1)))
	}
	t.Logf("per phase (ivs: intervals with traffic; lossV: loss measured; exact: and exact; delay: delay measured within its bound; rep.lost: Σ lost over lines with loss measured):\n%s", b.String())
	t.Logf("control frames a>b of the congested intervals entering/leaving the segment, by frame size: %s; their users' frames: %.0f %% lost", ctl.bySize(congested), 100*float64(sums[1].lost)/float64(max(sums[1].sent, 1)))
	t.Logf("ldafwd_lost_packets_total{direction=\"a>b\",mec=\"all\",synopsis=\"lda\"} = %v (present %v) before stopping; captures: %d lost", lostMetric, haveMetric, trueLost)
	healthy, polled := healthWhile(samples, unmeasured)
	t.Logf("/healthz: %s; of the %d unmeasured intervals, %d were the latest reported during a poll, %d of them never degraded: %v",
		summarizeHealth(samples), len(unmeasured), polled, len(healthy), healthy)
	for _, p := range []*proc{p1, p2} {
		if m := regexp.MustCompile(`\{[^\n]*"message":"appliance stopped"\}`).FindString(p.stderr()); m != "" {
			t.Logf("%s: %s", p.name, m)
		}
	}

	// The RDA and LDS lines: a valid one exact against its interval's or
	// flow's captures (logged line by line; too few valid ones is no
	// failure here).
	checkSynopses(t, ivs, false, func(k int64) capTruth { return *st.ivTruth(uint64(k)) }, st.flowTruth)

	// What holds today and must: the harness worked, the appliances ran.
	during, outside := sums[1], sums[0]
	outside.sent += sums[2].sent
	outside.lost += sums[2].lost
	if during.intervals == 0 || float64(during.lost) < 0.10*float64(during.sent) {
		t.Errorf("the harness did not congest: %d of %d frames lost in %d congested intervals, want ≥ 10 %%", during.lost, during.sent, during.intervals)
	}
	if float64(outside.lost) > 0.01*float64(outside.sent) {
		t.Errorf("the harness lost %d of %d frames outside congestion, want ~0", outside.lost, outside.sent)
	}
	if len(missing) > 0 {
		t.Errorf("ldafwd#2 wrote no a>b line for intervals %v, which carried traffic", missing)
	}

	// Loss is measured through congestion: every interval with traffic
	// has its loss measured and exact (End markers carry the per-class
	// counts), but those whose cut was lost with every copy of an End
	// marker; and the lost counter of /metrics is the captures' loss.
	for p, s := range sums {
		if s.lossExact < s.intervals-s.endLost {
			t.Errorf("%s congestion: %d of %d intervals with traffic have their loss measured and exact (%d cut by a lost End marker)", congestionPhases[p].name, s.lossExact, s.intervals, s.endLost)
		}
	}
	endLost := sums[0].endLost + sums[1].endLost + sums[2].endLost
	if endLost == 0 && (!haveMetric || uint64(lostMetric) != trueLost) {
		t.Errorf("ldafwd_lost_packets_total is %v (present %v), the captures lost %d", lostMetric, haveMetric, trueLost)
	}

	// An interval the receiver could not cut (every copy of its End
	// marker, or of the one before it, lost) has no delay either.
	say := t.Logf
	if strict {
		say = t.Errorf
	}
	for _, c := range []struct {
		share float64
		fail  func(string, ...any)
	}{{0.6, t.Errorf}, {0.8, say}} {
		if need := int(math.Ceil(c.share * float64(during.intervals-during.endLost))); during.delayOK < need {
			c.fail("during congestion: %d of %d intervals carry a delay within its bound of the truth, want ≥ %d (%.0f %% of the %d not cut by a lost End marker)", during.delayOK, during.intervals, need, 100*c.share, during.intervals-during.endLost)
		}
	}
	if len(healthy) > 0 {
		say("/healthz never said degraded while unmeasured intervals %v were the latest reported", healthy)
	}
	if !strict {
		t.Logf("target assertions logged only: set %s=1 to enforce them", congestionStrictEnv)
	}
	if t.Failed() {
		t.Logf("#1 stderr:\n%s\n#2 stderr:\n%s", p1.stderr(), p2.stderr())
		// ldafwd#2's a>b lines of class all of the congested intervals,
		// whole, for what the table above abbreviates (every cause, the
		// extra fields).
		var b strings.Builder
		p2.mu.Lock()
		for _, l := range p2.out {
			var r struct {
				Direction, MEC, Synopsis string
				Interval                 uint64
			}
			if json.Unmarshal([]byte(l), &r) == nil && r.Direction == "a>b" && r.MEC == "all" && r.Synopsis != "lds" && (congested[r.Interval] || congested[r.Interval+1] || congested[r.Interval-1]) {
				b.WriteString(l + "\n")
			}
		}
		p2.mu.Unlock()
		t.Logf("ldafwd#2's a>b lines (class all, LDS left out) around congestion:\n%s", b.String())
	}
}

// waitLine waits up to limit until p has written an a>b line for
// interval k or a later one.
func waitLine(p *proc, k int64, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline) && !p.hasExited(); time.Sleep(100 * time.Millisecond) {
		p.mu.Lock()
		lines := p.out[max(len(p.out)-64, 0):]
		for _, l := range lines {
			var r struct {
				Type, Direction string
				Interval        int64
			}
			if json.Unmarshal([]byte(l), &r) == nil && r.Type == "interval" && r.Direction == "a>b" && r.Interval >= k {
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
	}
}

// scrapeLost reads ldafwd_lost_packets_total of the a>b LDA lines of
// class "all" from /metrics at addr; false when the series is absent.
func scrapeLost(addr string) (float64, bool) {
	_, body, err := fetchURL("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	m := regexp.MustCompile(`(?m)^ldafwd_lost_packets_total\{direction="a>b",mec="all",segment="[^"]*",synopsis="lda"\} (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// verdict is what a line says of its loss and delay apart (loss_valid,
// delay_valid); nil where the appliance's lines do not carry them.
type verdict struct{ loss, delay *bool }

// lineVerdicts are p's a>b LDA lines' verdicts of class "all", by
// interval.
func lineVerdicts(p *proc) map[int64]verdict {
	p.mu.Lock()
	lines := append([]string(nil), p.out...)
	p.mu.Unlock()
	out := map[int64]verdict{}
	for _, l := range lines {
		var r struct {
			Type, Direction, MEC, Synopsis, Flow string
			Interval                             int64
			LossValid                            *bool `json:"loss_valid"`
			DelayValid                           *bool `json:"delay_valid"`
		}
		if json.Unmarshal([]byte(l), &r) == nil && r.Type == "interval" && r.Direction == "a>b" && r.MEC == "all" && r.Synopsis == "lda" && r.Flow == "" {
			out[r.Interval] = verdict{r.LossValid, r.DelayValid}
		}
	}
	return out
}

// healthSample is one /healthz answer.
type healthSample struct {
	at time.Time
	h  metrics.Health
}

// healthPoller polls /healthz until stopped.
type healthPoller struct {
	quit    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []healthSample
}

func pollHealth(addr string, every time.Duration) *healthPoller {
	hp := &healthPoller{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(hp.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-hp.quit:
				return
			case <-tick.C:
			}
			_, body, err := fetchURL("http://" + addr + "/healthz")
			var h metrics.Health
			if err != nil || json.Unmarshal([]byte(body), &h) != nil {
				h.Status = "unanswered"
			}
			hp.mu.Lock()
			hp.samples = append(hp.samples, healthSample{time.Now(), h})
			hp.mu.Unlock()
		}
	}()
	return hp
}

// stop ends the polling and returns the answers.
func (hp *healthPoller) stop() []healthSample {
	close(hp.quit)
	<-hp.done
	return hp.samples
}

// summarizeHealth renders the statuses /healthz went through, with the
// problem each first gave.
func summarizeHealth(s []healthSample) string {
	var parts []string
	prev := ""
	for _, x := range s {
		if x.h.Status != prev {
			p := x.h.Status
			if x.h.Problem != "" {
				p += " (" + x.h.Problem
				if len(p) > 160 {
					p = p[:160] + "…"
				}
				p += ")"
			}
			parts = append(parts, fmt.Sprintf("%s from interval %d", p, x.h.LastInterval))
			prev = x.h.Status
		}
	}
	return fmt.Sprintf("%d polls: %s", len(s), strings.Join(parts, " → "))
}

// healthWhile finds, of the unmeasured intervals ks, those during
// which /healthz was polled (its last_interval was k) and never said
// degraded; polled is how many of ks were polled at all.
func healthWhile(s []healthSample, ks []int64) (healthy []int64, polled int) {
	for _, k := range ks {
		n, degraded := 0, false
		for _, x := range s {
			if x.h.LastInterval == k {
				n++
				degraded = degraded || x.h.Status == "degraded"
			}
		}
		if n > 0 {
			polled++
			if !degraded {
				healthy = append(healthy, k)
			}
		}
	}
	return healthy, polled
}

// ctlKind is a control frame's type and the synopsis it carries.
type ctlKind struct {
	typ  control.Type
	kind control.Kind
}

// ctlCount counts control frames and their bytes.
type ctlCount struct{ frames, bytes uint64 }

// ctlTraffic is the a>b control traffic the captures saw: per interval it
// is for, entering the segment ([0]) and leaving it toward ldafwd#2 ([1]).
type ctlTraffic struct {
	iv      map[uint64]*[2]ctlCount
	endsOut map[uint64]int // End marker copies of each interval that left the segment
	typ     map[ctlKind]*[2]ctlCount
	in, out ctlCount
	// back: the b>a control frames entering the segment from ldafwd#2's
	// side (its requests about the a>b intervals among them); backReq
	// the Requests of them.
	back, backReq ctlCount
	largest       int
	// sent: each frame entering the segment; left: the sequence numbers
	// of those that left it (a frame's number is its own, copies and
	// retries included).
	sent []ctlFrame
	left map[uint64]bool
}

// ctlFrame is one control frame entering the segment.
type ctlFrame struct {
	interval, seq uint64
	size          int
}

func controlTraffic(in, out []pcapRecord) *ctlTraffic {
	c := &ctlTraffic{iv: map[uint64]*[2]ctlCount{}, endsOut: map[uint64]int{}, typ: map[ctlKind]*[2]ctlCount{}, left: map[uint64]bool{}}
	var cf control.Frame
	for side, recs := range [][]pcapRecord{in, out} {
		for _, r := range recs {
			if !control.IsControlFrame(r.data) || control.ParseFrame(r.data, &cf) != nil {
				continue
			}
			if cf.Direction != appliance.DirAtoB {
				if side == 1 {
					c.back.frames++
					c.back.bytes += uint64(len(r.data))
					if cf.Type == control.TypeRequest {
						c.backReq.frames++
						c.backReq.bytes += uint64(len(r.data))
					}
				}
				continue
			}
			n := uint64(len(r.data))
			if c.iv[cf.Interval] == nil {
				c.iv[cf.Interval] = &[2]ctlCount{}
			}
			c.iv[cf.Interval][side].frames++
			c.iv[cf.Interval][side].bytes += n
			if side == 1 && cf.Type == control.TypeEnd {
				c.endsOut[cf.Interval]++
			}
			if side == 0 {
				c.sent = append(c.sent, ctlFrame{cf.Interval, cf.Seq, len(r.data)})
			} else {
				c.left[cf.Seq] = true
			}
			tk := ctlKind{cf.Type, cf.Kind}
			if c.typ[tk] == nil {
				c.typ[tk] = &[2]ctlCount{}
			}
			c.typ[tk][side].frames++
			c.typ[tk][side].bytes += n
			tot := &c.in
			if side == 1 {
				tot = &c.out
			}
			tot.frames++
			tot.bytes += n
			c.largest = max(c.largest, len(r.data))
		}
	}
	return c
}

// bySize renders, for the control frames of the intervals ivs, how many
// of those entering the segment left it, by frame size: a queue that
// drops by bytes lets a small frame through far more often than a
// full-size one.
func (c *ctlTraffic) bySize(ivs map[uint64]bool) string {
	bounds := []int{200, 500, 1000, 1514}
	var in, out [4]int
	for _, f := range c.sent {
		if !ivs[f.interval] {
			continue
		}
		b := 0
		for b < len(bounds)-1 && f.size > bounds[b] {
			b++
		}
		in[b]++
		if c.left[f.seq] {
			out[b]++
		}
	}
	var parts []string
	lo := 0
	for b, hi := range bounds {
		if in[b] > 0 {
			parts = append(parts, fmt.Sprintf("%d–%d B %d/%d (%.0f %% lost)", lo+1, hi, in[b], out[b], 100*float64(in[b]-out[b])/float64(in[b])))
		}
		lo = hi
	}
	return strings.Join(parts, ", ")
}

// byType renders the frames entering/leaving per control frame type and
// synopsis.
func (c *ctlTraffic) byType() string {
	var parts []string
	for _, ty := range []control.Type{control.TypeHello, control.TypeEnd, control.TypeFragment, control.TypeParity, control.TypeRequest, control.TypeReply} {
		for _, k := range []control.Kind{control.KindMeta, control.KindLDA, control.KindRDA, control.KindLDS} {
			if x := c.typ[ctlKind{ty, k}]; x != nil {
				name := ty.String()
				if k != control.KindMeta {
					name += "/" + k.String()
				}
				parts = append(parts, fmt.Sprintf("%s %d/%d", name, x[0].frames, x[1].frames))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// hopSum sums, over an interval's frames, the time from the bridge's
// capture of a frame leaving the segment to ldafwd#2's receive stamp.
type hopSum struct {
	sum float64
	n   int
}

// mean is the mean hop in ns; 0 when no frame of the interval was in
// both captures.
func (h hopSum) mean() float64 { return h.sum / float64(max(h.n, 1)) }

// hopIn reads ldafwd#2's --capture-a file (pcapng, its receive stamps)
// and sums, per interval of st, each replayed frame's stamp there less
// its capture time at the bridge's output. Frames the tap did not keep
// (its ring full) are left out of the mean, not of anything else.
func hopIn(t *testing.T, path string, st *segTruth) map[uint64]hopSum {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("ldafwd#2's capture: %v", err)
	}
	defer f.Close()
	r, err := pcapfile.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatalf("ldafwd#2's capture: %v", err)
	}
	hops := map[uint64]hopSum{}
	buf := make([]byte, pcapfile.MaxRecord)
	seen, matched := 0, 0
	for {
		frame, _, ts, _, err := r.Next(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("ldafwd#2's capture, record %d: %v", r.Record(), err)
		}
		seen++
		if !isUserFrame(frame) {
			continue
		}
		i, ok := st.idx[string(frame)]
		if !ok || st.recvAt[i] == 0 {
			continue
		}
		matched++
		h := hops[st.ivOf[i]]
		h.sum += float64(int64(ts) - st.recvAt[i])
		h.n++
		hops[st.ivOf[i]] = h
	}
	t.Logf("ldafwd#2's capture of port a: %d frames, %d of the %d replayed frames that left the segment", seen, matched, st.recv)
	return hops
}

// keepCaptures copies files (name in dir → path) into dir, made if need be.
func keepCaptures(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%s: %v", congestionKeepEnv, err)
	}
	for name, from := range files {
		b, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Fatalf("%s: %v", congestionKeepEnv, err)
		}
	}
	t.Logf("captures kept in %s", dir)
}

// keepLines writes each appliance's report lines into dir as NAME.jsonl
// (ldafwd1.jsonl, ldafwd2.jsonl): the shipped shapes, samples and
// bounds the offline replay is compared with.
func keepLines(t *testing.T, dir string, ps ...*proc) {
	t.Helper()
	for _, p := range ps {
		p.mu.Lock()
		b := []byte(strings.Join(p.out, "\n") + "\n")
		p.mu.Unlock()
		name := strings.NewReplacer("#", "", " ", "-").Replace(p.name) + ".jsonl"
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatalf("%s: %v", congestionKeepEnv, err)
		}
	}
}
