package analyze_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// recordOffset returns the byte offset of packet record n (from 1) of a
// classic pcap or pcapng file written by pcapgo (one section, one
// interface, little endian).
func recordOffset(t *testing.T, b []byte, n int) int {
	t.Helper()
	if binary.LittleEndian.Uint32(b) == 0x0a0d0d0a {
		off := 0
		for seen := 0; off+8 <= len(b); {
			typ, l := binary.LittleEndian.Uint32(b[off:]), int(binary.LittleEndian.Uint32(b[off+4:]))
			if typ == 6 {
				if seen++; seen == n {
					return off
				}
			}
			off += l
		}
		t.Fatalf("no record %d", n)
	}
	off := 24
	for i := 1; i < n; i++ {
		off += 16 + int(binary.LittleEndian.Uint32(b[off+8:]))
	}
	return off
}

// intervalTruth is the generator's truth of the packets sent in interval k
// (width ns) inside the common range.
func intervalTruth(tr analyzetest.Truth, st analyze.Stats, width, k int64) (sent, lost uint64) {
	for i, s := range tr.SendNs {
		if s < int64(st.RangeStartNs) || s > int64(st.RangeEndNs) || s/width != k {
			continue
		}
		sent++
		if tr.RecvNs[i] < 0 {
			lost++
		}
	}
	return sent, lost
}

// TestDamagedCaptures: a damaged capture (a corrupt pcapng block, a
// truncated file, a classic record with an impossible length, a frame cut
// before its identity, impossible or far-off timestamps) is an error naming the file and the record; with
// InvalidateDamaged the intervals it touches are invalid and every valid
// line still holds the truth — damage never reads as loss.
func TestDamagedCaptures(t *testing.T) {
	// The damage is at packet record 3000 of the sender's file, 2995 of the
	// receiver's (which lost a few packets before it).
	const n = 4000
	for _, tc := range []struct {
		name     string
		ng, nano bool
		sender   bool // damage the sender's file instead of the receiver's
		damage   func(b []byte, off int) []byte
		want     string
	}{
		{"pcapng-block-length", true, false, false, func(b []byte, off int) []byte {
			binary.LittleEndian.PutUint32(b[off+4:], binary.LittleEndian.Uint32(b[off+4:])+6)
			return b
		}, "record %d"},
		{"pcapng-block-type", true, false, false, func(b []byte, off int) []byte {
			binary.LittleEndian.PutUint32(b[off:], 0x0bad0bad)
			return b
		}, "unknown block type"},
		{"pcapng-truncated", true, false, false, func(b []byte, off int) []byte { return b[:off+30] }, "record %d"},
		{"pcap-truncated", false, false, false, func(b []byte, off int) []byte { return b[:off+20] }, "record %d"},
		{"pcap-record-length", false, false, false, func(b []byte, off int) []byte {
			binary.LittleEndian.PutUint32(b[off+8:], 0x00ffffff)
			return b
		}, "record %d"},
		{"pcap-microseconds", false, false, false, func(b []byte, off int) []byte {
			binary.LittleEndian.PutUint32(b[off+4:], 0xffffffff)
			return b
		}, "impossible timestamp"},
		{"pcap-nanoseconds", false, true, true, func(b []byte, off int) []byte {
			binary.LittleEndian.PutUint32(b[off+4:], 1_000_000_000)
			return b
		}, "impossible timestamp"},
		// A record's captured length cut below its identity, in a capture
		// that states no snap length: not a snap length (left out at this
		// end only, its sender copy would read as lost) but damage.
		{"pcapng-captured-length", true, false, false, func(b []byte, off int) []byte {
			binary.LittleEndian.PutUint32(b[off+20:], 6)
			return b
		}, "frame cut to 6 of its"},
		{"pcap-far-timestamp", false, false, false, func(b []byte, off int) []byte {
			binary.LittleEndian.PutUint32(b[off:], binary.LittleEndian.Uint32(b[off:])+5000)
			return b
		}, "after the records around it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snd, rcv, tr := captures(t, analyzetest.Config{Packets: n, Rate: 10_000, Start: time.Unix(1_700_000_000, 0),
				MeanDelay: 20 * time.Microsecond, Loss: 0.002, Seed: 4, PcapNG: tc.ng, NanoPcap: tc.nano})
			victim := rcv
			if tc.sender {
				victim = snd
			}
			b, _ := os.ReadFile(victim)
			rec := 3000
			if !tc.sender {
				rec = 2995
			}
			os.WriteFile(victim, tc.damage(b, recordOffset(t, b, rec)), 0o644)
			cfg := analyze.Config{Interval: 100 * time.Millisecond, UseLDA: true, LDA: synopsis.DefaultLDAConfig(),
				Extra: []analyze.SynopsisFactory{analyze.RDAFactory{Config: synopsis.DefaultRDAConfig()}}}
			out, err := runErr(t, snd, rcv, cfg)
			var d *analyze.DamageError
			want := tc.want
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(want, rec)
			}
			if !errors.As(err, &d) || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), want) || len(out) > 0 {
				t.Fatalf("error %v (%d lines); want a damage error naming %s and %q", err, len(out), victim, want)
			}
			t.Log(err)
			cfg.InvalidateDamaged = true
			out, st, err := runStats(t, snd, rcv, cfg)
			if err != nil {
				t.Fatal(err)
			}
			invalid := 0
			for _, l := range out {
				if !l.Valid {
					if strings.Contains(l.Reason, "damaged") {
						invalid++
					}
					continue
				}
				sent, lost := intervalTruth(tr, st, int64(100*time.Millisecond), l.Interval)
				if l.Lost != lost || (l.Synopsis == "lda" && l.Sent != sent) {
					t.Errorf("interval %d %s: valid with sent %d lost %d, truth %d %d", l.Interval, l.Synopsis, l.Sent, l.Lost, sent, lost)
				}
			}
			if invalid == 0 {
				t.Errorf("no line names the damage: %v", lineSummary(out))
			}
		})
	}
}

