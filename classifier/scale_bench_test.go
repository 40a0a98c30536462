package classifier_test

import (
	"fmt"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"os"
	"runtime"
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"golang.org/x/sys/unix"
)

// scaleFlows is the number of distinct flows in the scaling benchmark's
// traffic (porttest's default IPv4/IPv6 × UDP/TCP mix).
const scaleFlows = 4096

// scaleTraffic parses one frame of each of scaleFlows flows from
// porttest's generator: IPv4/UDP, IPv4/TCP, IPv6/UDP and IPv6/TCP in turn,
// source ports 1024+flow, destination port 5001, addresses 10.1.x.y →
// 10.2.x.y and 2001:db8:1::x:y → 2001:db8:2::x:y. One flow in eight
// carries each of the DSCP marks below, and one in five an 802.1Q tag
// (VLAN 100-106), so that DSCP, VLAN, protocol, port and prefix rules all
// see both values they want and values they do not.
func scaleTraffic(tb testing.TB) ([][]byte, []classifier.Meta) {
	g := traffic.MustGen(traffic.GenConfig{Flows: scaleFlows, Size: 128})
	dscps := [8]byte{0, 0, 0, 46, 26, 18, 10, 48}
	ms := make([]classifier.Meta, scaleFlows)
	frames := make([][]byte, scaleFlows)
	for f := range ms {
		fr := g.Frame(make([]byte, 128), uint64(f))
		d := dscps[f%8]
		if fr[12] == 0x08 { // IPv4: TOS
			fr[15] = d << 2
		} else { // IPv6: traffic class
			fr[14] = fr[14]&0xf0 | d>>2
			fr[15] = fr[15]&0x0f | d<<6
		}
		if f%5 == 0 {
			tagged := make([]byte, 0, len(fr)+4)
			tagged = append(tagged, fr[:12]...)
			tagged = append(tagged, 0x81, 0x00, 0, byte(100+f%7))
			fr = append(tagged, fr[12:]...)
		}
		frames[f] = fr
		classifier.Parse(fr, &ms[f])
		if ms[f].Flags&(classifier.FlagIPv4|classifier.FlagIPv6) == 0 {
			tb.Fatalf("flow %d: not parsed as IP", f)
		}
	}
	return frames, ms
}

// scaleRules returns n rules of the kinds a site with per-prefix and
// per-port × per-class classes writes, each different: IPv4 /24 and /28
// destination prefixes, DSCP × protocol × source-port ranges, IPv6 /128
// and /120 source prefixes, VLAN × destination port. The traffic matches
// some of every kind, at positions throughout the list.
func scaleRules(n int) []string {
	dscps := []string{"ef", "af31", "af21", "af11", "cs6"}
	specs := make([]string, n)
	for i := range specs {
		k := i / 4
		switch i % 4 {
		case 0:
			if k%2 == 0 {
				specs[i] = fmt.Sprintf("p%d=dst:10.2.%d.%d/28,proto:udp", i, k%32, (k*16)%256)
			} else {
				specs[i] = fmt.Sprintf("p%d=dst:10.%d.%d.0/24", i, 3+k/256, k%256)
			}
		case 1:
			lo := 1024 + (k*37)%8192
			specs[i] = fmt.Sprintf("c%d=dscp:%s,proto:tcp|udp,sport:%d-%d", i, dscps[k%len(dscps)], lo, lo+15)
		case 2:
			if k%2 == 0 {
				specs[i] = fmt.Sprintf("h%d=src:2001:db8:1::%x/128", i, (k*13)%scaleFlows)
			} else {
				specs[i] = fmt.Sprintf("h%d=src:2001:db8:1::%x00/120,proto:tcp", i, k%16)
			}
		case 3:
			specs[i] = fmt.Sprintf("v%d=vlan:%d,dport:%d", i, 100+k%7+(k/7)*10, 5001+(k/7)%3)
		}
	}
	return specs
}

// threadCPU is this thread's CPU time in ns (the benchmark runs locked to
// its thread): on a shared machine it leaves out the time others ran.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

var scaleSink uint64

