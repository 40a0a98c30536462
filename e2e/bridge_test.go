package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/report"
)

// TestLabBridge is a lab of commodity parts, judged against captures:
//
//	gen ns ─veth─ [a ldafwd#1 b] ─veth─ wire ns: br0 (STP on, tbf 40 Mbit/s toward #2) ─veth─ [a ldafwd#2 b] ─veth─ sink ns
//
// Two `ldafwd run` processes with afxdp: ports and --idle-sleep 50us; the
// segment is a Linux bridge sending a BPDU every second, its port toward
// ldafwd#2 shaped by a tbf qdisc (queueing delay, and drops when its
// queue overflows) and dropping the 1 in lossEvery frames addressed to a
// MAC it does not flood; ~20 kpps of mixed IPv4/IPv6 TCP/UDP frames
// replayed with tcpreplay. Both appliances run every synopsis at the
// default control budget. Truth comes from dumpcap on the bridge's two
// ports and on the sink, frames matched by content. It checks that every
// interval of ldafwd#2 is valid, that Σ sent/received/lost over them
// equal the captures', that the packet-weighted mean delay is within
// 5 % + 20 µs of the captured one, the RDA and LDS lines against the
// captures (checkSynopses), and that the appliances lost, changed or
// added no user frame (the bridge's input is exactly the replayed file,
// the sink's exactly the bridge's output).
func TestLabBridge(t *testing.T) {
	// Queueing toward ldafwd#2: 40 Mbit/s, a 16 KB bucket, 20 ms of queue.
	l, bin := startBridgeLab(t, "bridge lab", "ldb", "rate", "40mbit", "burst", "16kb", "latency", "20ms")

	// The traffic: mixed IPv4/IPv6 TCP/UDP, 64–250 bytes (~25 Mbit/s, so
	// the tbf queues bursts without overflowing), every frame
	// distinct (a sequence number in its payload).
	const pps, seconds = 20_000, 4
	frames := mixedFrames(pps*seconds, 64, 250, lossEvery)
	pcapIn := filepath.Join(l.dir, "in.pcap")
	if err := writePcap(pcapIn, frames); err != nil {
		t.Fatal(err)
	}

	// Captures at the segment's two ends and at the sink.
	cIn, cOut, cSink := l.capture(l.nsW, l.S1+"p"), l.capture(l.nsW, l.S2+"p"), l.capture(l.nsK, l.K+"p")

	// Every synopsis, sized alike at both ends (the defaults), each
	// control frame sent twice; the budget is labBudget (see there).
	common := []string{"--interval", "1s", "--key-file", l.keyFile, "--format", "json", "--idle-sleep", "50us",
		"--max-delay", "2s", "--min-delay", "-50ms", "--stats-interval", "1s", "--log-level", "info",
		"--synopsis", "all", "--control-copies", "2", "--control-budget", labBudget}
	p1, p2 := l.startAppliances(bin, common, nil)

	// Start half-way into an interval, so neither end of the traffic
	// falls on a boundary.
	time.Sleep(time.Duration(1e9 - time.Now().UnixNano()%1e9 + 5e8))
	t.Logf("tcpreplay: %s", l.replay(pcapIn, fmt.Sprintf("--pps=%d", pps)))
	time.Sleep(2500 * time.Millisecond) // the segment drains, two more intervals close
	p1.stop(t, 15*time.Second)
	p2.stop(t, 15*time.Second)
	l.stopCaptures()

	// Truth from the captures.
	recs := readCaptures(t, cIn, cOut, cSink)
	st := newSegTruth(t, recs[0], recs[1], frames, isUserFrame)
	sunk := 0
	for _, r := range recs[2] {
		if !isUserFrame(r.data) {
			continue
		}
		if i, ok := st.idx[string(r.data)]; !ok || st.recvAt[i] == 0 {
			t.Errorf("the sink received a frame the bridge never sent toward ldafwd#2 (%d bytes): ldafwd#2 changed or added it", len(r.data))
			continue
		}
		sunk++
	}
	trueSent, trueRecv := st.sent, st.recv
	trueMean := st.sum / float64(trueRecv)
	if trueSent != uint64(len(frames)) {
		t.Errorf("the bridge received %d of the %d replayed frames: ldafwd#1 lost some", trueSent, len(frames))
	}
	if uint64(sunk) != trueRecv {
		t.Errorf("the sink received %d of the %d frames the bridge sent toward ldafwd#2", sunk, trueRecv)
	}
	if st.crossed > 0 {
		t.Logf("the input capture put %d frames across an End marker from their place in the replay", st.crossed)
	}

	// ldafwd#2's report against it.
	ivs, ports := p2.records(t)
	// Frames ldafwd#2's segment port dropped (rx ring full: its worker
	// fell behind on a busy 2-core machine) reached it (the capture saw
	// them) but no synopsis. The intervals around them are honestly
	// invalid — for the drops, or for an End marker or fragment among the
	// dropped frames — and the totals cannot be held to the captures: then
	// only the valid lines are (each against its interval's capture).
	var rxDropped uint64
	for _, pr := range ports {
		if pr.Final && pr.Port == "a" {
			rxDropped = pr.RxDropped
		}
	}
	var rSent, rRecv, rLost uint64
	var wsum, vTrueSum float64
	var vTrueN uint64
	valid, stampInvalid, dropInvalid := 0, 0, 0
	for _, r := range ivs {
		if r.Direction != "a>b" || r.MEC != "all" || r.Synopsis != "lda" {
			continue
		}
		tr := st.ivTruth(uint64(r.Interval))
		trMean := tr.mean()
		t.Logf("interval %d: valid=%v sent %d received %d lost %d mean %.1f µs ± %.1f (stamp err %.1f: tx %.1f rx %.1f, %s) %s; captured: sent %d received %d mean %.1f µs; control %d bytes",
			r.Interval, r.Valid, r.Sent, r.Received, r.Lost, r.MeanNs/1e3, r.MeanCINs/1e3, r.StampErrNs/1e3, r.TxStampErrNs/1e3, r.RxStampErrNs/1e3,
			r.StampSource, r.Reason, tr.sent, tr.recv, trMean/1e3, r.ControlBytes)
		// Counts are held to the captures in total (below), not per
		// interval: frames the sender handed to the veth from different
		// CPUs can reach the capture a few places apart from the order
		// they were sent in, moving a handful across an End marker in
		// the capture but not on the wire ldafwd#2 sees.
		if r.Valid && math.Abs(r.MeanNs-trMean) > r.MeanCINs {
			t.Errorf("interval %d is valid and wrong: mean %.1f ± %.1f µs; captured %.1f µs", r.Interval, r.MeanNs/1e3, r.MeanCINs/1e3, trMean/1e3)
		}
		if !r.Valid && strings.HasPrefix(r.Reason, receiverDropReason) {
			// Honest too: ldafwd#2's own receive ring overflowed (its
			// worker fell behind on a busy 2-core machine). Its counts
			// are held to the captures below with the frames the port
			// counted as dropped.
			dropInvalid++
			rSent += r.Sent
			rRecv += r.Received
			rLost += r.Lost
			continue
		}
		if !r.Valid && strings.HasPrefix(r.Reason, "timestamps uncertain") {
			// Honest: in copy mode the sender's transmit call runs the
			// whole veth/bridge/tbf path, and on a busy 2-core machine
			// its clock window outgrows --max-stamp-err. The counts of
			// such an interval still come from the synopses: they are
			// held to the captures with the rest.
			stampInvalid++
			rSent += r.Sent
			rRecv += r.Received
			rLost += r.Lost
			continue
		}
		if !r.Valid {
			if r.Sent+r.Received > 0 && rxDropped == 0 {
				t.Errorf("interval %d with traffic invalid: %s", r.Interval, r.Reason)
			}
			continue
		}
		valid++
		vTrueSum += tr.sum
		vTrueN += tr.recv
		rSent += r.Sent
		rRecv += r.Received
		rLost += r.Lost
		wsum += r.MeanNs * float64(r.Received)
	}
	t.Logf("captures: sent %d received %d lost %d, mean delay %.1f µs; ldafwd#2: %d valid intervals, sent %d received %d lost %d, mean %.1f µs",
		trueSent, trueRecv, trueSent-trueRecv, trueMean/1e3, valid, rSent, rRecv, rLost, wsum/float64(rRecv)/1e3)
	if rxDropped > 0 {
		t.Logf("ldafwd#2's segment port dropped %d frames (%d intervals invalid naming it): totals not comparable, valid lines checked one by one", rxDropped, dropInvalid)
	} else if rSent != trueSent || rRecv != trueRecv || rLost != trueSent-trueRecv {
		t.Errorf("reported sent/received/lost %d/%d/%d, captures %d/%d/%d", rSent, rRecv, rLost, trueSent, trueRecv, trueSent-trueRecv)
	}
	// The packet-weighted mean over valid intervals against the captured
	// mean of the same intervals' frames (all of them when every interval
	// is valid, as required above).
	if stampInvalid > 0 {
		t.Logf("%d intervals invalid for their transmit stamps' uncertainty (a loaded machine): their counts are checked, their means are not", stampInvalid)
	}
	if vRecv := rRecv - recvOfStampInvalid(ivs); rxDropped == 0 && vRecv > 0 && vTrueN > 0 {
		mean, tm := wsum/float64(vRecv), vTrueSum/float64(vTrueN)
		if d := math.Abs(mean - tm); d > 0.05*math.Abs(tm)+20_000 {
			t.Errorf("reported mean %.1f µs, captures %.1f µs over the same intervals: off by %.1f µs, more than 5 %% + 20 µs", mean/1e3, tm/1e3, d/1e3)
		}
		t.Logf("valid intervals: reported mean %.1f µs, captured %.1f µs", mean/1e3, tm/1e3)
	}
	checkSynopses(t, ivs, stampInvalid == 0 && rxDropped == 0, func(k int64) capTruth { return *st.ivTruth(uint64(k)) }, st.flowTruth)
	if t.Failed() {
		t.Logf("#1 stderr:\n%s\n#2 stderr:\n%s", p1.stderr(), p2.stderr())
	}
}

