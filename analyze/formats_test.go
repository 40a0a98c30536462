package analyze_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/dataplane/pcapfile"
	"github.com/ldafwd/ldafwd/synopsis"
)

func gzipped(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func zstded(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	w, err := zstd.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// multiInterface rewrites a classic pcap capture as pcapng with three
// interfaces that take its records in turn, each with its own timestamp
// resolution and offset: µs (the default), ns, and ns with if_tsoffset
// 1000 s (its stamps 1000 s smaller). The frames and their times are the
// capture's own.
func multiInterface(t testing.TB, classic []byte) []byte {
	rd, err := pcapfile.NewReader(bytes.NewReader(classic))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	le := binary.LittleEndian
	block := func(typ uint32, body []byte) {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(12 + len(body))
		out.Write(le.AppendUint32(le.AppendUint32(nil, typ), n))
		out.Write(body)
		out.Write(le.AppendUint32(nil, n))
	}
	shb := le.AppendUint32(nil, 0x1a2b3c4d)
	shb = le.AppendUint16(le.AppendUint16(shb, 1), 0)
	shb = le.AppendUint64(shb, ^uint64(0))
	block(0x0a0d0d0a, shb)
	idb := func(opts []byte) {
		b := le.AppendUint16(nil, pcapfile.LinkEthernet)
		b = le.AppendUint16(b, 0)
		b = le.AppendUint32(b, 0)
		b = append(b, opts...)
		if len(opts) > 0 {
			b = append(b, 0, 0, 0, 0) // opt_endofopt
		}
		block(1, b)
	}
	idb(nil)                            // 10^-6 s
	idb([]byte{9, 0, 1, 0, 9, 0, 0, 0}) // if_tsresol 10^-9 s
	off := le.AppendUint64([]byte{14, 0, 8, 0}, 1000)
	idb(append([]byte{9, 0, 1, 0, 9, 0, 0, 0}, off...)) // ns, if_tsoffset 1000 s
	buf := make([]byte, pcapfile.MaxRecord)
	for i := 0; ; i++ {
		frame, _, ts, orig, err := rd.Next(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ifc := i % 3
		units := ts / 1000 // µs
		switch ifc {
		case 1:
			units = ts
		case 2:
			units = ts - 1000*1e9
		}
		b := le.AppendUint32(nil, uint32(ifc))
		b = le.AppendUint32(le.AppendUint32(b, uint32(units>>32)), uint32(units))
		b = le.AppendUint32(le.AppendUint32(b, uint32(len(frame))), uint32(orig))
		block(6, append(b, frame...))
	}
	return out.Bytes()
}

// TestInputFormats: a capture pair analyzed as classic pcap, as pcapng
// with several interfaces of different timestamp resolutions and offsets,
// and gzip- or zstd-compressed, gives the same lines and statistics.
func TestInputFormats(t *testing.T) {
	n := 30_000
	if testing.Short() {
		n = 8_000 // the race pass: the formats agree or not at any size
	}
	var sb, rb bytes.Buffer
	if _, err := analyzetest.Write(analyzetest.Config{Packets: n, Rate: 20_000, Start: time.Unix(1_700_000_000, 0),
		MeanDelay: 40 * time.Microsecond, Loss: 0.005, Seed: 21, IPv6Share: 0.3}, &sb, &rb); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := analyze.Config{Interval: 500 * time.Millisecond, UseLDA: true, LDA: synopsis.DefaultLDAConfig(), Truth: true}
	render := func(snd, rcv string) string {
		out, st := run(t, snd, rcv, cfg)
		b, err := json.Marshal(struct {
			Lines any
			St    analyze.Summary
		}{out, *analyze.NewSummary(st)})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := render(write("s.pcap", sb.Bytes()), write("r.pcap", rb.Bytes()))
	ng := multiInterface(t, sb.Bytes())
	for _, tc := range []struct {
		name     string
		snd, rcv []byte
	}{
		{"pcapng-3-interfaces", ng, rb.Bytes()},
		{"gzip", gzipped(t, sb.Bytes()), gzipped(t, rb.Bytes())},
		{"zstd", zstded(t, sb.Bytes()), zstded(t, rb.Bytes())},
		{"pcapng-3-interfaces.zst+gzip", zstded(t, ng), gzipped(t, rb.Bytes())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := render(write(tc.name+".s", tc.snd), write(tc.name+".r", tc.rcv))
			if got != want {
				t.Errorf("%s: lines differ from the classic pcap's:\n%.400s\nwant\n%.400s", tc.name, got, want)
			}
		})
	}
}

// TestCompressedDamage: a compressed capture cut short is damage that
// names the compressed stream; one whose compressed bytes are corrupt is
// refused naming the file (as damage of the compressed stream when the
// decompressor notices before the garbage it decoded reads as a bad
// capture; zstd checks its checksum only at the end of a frame). Never
// a panic, never loss.
func TestCompressedDamage(t *testing.T) {
	var sb, rb bytes.Buffer
	if _, err := analyzetest.Write(analyzetest.Config{Packets: 20_000, Rate: 20_000, Start: time.Unix(1_700_000_000, 0),
		MeanDelay: 40 * time.Microsecond, Seed: 22}, &sb, &rb); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	snd := filepath.Join(dir, "s.pcap")
	os.WriteFile(snd, sb.Bytes(), 0o644)
	gz, zs := gzipped(t, rb.Bytes()), zstded(t, rb.Bytes())
	corrupt := func(b []byte) []byte {
		c := bytes.Clone(b)
		for i := len(c) / 2; i < len(c)/2+64; i++ {
			c[i] ^= 0x5a
		}
		return c
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"gzip-truncated", gz[:len(gz)/2], "gzip stream damaged"},
		{"gzip-corrupt", corrupt(gz), "gzip stream damaged"},
		{"zstd-truncated", zs[:len(zs)/2], "zstd stream damaged"},
		{"zstd-corrupt", corrupt(zs), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := filepath.Join(dir, tc.name)
			os.WriteFile(rcv, tc.b, 0o644)
			out, err := runErr(t, snd, rcv, analyze.Config{Interval: time.Second, UseLDA: true, LDA: synopsis.DefaultLDAConfig()})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), rcv) {
				t.Fatalf("error %v, want one naming %s and %q", err, rcv, tc.want)
			}
			if len(out) != 0 {
				t.Fatalf("%d lines from a damaged pair", len(out))
			}
		})
	}
}