// BenchmarkClassifyScale is the cost per packet of classification by rule
// count, on porttest traffic (scaleTraffic) and site-like rules
// (scaleRules). Each sub-benchmark times the n-rule classifier and the
// 1-rule one in alternating rounds over the same packets, so that the
// ratios hold even when the machine is busy (all times are thread CPU
// time):
//
//	ns/pkt             Classify of a parsed packet, n rules
//	x-1rule            that over the same with 1 rule
//	parse+ns/pkt       Parse + Classify of the frame, n rules: the
//	                   per-packet classification stage of a lane
//	parse+x-1rule      that over the same with 1 rule
//	matched            fraction of the packets some rule matches
//
//	go test -tags dpdk -pgo=off -run '^$' -bench ClassifyScale -benchtime 2000000x ./classifier/
func BenchmarkClassifyScale(b *testing.B) {
	frames, ms := scaleTraffic(b)
	one, err := classifier.NewClassifierFromSpecs(scaleRules(1))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10, 64, 65, 100, 200, 1000} {
		c, err := classifier.NewClassifierFromSpecs(scaleRules(n))
		if err != nil {
			b.Fatal(err)
		}
		matched := 0
		for i := range ms {
			if c.Classify(&ms[i]) != 0 {
				matched++
			}
		}
		b.Run(fmt.Sprintf("rules-%d", n), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			var t [4]int64 // Classify n, 1; Parse+Classify n, 1
			var m classifier.Meta
			for done := 0; done < b.N; done += scaleFlows {
				k := min(scaleFlows, b.N-done)
				for j, cl := range []*classifier.Classifier{c, one} {
					t0 := threadCPU()
					for i := 0; i < k; i++ {
						scaleSink += uint64(cl.Classify(&ms[i]))
					}
					t1 := threadCPU()
					for i := 0; i < k; i++ {
						classifier.Parse(frames[i], &m)
						scaleSink += uint64(cl.Classify(&m))
					}
					t2 := threadCPU()
					t[j] += t1 - t0
					t[2+j] += t2 - t1
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(t[0])/float64(b.N), "ns/pkt")
			b.ReportMetric(float64(t[0])/float64(t[1]), "x-1rule")
			b.ReportMetric(float64(t[2])/float64(b.N), "parse+ns/pkt")
			b.ReportMetric(float64(t[2])/float64(t[3]), "parse+x-1rule")
			b.ReportMetric(float64(matched)/float64(len(ms)), "matched")
		})
	}
}

// TestInstrClassifyScale is the harness for instructions per packet of
// classification by rule count (docs/performance.md, "Classification cost
// by rule count"; scripts/classify-instr.sh runs it). With
// LDAF_INSTR_CLASSIFY="rules passes loop" it builds the classifier of that
// many scaleRules and runs, for that many passes over the scaleTraffic
// packets, loop "parse" (Parse + Classify of each frame) or "classify"
// (Classify of each parsed packet). Run it under callgrind with 2 and with
// 202 passes,
//
//	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off LDAF_INSTR_CLASSIFY='1000 202 parse' \
//	  valgrind --tool=callgrind ./classifier.test -test.run InstrClassifyScale
//
// instructions per packet = (total Ir at 202 − total Ir at 2) / (200 × 4096):
// the difference cancels the process's start-up and the tables' build. The
// build's own count moves by a few million instructions between runs (map
// seeds), hence 200 passes: with 20 that moved the result by ±30 per packet.
// Skipped without the variable.
func TestInstrClassifyScale(t *testing.T) {
	spec := os.Getenv("LDAF_INSTR_CLASSIFY")
	if spec == "" {
		t.Skip("LDAF_INSTR_CLASSIFY not set (a callgrind harness)")
	}
	var n, passes int
	var loop string
	if _, err := fmt.Sscanf(spec, "%d %d %s", &n, &passes, &loop); err != nil || n < 1 || passes < 1 || (loop != "parse" && loop != "classify") {
		t.Fatalf("LDAF_INSTR_CLASSIFY=%q, want \"rules passes parse|classify\"", spec)
	}
	frames, ms := scaleTraffic(t)
	c, err := classifier.NewClassifierFromSpecs(scaleRules(n))
	if err != nil {
		t.Fatal(err)
	}
	x := instrLoop(c, frames, ms, passes, loop == "parse")
	t.Logf("%d rules, %d passes of %d packets, %s (%x)", n, passes, len(frames), loop, x)
}

// instrLoop is the loop TestInstrClassifyScale counts.
//
//go:noinline
func instrLoop(c *classifier.Classifier, frames [][]byte, ms []classifier.Meta, passes int, parse bool) uint64 {
	var x uint64
	var m classifier.Meta
	for range passes {
		if parse {
			for _, f := range frames {
				classifier.Parse(f, &m)
				x += uint64(c.Classify(&m))
			}
			continue
		}
		for i := range ms {
			x += uint64(c.Classify(&ms[i]))
		}
	}
	return x
}