// labBudget is the --control-budget of TestLabBridge's appliances.
const labBudget = "1%"

// checkSynopses holds the RDA and LDS lines of direction a>b, class
// "all", to the captured truth of their interval (ivTruth) and of their
// flow in it (flowTruth: sent, received, Σ delay in ns): a valid RDA
// line's lost is the interval's captured loss and its mean within
// mean_ci_ns of the captured mean; a valid LDS line's sent, lost and mean
// likewise against its flow's (a few LDS lines may lie above it by the
// capture's lag: captureLagBounds). Every line carries its configuration, and
// an invalid line its reason. Valid lines are counted: a run where none
// is valid proves nothing, so at least minRDAValid RDA lines and
// minLDSValid LDS flow lines must be. (At the default budget the LDS
// ships one row, one cell per flow: a flow that lost a packet has no
// delay sample and its line is rightly invalid, about half the flows
// per interval at this loss rate.)
func checkSynopses(t *testing.T, ivs []report.Interval, strict bool, ivTruth func(int64) capTruth, flowTruth func(int64, string) capTruth) {
	t.Helper()
	const minRDAValid, minLDSValid = 2, 8
	type tally struct{ valid, total, budget int }
	count := map[string]*tally{"lda": {}, "rda": {}, "lds": {}, "sample": {}} // sample lines: counted, checked by TestSampleProperty
	var rdaErr, ldsErr []float64                                              // |reported − captured| / mean_ci_ns of valid lines
	var late []string                                                         // valid LDS lines above their bound by less than captureLagBounds of it
	flowOff := 0                                                              // valid LDS lines whose sent differs from the capture's cut
	for _, r := range ivs {
		if r.Direction != "a>b" || r.MEC != "all" {
			continue
		}
		c := count[r.Synopsis]
		if c == nil {
			t.Errorf("interval %d: a line of synopsis %q", r.Interval, r.Synopsis)
			continue
		}
		c.total++
		if r.Config == "" {
			t.Errorf("interval %d %s %s: no config", r.Interval, r.Synopsis, r.Flow)
		}
		if !r.Valid {
			if r.Reason == "" {
				t.Errorf("interval %d %s %s: invalid without a reason", r.Interval, r.Synopsis, r.Flow)
			}
			if strings.Contains(r.Reason, "control budget") {
				c.budget++
			}
		} else {
			c.valid++
		}
		switch r.Synopsis {
		case "rda":
			tr := ivTruth(r.Interval)
			sent, recv := tr.sent, tr.recv
			mean := tr.sum / float64(max(recv, 1))
			t.Logf("interval %d rda: valid=%v sent %d received %d lost %d mean %.1f µs ± %.1f %s; captured: sent %d lost %d mean %.1f µs; %s",
				r.Interval, r.Valid, r.Sent, r.Received, r.Lost, r.MeanNs/1e3, r.MeanCINs/1e3, r.Reason, sent, sent-recv, mean/1e3, shippedShape(r.Config))
			if !r.Valid {
				continue
			}
			if absDiff(r.Lost, sent-recv) > tr.nearLost {
				t.Errorf("interval %d: valid RDA line says lost %d, captures %d (%d of them near an End marker)", r.Interval, r.Lost, sent-recv, tr.nearLost)
			}
			if recv > 0 {
				d := math.Abs(r.MeanNs - mean)
				rdaErr = append(rdaErr, d/r.MeanCINs)
				if d > r.MeanCINs {
					t.Errorf("interval %d: valid RDA line's mean %.1f ± %.1f µs, captured %.1f µs", r.Interval, r.MeanNs/1e3, r.MeanCINs/1e3, mean/1e3)
				}
			}
		case "lds":
			if r.Flow == "" {
				if r.Valid {
					t.Errorf("interval %d: a valid LDS line names no flow", r.Interval)
				}
				t.Logf("interval %d lds: valid=%v %s; config %q", r.Interval, r.Valid, r.Reason, r.Config)
				continue
			}
			tr := flowTruth(r.Interval, r.Flow)
			sent, recv := tr.sent, tr.recv
			mean := tr.sum / float64(max(recv, 1))
			t.Logf("interval %d lds %s: valid=%v sent %d lost %d mean %.1f µs ± %.1f (the flow's stamp err %.1f: tx %.1f rx %.1f) %s; captured: sent %d lost %d (%d/%d near an End marker) mean %.1f µs; %s",
				r.Interval, r.Flow, r.Valid, r.Sent, r.Lost, r.MeanNs/1e3, r.MeanCINs/1e3, r.StampErrNs/1e3, r.TxStampErrNs/1e3, r.RxStampErrNs/1e3, r.Reason,
				sent, sent-recv, tr.near, tr.nearLost, mean/1e3, shippedShape(r.Config))
			if !r.Valid {
				continue
			}
			if sent == 0 {
				t.Errorf("interval %d: valid LDS line for flow %q, which the captures never saw in it", r.Interval, r.Flow)
				continue
			}
			// Exact but for frames the capture may place across an
			// End marker from where the wire had them.
			if absDiff(r.Sent, sent) > tr.near || absDiff(r.Lost, sent-recv) > tr.nearLost {
				t.Errorf("interval %d flow %s: valid LDS line says sent %d lost %d, captures %d/%d (%d/%d of them near an End marker)",
					r.Interval, r.Flow, r.Sent, r.Lost, sent, sent-recv, tr.near, tr.nearLost)
			}
			if absDiff(r.Sent, sent) > 0 {
				flowOff++
			}
			if recv > 0 {
				d := math.Abs(r.MeanNs - mean)
				ldsErr = append(ldsErr, d/r.MeanCINs)
				switch {
				case d <= r.MeanCINs:
				case r.MeanNs > mean && d <= captureLagBounds*r.MeanCINs:
					late = append(late, fmt.Sprintf("interval %d flow %s: valid LDS mean %.1f ± %.1f µs, captured %.1f µs", r.Interval, r.Flow, r.MeanNs/1e3, r.MeanCINs/1e3, mean/1e3))
				default:
					t.Errorf("interval %d flow %s: valid LDS mean %.1f ± %.1f µs, captured %.1f µs", r.Interval, r.Flow, r.MeanNs/1e3, r.MeanCINs/1e3, mean/1e3)
				}
			}
		}
	}
	// A flow's few packets put one frame's capture lag (see
	// captureLagLines) into its mean at full weight.
	if allowed := captureLagLines(count["lds"].valid); len(late) > allowed {
		for _, l := range late {
			t.Error(l)
		}
		t.Errorf("%d valid LDS lines above their bound of the captured mean (capture lag allows %d of %d)", len(late), allowed, count["lds"].valid)
	} else {
		for _, l := range late {
			t.Logf("%s: above its bound, within the capture's lag (%d allowed of %d valid lines)", l, allowed, count["lds"].valid)
		}
	}
	for _, s := range []string{"lda", "rda", "lds"} {
		c := count[s]
		t.Logf("%s: %d of %d lines valid, %d left out by the control budget", s, c.valid, c.total, c.budget)
	}
	t.Logf("valid lines' |mean error| / mean_ci_ns: rda %s, lds %s; %d valid LDS lines' sent off the capture's cut (within frames near an End marker)",
		spread(rdaErr), spread(ldsErr), flowOff)
	if count["rda"].valid < minRDAValid {
		say := t.Errorf
		if !strict {
			say = t.Logf // intervals lost to stamp uncertainty took the valid lines with them
		}
		say("%d valid RDA lines, want at least %d: nothing to hold to the captures", count["rda"].valid, minRDAValid)
	}
	if count["lds"].valid < minLDSValid {
		say := t.Errorf
		if !strict {
			say = t.Logf
		}
		say("%d valid LDS flow lines, want at least %d: nothing to hold to the captures", count["lds"].valid, minLDSValid)
	}
}

