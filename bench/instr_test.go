package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestInstrStage is the harness for instructions per packet of one
// per-packet stage (docs/performance.md, "Instruction counts"). With
// LDAF_INSTR_STAGE=name it runs that stage of PerPacketStages over the
// benchmark frames (4096 frames of 128 bytes, 1024 flows) for
// LDAF_INSTR_PASSES passes (default 2) and logs the packets. Run it twice
// under callgrind, with 2 and with 22 passes,
//
//	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off LDAF_INSTR_STAGE=identity-hash LDAF_INSTR_PASSES=2 \
//	  valgrind --tool=callgrind ./bench.test -test.run InstrStage
//
// instructions per packet = (total Ir at 22 − total Ir at 2) / (20 × 4096):
// the difference cancels the process's start-up and the stages' setup.
// Without the variable it runs every stage for one pass, as a plain test.
func TestInstrStage(t *testing.T) {
	passes, err := envInt("LDAF_INSTR_PASSES", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := os.Getenv("LDAF_INSTR_STAGE")
	if want == "" {
		passes = 1
	}
	frames, err := Frames(4096, 128, 1024)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := PerPacketStages(frames)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	var x uint64
	for _, s := range stages {
		if want != "" && s.Name != want {
			continue
		}
		for range passes {
			x ^= s.Run(frames)
		}
		t.Logf("%s: %d packets (%x)", s.Name, passes*len(frames), x)
		ran++
	}
	if ran == 0 {
		t.Fatalf("no stage named %q", want)
	}
}

// TestInstrForwardRing is the harness for instructions per forwarded
// frame of the forward-ring suite. With LDAF_INSTR_RING="mode burst ms"
// (mode off, lda or all) it runs ForwardRing once for that long and logs
// the frames forwarded. Run it twice under callgrind, with a short and a
// long duration,
//
//	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off LDAF_INSTR_RING='lda 32 400' \
//	  valgrind --tool=callgrind ./bench.test -test.run InstrForwardRing -test.v
//
// instructions per frame = Δ total Ir / Δ frames between the two runs:
// the difference cancels the setup (links, lane, synopses, frames).
// Skipped without the variable.
func TestInstrForwardRing(t *testing.T) {
	spec := os.Getenv("LDAF_INSTR_RING")
	if spec == "" {
		t.Skip("LDAF_INSTR_RING not set (a callgrind harness)")
	}
	f := strings.Fields(spec)
	if len(f) != 3 {
		t.Fatalf("LDAF_INSTR_RING=%q, want \"mode burst ms\"", spec)
	}
	burst, err1 := strconv.Atoi(f[1])
	ms, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || burst < 1 || ms < 1 {
		t.Fatalf("LDAF_INSTR_RING=%q: burst and ms must be positive integers", spec)
	}
	r, err := ForwardRing(f[0], burst, 128, time.Duration(ms)*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s burst %d: %d frames", f[0], burst, r.Packets)
}

func envInt(name string, def int) (int, error) {
	s := os.Getenv(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", name, s)
	}
	return n, nil
}
