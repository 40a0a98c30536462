//go:build dpdk

package dpdk

import (
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/pcapfile"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestInstrLoops is the harness for instruction counts per forwarded frame
// (docs/dpdk.md, "Where the time goes"): with LDAF_INSTR_POLLS=N it runs N
// polls of the ports-alone loop (instrPortLoop) and N polls of two
// forwarding lanes (instrLaneLoop), N polls of ForwardTo both ways
// (instrFwdLoop), N polls of two LDA sender lanes on the Go path
// (instrLDALoop) and N on the ports' measuring fast path in C
// (instrCLDALoop) between two net_null,copy=1 vdevs on a
// registered lcore, and logs the frames each forwarded. Run it under
//
//	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind \
//	  --collect-atstart=no --toggle-collect='*instrPortLoop*' \
//	  --toggle-collect='*instrLaneLoop*' --toggle-collect='*instrFwdLoop*' --toggle-collect='*instrLDALoop*' \
//	  --toggle-collect='*instrCLDALoop*' ./dpdk.test -test.run InstrLoops -test.v
//
// and divide each function's inclusive Ir by its frames. Without the
// variable it runs a few polls as a plain test of the five loops.
func TestInstrLoops(t *testing.T) {
	needEAL(t)
	polls := 64
	if s := os.Getenv("LDAF_INSTR_POLLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LDAF_INSTR_POLLS=%q", s)
		}
		polls = n
	}
	x, y := instrPorts(t, "dpdk:net_null30,copy=1", "dpdk:net_null31,copy=1")
	pkts := newPackets(dataplane.DefaultLaneBurst)
	instrPortLoop(x, y, pkts, 256) // warm the mempool caches
	fp := instrPortLoop(x, y, pkts, polls)
	ab, err := dataplane.NewLane(dataplane.LaneConfig{Rx: x, Tx: y})
	if err != nil {
		t.Fatal(err)
	}
	ba, err := dataplane.NewLane(dataplane.LaneConfig{Rx: y, Tx: x})
	if err != nil {
		t.Fatal(err)
	}
	lanes := []*dataplane.Lane{ab, ba}
	instrLaneLoop(lanes, 256)
	f0 := ab.Stats.TxFrames.Load() + ba.Stats.TxFrames.Load()
	instrLaneLoop(lanes, polls)
	fl := ab.Stats.TxFrames.Load() + ba.Stats.TxFrames.Load() - f0
	ab.Drain()
	ba.Drain()
	kept := newPackets(dataplane.DefaultLaneBurst)
	instrFwdLoop(x, y, kept, 256)
	ff := instrFwdLoop(x, y, kept, polls)
	t.Logf("instrFwdLoop frames %d", ff)
	fd := instrLDA(t, x, y, polls, false)
	t.Logf("instrLDALoop frames %d", fd)
	fc := instrLDA(t, x, y, polls, true)
	t.Logf("instrCLDALoop frames %d", fc)
	senderFastPathAllocs(t, x, y)
	t.Logf("instrPortLoop frames %d", fp)
	t.Logf("instrLaneLoop frames %d", fl)
	if want := uint64(polls) * 2 * uint64(len(pkts)); fp != want {
		t.Errorf("ports alone forwarded %d frames in %d polls, want %d (net_null always has a full burst)", fp, polls, want)
	}
	if ff != uint64(polls)*2*uint64(len(kept)) {
		t.Errorf("ForwardTo forwarded %d frames in %d polls, want %d", ff, polls, uint64(polls)*2*uint64(len(kept)))
	}
	if fl == 0 {
		t.Error("the lanes forwarded nothing")
	}
	// Each lane's poll makes fastPolls full polls in its one C call.
	if want := uint64(polls) * 2 * dataplane.DefaultLaneBurst * fastPolls; fc != want {
		t.Errorf("the C LDA lanes forwarded %d frames in %d polls, want %d", fc, polls, want)
	}
}

// instrPortLoop is the ports alone: RxBurst on one, TxBurst of the same
// frames on the other, both directions, polls times.
//
//go:noinline
func instrPortLoop(x, y *Port, pkts []*dataplane.Packet, polls int) (frames uint64) {
	for i := 0; i < polls; i++ {
		for _, d := range [2][2]*Port{{x, y}, {y, x}} {
			n := d[0].RxBurst(pkts)
			m := d[1].TxBurst(pkts[:n])
			if m < n {
				d[0].Free(pkts[m:n])
			}
			frames += uint64(m)
		}
	}
	return frames
}

