package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDemoSimulatedTimeIdentical runs `ldafwd demo --simulated-time`
// twice with the same seed and flags (the segment losing in bursts,
// duplicating, reordering and remarking; every synopsis) and requires
// the same output byte for byte; a third run with another seed must
// differ. The table output is compared too: it is what a user reads.
func TestDemoSimulatedTimeIdentical(t *testing.T) {
	run := func(seed, format string) []byte {
		t.Helper()
		var out, errb bytes.Buffer
		args := []string{"--simulated-time", "--seed", seed, "--duration", "2s", "--interval", "200ms", "--format", format,
			"--loss", "bursty:rate=0.005,burst=6", "--dup", "0.002", "--reorder", "0.01", "--remark", "cs2:0.02", "--mec", "c2=dscp:cs2"}
		if err := demoMain(args, &out, &errb); err != nil {
			t.Fatalf("demo %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.Bytes()
	}
	a, b := run("11", "json"), run("11", "json")
	if !bytes.Equal(a, b) {
		la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
		for i := 0; i < min(len(la), len(lb)); i++ {
			if la[i] != lb[i] {
				t.Fatalf("--seed 11 twice: line %d differs:\n%s\n%s", i+1, la[i], lb[i])
			}
		}
		t.Fatalf("--seed 11 twice: %d lines, then %d", len(la), len(lb))
	}
	if !bytes.Contains(a, []byte(`"type":"demo_summary"`)) || !bytes.Contains(a, []byte(`"valid":true`)) || !bytes.Contains(a, []byte(`"clock":"simulated"`)) {
		t.Fatalf("the output has no summary, no valid line or no simulated clock:\n%s", a)
	}
	if c := run("12", "json"); bytes.Equal(a, c) {
		t.Errorf("--seed 11 and --seed 12 printed the same")
	}
	if ta, tb := run("11", "table"), run("11", "table"); !bytes.Equal(ta, tb) {
		t.Errorf("the table differs between two runs of --seed 11:\n%s\n---\n%s", ta, tb)
	}
}

// TestDemoSimulatedTimeRefuses: what the simulation does not do is a
// usage error before anything runs.
func TestDemoSimulatedTimeRefuses(t *testing.T) {
	for _, extra := range [][]string{{"--queues", "2"}, {"--rate", "0"}, {"--capture-sender", t.TempDir() + "/s.pcapng"}} {
		var out, errb bytes.Buffer
		args := append([]string{"--simulated-time", "--duration", "100ms", "--interval", "50ms"}, extra...)
		err := demoMain(args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), "--simulated-time") {
			t.Errorf("demo %s: err %v, want a refusal naming --simulated-time", strings.Join(args, " "), err)
		}
	}
}