func lineSummary(out []*report.Interval) []string {
	var s []string
	for _, l := range out {
		s = append(s, l.Synopsis+" "+l.Reason)
	}
	return s
}

// recordSpans returns, for each record of a capture pcapgo wrote, the
// [start, end) byte ranges of its timestamp and of its frame's bytes.
func recordSpans(b []byte) (ts, frames [][2]int) {
	if binary.LittleEndian.Uint32(b) == 0x0a0d0d0a {
		for off := 0; off+8 <= len(b); {
			typ, l := binary.LittleEndian.Uint32(b[off:]), int(binary.LittleEndian.Uint32(b[off+4:]))
			if typ == 6 {
				ts = append(ts, [2]int{off + 12, off + 20})
				frames = append(frames, [2]int{off + 28, off + 28 + int(binary.LittleEndian.Uint32(b[off+20:]))})
			}
			off += l
		}
		return ts, frames
	}
	for off := 24; off+16 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+8:]))
		ts = append(ts, [2]int{off, off + 8})
		frames = append(frames, [2]int{off + 16, off + 16 + n})
		off += 16 + n
	}
	return ts, frames
}

// frameSpans returns the [start, end) byte ranges of the frames' bytes in a
// capture pcapgo wrote.
func frameSpans(b []byte) [][2]int {
	_, frames := recordSpans(b)
	return frames
}

// edgeStampSpans returns the [start, end) byte ranges of the timestamps of
// the first and the last record of a capture pcapgo wrote.
func edgeStampSpans(b []byte) [][2]int {
	ts, _ := recordSpans(b)
	if len(ts) < 2 {
		return ts
	}
	return [][2]int{ts[0], ts[len(ts)-1]}
}