// instrFwdLoop is the ports' Forwarder path, both directions, polls
// times; refused frames (net_null refuses none) would be sent first.
//
//go:noinline
func instrFwdLoop(x, y *Port, kept []*dataplane.Packet, polls int) (frames uint64) {
	for i := 0; i < polls; i++ {
		for _, d := range [2][2]*Port{{x, y}, {y, x}} {
			rx, _, k, ok := d[0].ForwardTo(d[1], kept)
			if !ok { // a burst received ahead by a TxBurst waits
				n := d[0].RxBurst(kept)
				m := d[1].TxBurst(kept[:n])
				d[0].Free(kept[m:n])
				frames += uint64(m)
				continue
			}
			if k > 0 {
				m := d[1].TxBurst(kept[:k])
				d[0].Free(kept[m:k])
				rx -= k - m
			}
			frames += uint64(rx)
		}
	}
	return frames
}

// instrLDA runs two sender lanes recording the default LDA (as ldafwd
// bench's forward-dpdk-null-lda) for polls polls and returns the frames
// they transmitted: on the Go path (instrLDALoop) or, with fast, through
// the ports' measuring fast path in C (instrCLDALoop).
func instrLDA(t *testing.T, x, y *Port, polls int, fast bool) uint64 {
	t.Helper()
	lanes := ldaLanes(t, x, y, fast)
	loop := instrLDALoop
	if fast {
		loop = instrCLDALoop
	}
	loop(lanes, 256)
	f0 := lanes[0].Stats.TxFrames.Load() + lanes[1].Stats.TxFrames.Load()
	loop(lanes, polls)
	f := lanes[0].Stats.TxFrames.Load() + lanes[1].Stats.TxFrames.Load() - f0
	for _, l := range lanes {
		l.Drain()
		if l.FastPath() != fast {
			t.Errorf("lane fast path %v, want %v", l.FastPath(), fast)
		}
	}
	if fast && lanes[0].Stats.FastBursts.Load() == 0 {
		t.Error("the C LDA lanes took no burst through the fast path")
	}
	if f == 0 {
		t.Error("the LDA lanes forwarded nothing")
	}
	return f
}

// ldaLanes are two sender lanes x→y and y→x recording the default LDA,
// on the fast path or (fast false) the Go path.
func ldaLanes(t *testing.T, x, y *Port, fast bool) []*dataplane.Lane {
	return synLanes(t, x, y, fast, dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: 1})
}

// synLanes is ldaLanes recording syn.
func synLanes(t *testing.T, x, y *Port, fast bool, syn dataplane.SynConfig) []*dataplane.Lane {
	t.Helper()
	var lanes []*dataplane.Lane
	for _, d := range [2][2]*Port{{x, y}, {y, x}} {
		cl, err := classifier.NewClassifier(nil)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := dataplane.NewSynBuffer(syn)
		if err != nil {
			t.Fatal(err)
		}
		var epoch atomic.Uint64
		epoch.Store(1)
		l, err := dataplane.NewLane(dataplane.LaneConfig{Rx: d[0], Tx: d[1], Role: dataplane.RoleSender,
			Classifier: cl, Buffer: buf, Epoch: &epoch, NoFastPath: !fast})
		if err != nil {
			t.Fatal(err)
		}
		lanes = append(lanes, l)
	}
	return lanes
}

// instrLDALoop is instrLaneLoop under another name, so that callgrind can
// count the sender lanes (on the Go path) on their own.
//
//go:noinline
func instrLDALoop(lanes []*dataplane.Lane, polls int) {
	for i := 0; i < polls; i++ {
		for _, l := range lanes {
			l.Poll()
		}
	}
}

// instrCLDALoop is instrLaneLoop for the sender lanes on the ports'
// measuring fast path (ldaf_measure).
//
//go:noinline
func instrCLDALoop(lanes []*dataplane.Lane, polls int) {
	for i := 0; i < polls; i++ {
		for _, l := range lanes {
			l.Poll()
		}
	}
}

// instrLaneLoop polls the lanes polls times, as a dataplane.Worker does.
//
//go:noinline
func instrLaneLoop(lanes []*dataplane.Lane, polls int) {
	for i := 0; i < polls; i++ {
		for _, l := range lanes {
			l.Poll()
		}
	}
}

// senderFastPathAllocs: a sender lane's poll through the measuring fast
// path allocates nothing (net_null always has a full burst), recording
// the LDA alone or with the RDA, the LDS and the trajectory sample (as
// `ldafwd run` by default).
// Part of TestInstrLoops to use its ports: closed ports' pools last until
// Cleanup, and the package's tests share EAL's memory.
func senderFastPathAllocs(t *testing.T, x, y *Port) {
	t.Helper()
	for _, syn := range []dataplane.SynConfig{{LDA: synopsis.DefaultLDAConfig(), Classes: 1}, runSynConfig()} {
		fastPathAllocs(t, synLanes(t, x, y, true, syn))
	}
}