// The captured truth's ingress time is when the segment's first bridge
// port (its veth end) received a frame, not when ldafwd#1 handed it to its
// veth. Inside the copy-mode AF_XDP transmit call the two are
// microseconds apart: the call runs the veth and the bridge, and a calm
// interval's reported means come out 0.3–0.7 of their bound below the
// captured ones. But the kernel may leave the receive to ksoftirqd, which
// on a busy two-core host runs it milliseconds later: the frame was on
// the segment (the transmit ring was empty after each call: no frame of
// ldafwd#1 waited in it), the capture records it late, and a flow of a
// few dozen packets in that interval has a captured mean tens of µs too
// low. So a valid LDS line may lie above the captured mean by up to
// captureLagBounds of its bound, in at most captureLagLines of the valid
// lines; below it, or further above, is an error.
const captureLagBounds = 3

func captureLagLines(valid int) int { return 1 + valid/100 }

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// shippedShape is the part of a line's config that says what the control
// budget let through.
func shippedShape(config string) string {
	var out []string
	for _, f := range strings.Fields(config) {
		if strings.HasPrefix(f, "rda-shipped=") || strings.HasPrefix(f, "lds-shipped=") {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// spread renders the largest and the median of xs.
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "none"
	}
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	return fmt.Sprintf("max %.2f median %.2f over %d", s[len(s)-1], s[len(s)/2], len(s))
}

// fiveTuple names the flow of an Ethernet frame carrying IPv4 or IPv6
// (no extension headers) with TCP or UDP as the report does:
// "proto src:port>dst:port", IPv6 addresses in brackets; "" otherwise.
func fiveTuple(b []byte) string {
	if len(b) < 14 {
		return ""
	}
	var src, dst netip.Addr
	var proto byte
	var l4 []byte
	switch binary.BigEndian.Uint16(b[12:14]) {
	case 0x0800:
		ip := b[14:]
		if len(ip) < 20 {
			return ""
		}
		hl := int(ip[0]&0xf) * 4
		if len(ip) < hl+4 {
			return ""
		}
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		proto, l4 = ip[9], ip[hl:]
	case 0x86dd:
		ip := b[14:]
		if len(ip) < 44 {
			return ""
		}
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		proto, l4 = ip[6], ip[40:]
	default:
		return ""
	}
	if proto != 6 && proto != 17 {
		return ""
	}
	return fmt.Sprintf("%d %s>%s", proto,
		netip.AddrPortFrom(src, binary.BigEndian.Uint16(l4[0:2])), netip.AddrPortFrom(dst, binary.BigEndian.Uint16(l4[2:4])))
}

// labDst is the destination MAC of mixedFrames' frames, but for 1 in
// lossEvery, sent to labLost instead (a MAC the segment drops).
var labDst, labLost = []byte{0x02, 0x1d, 0xaf, 0, 0, 2}, []byte{0x02, 0x1d, 0xaf, 0, 0, 3}

// lossEvery: ~50 frames lost per interval at 20 kpps (0.2 %), spread
// over the flows; few enough for the RDA the default budget ships.
const lossEvery = 397

// mixedFrames builds n distinct frames: IPv4 and IPv6, TCP and UDP, minSize
// to maxSize bytes, from 64 flows, sequence number in the payload; 1 in
// lossEvery (0: none) addressed to labLost.
func mixedFrames(n, minSize, maxSize, lossEvery int) [][]byte {
	rng := rand.New(rand.NewPCG(15, 15))
	src := []byte{0x02, 0x1d, 0xaf, 0, 0, 1}
	out := make([][]byte, n)
	for i := range out {
		dst := labDst
		if lossEvery > 0 && i%lossEvery == lossEvery-1 {
			dst = labLost
		}
		flow := rng.IntN(64)
		v6, tcp := flow&1 == 1, flow&2 == 2
		size := minSize + rng.IntN(maxSize-minSize+1)
		l4 := 8
		if tcp {
			l4 = 20
		}
		l3 := 20
		if v6 {
			l3 = 40
		}
		size = max(size, 14+l3+l4+8)
		b := make([]byte, size)
		copy(b[0:6], dst)
		copy(b[6:12], src)
		ip := b[14:]
		payload := size - 14 - l3
		proto := byte(17)
		if tcp {
			proto = 6
		}
		if v6 {
			binary.BigEndian.PutUint16(b[12:14], 0x86dd)
			ip[0] = 0x60
			binary.BigEndian.PutUint16(ip[4:6], uint16(payload))
			ip[6], ip[7] = proto, 64
			copy(ip[8:], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 1})
			ip[23] = byte(flow)
			copy(ip[24:], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 2})
			ip[39] = byte(flow)
		} else {
			binary.BigEndian.PutUint16(b[12:14], 0x0800)
			ip[0] = 0x45
			binary.BigEndian.PutUint16(ip[2:4], uint16(l3+payload))
			binary.BigEndian.PutUint16(ip[4:6], uint16(i))
			ip[8], ip[9] = 64, proto
			copy(ip[12:16], []byte{10, 1, 0, byte(flow)})
			copy(ip[16:20], []byte{10, 2, 0, byte(flow)})
			var s uint32
			for k := 0; k < 20; k += 2 {
				s += uint32(binary.BigEndian.Uint16(ip[k:]))
			}
			s = s>>16 + s&0xffff
			s += s >> 16
			binary.BigEndian.PutUint16(ip[10:12], ^uint16(s))
		}
		l := ip[l3:]
		binary.BigEndian.PutUint16(l[0:2], uint16(10000+flow))
		binary.BigEndian.PutUint16(l[2:4], 443)
		if tcp {
			binary.BigEndian.PutUint32(l[4:8], uint32(i))
			l[12] = 5 << 4
			l[13] = 0x10 // ACK
			binary.BigEndian.PutUint16(l[14:16], 65535)
		} else {
			binary.BigEndian.PutUint16(l[4:6], uint16(payload))
		}
		binary.BigEndian.PutUint64(l[l4:], uint64(i)|0x1ab<<48)
		out[i] = b
	}
	return out
}