// FuzzAnalyzeDamaged damages a lossless capture pair (one of them reordered,
// duplicated and written out of order) where the fuzzer says
// (bytes xor-ed at an offset, or the file cut) and runs the whole pipeline
// in both damage modes: no panic, and the valid lines may claim no more
// loss than the frames whose bytes the damage changed (a frame whose
// content changed is, to anyone reading the file, a packet the network
// corrupted: one lost, one extra), nor more than the damaged timestamps
// of a file's first or last record (a gap in the traffic to anyone
// reading the file). The network lost nothing, so any other loss would be
// the damage read as loss.
func FuzzAnalyzeDamaged(f *testing.F) {
	// which: bit 0 pcapng, bit 1 damage the receiver's file, bit 2 a
	// pair whose segment reorders and duplicates packets and whose files
	// are written a little out of time order (still no loss).
	var pairs [4][2][]byte
	for i, ng := range []bool{false, true} {
		var sb, rb bytes.Buffer
		if _, err := analyzetest.Write(analyzetest.Config{Packets: 300, Rate: 20_000, Start: time.Unix(1_700_000_000, 990_000_000),
			MeanDelay: 20 * time.Microsecond, Seed: 9, PcapNG: ng, IPv6Share: 0.3}, &sb, &rb); err != nil {
			f.Fatal(err)
		}
		pairs[i] = [2][]byte{sb.Bytes(), rb.Bytes()}
		sb.Reset()
		rb.Reset()
		if _, err := (analyzetest.Scenario{Seed: 9, Packets: 300, Rate: 20_000, Start: time.Unix(1_700_000_000, 990_000_000),
			MeanDelay: 20 * time.Microsecond, Reorder: 0.1, ReorderBy: 300 * time.Microsecond, Dup: 0.03, Disorder: 0.03,
			IPv6: 0.3, Nano: true, PcapNG: ng}).Write(&sb, &rb); err != nil {
			f.Fatal(err)
		}
		pairs[2+i] = [2][]byte{sb.Bytes(), rb.Bytes()}
	}
	f.Add(uint8(0), uint32(3000), []byte{0xff}, uint32(0))
	f.Add(uint8(1), uint32(5000), []byte{0, 0, 0, 0x80}, uint32(0))
	f.Add(uint8(3), uint32(0), []byte{}, uint32(20000))
	f.Add(uint8(2), uint32(60), []byte{0x10, 0, 0, 0}, uint32(0))
	f.Add(uint8(4), uint32(9000), []byte{0, 0x40}, uint32(0))
	f.Add(uint8(6), uint32(3000), []byte{0xff}, uint32(0))
	f.Add(uint8(7), uint32(0), []byte{}, uint32(30000))
	f.Fuzz(func(t *testing.T, which uint8, off uint32, xor []byte, cut uint32) {
		p := pairs[which&1|which>>1&2]
		files := [2][]byte{append([]byte(nil), p[0]...), append([]byte(nil), p[1]...)}
		v := files[which>>1&1]
		for i, x := range xor {
			if j := int(off) + i; j < len(v) {
				v[j] ^= x
			}
		}
		if cut > 0 && int(cut) < len(v) {
			v = v[:cut]
		}
		files[which>>1&1] = v
		touched := uint64(0)
		hit := func(sp [2]int) bool { return len(xor) > 0 && int(off) < sp[1] && int(off)+len(xor) > sp[0] }
		for _, sp := range frameSpans(p[which>>1&1]) {
			if hit(sp) {
				touched++
			}
		}
		// A damaged timestamp on a file's first or last record cannot be
		// told from a gap in the traffic (no record on one side to hold
		// it to): its packet may read as lost, one packet.
		for _, sp := range edgeStampSpans(p[which>>1&1]) {
			if hit(sp) {
				touched++
			}
		}
		for _, inv := range []bool{false, true} {
			s, err := analyze.NewCapture("s", bytes.NewReader(files[0]))
			if err != nil {
				return
			}
			r, err := analyze.NewCapture("r", bytes.NewReader(files[1]))
			if err != nil {
				return
			}
			cfg := analyze.Config{Interval: 10 * time.Millisecond, UseLDA: true, LDA: synopsis.DefaultLDAConfig(), InvalidateDamaged: inv,
				Extra: []analyze.SynopsisFactory{analyze.RDAFactory{Config: synopsis.DefaultRDAConfig()}}}
			lost := map[string]uint64{}
			analyze.Run(s, r, cfg, func(l *report.Interval) {
				if l.Valid {
					lost[l.Synopsis] += l.Lost
				}
			})
			for syn, n := range lost {
				if n > touched {
					t.Errorf("damage read as loss (invalidate %v): %s lines claim %d lost in valid lines, the damage changed %d frames", inv, syn, n, touched)
				}
			}
		}
	})
}

// TestLargeDisorderRefused: a file whose timestamps go back by seconds and
// stay there (two captures concatenated) is refused naming the file and the
// record; a few ms of disorder is sorted (held in the property test).
func TestLargeDisorderRefused(t *testing.T) {
	var sb, rb bytes.Buffer
	if _, err := analyzetest.Write(analyzetest.Config{Packets: 3000, Rate: 1000, Start: time.Unix(1_700_000_000, 0),
		MeanDelay: 20 * time.Microsecond, Seed: 2}, &sb, &rb); err != nil {
		t.Fatal(err)
	}
	b := rb.Bytes()
	// Append the receiver's first 500 records again after its end.
	end := recordOffset(t, b, 501)
	cat := append(append([]byte(nil), b...), b[24:end]...)
	s, _ := analyze.NewCapture("s.pcap", bytes.NewReader(sb.Bytes()))
	r, _ := analyze.NewCapture("r.pcap", bytes.NewReader(cat))
	_, err := analyze.Run(s, r, analyze.Config{UseLDA: true, LDA: synopsis.DefaultLDAConfig()}, func(*report.Interval) {
		t.Error("a line for a refused pair")
	})
	if err == nil || !strings.Contains(err.Error(), "r.pcap: timestamps go back") || !strings.Contains(err.Error(), "record 3001") {
		t.Errorf("err %v, want a refusal naming r.pcap and record 3001", err)
	}
}

// TestUnsupportedLinkType: a pcapng interface of another link type is a
// clear error naming it, not damage.
func TestUnsupportedLinkType(t *testing.T) {
	var b bytes.Buffer
	w, err := pcapgo.NewNgWriter(&b, layers.LinkTypeIEEE80211Radio)
	if err != nil {
		t.Fatal(err)
	}
	w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(1_700_000_000, 0), CaptureLength: 4, Length: 4}, []byte{1, 2, 3, 4})
	w.Flush()
	c, err := analyze.NewCapture("wifi.pcapng", bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.Next(); ok || c.EndedEarly == nil || !strings.Contains(c.EndedEarly.Error(), "wifi.pcapng") ||
		!strings.Contains(c.EndedEarly.Error(), "link type not supported") || len(c.Damage) != 0 {
		t.Errorf("ended early %v, damage %v", c.EndedEarly, c.Damage)
	}
}