func fastPathAllocs(t *testing.T, lanes []*dataplane.Lane) {
	t.Helper()
	for _, l := range lanes {
		if !l.FastPath() {
			t.Fatal("the sender lane does not use the fast path")
		}
	}
	// Not instrCLDALoop: callgrind counts that one's polls.
	poll := func() {
		for _, l := range lanes {
			l.Poll()
		}
	}
	for i := 0; i < 16; i++ {
		poll()
	}
	if a := testing.AllocsPerRun(100, poll); a != 0 {
		t.Errorf("%v allocations per poll on the measuring fast path", a)
	}
	if lanes[0].Stats.FastBursts.Load() == 0 || lanes[0].Stats.Recorded.Load() == 0 {
		t.Error("nothing went through the fast path")
	}
	for _, l := range lanes {
		l.Drain()
	}
}

// instrIdentFrames are the frames TestInstrIdent counts ldaf_ident's
// instructions on, by name: the common frame of each of its paths and a
// frame of each tunnel it reads through.
func instrIdentFrames(tb testing.TB) map[string][]byte {
	names, frames, _ := goldenIdentities(tb)
	byName := map[string][]byte{}
	for i, n := range names {
		byName[n] = frames[i]
	}
	pick := func(n string) []byte {
		f, ok := byName[n]
		if !ok {
			tb.Fatalf("no golden frame %q", n)
		}
		return f
	}
	ipv4 := make([]byte, 14+20+64) // untagged IPv4 UDP, whole window: the straight-line path
	ipv4[12], ipv4[14], ipv4[16+1], ipv4[14+9] = 0x08, 0x45, 84, 17
	vlan := append(append(append([]byte(nil), ipv4[:12]...), 0x81, 0, 0, 5), ipv4[12:]...) // one 802.1Q tag
	return map[string][]byte{
		"ipv4-udp":   ipv4,
		"ipv4-short": pick("ipv4 udp"), // 60 bytes: a window of 26 bytes
		"vlan-ipv4":  vlan,
		"qinq-ipv4":  pick("ipv4 udp behind three vlan tags"), // ldaf_ident_general
		"ipv6-tcp":   pick("ipv6 tcp"),
		"null":       make([]byte, 64), // net_null's frame: the raw path
		"gre":        pick("gre (key) over ipv4 carrying ipv4 udp"),
		"vxlan":      pick("vxlan over ipv4 carrying ipv4 udp"),
		"geneve":     pick("geneve (one option) over ipv6 carrying ipv4 udp"),
		"mpls":       pick("mpls (two labels) carrying ipv6 tcp"),
	}
}

// TestInstrIdent is the harness for ldaf_ident's instructions per frame
// against the Go parser's on the same frame: with LDAF_INSTR_IDENT=N it
// hashes the frame LDAF_INSTR_FRAME names (instrIdentFrames) N times
// through the C path (cIdent, whose C side is ldaf_ident_go) and N times
// through classifier.ParseLevel at LevelIdentity (instrIdentGo). Run it
// under
//
//	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --collect-atstart=no --toggle-collect='ldaf_ident_go' \
//	  --toggle-collect='*instrIdentGo*' ./dpdk.test -test.run InstrIdent
//
// and divide each function's inclusive Ir by N. Without the variable it
// checks that C takes every frame of the harness, with Go's hash.
func TestInstrIdent(t *testing.T) {
	frames := instrIdentFrames(t)
	n := 0
	if s := os.Getenv("LDAF_INSTR_IDENT"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("LDAF_INSTR_IDENT=%q", s)
		}
	}
	for name, f := range frames {
		if n > 0 && name != os.Getenv("LDAF_INSTR_FRAME") {
			continue
		}
		if n == 0 {
			var m classifier.Meta
			classifier.ParseLevel(f, &m, classifier.LevelIdentity)
			if h, ok := cIdent(f); !ok || h != m.Hash {
				t.Errorf("%s: C takes it %v, hash %#x, Go %#x", name, ok, h, m.Hash)
			}
			continue
		}
		for i := 0; i < n; i++ {
			cIdent(f)
		}
		t.Logf("%s: %d frames (%#x)", name, n, instrIdentGo(f, n))
	}
}

// instrIdentGo is classifier.ParseLevel at LevelIdentity on frame n times.
//
//go:noinline
func instrIdentGo(frame []byte, n int) (x uint64) {
	var m classifier.Meta
	for i := 0; i < n; i++ {
		classifier.ParseLevel(frame, &m, classifier.LevelIdentity)
		x ^= m.Hash
	}
	return x
}

