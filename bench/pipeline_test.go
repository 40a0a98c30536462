package bench

import (
	"testing"
)

// BenchmarkPerPacket reports ns/pkt for every per-packet stage over the
// same frames, so `go test -bench PerPacket` shows the ratio of the full
// measurement to hashing alone.
func BenchmarkPerPacket(b *testing.B) {
	frames, stages := benchStages(b)
	for _, s := range stages {
		b.Run(s.Name, func(b *testing.B) {
			b.ReportAllocs()
			var sink uint64
			for b.Loop() {
				sink ^= s.Run(frames)
			}
			benchSink = sink
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(frames)), "ns/pkt")
		})
	}
}

// TestStagesAllocateNothing pins the hot path: identity, classification and
// every synopsis update allocate nothing per packet.
func TestStagesAllocateNothing(t *testing.T) {
	frames, err := Frames(256, 128, 64)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := PerPacketStages(frames)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stages {
		if a := testing.AllocsPerRun(20, func() { s.Run(frames) }); a != 0 {
			t.Errorf("%s: %.1f allocations per %d packets, want 0", s.Name, a, len(frames))
		}
	}
}

// TestCompare checks the measuring harness itself: every stage measured,
// medians positive, Find finds.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs testing.Benchmark (about a second per stage)")
	}
	frames, _ := Frames(512, 128, 64)
	stages, _ := PerPacketStages(frames)
	ms := Compare(stages[:2], frames, 1)
	for _, m := range ms {
		if m.NsPerPkt <= 0 || m.Mpps <= 0 || len(m.Rounds) != 1 {
			t.Errorf("%+v", m)
		}
	}
	if _, err := Find(ms, "identity-hash"); err != nil {
		t.Error(err)
	}
	if _, err := Find(ms, "nope"); err == nil {
		t.Error("Find of a missing name succeeded")
	}
}

// BenchmarkMeasureVsIdentityHash is the per-packet cost ratio under go test -bench:
// the full per-packet measurement (identity hash + classify + LDA at the
// appliance's recording shape, and at the fixed 8×128 shape), a
// default sender's (no classify) and the three-rule one, each against
// the identity hash alone, measured interleaved in one run (Compare, thread
// CPU time) and reported as x-identity-hash metrics; ldafwd bench's
// perpacket suite reports the same ratios.
func BenchmarkMeasureVsIdentityHash(b *testing.B) {
	frames, stages := benchStages(b)
	var sel []Stage
	for _, s := range stages {
		switch s.Name {
		case "identity-hash", "identity-classify-lda", "identity-classify-lda-8x128", "identity-lean-lda", "identity-lean-lda-nodigest", "identity-classify3-lda",
			"identity-lean-sample", "identity-lean-sample-1in64":
			sel = append(sel, s)
		}
	}
	var ms []Measurement
	for b.Loop() {
		ms = Compare(sel, frames, 5)
	}
	id, err := Find(ms, "identity-hash")
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range ms {
		if m.Name != id.Name {
			b.ReportMetric(m.NsPerPkt/id.NsPerPkt, m.Name+"-x-identity-hash")
		}
	}
	b.ReportMetric(id.NsPerPkt, "identity-hash-ns/pkt")
}

// benchStages is the benchmarks' frame set (4096 frames of 128 bytes over
// 1024 flows, as ldafwd bench's perpacket suite) and its stages.
func benchStages(b *testing.B) ([][]byte, []Stage) {
	frames, err := Frames(4096, 128, 1024)
	if err != nil {
		b.Fatal(err)
	}
	stages, err := PerPacketStages(frames)
	if err != nil {
		b.Fatal(err)
	}
	return frames, stages
}
