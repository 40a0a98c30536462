package wireshark

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
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
	"github.com/ldafwd/ldafwd/internal/tooltest"
	"github.com/ldafwd/ldafwd/synopsis"
)

func tshark(t *testing.T) string { return tooltest.Require(t, "tshark", "tshark") }

func writePcap(t *testing.T, frames [][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "control.pcap")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	w := pcapgo.NewWriter(fh)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_763_700_000, 0)
	for i, b := range frames {
		ci := pcapgoCaptureInfo(at.Add(time.Duration(i)*time.Millisecond), len(b))
		if err := w.WritePacket(ci, b); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// fields runs tshark with the dissector over the pcap and returns, per
// frame, the named fields (occurrences joined by ",").
func fields(t *testing.T, pcap string, names ...string) []map[string]string {
	t.Helper()
	args := []string{"-n", "-X", "lua_script:ldafwd.lua", "-r", pcap, "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"}
	for _, n := range names {
		args = append(args, "-e", n)
	}
	cmd := exec.Command(tshark(t), args...)
	cmd.Dir = "."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.Contains(stderr.String(), "Lua") {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	var rows []map[string]string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		v := strings.Split(line, "|")
		if len(v) != len(names) {
			t.Fatalf("tshark line %q: %d fields, want %d", line, len(v), len(names))
		}
		m := map[string]string{}
		for i, n := range names {
			m[n] = v[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// frameSet is the control frames of a short session of each mode, built
// by package control's encoder, with what each should decode to.
type frameSet struct {
	frames [][]byte
	// reassembled: frame index → the part or message it completes.
	reassembled map[int][]byte
}

func buildFrames(t *testing.T) frameSet {
	t.Helper()
	fs := frameSet{reassembled: map[int][]byte{}}
	add := func(b ...[]byte) {
		for _, x := range b {
			fs.frames = append(fs.frames, append([]byte(nil), x...))
		}
	}
	for _, mode := range []string{"keyed", "insecure"} {
		cfg := control.SenderConfig{MTU: 600, Direction: 1, Hello: control.Hello{IntervalNs: 1e9, ConfigHash: 0xC0FFEE, Lanes: 2,
			Clock: "CLOCK_REALTIME", MECs: []string{"all", "voice"},
			Parts:  []control.PartKey{{MEC: 0, Kind: control.KindLDA}, {MEC: 1, Kind: control.KindRDA}, {MEC: 0, Kind: control.KindLDS}},
			Config: "lda=8x128 rda=2x64"}}
		if mode == "keyed" {
			cfg.Key = []byte("a test key of thirty-two bytes..")
		} else {
			cfg.Insecure = true
		}
		s, err := control.NewSender(cfg)
		if err != nil {
			t.Fatal(err)
		}
		const k = 1_763_700_000
		for lane := uint16(0); lane < 2; lane++ {
			w, err := s.NewEndWriter(lane)
			if err != nil {
				t.Fatal(err)
			}
			add(w.AppendEnd(nil, k, &control.End{StartNs: k * 1e9, EndNs: (k + 1) * 1e9, Frames: 1000 + uint64(lane), Bytes: 64000}))
		}
		lda := bytes.Repeat([]byte{0xA5}, 1300) // 3 fragments of 544 bytes at MTU 600
		lds := []byte("lds bytes")
		frames, err := s.AppendInterval(nil, k, k*1e9+5e6, []control.Part{
			{PartKey: control.PartKey{MEC: 0, Kind: control.KindLDA}, Payload: lda},
			{PartKey: control.PartKey{MEC: 1, Kind: control.KindRDA}, Payload: nil},
			{PartKey: control.PartKey{MEC: 0, Kind: control.KindLDS}, Payload: lds}})
		if err != nil {
			t.Fatal(err)
		}
		// Hello, lda 1/3 2/3 3/3, rda 1/1 (empty), lds 1/1; the fragments
		// sent out of order.
		if len(frames) != 6 {
			t.Fatalf("%d frames for the interval", len(frames))
		}
		add(frames[0], frames[2], frames[1])
		fs.reassembled[len(fs.frames)] = lda
		add(frames[3])
		fs.reassembled[len(fs.frames)] = nil
		add(frames[4])
		fs.reassembled[len(fs.frames)] = lds
		add(frames[5])
		ids := make([]uint64, 137)
		for i := range ids {
			ids[i] = uint64(i)*0x9E3779B97F4A7C15 + 1
		}
		body := synopsis.AppendTimestampRequest(nil, ids) // 1099 bytes: 3 fragments of 532 bytes
		req, err := s.AppendExchange(nil, control.TypeRequest, k, 1, control.KindRDA, 0x1122334455667788, 7, body)
		if err != nil || len(req) != 3 {
			t.Fatalf("request: %d frames, %v", len(req), err)
		}
		add(req[0], req[1])
		fs.reassembled[len(fs.frames)] = body
		add(req[2])
		rep, err := s.AppendExchange(nil, control.TypeReply, k, 1, control.KindRDA, 0x1122334455667788, 7, []byte{'A', 1, 0})
		if err != nil || len(rep) != 1 {
			t.Fatalf("reply: %d frames, %v", len(rep), err)
		}
		fs.reassembled[len(fs.frames)] = []byte{'A', 1, 0}
		add(rep[0])
		cells := synopsis.AppendCellsRequest(nil, 4096)
		creq, err := s.AppendExchange(nil, control.TypeRequest, k, 1, control.KindRDA, 0x1122334455667788, 8, cells)
		if err != nil || len(creq) != 1 {
			t.Fatalf("cells request: %d frames, %v", len(creq), err)
		}
		fs.reassembled[len(fs.frames)] = cells
		add(creq[0])
	}
	// A fragment as a switch in the segment may hand it on: behind an
	// 802.1Q tag, with its FCS kept.
	last := fs.frames[len(fs.frames)-1]
	tagged := append(append(append([]byte(nil), last[:12]...), 0x81, 0x00, 0x00, 0x64), last[12:]...)
	add(append(tagged, 0xDE, 0xAD, 0xBE, 0xEF))
	return fs
}

var headerFields = []string{"frame.number", "eth.type", "ldafwd.type", "ldafwd.flags.insecure", "ldafwd.kind", "ldafwd.mec_id", "ldafwd.session_id",
	"ldafwd.interval", "ldafwd.sequence", "ldafwd.fragment_index", "ldafwd.fragment_count", "ldafwd.direction", "ldafwd.payload_length",
	"ldafwd.end.frames", "ldafwd.end.lane", "ldafwd.hello.lanes", "ldafwd.hello.clock_source", "ldafwd.hello.mec", "ldafwd.hello.part.kind",
	"ldafwd.hello.configuration", "ldafwd.exchange.addressed_session", "ldafwd.exchange.request_id", "ldafwd.reassembled.length",
	"ldafwd.reassembled", "ldafwd.trailer", "_ws.expert", "_ws.malformed", "_ws.expert.message",
	"ldafwd.exchange.message", "ldafwd.exchange.version", "ldafwd.exchange.count", "ldafwd.exchange.cells", "ldafwd.end.start_time", "ldafwd.end.duration",
	"ldafwd.hello.interval_duration", "_ws.col.Info"}

// TestDissectorDecodesEveryFrameType: tshark with ldafwd.lua decodes each
// frame of every type (Hello, End, Fragment, Request, Reply; keyed and
// insecure; one behind a VLAN tag with a trailer) to the header fields
// control.ParseFrame reads from the same bytes, the payload fields to
// what was encoded, shows each part and message reassembled in the frame
// that completes it (its bytes and length), and raises no expert info at all.
func TestDissectorDecodesEveryFrameType(t *testing.T) {
	fs := buildFrames(t)
	rows := fields(t, writePcap(t, fs.frames), headerFields...)
	if len(rows) != len(fs.frames) {
		t.Fatalf("tshark shows %d frames, wrote %d", len(rows), len(fs.frames))
	}
	seen := map[string]int{}
	for i, r := range rows {
		var f control.Frame
		if err := control.ParseFrame(fs.frames[i], &f); err != nil {
			t.Fatalf("frame %d does not parse: %v", i+1, err)
		}
		want := map[string]string{
			"ldafwd.type": strconv.Itoa(int(f.Type)), "ldafwd.kind": strconv.Itoa(int(f.Kind)), "ldafwd.mec_id": strconv.Itoa(int(f.MEC)),
			"ldafwd.session_id": fmt.Sprintf("0x%016x", f.Session), "ldafwd.interval": strconv.FormatUint(f.Interval, 10),
			"ldafwd.sequence": strconv.FormatUint(f.Seq, 10), "ldafwd.fragment_index": strconv.Itoa(int(f.FragIndex)),
			"ldafwd.fragment_count": strconv.Itoa(int(f.FragCount)), "ldafwd.direction": strconv.Itoa(int(f.Direction)),
			"ldafwd.payload_length": strconv.Itoa(int(f.PayloadLen)), "ldafwd.flags.insecure": map[bool]string{true: "1", false: "0"}[f.Flags&control.FlagInsecure != 0],
			"_ws.expert": "", "_ws.malformed": "", "_ws.expert.message": "",
		}
		switch f.Type {
		case control.TypeEnd:
			var e control.End
			if err := e.UnmarshalBinary(f.Payload); err != nil {
				t.Fatal(err)
			}
			want["ldafwd.end.frames"], want["ldafwd.end.lane"] = strconv.FormatUint(e.Frames, 10), strconv.Itoa(int(e.Lane))
		case control.TypeHello:
			var h control.Hello
			if err := h.UnmarshalBinary(f.Payload); err != nil {
				t.Fatal(err)
			}
			want["ldafwd.hello.lanes"], want["ldafwd.hello.clock_source"] = strconv.Itoa(int(h.Lanes)), h.Clock
			want["ldafwd.hello.mec"], want["ldafwd.hello.configuration"] = strings.Join(h.MECs, ","), h.Config
			var kinds []string
			for _, p := range h.Parts {
				kinds = append(kinds, strconv.Itoa(int(p.Kind)))
			}
			want["ldafwd.hello.part.kind"] = strings.Join(kinds, ",")
		case control.TypeRequest, control.TypeReply:
			want["ldafwd.exchange.addressed_session"] = fmt.Sprintf("0x%016x", binary.BigEndian.Uint64(f.Payload))
			want["ldafwd.exchange.request_id"] = strconv.FormatUint(uint64(binary.BigEndian.Uint32(f.Payload[8:])), 10)
			if f.FragIndex == 0 {
				// The message's head, decoded from its first fragment.
				msg := f.Payload[12:]
				want["ldafwd.exchange.message"] = fmt.Sprintf("0x%02x", msg[0])
				want["ldafwd.exchange.version"] = strconv.Itoa(int(msg[1]))
				switch msg[0] {
				case 'Q':
					want["ldafwd.exchange.count"] = "137"
				case 'F':
					want["ldafwd.exchange.cells"] = "4096"
				case 'A':
					want["ldafwd.exchange.count"] = "0"
				}
			}
		}
		want["ldafwd.reassembled.length"], want["ldafwd.reassembled"] = "", ""
		if b, ok := fs.reassembled[i]; ok {
			want["ldafwd.reassembled.length"], want["ldafwd.reassembled"] = strconv.Itoa(len(b)), hex.EncodeToString(b)
		}
		for k, v := range want {
			if r[k] != v {
				t.Errorf("frame %d (%v): %s = %q, want %q", i+1, f.Type, k, r[k], v)
			}
		}
		seen[f.Type.String()]++
		if want := "dir=a>b"; !strings.Contains(r["_ws.col.Info"], want) {
			t.Errorf("frame %d info %q lacks %q", i+1, r["_ws.col.Info"], want)
		}
		switch f.Type {
		case control.TypeEnd:
			// 1_763_700_000 s since the epoch, one second long.
			if r["ldafwd.end.start_time"] != "Nov 21, 2025 04:40:00.000000000 UTC" || !strings.HasPrefix(r["ldafwd.end.duration"], "1.000000000") {
				t.Errorf("frame %d: End start %q, duration %q", i+1, r["ldafwd.end.start_time"], r["ldafwd.end.duration"])
			}
		case control.TypeHello:
			if !strings.HasPrefix(r["ldafwd.hello.interval_duration"], "1.000000000") {
				t.Errorf("frame %d: Hello interval length %q", i+1, r["ldafwd.hello.interval_duration"])
			}
		}
	}
	if tr := rows[len(rows)-1]["ldafwd.trailer"]; tr != "deadbeef" && tr != "de:ad:be:ef" {
		t.Errorf("the tagged frame's trailer: %q", tr)
	}
	t.Logf("decoded %d frames by type: %v", len(rows), seen)
	for _, ty := range []control.Type{control.TypeHello, control.TypeEnd, control.TypeFragment, control.TypeRequest, control.TypeReply} {
		if seen[ty.String()] == 0 {
			t.Errorf("no %v frame decoded", ty)
		}
	}
}

// TestDissectorFlagsMalformed: frames control.ParseFrame rejects get the
// dissector's malformed-frame expert info (so the test above, which wants
// none, can fail), and the good frame beside them none.
func TestDissectorFlagsMalformed(t *testing.T) {
	good := buildFrames(t).frames[0] // an End
	var f control.Frame
	if err := control.ParseFrame(good, &f); err != nil {
		t.Fatal(err)
	}
	mut := func(fn func(b []byte) []byte) []byte { return fn(append([]byte(nil), good...)) }
	bad := map[string][]byte{
		"truncated":     mut(func(b []byte) []byte { return b[:len(b)-1] }),
		"short header":  mut(func(b []byte) []byte { return b[:14+20] }),
		"bad magic":     mut(func(b []byte) []byte { b[14] = 'X'; return b }),
		"bad version":   mut(func(b []byte) []byte { b[16] = control.Version + 1; return b }),
		"unknown type":  mut(func(b []byte) []byte { b[17] = 9; return b }),
		"reserved flag": mut(func(b []byte) []byte { b[18] |= 2; return b }),
		"sequence 0":    mut(func(b []byte) []byte { copy(b[14+24:], make([]byte, 8)); return b }),
		"end length":    mut(func(b []byte) []byte { b[14+39]--; return b }),
		"index≥count":   mut(func(b []byte) []byte { b[14+33] = 1; return b }),
	}
	var names []string
	frames := [][]byte{good}
	for n, b := range bad {
		if err := control.ParseFrame(b, &f); err == nil {
			t.Fatalf("%s: control.ParseFrame accepts it", n)
		}
		names = append(names, n)
		frames = append(frames, b)
	}
	rows := fields(t, writePcap(t, frames), "frame.protocols", "_ws.expert.group", "_ws.expert.severity", "_ws.expert.message")
	for i, n := range names {
		if n == "truncated" && !strings.Contains(rows[i+1]["_ws.expert.message"], "HMAC tag is 15 bytes, not 16") {
			t.Errorf("a frame one byte short of its tag: expert %q, want the tag's length named", rows[i+1]["_ws.expert.message"])
		}
	}
	if rows[0]["_ws.expert.message"] != "" {
		t.Errorf("the good frame has expert info %q", rows[0]["_ws.expert.message"])
	}
	for i, n := range names {
		r := rows[i+1]
		if !strings.HasSuffix(r["frame.protocols"], ":ldafwd") {
			t.Errorf("%s: not dissected as ldafwd: %s", n, r["frame.protocols"])
		}
		// PI_MALFORMED, PI_ERROR (epan/proto.h).
		if r["_ws.expert.group"] != strconv.Itoa(0x07000000) || r["_ws.expert.severity"] != strconv.Itoa(0x00800000) {
			t.Errorf("%s: expert info %q group %s severity %s, want one malformed error", n, r["_ws.expert.message"], r["_ws.expert.group"], r["_ws.expert.severity"])
		}
		t.Logf("%s: %s", n, r["_ws.expert.message"])
	}
}

func pcapgoCaptureInfo(at time.Time, n int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: at, CaptureLength: n, Length: n}
}

// TestDissectorKnowsEveryKind: the dissector's part kinds are control's,
// each by its name, and one past the last is unknown, so a new part kind
// cannot reach the wire with the dissector calling it malformed (as the
// trajectory sample's kind 4 once did in the two-process labs).
func TestDissectorKnowsEveryKind(t *testing.T) {
	src, err := os.ReadFile("ldafwd.lua")
	if err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "local kinds = {") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("ldafwd.lua has no kinds table")
	}
	for k := control.Kind(0); ; k++ {
		name := k.String()
		entry := fmt.Sprintf("[%d] = %q", k, name)
		if name == "unknown" {
			if strings.Contains(line, fmt.Sprintf("[%d] =", k)) {
				t.Errorf("the dissector names kind %d, which control does not define: %s", k, line)
			}
			break
		}
		if !strings.Contains(line, entry) {
			t.Errorf("the dissector's kinds lack %s: %s", entry, line)
		}
	}
}
