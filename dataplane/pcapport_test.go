package dataplane_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/pcapfile"
	"github.com/ldafwd/ldafwd/dataplane/porttest"
)

const t0 = uint64(1_700_000_000_123_456_789) // ns

// writePcap writes n generated frames with timestamps t0 + i*gap using
// pcapgo (the reference writer), classic ns pcap or pcapng with the given
// decimal resolution exponent.
func writePcap(t *testing.T, path string, ng bool, res uint8, n int, gap uint64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := traffic.MustGen(traffic.GenConfig{Size: 200})
	buf := make([]byte, g.Size())
	write := func(ci gopacket.CaptureInfo, d []byte) error { return nil }
	if ng {
		w, err := pcapgo.NewNgWriterInterface(f, pcapgo.NgInterface{LinkType: layers.LinkTypeEthernet, TimestampResolution: pcapgo.NgResolution(res)}, pcapgo.DefaultNgWriterOptions)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Flush()
		write = w.WritePacket
	} else {
		w := pcapgo.NewWriterNanos(f)
		if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		write = w.WritePacket
	}
	for i := range n {
		d := g.Frame(buf, uint64(i))
		ts := t0 + uint64(i)*gap
		if err := write(gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(ts)), CaptureLength: len(d), Length: len(d)}, d); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll receives everything from p at full speed.
func readAll(t *testing.T, p *dataplane.PcapPort) (ids, ts []uint64) {
	t.Helper()
	in := make([]*dataplane.Packet, 32)
	for !p.Done() {
		m := p.RxBurst(in)
		for _, q := range in[:m] {
			id, ok := traffic.FrameID(q.Data)
			if !ok {
				t.Fatalf("short frame %d bytes", len(q.Data))
			}
			ids = append(ids, id)
			ts = append(ts, q.TS)
		}
		p.Free(in[:m])
	}
	return ids, ts
}

func TestPcapRead(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		ng   bool
		res  uint8
		unit uint64 // timestamp granularity, ns
	}{{"classic-ns", false, 0, 1}, {"pcapng-ns", true, 9, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			writePcap(t, path, tt.ng, tt.res, 1000, 1234)
			p, err := dataplane.NewPcapPort("pcap:"+path, dataplane.PcapConfig{Rx: path})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ids, ts := readAll(t, p)
			if len(ids) != 1000 {
				t.Fatalf("read %d frames, want 1000", len(ids))
			}
			for i := range ids {
				want := (t0 + uint64(i)*1234) / tt.unit * tt.unit
				if ids[i] != uint64(i) || ts[i] != want {
					t.Fatalf("frame %d: id %d ts %d, want ts %d", i, ids[i], ts[i], want)
				}
			}
			if st := p.Stats(); st.RxPackets != 1000 || st.RxErrors != 0 || st.RxBytes != 200_000 {
				t.Errorf("stats %+v", st)
			}
			if p.RxErr() != nil {
				t.Errorf("RxErr %v at a clean end", p.RxErr())
			}
		})
	}
}

func TestPcapWriteRoundTrip(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pcap")
	p, err := dataplane.OpenPcapPort("pcap:,tx=" + out)
	if err != nil {
		t.Fatal(err)
	}
	g := traffic.MustGen(traffic.GenConfig{Flows: 5})
	pkts := make([]*dataplane.Packet, 16)
	clockless := 0
	for next := 0; next < 100; {
		k := p.Alloc(pkts)
		for i, q := range pkts[:k] {
			q.Data = g.Frame(q.Data, uint64(next+i))
		}
		if took := p.TxBurst(pkts[:k]); took != k {
			t.Fatalf("TxBurst took %d of %d", took, k)
		}
		next += k
		clockless++
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// The reference reader sees the same frames with ns timestamps.
	f, _ := os.Open(out)
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if hdr, _ := os.ReadFile(out); len(hdr) < 4 || binary.LittleEndian.Uint32(hdr) != 0xa1b23c4d {
		t.Errorf("file magic % x, want the ns-resolution pcap magic", hdr[:4])
	}
	want := make([]byte, g.Size())
	for i := range 100 {
		d, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(d, g.Frame(want, uint64(i))) {
			t.Fatalf("frame %d differs", i)
		}
		if d := time.Since(ci.Timestamp); d < 0 || d > time.Hour {
			t.Fatalf("frame %d: timestamp %v is not the realtime clock", i, ci.Timestamp)
		}
	}
	// A read-write port copies a capture with its own timestamps.
	src := filepath.Join(dir, "src.pcapng")
	writePcap(t, src, true, 9, 300, 777)
	dst := filepath.Join(dir, "dst.pcap")
	cp, err := dataplane.NewPcapPort("copy", dataplane.PcapConfig{Rx: src, Tx: dst, TxPacketTS: true})
	if err != nil {
		t.Fatal(err)
	}
	in := make([]*dataplane.Packet, 32)
	for !cp.Done() {
		m := cp.RxBurst(in)
		if took := cp.TxBurst(in[:m]); took != m {
			t.Fatalf("TxBurst took %d of %d", took, m)
		}
	}
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}
	rp, err := dataplane.NewPcapPort("check", dataplane.PcapConfig{Rx: dst})
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	ids, ts := readAll(t, rp)
	if len(ids) != 300 || ts[299] != t0+299*777 || ids[299] != 299 {
		t.Fatalf("copy: %d frames, last id %d ts %d", len(ids), ids[len(ids)-1], ts[len(ts)-1])
	}
}

