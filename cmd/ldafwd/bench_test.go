package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane/pcapfile"
)

// TestBenchPerPacket runs the per-packet suite small and checks the
// "type":"bench" contract: name, mpps, ns_per_pkt, baseline and ratio.
func TestBenchPerPacket(t *testing.T) {
	if testing.Short() {
		t.Skip("runs benchmarks")
	}
	var out, errb bytes.Buffer
	if err := benchMain([]string{"--only", "^perpacket$", "--rounds", "1", "--frames", "256", "--format", "json"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	names := map[string]map[string]any{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		if m["type"] != "bench" || m["mpps"].(float64) <= 0 || m["ns_per_pkt"].(float64) <= 0 {
			t.Errorf("bad record %s", sc.Text())
		}
		names[m["name"].(string)] = m
	}
	full, ok := names["pkt-identity-classify-lda"]
	if !ok || full["baseline"] != "pkt-identity-hash" || full["ratio"].(float64) <= 0 {
		t.Errorf("full measurement record %v", full)
	}
	for _, n := range []string{"pkt-xxhash-window", "pkt-identity-hash"} {
		if _, ok := names[n]; !ok {
			t.Errorf("no %s record", n)
		}
	}
	if ex, _ := full["extra"].(map[string]any); ex == nil || ex["ratio_xxhash_window"] == nil {
		t.Errorf("full measurement without its ratio to bare hashing: %v", full)
	}
}

func TestBenchFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if err := benchMain([]string{"--list"}, &out, &errb); err != nil || !strings.Contains(out.String(), "perpacket") {
		t.Errorf("--list: %v %q", err, out.String())
	}
	for _, args := range [][]string{{"--only", "("}, {"--only", "nomatch"}, {"--rounds", "0"}, {"--format", "x"}, {"x"}} {
		if err := benchMain(args, &out, &errb); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestBenchWriteCaptures: --write-captures writes the three captures
// forward-dpdk-pcap replays, whole pcaps of the same 4096 frames' flows,
// the same bytes every time, and runs no suite.
func TestBenchWriteCaptures(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if err := benchMain([]string{"--write-captures", dir}, &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	paths := strings.Fields(out.String())
	if len(paths) != 3 {
		t.Fatalf("paths %q, want 3", paths)
	}
	var first [][]byte
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, b)
		frames, err := pcapfile.ReadFrames(bytes.NewReader(b))
		if err != nil {
			t.Fatal(p, err)
		}
		n, tagged := len(frames), 0
		for _, f := range frames {
			if len(f) >= 14 && f[12] == 0x81 && f[13] == 0 {
				tagged++
			}
		}
		if n != 4096 || (i < 2) != (tagged > 0) {
			t.Errorf("%s: %d frames, %d tagged", p, n, tagged)
		}
	}
	if err := benchMain([]string{"--write-captures", dir}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		if b, _ := os.ReadFile(p); !bytes.Equal(b, first[i]) {
			t.Errorf("%s differs the second time", p)
		}
	}
}

// TestBenchProgress: a terminal stderr names the suite running and the
// last case done; --quiet writes no progress.
func TestBenchProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs benchmarks")
	}
	args := []string{"--only", "^perpacket$", "--rounds", "1", "--frames", "64"}
	var out bytes.Buffer
	var tty fakeTTY
	if err := benchMain(args, &out, &tty); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tty.String(), "bench: running suite perpacket") || !strings.Contains(tty.String(), "last done: pkt-") {
		t.Errorf("progress %q", tty.String())
	}
	var quiet fakeTTY
	if err := benchMain(append(args, "--quiet"), &out, &quiet); err != nil {
		t.Fatal(err)
	}
	if quiet.Len() != 0 {
		t.Errorf("--quiet wrote %q", quiet.String())
	}
}
