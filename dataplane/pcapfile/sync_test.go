package pcapfile

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// syncFile is a capture of n frames of varied lengths, one every 10 µs,
// whose payloads hold zeros and the start of a record header (what a
// search for a record must not take for one): classic pcap with µs or
// ns stamps ("us", "ns"), or pcapng ("ng").
func syncFile(t testing.TB, n int, kind string) []byte {
	var b bytes.Buffer
	var write func(ci gopacket.CaptureInfo, d []byte) error
	flush := func() error { return nil }
	switch kind {
	case "us", "ns":
		w := pcapgo.NewWriter(&b)
		if kind == "ns" {
			w = pcapgo.NewWriterNanos(&b)
		}
		w.WriteFileHeader(65536, layers.LinkTypeEthernet)
		write = w.WritePacket
	case "ng":
		w, err := pcapgo.NewNgWriter(&b, layers.LinkTypeEthernet)
		if err != nil {
			t.Fatal(err)
		}
		write, flush = w.WritePacket, w.Flush
	}
	t0 := time.Unix(1_700_000_000, 0)
	for i := range n {
		d := make([]byte, 60+(i*37)%900)
		copy(d[20:], []byte{6, 0, 0, 0, 0x40, 0, 0, 0, 0x20, 0, 0, 0, 0x20, 0, 0, 0})
		d[0] = byte(i)
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * 10 * time.Microsecond), CaptureLength: len(d), Length: len(d)}
		if err := write(ci, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSyncFindsRecords: from any offset of a capture, Sync finds the
// next record start, exactly one a reader from the file's start meets,
// with its timestamp; and a reader At that offset reads the rest of the
// file as the reader from the start does.
func TestSyncFindsRecords(t *testing.T) {
	for _, kind := range []string{"us", "ns", "ng"} {
		data := syncFile(t, 400, kind)
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, MaxRecord)
		starts := map[uint64]uint64{}
		var order []uint64
		for {
			_, _, ts, _, err := r.Next(dst)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			starts[r.Start()] = ts
			order = append(order, r.Start())
		}
		for off := uint64(0); off < uint64(len(data)); off += 97 {
			at, ts, ok := r.Sync(data[off:], off, 0, 1_600_000_000e9)
			// The first record at or after off.
			var want uint64
			found := false
			for _, s := range order {
				if s >= off {
					want, found = s, true
					break
				}
			}
			if tail := len(order) - 1; !found || want > order[max(tail-SyncChain+1, 0)] {
				if ok && starts[at] == 0 {
					t.Fatalf("%s: offset %d: sync at %d, no record starts there", kind, off, at)
				}
				continue
			}
			if !ok || at != want || ts != starts[want] {
				t.Fatalf("%s: offset %d: sync gave %d (ts %d, ok %v), want %d (ts %d)", kind, off, at, ts, ok, want, starts[want])
			}
			// Read the rest from there.
			a := r.At(bytes.NewReader(data[at:]), at)
			i := 0
			for i = range order {
				if order[i] == at {
					break
				}
			}
			for ; i < len(order); i++ {
				_, _, got, _, err := a.Next(dst)
				if err != nil || a.Start() != order[i] || got != starts[order[i]] {
					t.Fatalf("%s: from %d: record at %d (ts %d, %v), want %d", kind, at, a.Start(), got, err, order[i])
				}
			}
			if _, _, _, _, err := a.Next(dst); err != io.EOF {
				t.Fatalf("%s: from %d: %v at the end, want EOF", kind, at, err)
			}
		}
	}
}

// FuzzSync: Sync on any bytes neither panics nor names a start from
// which SyncChain records do not read.
func FuzzSync(f *testing.F) {
	for _, kind := range []string{"us", "ns", "ng"} {
		data := syncFile(f, 20, kind)
		f.Add(data, uint16(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		dst := make([]byte, MaxRecord)
		r.Next(dst) // a pcapng file's interfaces
		from := min(int(cut), len(data))
		at, _, ok := r.Sync(data[from:], uint64(from), 1e9, 0)
		if !ok {
			return
		}
		if at < uint64(from) || at >= uint64(len(data)) {
			t.Fatalf("sync at %d, outside [%d, %d)", at, from, len(data))
		}
		a := r.At(bytes.NewReader(data[at:]), at)
		for i := range SyncChain {
			if _, _, _, _, err := a.Next(dst); err != nil {
				t.Fatalf("record %d from the sync point %d: %v", i, at, err)
			}
		}
	})
}