// goodCaptures writes ten 200-byte frames 1 µs apart as a classic ns pcap
// and as a ns pcapng file in dir and returns both files' bytes.
func goodCaptures(t *testing.T, dir string) (classic, ng []byte) {
	t.Helper()
	c, n := filepath.Join(dir, "good.pcap"), filepath.Join(dir, "good.pcapng")
	writePcap(t, c, false, 0, 10, 1000)
	writePcap(t, n, true, 9, 10, 1000)
	classic, err := os.ReadFile(c)
	if err != nil {
		t.Fatal(err)
	}
	if ng, err = os.ReadFile(n); err != nil {
		t.Fatal(err)
	}
	return classic, ng
}

// TestPcapMalformed: a file that is not a capture is an error at open; a
// truncated record ends the stream with a counted error, never a panic.
func TestPcapMalformed(t *testing.T) {
	dir := t.TempDir()
	goodBytes, ngBytes := goodCaptures(t, dir)
	open := func(data []byte) (*dataplane.PcapPort, error) {
		path := filepath.Join(dir, "x")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return dataplane.NewPcapPort("x", dataplane.PcapConfig{Rx: path})
	}
	linkRaw := bytes.Clone(goodBytes)
	linkRaw[20] = 101
	badVersion := bytes.Clone(goodBytes)
	badVersion[4] = 3
	badBOM := bytes.Clone(ngBytes)
	badBOM[8] = 0
	for name, data := range map[string][]byte{
		"empty": {}, "short": goodBytes[:10], "text": []byte("hello, this is not a capture file at all"),
		"raw-ip link type": linkRaw, "version 3": badVersion, "pcapng bad byte order": badBOM,
	} {
		if p, err := open(data); err == nil {
			p.Close()
			t.Errorf("%s: opened without error", name)
		} else if !errors.Is(err, dataplane.ErrPcapFormat) {
			t.Errorf("%s: %v does not wrap ErrPcapFormat", name, err)
		}
	}
	// Truncated: the file ends inside record 6 (classic: 24-byte header,
	// 16+200 bytes per record).
	for name, c := range map[string]struct {
		data []byte
		want int
	}{
		"classic mid-record": {goodBytes[:24+5*216+100], 5},
		"classic mid-header": {goodBytes[:24+5*216+7], 5},
		"pcapng mid-block":   {ngBytes[:len(ngBytes)-150], 9},
	} {
		p, err := open(c.data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ids, _ := readAll(t, p)
		if len(ids) != c.want || p.Stats().RxErrors != 1 || p.RxErr() == nil {
			t.Errorf("%s: %d frames (want %d), stats %+v, err %v", name, len(ids), c.want, p.Stats(), p.RxErr())
		}
		p.Close()
	}
	// A forged 4 GiB capture length is malformed, not an allocation.
	forged := bytes.Clone(goodBytes)
	forged[24+8], forged[24+9], forged[24+10], forged[24+11] = 0xff, 0xff, 0xff, 0xff
	p, err := open(forged)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := readAll(t, p); len(ids) != 0 || p.Stats().RxErrors != 1 {
		t.Errorf("forged length: %d frames, stats %+v", len(ids), p.Stats())
	}
	p.Close()
}

// TestPcapDamaged: damage the reader can prove (a pcapng block whose
// trailing length disagrees with its leading one, an impossible classic
// timestamp) stops the port after the good frames before it, with one
// counted error naming the file, the record and its byte offset.
func TestPcapDamaged(t *testing.T) {
	dir := t.TempDir()
	classicBytes, ngBytes := goodCaptures(t, dir)

	// pcapgo writes each 200-byte frame as an option-less 232-byte
	// Enhanced Packet Block, the last ten blocks of the file.
	const epb = 12 + 20 + 200
	ep4 := len(ngBytes) - 6*epb // the fifth packet block
	if binary.LittleEndian.Uint32(ngBytes[ep4:]) != 6 || binary.LittleEndian.Uint32(ngBytes[ep4+4:]) != epb {
		t.Fatalf("pcapng layout: block at %d is not a %d-byte EPB", ep4, epb)
	}
	badTrailer := bytes.Clone(ngBytes)
	binary.LittleEndian.PutUint32(badTrailer[ep4+epb-4:], epb+4)
	badTS := bytes.Clone(classicBytes)
	binary.LittleEndian.PutUint32(badTS[24+2*216+4:], 1_000_000_000) // ns field of record 3
	for name, c := range map[string]struct {
		data   []byte
		frames int
		record uint64
		offset uint64
	}{
		"pcapng trailer": {badTrailer, 4, 5, uint64(ep4)},
		"classic ts":     {badTS, 2, 3, 24 + 2*216},
	} {
		path := filepath.Join(dir, "damaged")
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := dataplane.NewPcapPort("x", dataplane.PcapConfig{Rx: path})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ids, _ := readAll(t, p)
		var d *pcapfile.DamageError
		if len(ids) != c.frames || p.Stats().RxErrors != 1 || !errors.As(p.RxErr(), &d) ||
			d.File != path || d.Record != c.record || d.Offset != c.offset {
			t.Errorf("%s: %d frames (want %d), stats %+v, err %v (want record %d at offset %d of %s)",
				name, len(ids), c.frames, p.Stats(), p.RxErr(), c.record, c.offset, path)
		}
		p.Close()
	}
}

// TestPcapOversizeSkipped: a record longer than the MTU is skipped and
// counted; the stream goes on.
func TestPcapOversizeSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.pcap")
	writePcap(t, path, false, 0, 20, 1) // 200-byte frames
	p, err := dataplane.NewPcapPort("x", dataplane.PcapConfig{Rx: path, MTU: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in := make([]*dataplane.Packet, 8)
	for !p.Done() {
		if m := p.RxBurst(in); m != 0 {
			t.Fatalf("got %d frames bigger than the MTU", m)
		}
	}
	if st := p.Stats(); st.RxErrors != 20 || p.RxErr() != nil {
		t.Errorf("stats %+v err %v", st, p.RxErr())
	}
}

// TestPcapPace replays at file pace on a virtual clock: a frame is
// released only when the clock has advanced by its offset in the file.
func TestPcapPace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paced.pcapng")
	writePcap(t, path, true, 9, 10, 1000) // frames 1 µs apart
	clk := &vclock{now: 5_000_000}
	p, err := dataplane.NewPcapPort("x", dataplane.PcapConfig{Rx: path, Pace: true, Clock: clk.read})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in := make([]*dataplane.Packet, 32)
	got := 0
	for step := 0; step < 40; step++ {
		m := p.RxBurst(in)
		for _, q := range in[:m] {
			id, _ := traffic.FrameID(q.Data)
			if id != uint64(got) || q.TS != 5_000_000+id*1000 {
				t.Fatalf("clock %d: frame %d ts %d", clk.now, id, q.TS)
			}
			got++
		}
		p.Free(in[:m])
		if want := min(10, int((clk.now-5_000_000)/1000)+1); got != want {
			t.Fatalf("clock +%d ns: %d frames released, want %d", clk.now-5_000_000, got, want)
		}
		clk.now += 250
	}
	if !p.Done() {
		t.Error("not done after the last frame")
	}
}

func TestPcapPortConformance(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.pcap")
	writePcap(t, src, false, 0, 50, 10)
	p, err := dataplane.OpenPcapPort("pcap:" + src + ",tx=" + filepath.Join(dir, "out.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	porttest.CheckPort(t, p)
	for _, spec := range []string{"pcap:", "file.pcap", "pcap:" + src + ",speed=2", "pcap:" + filepath.Join(dir, "missing.pcap")} {
		if p, err := dataplane.OpenPcapPort(spec); err == nil {
			p.Close()
			t.Errorf("OpenPcapPort(%q) succeeded", spec)
		}
	}
}

func TestPcapZeroAllocs(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.pcapng")
	writePcap(t, src, true, 9, 5000, 10)
	p, err := dataplane.NewPcapPort("x", dataplane.PcapConfig{Rx: src, Tx: filepath.Join(dir, "out.pcap")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in := make([]*dataplane.Packet, 32)
	p.TxBurst(in[:p.RxBurst(in)]) // warm up
	a := testing.AllocsPerRun(100, func() {
		m := p.RxBurst(in)
		p.TxBurst(in[:m])
	})
	if a != 0 {
		t.Errorf("%v allocations per rx+tx burst, want 0", a)
	}
	if p.Stats().RxPackets < 100*32 {
		t.Errorf("only %d frames read", p.Stats().RxPackets)
	}
}

// ngFile builds a pcapng file by hand (pcapgo's writer always uses ns and
// little-endian): one section in the given byte order, one Ethernet
// interface with if_tsresol = res and if_tsoffset = off seconds, and one
// Enhanced Packet Block per frame with raw timestamp ts[i].
func ngFile(order binary.AppendByteOrder, res uint8, off uint64, frames [][]byte, ts []uint64) []byte {
	var b []byte
	u16 := func(v uint16) { b = order.AppendUint16(b, v) }
	u32 := func(v uint32) { b = order.AppendUint32(b, v) }
	u32(0x0a0d0d0a)
	u32(28)
	u32(0x1a2b3c4d)
	u16(1)
	u16(0)
	b = order.AppendUint64(b, ^uint64(0)) // section length unknown
	u32(28)
	// IDB: 16 header + tsresol (4+4) + tsoffset (4+8) + end (4) + 4 trailer.
	u32(1)
	u32(44)
	u16(1) // Ethernet
	u16(0)
	u32(0)
	u16(9)
	u16(1)
	b = append(b, res, 0, 0, 0)
	u16(14)
	u16(8)
	b = order.AppendUint64(b, off)
	u32(0)
	u32(44)
	for i, f := range frames {
		pad := (4 - len(f)%4) % 4
		total := uint32(32 + len(f) + pad)
		u32(6)
		u32(total)
		u32(0)
		u32(uint32(ts[i] >> 32))
		u32(uint32(ts[i]))
		u32(uint32(len(f)))
		u32(uint32(len(f)))
		b = append(b, f...)
		b = append(b, make([]byte, pad)...)
		u32(total)
	}
	return b
}

func TestPcapngResolutions(t *testing.T) {
	g := traffic.MustGen(traffic.GenConfig{Size: 99}) // odd length: padding
	frames := [][]byte{g.Frame(make([]byte, 99), 0), g.Frame(make([]byte, 99), 1)}
	for _, tt := range []struct {
		name  string
		order binary.AppendByteOrder
		res   uint8
		off   uint64
		raw   []uint64
		want  []uint64
	}{
		{"us little-endian", binary.LittleEndian, 6, 0, []uint64{1_700_000_000_000_001, 1_700_000_000_000_002}, []uint64{1_700_000_000_000_001_000, 1_700_000_000_000_002_000}},
		{"ns big-endian", binary.BigEndian, 9, 0, []uint64{5, 7}, []uint64{5, 7}},
		{"ps", binary.LittleEndian, 12, 0, []uint64{5_000, 7_999}, []uint64{5, 7}},
		{"2^-10 s with offset", binary.BigEndian, 0x80 | 10, 100, []uint64{1024, 512}, []uint64{101_000_000_000, 100_500_000_000}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.pcapng")
			os.WriteFile(path, ngFile(tt.order, tt.res, tt.off, frames, tt.raw), 0o644)
			p, err := dataplane.NewPcapPort("x", dataplane.PcapConfig{Rx: path})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ids, ts := readAll(t, p)
			if len(ids) != 2 || ts[0] != tt.want[0] || ts[1] != tt.want[1] || p.RxErr() != nil {
				t.Fatalf("ids %v ts %v (want %v), err %v", ids, ts, tt.want, p.RxErr())
			}
		})
	}
}
