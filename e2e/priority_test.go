package e2e

import (
	"encoding/binary"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/control"
)

// priorityPCP is the priority TestControlPriorityLab gives the control
// frames in its second run; the bridge port's filter sends frames of
// PCP ≥ priorityMinPCP to the unshaped class.
const (
	priorityPCP    = 6
	priorityMinPCP = 5
)

// pcpFilter is a classic BPF program for `tc filter … bpf bytecode`
// (this kernel has neither flower nor the meta ematch): it matches a
// frame whose 802.1Q tag has PCP ≥ min, whether the tag is in the
// skb's metadata (a veth's receive path moves it there; SKF_AD_VLAN_TAG
// and SKF_AD_VLAN_TAG_PRESENT) or still in the frame (TPID 0x8100 at
// byte 12). A match returns -1: the filter's classid.
func pcpFilter(min int) string {
	const adOff = 0xFFFFF000 // SKF_AD_OFF
	prog := [][4]uint32{
		{0x20, 0, 0, adOff + 48},  // ld vlan_avail
		{0x15, 3, 0, 0},           // jeq #0 → 5
		{0x20, 0, 0, adOff + 44},  // ld vlan_tci
		{0x74, 0, 0, 13},          // rsh #13: the PCP
		{0x05, 0, 0, 4},           // ja → 9
		{0x28, 0, 0, 12},          // ldh [12]
		{0x15, 0, 4, 0x8100},      // jne #0x8100 → 11
		{0x30, 0, 0, 14},          // ldb [14]
		{0x74, 0, 0, 5},           // rsh #5: the PCP
		{0x35, 0, 1, uint32(min)}, // jge #min → 10, else 11
		{0x06, 0, 0, 0xFFFFFFFF},  // ret -1: match
		{0x06, 0, 0, 0},           // ret 0: no match
	}
	parts := []string{strconv.Itoa(len(prog))}
	for _, in := range prog {
		parts = append(parts, fmt.Sprintf("%d %d %d %d", in[0], in[1], in[2], in[3]))
	}
	return strings.Join(parts, ",")
}

// htbClass is one class's counters from `tc -s class show`.
type htbClass struct{ pkts, drops uint64 }

// htbClasses reads the packets sent and dropped of every htb class of
// dev in ns.
func htbClasses(t *testing.T, ns, dev string) map[string]htbClass {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "tc", "-s", "class", "show", "dev", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("tc -s class show: %v: %s", err, out)
	}
	res := map[string]htbClass{}
	re := regexp.MustCompile(`class htb (\S+) [^\n]*\n\s*Sent \d+ bytes (\d+) pkt \(dropped (\d+)`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		p, _ := strconv.ParseUint(m[2], 10, 64)
		d, _ := strconv.ParseUint(m[3], 10, 64)
		res[m[1]] = htbClass{p, d}
	}
	return res
}