// writePcap writes frames as a classic pcap (µs timestamps, Ethernet);
// tcpreplay paces them itself (--pps).
func writePcap(path string, frames [][]byte) error {
	var b bytes.Buffer
	h := make([]byte, 24)
	binary.LittleEndian.PutUint32(h[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], 65535)
	binary.LittleEndian.PutUint32(h[20:], 1)
	b.Write(h)
	for i, f := range frames {
		r := make([]byte, 16)
		binary.LittleEndian.PutUint32(r[0:], 1_700_000_000)
		binary.LittleEndian.PutUint32(r[4:], uint32(i%1_000_000))
		binary.LittleEndian.PutUint32(r[8:], uint32(len(f)))
		binary.LittleEndian.PutUint32(r[12:], uint32(len(f)))
		b.Write(r)
		b.Write(f)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

type pcapRecord struct {
	ns   int64
	data []byte
}

// readPcap reads a classic pcap (µs or ns magic, either byte order).
func readPcap(path string) ([]pcapRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 24 {
		return nil, fmt.Errorf("%s: %d bytes, no pcap header", path, len(b))
	}
	var bo binary.ByteOrder = binary.LittleEndian
	magic := bo.Uint32(b)
	if magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1 {
		bo = binary.BigEndian
		magic = bo.Uint32(b)
	}
	var unit int64
	switch magic {
	case 0xa1b2c3d4:
		unit = 1000
	case 0xa1b23c4d:
		unit = 1
	default:
		return nil, fmt.Errorf("%s: not a classic pcap (magic %#x)", path, magic)
	}
	var out []pcapRecord
	for off := 24; off+16 <= len(b); {
		sec, frac := int64(bo.Uint32(b[off:])), int64(bo.Uint32(b[off+4:]))
		incl := int(bo.Uint32(b[off+8:]))
		off += 16
		if off+incl > len(b) {
			return nil, fmt.Errorf("%s: truncated record", path)
		}
		out = append(out, pcapRecord{ns: sec*1e9 + frac*unit, data: b[off : off+incl]})
		off += incl
	}
	return out, nil
}

// syncBuffer is a bytes.Buffer safe to write from one goroutine (a
// process's output copier) while another reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// receiverDropReason begins the reason of an interval the receiving
// appliance's own port dropped frames around.
const receiverDropReason = "the receiving appliance's segment port dropped"

// recvOfStampInvalid is the frames received in the a>b LDA intervals
// invalid for their stamps' uncertainty or for the receiving port's drops.
func recvOfStampInvalid(ivs []report.Interval) uint64 {
	var n uint64
	for _, r := range ivs {
		if r.Direction == "a>b" && r.MEC == "all" && r.Synopsis == "lda" && !r.Valid &&
			(strings.HasPrefix(r.Reason, "timestamps uncertain") || strings.HasPrefix(r.Reason, receiverDropReason)) {
			n += r.Received
		}
	}
	return n
}
