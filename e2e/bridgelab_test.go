package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// bridgeLab is the segment of commodity parts TestLabBridge and
// TestCongestionLab measure:
//
//	gen ns ─veth─ [a ldafwd#1 b] ─veth─ wire ns: br0 (STP on, a tbf toward #2) ─veth─ [a ldafwd#2 b] ─veth─ sink ns
//
// The host ends of the veth pairs (G, S1, S2, K) are in the root
// namespace, where the appliances open them as afxdp: ports; their peers
// (name + "p") are in the gen, wire and sink namespaces. The bridge
// forwards frames to labDst toward ldafwd#2 (a static entry) and floods
// no unknown unicast there, so frames addressed elsewhere are lost inside
// the segment; its port toward ldafwd#2 is shaped by the tbf qdisc the
// test gives. Everything is named after prefix and the test process's
// pid, and deleted when the test ends, failed or not.
type bridgeLab struct {
	t             *testing.T
	dir           string // the test's temporary directory: pcaps, key
	nsG, nsW, nsK string
	G, S1, S2, K  string
	keyFile       string
	caps          []*capture
}

// capture is a dumpcap running on one interface of a namespace.
type capture struct {
	cmd  *exec.Cmd
	file string
	err  syncBuffer // written by exec's copier while the test reads it
}

// requireBridgeLab skips the test unless it can build a bridgeLab and
// replay into it.
func requireBridgeLab(t *testing.T) {
	t.Helper()
	for _, c := range []string{"tcpreplay", "dumpcap", "tc", "bridge"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("needs %s (make deps)", c)
		}
	}
}

