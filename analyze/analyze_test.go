package analyze_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// captures writes a routed capture pair to a temp dir.
func captures(t *testing.T, cfg analyzetest.Config) (snd, rcv string, tr analyzetest.Truth) {
	t.Helper()
	var sb, rb bytes.Buffer
	tr, err := analyzetest.Write(cfg, &sb, &rb)
	if err != nil {
		t.Fatal(err)
	}
	snd, rcv = writeCaptures(t, sb.Bytes(), rb.Bytes())
	return snd, rcv, tr
}

// writeCaptures writes a sender's and a receiver's capture to files in a
// temp dir.
func writeCaptures(t *testing.T, s, r []byte) (snd, rcv string) {
	t.Helper()
	dir := t.TempDir()
	snd, rcv = filepath.Join(dir, "s.pcap"), filepath.Join(dir, "r.pcap")
	if err := os.WriteFile(snd, s, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rcv, r, 0o644); err != nil {
		t.Fatal(err)
	}
	return snd, rcv
}

// openCaptures opens two capture files, closed when the test ends.
func openCaptures(t *testing.T, snd, rcv string) (s, r *analyze.Capture) {
	t.Helper()
	s, err := analyze.OpenCapture(snd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if r, err = analyze.OpenCapture(rcv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return s, r
}

func run(t *testing.T, snd, rcv string, cfg analyze.Config) ([]*report.Interval, analyze.Stats) {
	t.Helper()
	out, st, err := runStats(t, snd, rcv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

func runErr(t *testing.T, snd, rcv string, cfg analyze.Config) ([]*report.Interval, error) {
	out, _, err := runStats(t, snd, rcv, cfg)
	return out, err
}

func runStats(t *testing.T, snd, rcv string, cfg analyze.Config) ([]*report.Interval, analyze.Stats, error) {
	t.Helper()
	s, r := openCaptures(t, snd, rcv)
	var out []*report.Interval
	st, err := analyze.Run(s, r, cfg, func(iv *report.Interval) { out = append(out, iv) })
	return out, st, err
}

func relErr(est, truth float64) float64 { return math.Abs(est-truth) / math.Abs(truth) }

// TestRoutedCaptures is the routed-capture acceptance check: frames routed between
// the two ends (MACs, TTL, IPv4 checksum, DSCP rewritten, a VLAN tag
// pushed); with default settings the exact loss, the mean within 2 % at
// 0.1 % loss (5 % at 5 % loss) and the std-dev within 20 %.
func TestRoutedCaptures(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 60_000
	}
	for _, tc := range []struct {
		name     string
		loss     float64
		meanTol  float64
		nano, ng bool
	}{
		{"loss0.1%-pcap-us", 0.001, 0.02, false, false},
		{"loss5%-pcapng-ns", 0.05, 0.05, true, true},
		{"loss0-pcap-ns", 0, 0.02, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snd, rcv, tr := captures(t, analyzetest.Config{
				Packets: n, Rate: float64(n) / 1.5, Start: time.Unix(1_700_000_000, 250_000_000),
				Flows: 500, MeanDelay: 50 * time.Microsecond, Shape: 0.7, Loss: tc.loss, Seed: 7,
				IPv6Share: 0.3, NanoPcap: tc.nano, PcapNG: tc.ng,
			})
			out, st := run(t, snd, rcv, analyze.Config{LDA: synopsis.DefaultLDAConfig(), UseLDA: true, Truth: true})
			if len(out) != 1 || st.Intervals != 1 {
				t.Fatalf("got %d reports over %d intervals, want 1 (interval 0 = whole capture)", len(out), st.Intervals)
			}
			r := out[0]
			// analyze measures where both captures overlap: the truth
			// of the packets sent in that range.
			tr = tr.Within(st.RangeStartNs, st.RangeEndNs)
			t.Logf("truth: %v", tr)
			t.Logf("estimate: sent %d recv %d lost %d mean %.1f ±%.1f sd %.1f samples %d buckets %d/%d valid %v %s",
				r.Sent, r.Received, r.Lost, r.MeanNs, r.MeanCINs, r.StddevNs, r.Samples, r.Usable, r.Buckets, r.Valid, r.Reason)
			if r.Sent != tr.Sent || r.Received != tr.Received || r.Lost != tr.Lost {
				t.Errorf("counts sent/recv/lost = %d/%d/%d, want exactly %d/%d/%d", r.Sent, r.Received, r.Lost, tr.Sent, tr.Received, tr.Lost)
			}
			if !r.Valid {
				t.Fatalf("estimate not valid: %s", r.Reason)
			}
			if e := relErr(r.MeanNs, tr.MeanNs); e > tc.meanTol {
				t.Errorf("mean %.1f ns vs true %.1f: rel. error %.4f > %.2f", r.MeanNs, tr.MeanNs, e, tc.meanTol)
			}
			if e := relErr(r.StddevNs, tr.StddevNs); e > 0.20 {
				t.Errorf("stddev %.1f ns vs true %.1f: rel. error %.3f > 0.20", r.StddevNs, tr.StddevNs, e)
			}
			// The truth the analyzer computes by matching identities must be
			// the generator's.
			if *r.TrueLost != tr.Lost || relErr(*r.TrueMeanNs, tr.MeanNs) > 1e-9 || relErr(*r.TrueStddevNs, tr.StddevNs) > 1e-6 {
				t.Errorf("analyzer truth lost %d mean %.3f sd %.3f, generator %v", *r.TrueLost, *r.TrueMeanNs, *r.TrueStddevNs, tr)
			}
		})
	}
}

// TestIntervals checks interval alignment (multiples of --interval since the
// epoch) and that the per-interval counts add up to the exact totals.
func TestIntervals(t *testing.T) {
	snd, rcv, tr := captures(t, analyzetest.Config{
		Packets: 30_000, Rate: 10_000, Start: time.Unix(1_700_000_000, 600_000_000),
		MeanDelay: 20 * time.Microsecond, Loss: 0.01, Seed: 3,
	})
	out, st := run(t, snd, rcv, analyze.Config{Interval: time.Second, LDA: synopsis.DefaultLDAConfig(), UseLDA: true, Truth: true})
	tr = tr.Within(st.RangeStartNs, st.RangeEndNs)
	if st.Intervals != 4 || len(out) != 4 { // 3.0 s of traffic starting at .6 → seconds 0,1,2,3
		t.Fatalf("%d intervals, %d lines; want 4", st.Intervals, len(out))
	}
	var sent, recv, trueLost uint64
	for i, r := range out {
		if r.StartNs != r.Interval*1e9 || r.EndNs != r.StartNs+1e9 {
			t.Errorf("interval %d spans [%d,%d), not aligned to the second", r.Interval, r.StartNs, r.EndNs)
		}
		if i > 0 && r.Interval != out[i-1].Interval+1 {
			t.Errorf("intervals out of order: %d after %d", r.Interval, out[i-1].Interval)
		}
		sent += r.Sent
		recv += r.Received
		trueLost += *r.TrueLost
	}
	// Traffic starts at .6 and ends at 3.6: the first and last intervals are
	// cut by the common range and say which part was measured.
	if f, ok := out[0].Extra["measured_from_ns"].(int64); !ok || uint64(f) != st.RangeStartNs {
		t.Errorf("first interval: measured_from_ns %v, want %d", out[0].Extra["measured_from_ns"], st.RangeStartNs)
	}
	if f, ok := out[3].Extra["measured_to_ns"].(int64); !ok || uint64(f) != st.RangeEndNs+1 {
		t.Errorf("last interval: measured_to_ns %v, want %d", out[3].Extra["measured_to_ns"], st.RangeEndNs+1)
	}
	if sent != tr.Sent || recv != tr.Received || trueLost != tr.Lost {
		t.Errorf("Σsent %d Σrecv %d Σtrue_lost %d, want %d %d %d", sent, recv, trueLost, tr.Sent, tr.Received, tr.Lost)
	}
}

// TestBadCaptures: garbage is a clear error, a damaged tail a warning.
func TestBadCaptures(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pcap")
	os.WriteFile(garbage, bytes.Repeat([]byte("not a capture "), 100), 0o644)
	if _, err := analyze.OpenCapture(garbage); err == nil {
		t.Error("garbage file opened without error")
	} else {
		t.Log(err)
	}
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	if _, err := analyze.OpenCapture(empty); err == nil {
		t.Error("empty file opened without error")
	}
	if _, err := analyze.OpenCapture(filepath.Join(dir, "missing.pcap")); err == nil {
		t.Error("missing file opened without error")
	}

	// A damaged tail is an error naming the file and the record, never
	// loss; with InvalidateDamaged the interval it touches is invalid.
	snd, rcv, _ := captures(t, analyzetest.Config{Packets: 2000, Rate: 10_000, Start: time.Unix(1_700_000_000, 0), MeanDelay: 10 * time.Microsecond, Seed: 1})
	b, _ := os.ReadFile(rcv)
	os.WriteFile(rcv, b[:len(b)-37], 0o644) // cut inside the last record
	_, err := runErr(t, snd, rcv, analyze.Config{LDA: synopsis.DefaultLDAConfig(), UseLDA: true})
	var d *analyze.DamageError
	if !errors.As(err, &d) || d.Record != 2000 || !strings.Contains(err.Error(), rcv) {
		t.Fatalf("damaged tail: error %v, want a DamageError at record 2000 naming %s", err, rcv)
	}
	out, st := run(t, snd, rcv, analyze.Config{LDA: synopsis.DefaultLDAConfig(), UseLDA: true, InvalidateDamaged: true})
	if len(st.Damage) != 1 || len(out) != 1 || out[0].Valid || !strings.Contains(out[0].Reason, "record 2000") {
		t.Fatalf("damaged tail, invalidate: damage %v, lines %+v", st.Damage, out)
	}
}

// FuzzCapture: arbitrary bytes as a capture file (compressed or not)
// never panic, frames stay within the record bound, damage names its
// record and file, and a capture read again reads the same.
func FuzzCapture(f *testing.F) {
	var sb, rb bytes.Buffer
	analyzetest.Write(analyzetest.Config{Packets: 5, Rate: 1000, Start: time.Unix(1_700_000_000, 0), MeanDelay: time.Microsecond, Seed: 1, PcapNG: true}, &sb, &rb)
	f.Add(sb.Bytes())
	f.Add(rb.Bytes())
	f.Add([]byte{0xd4, 0xc3, 0xb2, 0xa1})
	for _, b := range [][]byte{gzipped(f, sb.Bytes()), zstded(f, rb.Bytes())} {
		f.Add(b)
		f.Add(b[:len(b)*2/3])
	}
	var cb, cr bytes.Buffer
	analyzetest.Write(analyzetest.Config{Packets: 5, Rate: 1000, Start: time.Unix(1_700_000_000, 0), MeanDelay: time.Microsecond, Seed: 2}, &cb, &cr)
	f.Add(multiInterface(f, cb.Bytes()))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := analyze.NewCapture("fuzz", bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := 0; i < 10000; i++ {
			f, _, ok := c.Next()
			if !ok {
				break
			}
			if len(f) > 256<<10+14 {
				t.Fatalf("frame of %d bytes: larger than any record the reader accepts", len(f))
			}
		}
		// Damage is named by the record it is in, and a stream that ended
		// early says so.
		for _, d := range c.Damage {
			if d.Record == 0 || d.File != "fuzz" || d.Error() == "" {
				t.Fatalf("damage without a record or file: %+v", d)
			}
			if !d.Local && c.EndedEarly == nil {
				t.Fatalf("damage %v ended the stream but EndedEarly is nil", d)
			}
		}
		frames, damage := c.Frames, len(c.Damage)
		if err := c.Rewind(); err != nil {
			t.Fatalf("rewind: %v", err)
		}
		for i := 0; i < 10000; i++ {
			if _, _, ok := c.Next(); !ok {
				break
			}
		}
		if c.Frames != frames || len(c.Damage) != damage {
			t.Fatalf("read again: %d frames and %d damaged records, first %d and %d", c.Frames, len(c.Damage), frames, damage)
		}
	})
}
