package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/control"
)

// maxCaptured bounds the control frames a lab's relay keeps.
const maxCaptured = 4000

// checkCapturedControl writes the control frames a lab's relay passed into
// a pcap and decodes it with tshark and scripts/wireshark/ldafwd.lua:
// every frame must be dissected as ldafwd, of the type, session, interval
// and sequence control.ParseFrame reads, with no expert info, and the run
// must have carried Hellos, Ends and Fragments. Requests and Replies
// (the RDA's repair exchange) are counted when the run had any. Without
// tshark it says so and returns, except under CI.
func checkCapturedControl(t *testing.T, frames [][]byte) {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tshark not found under CI: scripts/deps.sh installs it")
		}
		t.Log("tshark not found: the captured control frames are not decoded")
		return
	}
	if len(frames) == 0 {
		t.Fatal("the relay passed no control frame")
	}
	pcap := filepath.Join(t.TempDir(), "segment.pcap")
	fh, err := os.Create(pcap)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(fh)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	for i, b := range frames {
		ci := gopacket.CaptureInfo{Timestamp: at.Add(time.Duration(i) * time.Microsecond), CaptureLength: len(b), Length: len(b)}
		if err := w.WritePacket(ci, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	names := []string{"frame.protocols", "ldafwd.type", "ldafwd.session_id", "ldafwd.interval", "ldafwd.sequence", "_ws.expert.message"}
	args := []string{"-n", "-X", "lua_script:../scripts/wireshark/ldafwd.lua", "-r", pcap, "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"}
	for _, n := range names {
		args = append(args, "-e", n)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tshark, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.Contains(stderr.String(), "Lua") {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	rows := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(rows) != len(frames) {
		t.Fatalf("tshark decoded %d frames of %d", len(rows), len(frames))
	}
	byType := map[control.Type]int{}
	bad := 0
	for i, row := range rows {
		v := strings.Split(row, "|")
		var f control.Frame
		if err := control.ParseFrame(frames[i], &f); err != nil {
			t.Errorf("captured frame %d does not parse: %v", i+1, err)
			continue
		}
		want := []string{v[0], strconv.Itoa(int(f.Type)), fmt.Sprintf("0x%016x", f.Session), strconv.FormatUint(f.Interval, 10), strconv.FormatUint(f.Seq, 10), ""}
		if !strings.HasSuffix(v[0], ":ldafwd") || v[1] != want[1] || v[2] != want[2] || v[3] != want[3] || v[4] != want[4] || v[5] != "" {
			if bad++; bad <= 5 {
				t.Errorf("captured frame %d (%v): tshark %q, want type %s session %s interval %s sequence %s and no expert info", i+1, f.Type, v, want[1], want[2], want[3], want[4])
			}
		}
		byType[f.Type]++
	}
	t.Logf("tshark with ldafwd.lua decoded %d captured control frames: %d Hello, %d End, %d Fragment, %d Request, %d Reply; %d mismatched",
		len(frames), byType[control.TypeHello], byType[control.TypeEnd], byType[control.TypeFragment], byType[control.TypeRequest], byType[control.TypeReply], bad)
	for _, ty := range []control.Type{control.TypeHello, control.TypeEnd, control.TypeFragment} {
		if byType[ty] == 0 {
			t.Errorf("no %v frame captured", ty)
		}
	}
}