// readCaptures reads the captures' records, in order; a capture that
// does not read fails the test.
func readCaptures(t *testing.T, caps ...*capture) [][]pcapRecord {
	t.Helper()
	recs := make([][]pcapRecord, len(caps))
	for i, c := range caps {
		var err error
		if recs[i], err = readPcap(c.file); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// startBridgeLab is the start of a bridge-lab test: it skips where the
// lab cannot run (no root or namespaces, -short, a tool missing), builds
// ldafwd and the topology with tbf on the port toward ldafwd#2 (prefix,
// tbf: newBridgeLab). Under -short (the -race pass) the instrumented
// appliances are too slow for the microsecond stamps the labs check; the
// plain pass runs them. what names the lab in the skip message.
func startBridgeLab(t *testing.T, what, prefix string, tbf ...string) (l *bridgeLab, bin string) {
	t.Helper()
	nettest.Require(t)
	if testing.Short() {
		t.Skip("-short: the live " + what + " runs in the plain pass")
	}
	requireBridgeLab(t)
	bin = ldafwdBinary(t, false)
	return newBridgeLab(t, prefix, tbf...), bin
}

// newBridgeLab builds the topology with tbf (the arguments after `tc
// qdisc add dev X root tbf`) on the bridge's port toward ldafwd#2, and
// returns once both bridge ports forward. prefix (3 letters) keeps its
// names apart from other labs'.
func newBridgeLab(t *testing.T, prefix string, tbf ...string) *bridgeLab {
	t.Helper()
	p := fmt.Sprintf("%s%d", prefix, os.Getpid()%10000)
	l := &bridgeLab{t: t, dir: t.TempDir(), nsG: p + "-gen", nsW: p + "-wire", nsK: p + "-sink", G: p + "g", S1: p + "s1", S2: p + "s2", K: p + "k"}
	cleanup := func() {
		for _, ns := range []string{l.nsG, l.nsW, l.nsK} {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
		for _, i := range []string{l.G, l.S1, l.S2, l.K} {
			_ = exec.Command("ip", "link", "del", i).Run()
		}
	}
	cleanup()
	t.Cleanup(cleanup)
	for _, ns := range []string{l.nsG, l.nsW, l.nsK} {
		l.sh("ip", "netns", "add", ns)
		l.sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
		l.sh("ip", "-n", ns, "link", "set", "lo", "up")
	}
	pair := func(host, ns string) {
		l.sh("ip", "link", "add", host, "type", "veth", "peer", "name", host+"p")
		l.sh("ip", "link", "set", host+"p", "netns", ns)
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+host+"/disable_ipv6", []byte("1"), 0)
		l.sh("ip", "link", "set", host, "up")
		l.sh("ip", "-n", ns, "link", "set", host+"p", "up")
	}
	pair(l.G, l.nsG)
	pair(l.S1, l.nsW)
	pair(l.S2, l.nsW)
	pair(l.K, l.nsK)
	// STP on, a BPDU each second (hello_time in centiseconds), the
	// shortest forward delay the kernel takes (2 s: ports forward after
	// listening and learning, 4 s). No multicast snooping: a snooping
	// bridge sends IGMP queries of its own, traffic we do not measure and
	// do not need here.
	l.sh("ip", "-n", l.nsW, "link", "add", "br0", "type", "bridge", "stp_state", "1", "hello_time", "100", "forward_delay", "200", "mcast_snooping", "0")
	l.sh("ip", "-n", l.nsW, "link", "set", l.S1+"p", "master", "br0")
	l.sh("ip", "-n", l.nsW, "link", "set", l.S2+"p", "master", "br0")
	l.sh("ip", "-n", l.nsW, "link", "set", "br0", "up")
	// Loss the captures can tell exactly: the bridge forwards frames to
	// the generator's destination MAC toward ldafwd#2 (a static entry)
	// and floods no unknown unicast there, so frames a test addresses
	// elsewhere (labLost) are lost inside the segment.
	l.sh("ip", "netns", "exec", l.nsW, "bridge", "link", "set", "dev", l.S2+"p", "flood", "off")
	l.sh("ip", "netns", "exec", l.nsW, "bridge", "fdb", "add", net.HardwareAddr(labDst).String(), "dev", l.S2+"p", "master", "static")
	l.sh(append([]string{"ip", "netns", "exec", l.nsW, "tc", "qdisc", "add", "dev", l.S2 + "p", "root", "tbf"}, tbf...)...)

	// Wait for the bridge's ports to forward (STP state 3).
	deadline := time.Now().Add(20 * time.Second)
	for _, port := range []string{l.S1 + "p", l.S2 + "p"} {
		for {
			out, _ := exec.Command("ip", "netns", "exec", l.nsW, "cat", "/sys/class/net/br0/brif/"+port+"/state").Output()
			if strings.TrimSpace(string(out)) == "3" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("bridge port %s not forwarding after 20 s (state %q)", port, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	l.keyFile = filepath.Join(l.dir, "lab.key")
	key, err := control.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := control.WriteKeyFile(l.keyFile, key, false); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *bridgeLab) sh(args ...string) {
	l.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		l.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// capture starts dumpcap on ifname in namespace ns and returns once it
// captures.
func (l *bridgeLab) capture(ns, ifname string) *capture {
	l.t.Helper()
	return l.captureAs(ns, ifname, ifname)
}

// captureAs is capture into name.pcap: for a test that captures one
// interface more than once.
func (l *bridgeLab) captureAs(ns, ifname, name string) *capture {
	l.t.Helper()
	c := &capture{file: filepath.Join(l.dir, name+".pcap")}
	// -B 64: a 64 MiB kernel buffer, so a capture starved of CPU on a
	// busy machine does not drop frames and leave the truth short.
	c.cmd = exec.Command("ip", "netns", "exec", ns, "dumpcap", "-q", "-P", "-B", "64", "-i", ifname, "-w", c.file)
	c.cmd.Stderr = &c.err
	if err := c.cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() })
	l.caps = append(l.caps, c)
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(c.err.String(), "Capturing on"); {
		if time.Now().After(deadline) {
			l.t.Fatalf("dumpcap did not start: %s", c.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

// stopCaptures stops every capture and fails the test when one dropped
// frames: a capture that dropped frames is no truth to judge by.
func (l *bridgeLab) stopCaptures() {
	l.t.Helper()
	for _, c := range l.caps {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		_ = c.cmd.Wait()
		// "Packets received/dropped on interface 'x': 123/0 (…)".
		if m := regexp.MustCompile(`received/dropped on interface '[^']*': \d+/(\d+)`).FindStringSubmatch(c.err.String()); m == nil || m[1] != "0" {
			l.t.Fatalf("dumpcap %s: dropped frames or no statistics (%q): the captured truth is incomplete", c.file, c.err.String())
		}
	}
	l.caps = nil
}

// startAppliances starts ldafwd#2 (segment → sink) and then ldafwd#1
// (gen → segment), both with common and ldafwd#2 with extra2 too, and
// returns once ldafwd#2 has reported two a>b intervals: both are up and
// the session's partial first interval is behind.
func (l *bridgeLab) startAppliances(bin string, common, extra2 []string) (p1, p2 *proc) {
	l.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	p2 = startLdafwd(l.t, "ldafwd#2", bin, append(append([]string{"--port-a", "afxdp:" + l.S2, "--port-b", "afxdp:" + l.K, "--segment-port", "a"}, common...), extra2...)...)
	for !strings.Contains(p2.stderr(), "appliance started") {
		if p2.hasExited() || time.Now().After(deadline) {
			l.t.Fatalf("ldafwd#2 did not start:\n%s", p2.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	p1 = startLdafwd(l.t, "ldafwd#1", bin, append([]string{"--port-a", "afxdp:" + l.G, "--port-b", "afxdp:" + l.S1, "--segment-port", "b"}, common...)...)
	for n := 0; n < 2; {
		ivs, _ := p2.records(l.t)
		n = 0
		for _, r := range ivs {
			if r.Direction == "a>b" && r.MEC == "all" {
				n++
			}
		}
		if p1.hasExited() || p2.hasExited() || time.Now().After(deadline) {
			l.t.Fatalf("no a>b intervals from ldafwd#2\n#1:\n%s\n#2:\n%s", p1.stderr(), p2.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p1, p2
}

// replay sends pcap from the generator namespace with tcpreplay and the
// pacing args (--pps=N, --mbps=N) and returns its summary.
func (l *bridgeLab) replay(pcap string, args ...string) string {
	l.t.Helper()
	cmd := append(append([]string{"netns", "exec", l.nsG, "tcpreplay", "-q", "-i", l.G + "p"}, args...), pcap)
	out, err := exec.Command("ip", cmd...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("tcpreplay: %v: %s", err, out)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// capTruth is what the captures say of an interval, or of one flow in
// it: frames that entered the segment and their bytes, frames that left
// it toward ldafwd#2, Σ of their delays (ns).
type capTruth struct {
	sent, recv, bytes uint64
	sum               float64
	// Frames within nearEnd capture places of one of the interval's End
	// markers, and how many of them were lost: the capture may place
	// them on the other side of the marker than the wire did.
	near, nearLost uint64
	// Frames the input capture put on the other side of one of the
	// interval's End markers than their place in the replay: the ends of
	// the segment may disagree on their interval.
	crossed uint64
}

// nearEnd is how many capture places either side of an End marker count
// as near it (capTruth.near).
const nearEnd = 64

// segTruth is what the captures at the segment's two ends say of the
// replayed frames, matched by content (every replayed frame is
// distinct): per interval of ldafwd#1's End markers and per flow in it.
type segTruth struct {
	idx       map[string]int       // replayed frame → its place in the replay
	sentAt    []int64              // per replayed frame: capture time at the segment's input (ns; 0 unseen)
	recvAt    []int64              // at its output toward ldafwd#2 (0: lost)
	ivOf      []uint64             // per replayed frame: its interval (0: after the last End marker)
	iv        map[uint64]*capTruth // per interval
	flow      map[uint64]map[string]*capTruth
	sent      uint64 // replayed frames seen entering the segment
	recv      uint64 // of them, seen leaving it toward ldafwd#2
	sum       float64
	crossed   uint64 // frames the input capture put across an End marker from their replay place
	endMarker int    // a>b End markers (first copies) seen entering the segment
}

// newSegTruth computes the truth from the records of the captures of the
// segment's input (in) and output toward ldafwd#2 (out) of a replay of
// frames; user says which captured frames are the test's (not control
// frames, not the bridge's BPDUs). A replayed frame seen twice, or a
// frame that was not replayed, fails the test: an appliance changed or
// added it.
//
// Intervals: ldafwd#1 puts End(k) after the last frame of interval k in
// its transmit order, which is the replay's order (one generator, one
// queue, one worker), so End(k) cuts the replay at the place that best
// separates the frames the input capture saw before it from those after
// (ideally all of them). Frames the capture saw on the other side of the
// marker (the veth handed them to the bridge from another CPU) are
// counted as crossed: the wire after the bridge may have them there too.
func newSegTruth(t *testing.T, in, out []pcapRecord, frames [][]byte, user func([]byte) bool) *segTruth {
	t.Helper()
	s := &segTruth{idx: make(map[string]int, len(frames)), sentAt: make([]int64, len(frames)), recvAt: make([]int64, len(frames)),
		ivOf: make([]uint64, len(frames)), iv: map[uint64]*capTruth{}, flow: map[uint64]map[string]*capTruth{}}
	for i, f := range frames {
		s.idx[string(f)] = i
	}
	var order []int    // replay places of the frames in input capture order
	var cuts []int     // capture places (in order) of the End markers
	var cutIv []uint64 // the interval each ends
	var cf control.Frame
	var lastEnd uint64
	// mark stamps replayed frame i (known: it is one, and may be here)
	// with r's capture time, once.
	mark := func(at []int64, i int, known bool, r pcapRecord, unknown, twice string) bool {
		switch {
		case !known:
			t.Errorf(unknown, len(r.data))
		case at[i] != 0:
			t.Errorf(twice, i)
		default:
			at[i] = r.ns
			return true
		}
		return false
	}
	for _, r := range in {
		if control.IsControlFrame(r.data) {
			// End markers come at least twice: the first cuts. Those of
			// direction b>a (ldafwd#2's, passing the other way) do not.
			if control.ParseFrame(r.data, &cf) == nil && cf.Type == control.TypeEnd && cf.Direction == appliance.DirAtoB && cf.Interval > lastEnd {
				lastEnd = cf.Interval
				cuts, cutIv = append(cuts, len(order)), append(cutIv, cf.Interval)
			}
			continue
		}
		if !user(r.data) {
			continue
		}
		i, ok := s.idx[string(r.data)]
		if !mark(s.sentAt, i, ok, r, "the bridge received a frame that was not replayed (%d bytes): ldafwd#1 changed or added it", "the bridge received replayed frame %d twice") {
			continue
		}
		order = append(order, i)
		s.sent++
	}
	s.endMarker = len(cuts)
	for _, r := range out {
		if !user(r.data) {
			continue
		}
		i, ok := s.idx[string(r.data)]
		if !mark(s.recvAt, i, ok && s.sentAt[i] != 0, r, "the bridge sent toward ldafwd#2 a frame it never received (%d bytes)", "the bridge sent replayed frame %d toward ldafwd#2 twice") {
			continue
		}
		s.recv++
		s.sum += float64(r.ns - s.sentAt[i])
	}

	// Each End marker's cut in replay places: the place that leaves the
	// fewest frames of a window around the marker on the other side of it
	// than the capture had them.
	const window = 256
	replayCut := make([]int, len(cuts))
	crossed := make([][]int, len(cuts)) // replay places of the frames each cut's capture disagrees on
	for c, p := range cuts {
		lo, hi := max(p-window, 0), min(p+window, len(order))
		best, bestMis := 0, -1
		if c > 0 {
			best = replayCut[c-1]
		}
		cands := []int{best}
		for _, i := range order[lo:hi] {
			cands = append(cands, i, i+1)
		}
		for _, cand := range cands {
			if c > 0 && cand < replayCut[c-1] {
				continue
			}
			mis := 0
			for j := lo; j < hi; j++ {
				if (j < p) != (order[j] < cand) {
					mis++
				}
			}
			if bestMis < 0 || mis < bestMis || mis == bestMis && cand < best {
				best, bestMis = cand, mis
			}
		}
		if p == lo && p == hi { // no frame near: the previous cut stands
			bestMis = 0
		}
		replayCut[c] = best
		for j := lo; j < hi; j++ {
			if (j < p) != (order[j] < best) {
				crossed[c] = append(crossed[c], order[j])
			}
		}
		s.crossed += uint64(len(crossed[c]))
	}
	// Frames before End(k)'s cut and not before End(k−1)'s belong to k.
	c := 0
	for i := range frames {
		for c < len(cuts) && i >= replayCut[c] {
			c++
		}
		if c < len(cuts) {
			s.ivOf[i] = cutIv[c]
		}
	}
	flowIn := func(iv uint64, i int) *capTruth {
		fs := s.flow[iv]
		if fs == nil {
			fs = map[string]*capTruth{}
			s.flow[iv] = fs
		}
		name := fiveTuple(frames[i])
		f := fs[name]
		if f == nil {
			f = &capTruth{}
			fs[name] = f
		}
		return f
	}
	for i := range frames {
		if s.sentAt[i] == 0 {
			continue
		}
		iv := s.ivTruth(s.ivOf[i])
		f := flowIn(s.ivOf[i], i)
		for _, x := range []*capTruth{iv, f} {
			x.sent++
			x.bytes += uint64(len(frames[i]))
			if s.recvAt[i] != 0 {
				x.recv++
				x.sum += float64(s.recvAt[i] - s.sentAt[i])
			}
		}
	}
	for c, p := range cuts {
		// A frame near the cut between intervals E and E+1 widens the
		// tolerance of its flow in both.
		for j := max(p-nearEnd, 0); j < min(p+nearEnd, len(order)); j++ {
			i := order[j]
			for _, iv := range []uint64{cutIv[c], cutIv[c] + 1} {
				for _, x := range []*capTruth{flowIn(iv, i), s.ivTruth(iv)} {
					x.near++
					if s.recvAt[i] == 0 {
						x.nearLost++
					}
				}
			}
		}
		for range crossed[c] {
			s.ivTruth(cutIv[c]).crossed++
			s.ivTruth(cutIv[c]+1).crossed++
		}
	}
	return s
}

// ivTruth is interval k's truth (zero counts when the captures saw none
// of its frames), created on first use.
func (s *segTruth) ivTruth(k uint64) *capTruth {
	tr := s.iv[k]
	if tr == nil {
		tr = &capTruth{}
		s.iv[k] = tr
	}
	return tr
}

// flowTruth is the truth of flow (as a report line names it) in interval
// k; zero when the captures saw none of its frames there.
func (s *segTruth) flowTruth(k int64, flow string) capTruth {
	if f := s.flow[uint64(k)][flow]; f != nil {
		return *f
	}
	return capTruth{}
}

// mean is the mean delay of tr's received frames, ns (0 when none).
func (tr *capTruth) mean() float64 { return tr.sum / float64(max(tr.recv, 1)) }

// isUserFrame says whether a captured frame is a test's: neither one of
// ldafwd's control frames (priority-tagged or not) nor one of the
// bridge's BPDUs.
func isUserFrame(b []byte) bool {
	return len(b) >= 14 && !control.IsControlFrame(b) && !(b[0] == 0x01 && b[1] == 0x80 && b[2] == 0xc2)
}