// TestInstrIdentMix is the harness for ldaf_ident's instructions (and,
// with --branch-sim=yes, mispredicted branches) per frame on a capture's
// mix of frames, in the order the capture has them: with
// LDAF_INSTR_PCAP=<capture> and LDAF_INSTR_PASSES=N it runs the C
// identity loop (ldaf_ident_many) N times over every frame. Run it for two
// pass counts under
//
//	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --branch-sim=yes \
//	  --collect-atstart=no --toggle-collect=ldaf_ident_many ./dpdk.test -test.run InstrIdentMix -test.v
//
// and divide the difference of the totals by the difference of the passes
// times the frames it logs. Without the variables it checks the loop
// against the Go parser on the seeds.
func TestInstrIdentMix(t *testing.T) {
	path := os.Getenv("LDAF_INSTR_PCAP")
	if path == "" {
		var frames [][]byte
		var want, took uint64
		for _, f := range identSeeds() {
			if len(f) > 2048 {
				continue
			}
			frames = append(frames, f)
			if h, ok := cIdent(f); ok {
				want ^= h
				took++
			}
		}
		x, n := cIdentMany(frames, 1)
		if x != want || n != took {
			t.Fatalf("ldaf_ident_many: %#x over %d frames, ldaf_ident one by one %#x over %d", x, n, want, took)
		}
		return
	}
	passes, err := strconv.Atoi(os.Getenv("LDAF_INSTR_PASSES"))
	if err != nil || passes < 1 {
		t.Fatalf("LDAF_INSTR_PASSES=%q", os.Getenv("LDAF_INSTR_PASSES"))
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	frames, err := pcapfile.ReadFrames(fh)
	if err != nil {
		t.Fatal(err)
	}
	x, took := cIdentMany(frames, passes)
	t.Logf("%d frames, %d passes: %d taken (%#x)", len(frames), passes, took, x)
}

// TestInstrSynCapture counts the measuring fast path with the synopses
// `ldafwd run` records by default (LDA, RDA with its timestamp cache,
// LDS beside a flow table, trajectory sample) on a capture's mix: a
// sender lane from a net_pcap port replaying LDAF_INSTR_SYN_PCAP
// (infinite_rx) to a net_null sink, LDAF_INSTR_POLLS polls (each up to
// 8 bursts in one C call) after 256 to warm up. Run it under
//
//	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind \
//	  --collect-atstart=no --toggle-collect='*instrSynLoop*' ./dpdk.test -test.run InstrSynCapture -test.v
//
// and divide the totals (per function: ldaf_measure, ldaf_syn_add, the
// PMDs) by the frames it logs. Without the variable it is skipped.
func TestInstrSynCapture(t *testing.T) {
	path := os.Getenv("LDAF_INSTR_SYN_PCAP")
	if path == "" {
		t.Skip("LDAF_INSTR_SYN_PCAP names no capture")
	}
	polls, err := strconv.Atoi(os.Getenv("LDAF_INSTR_POLLS"))
	if err != nil || polls < 1 {
		t.Fatalf("LDAF_INSTR_POLLS=%q", os.Getenv("LDAF_INSTR_POLLS"))
	}
	needEAL(t)
	x, y := instrPorts(t, "dpdk:net_pcap32,rx_pcap="+path+",infinite_rx=1", "dpdk:net_null33,no-rx=1")
	lane := synLanes(t, x, y, true, runSynConfig())[0]
	instrSynLoop(lane, 256)
	f0, b0 := lane.Stats.TxFrames.Load(), lane.Stats.FastBursts.Load()
	instrSynLoop(lane, polls)
	frames, bursts := lane.Stats.TxFrames.Load()-f0, lane.Stats.FastBursts.Load()-b0
	t.Logf("instrSynLoop frames %d in %d fast-path calls", frames, bursts)
	if frames == 0 || bursts == 0 {
		t.Errorf("%d frames, %d of them through the fast path: the capture's frames were not measured in C", frames, bursts)
	}
	lane.Drain()
}

// instrSynLoop polls one lane polls times.
//
//go:noinline
func instrSynLoop(l *dataplane.Lane, polls int) {
	for i := 0; i < polls; i++ {
		l.Poll()
	}
}

// instrPorts opens ports a and b (indexes 0 and 1, no software stamps)
// and registers the test's thread with the EAL, all undone when the test
// ends.
func instrPorts(t *testing.T, a, b string) (x, y *Port) {
	t.Helper()
	x, err := Open(a, Config{Index: 0, NoSoftTimestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	y, err = Open(b, Config{Index: 1, NoSoftTimestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { y.Close() })
	if _, err := RegisterThread(-1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(UnregisterThread)
	return x, y
}

// runSynConfig is what `ldafwd run` records by default, one class: the
// LDA, the RDA with its timestamp cache, the LDS beside a flow table
// (65 536 flows, grown as they come), the trajectory sample.
func runSynConfig() dataplane.SynConfig {
	rda := synopsis.DefaultRDAConfig()
	lds := synopsis.LDSConfig{Cols: 8192, MaxFlows: 1 << 16, FlowsGrow: true}
	smp := synopsis.DefaultSampleConfig()
	return dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds, Sample: &smp, Classes: 1}
}