// tbfDrops reads the drops of the tbf qdisc 20: of dev in ns.
func tbfDrops(t *testing.T, ns, dev string) uint64 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("tc -s qdisc show: %v: %s", err, out)
	}
	m := regexp.MustCompile(`qdisc tbf 20: [^\n]*\n\s*Sent \d+ bytes \d+ pkt \(dropped (\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no tbf 20: on %s: %s", dev, out)
	}
	d, _ := strconv.ParseUint(m[1], 10, 64)
	return d
}

// ctlGroup is what the captures say of one group of a>b control frames
// of a run: frames entering the segment and leaving it, of those leaving
// how many carry an 802.1Q tag in the capture, their queueing delay
// (leaving − entering, ns), and the data frames they overtook or were
// overtaken by (in the segment's input order before the frame, after it
// at the output, or the other way round).
type ctlGroup struct {
	in, out, tagged uint64
	delaySum        float64
	delayMax        int64
	crossed         uint64
}

func (g *ctlGroup) lost() uint64 { return g.in - g.out }

func (g *ctlGroup) meanMs() float64 { return g.delaySum / float64(max(g.out, 1)) / 1e6 }

func (g *ctlGroup) String() string {
	return fmt.Sprintf("%d sent, %d arrived (%d tagged), %d lost; queueing delay mean %.2f ms, max %.2f ms; %d data frames crossed (%.1f per frame)",
		g.in, g.out, g.tagged, g.lost(), g.meanMs(), float64(g.delayMax)/1e6, g.crossed, float64(g.crossed)/float64(max(g.out, 1)))
}

// priorityRun is one run of TestControlPriorityLab.
type priorityRun struct {
	name                string
	data                ctlGroup // the replayed frames (delays; no crossing)
	end, hello, fragmnt ctlGroup // End markers, Hellos, fragments+parity+requests+replies
	classes             [2]htbClass
	tbfDrops            uint64
	lines, valid        int // ldafwd#2's a>b LDA lines of class all for intervals with traffic, and the valid ones
	lineLog             []string
}

// TestControlPriorityLab: control frames with --control-priority cross a
// congested queue that honours 802.1p ahead of the data; End markers stay
// in the data's queue, in order with it.
//
//	gen ns ─veth─ [a ldafwd#1 b] ─veth─ wire ns: br0 (htb toward #2) ─veth─ [a ldafwd#2 b] ─veth─ sink ns
//
// The bridge's port toward ldafwd#2 has an htb root with two classes of
// 10 Gbit/s: 1:20, the default, whose leaf is `tbf rate 20mbit burst 32kb
// latency 50ms` (TestCongestionLab's), and 1:10, unshaped, which a
// classic-BPF tc filter (pcpFilter) fills with frames whose 802.1Q PCP is
// ≥ 5. The same 40 Mbit/s replay (3 s, ≈60 000 frames of 150..350
// bytes) runs twice through new appliances: without --control-priority
// and with --control-priority 6. Truth is dumpcap on the bridge's two
// ports (control frames matched by session and sequence number, data
// frames by content) and the htb classes' counters.
//
// Asserted: the harness congested (≥ 5 % of the data lost, tbf drops: a loaded host forwards
// less of the replay into the segment; 15–38 % measured);
// without the priority, synopsis frames were lost in the tbf and nothing
// went through 1:10; with it, fewer synopsis frames were lost than
// without, 1:10 carried exactly the synopsis frames that arrived and
// dropped none, their queueing delay is below the End markers' and below
// their own without the priority; End markers and Hellos are untagged in
// both runs, and End markers stay in order with the data (at most a
// capture's jitter of data frames on the other side of one at the output
// than at the input, where the prioritised fragments pass hundreds).
//
//	sudo go test -tags dpdk -pgo=off -count=1 -run TestControlPriorityLab -v ./e2e/
func TestControlPriorityLab(t *testing.T) {
	l, bin := startBridgeLab(t, "priority lab", "ldp", "rate", "20mbit", "burst", "32kb", "latency", "50ms")
	dev := l.S2 + "p"
	tc := func(args ...string) { l.sh(append([]string{"ip", "netns", "exec", l.nsW, "tc"}, args...)...) }
	// A kernel without htb or cls_bpf cannot build the segment: skip,
	// saying which.
	tcOr := func(what string, args ...string) {
		if out, err := exec.Command("ip", append([]string{"netns", "exec", l.nsW, "tc"}, args...)...).CombinedOutput(); err != nil {
			t.Skipf("this kernel cannot build the priority queue (%s): tc %s: %v: %s", what, strings.Join(args, " "), err, out)
		}
	}
	tc("qdisc", "del", "dev", dev, "root")
	tcOr("sch_htb", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "20")
	tc("class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit", "quantum", "1514")
	tc("class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "10gbit", "quantum", "1514")
	tc("qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "tbf", "rate", "20mbit", "burst", "32kb", "latency", "50ms")
	tcOr("cls_bpf", "filter", "add", "dev", dev, "parent", "1:", "protocol", "all", "prio", "1", "bpf", "bytecode", pcpFilter(priorityMinPCP), "classid", "1:10")

	const mbps, seconds, size = 40, 3, 250
	n := int(mbps * 1e6 / 8 * seconds / size)
	frames := mixedFrames(n, size-100, size+100, 0)
	pcap := filepath.Join(l.dir, "replay.pcap")
	if err := writePcap(pcap, frames); err != nil {
		t.Fatal(err)
	}
	idx := make(map[string]int, len(frames))
	for i, f := range frames {
		idx[string(f)] = i
	}

	var runs []*priorityRun
	for _, prio := range []string{"none", strconv.Itoa(priorityPCP)} {
		r := &priorityRun{name: "--control-priority " + prio}
		runs = append(runs, r)
		before, drops0 := htbClasses(t, l.nsW, dev), tbfDrops(t, l.nsW, dev)
		cIn := l.captureAs(l.nsW, l.S1+"p", "in-"+prio)
		cOut := l.captureAs(l.nsW, dev, "out-"+prio)
		common := []string{"--key-file", l.keyFile, "--format", "json", "--idle-sleep", "50us", "--log-level", "info",
			"--min-delay", "-50ms", "--control-priority", prio}
		p1, p2 := l.startAppliances(bin, common, nil)
		// Half-way into an interval (1 s), as TestCongestionLab.
		time.Sleep(time.Duration(1e9 - time.Now().UnixNano()%1e9 + 5e8))
		out := l.replay(pcap, "--mbps="+strconv.Itoa(mbps))
		last := time.Now().UnixNano() / 1e9
		waitLine(p2, last+1, 10*time.Second)
		for _, p := range []*proc{p1, p2} {
			if _, killed := p.terminate(20 * time.Second); killed {
				t.Errorf("%s: no exit within 20 s of SIGTERM", p.name)
			}
			if s := p.stderr(); strings.Contains(s, "panic:") {
				t.Fatalf("%s panicked:\n%s", p.name, s)
			}
		}
		l.stopCaptures()
		after := htbClasses(t, l.nsW, dev)
		for i, c := range []string{"1:10", "1:20"} {
			r.classes[i] = htbClass{after[c].pkts - before[c].pkts, after[c].drops - before[c].drops}
		}
		r.tbfDrops = tbfDrops(t, l.nsW, dev) - drops0
		recs := readCaptures(t, cIn, cOut)
		r.measure(t, recs[0], recs[1], idx)
		// ldafwd#2's lines for the intervals with traffic.
		ivs, _ := p2.records(t)
		for _, iv := range ivs {
			if iv.Direction == "a>b" && iv.MEC == "all" && iv.Synopsis == "lda" && iv.Sent > 0 {
				r.lines++
				if iv.Valid {
					r.valid++
				}
				reason := iv.Reason
				if len(reason) > 100 {
					reason = reason[:100] + "…"
				}
				r.lineLog = append(r.lineLog, fmt.Sprintf("interval %d: sent %d lost %d valid %v %s", iv.Interval, iv.Sent, iv.Lost, iv.Valid, reason))
			}
		}
		t.Logf("%s: tcpreplay: %s", r.name, out)
		t.Logf("%s: data: %s", r.name, r.data.String())
		t.Logf("%s: End markers: %s", r.name, r.end.String())
		t.Logf("%s: Hellos: %s", r.name, r.hello.String())
		t.Logf("%s: fragments, parity, requests, replies: %s", r.name, r.fragmnt.String())
		t.Logf("%s: htb 1:10 (PCP ≥ %d) %d pkts %d dropped; 1:20 (tbf) %d pkts %d dropped, tbf dropped %d", r.name, priorityMinPCP,
			r.classes[0].pkts, r.classes[0].drops, r.classes[1].pkts, r.classes[1].drops, r.tbfDrops)
		t.Logf("%s: ldafwd#2's a>b LDA lines with traffic: %d, %d valid:\n%s", r.name, r.lines, r.valid, strings.Join(r.lineLog, "\n"))
		if t.Failed() {
			t.Logf("#1 stderr:\n%s\n#2 stderr:\n%s", p1.stderr(), p2.stderr())
			return
		}
	}

	plain, prio := runs[0], runs[1]
	for _, r := range runs {
		if r.data.in == 0 || float64(r.data.lost()) < 0.05*float64(r.data.in) || r.tbfDrops == 0 {
			t.Errorf("%s: the harness did not congest: %d of %d data frames lost, tbf dropped %d", r.name, r.data.lost(), r.data.in, r.tbfDrops)
		}
		if r.end.tagged != 0 || r.hello.tagged != 0 {
			t.Errorf("%s: %d End markers and %d Hellos arrived tagged", r.name, r.end.tagged, r.hello.tagged)
		}
		if r.end.out == 0 || float64(r.end.crossed) > 2*float64(r.end.out) {
			t.Errorf("%s: %d End markers arrived, %d data frames on the other side of one at the output than at the input: End markers must stay in order with the data",
				r.name, r.end.out, r.end.crossed)
		}
	}
	if plain.fragmnt.lost() == 0 {
		t.Errorf("without the priority no synopsis frame was lost: the harness did not congest them")
	}
	if plain.classes[0].pkts != 0 || plain.fragmnt.tagged != 0 {
		t.Errorf("without the priority: %d frames went through 1:10, %d synopsis frames arrived tagged", plain.classes[0].pkts, plain.fragmnt.tagged)
	}
	if prio.fragmnt.lost() >= plain.fragmnt.lost() {
		t.Errorf("synopsis frames lost: %d with the priority, %d without: want fewer", prio.fragmnt.lost(), plain.fragmnt.lost())
	}
	if prio.classes[0].pkts != prio.fragmnt.out || prio.classes[0].drops != 0 {
		t.Errorf("with the priority: 1:10 sent %d frames and dropped %d, %d synopsis frames arrived: want all of them there, none dropped",
			prio.classes[0].pkts, prio.classes[0].drops, prio.fragmnt.out)
	}
	if prio.fragmnt.meanMs() >= prio.end.meanMs() || prio.fragmnt.meanMs() >= plain.fragmnt.meanMs() {
		t.Errorf("synopsis frames' mean queueing delay %.2f ms with the priority: want below the End markers' %.2f ms and their own %.2f ms without",
			prio.fragmnt.meanMs(), prio.end.meanMs(), plain.fragmnt.meanMs())
	}
}

// measure fills r from the captures of the segment's input (in) and its
// output toward ldafwd#2 (out); idx is the replay's frames by content.
// Delays are of frames that entered while the replay ran (from its first
// frame to 100 ms after its last), when the queue is full.
func (r *priorityRun) measure(t *testing.T, in, out []pcapRecord, idx map[string]int) {
	t.Helper()
	type ctlKey struct{ session, seq uint64 }
	type pos struct {
		place int // in the capture's sequence of data frames
		ns    int64
	}
	var cf control.Frame
	group := func(typ control.Type) *ctlGroup {
		switch typ {
		case control.TypeEnd:
			return &r.end
		case control.TypeHello:
			return &r.hello
		}
		return &r.fragmnt
	}
	// Input side.
	dataIn := map[int]pos{}
	ctlIn := map[ctlKey]pos{}
	ctlTyp := map[ctlKey]control.Type{}
	var first, last int64
	nd := 0
	for _, rec := range in {
		if control.IsControlFrame(rec.data) {
			if control.ParseFrame(rec.data, &cf) == nil && cf.Direction == appliance.DirAtoB {
				k := ctlKey{cf.Session, cf.Seq}
				ctlIn[k], ctlTyp[k] = pos{nd, rec.ns}, cf.Type
				group(cf.Type).in++
			}
			continue
		}
		if i, ok := idx[string(rec.data)]; ok {
			dataIn[i] = pos{nd, rec.ns}
			nd++
			if first == 0 {
				first = rec.ns
			}
			last = rec.ns
		}
	}
	r.data.in = uint64(len(dataIn))
	busy := func(ns int64) bool { return ns >= first && ns <= last+100e6 }
	// Output side.
	dataOut := map[int]pos{}
	type arrived struct {
		k      ctlKey
		in     pos
		outPos int
	}
	var ctls []arrived
	nd = 0
	for _, rec := range out {
		if control.IsControlFrame(rec.data) {
			if control.ParseFrame(rec.data, &cf) != nil || cf.Direction != appliance.DirAtoB {
				continue
			}
			k := ctlKey{cf.Session, cf.Seq}
			p, ok := ctlIn[k]
			if !ok {
				t.Errorf("%s: control frame %v seq %d left the segment without entering it", r.name, cf.Type, cf.Seq)
				continue
			}
			g := group(cf.Type)
			g.out++
			if binary.BigEndian.Uint16(rec.data[12:]) == 0x8100 {
				g.tagged++
			}
			if busy(p.ns) {
				d := rec.ns - p.ns
				g.delaySum += float64(d)
				g.delayMax = max(g.delayMax, d)
			}
			ctls = append(ctls, arrived{k, p, nd})
			continue
		}
		i, ok := idx[string(rec.data)]
		if !ok {
			continue
		}
		p, seen := dataIn[i]
		if !seen {
			t.Errorf("%s: replayed frame %d left the segment without entering it", r.name, i)
			continue
		}
		dataOut[i] = pos{nd, rec.ns}
		nd++
		r.data.out++
		if busy(p.ns) {
			d := rec.ns - p.ns
			r.data.delaySum += float64(d)
			r.data.delayMax = max(r.data.delayMax, d)
		}
	}
	// Data frames on the other side of a control frame at the output
	// than at the input: before it in, after it out, or the reverse.
	for _, c := range ctls {
		g := group(ctlTyp[c.k])
		for i, o := range dataOut {
			if (dataIn[i].place < c.in.place) != (o.place < c.outPos) {
				g.crossed++
			}
		}
	}
}
