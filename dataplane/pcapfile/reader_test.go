package pcapfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

type rec struct {
	frame []byte
	link  uint32
	ts    uint64
	orig  int
	err   error
}

// readAll reads data to its end with a dst of size bytes; the loop is
// bounded because every record consumes at least 12 bytes.
func readAll(t *testing.T, data []byte, size int) ([]rec, error) {
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	dst := make([]byte, size)
	var out []rec
	for range len(data) + 1 {
		frame, link, ts, orig, err := r.Next(dst)
		if len(frame) > size || (err == nil && orig < len(frame)) {
			t.Fatalf("frame of %d bytes (orig %d) from a %d-byte buffer", len(frame), orig, size)
		}
		out = append(out, rec{bytes.Clone(frame), link, ts, orig, err})
		var d *DamageError
		switch {
		case err == nil, err == ErrTooLong:
		case errors.As(err, &d) && d.Local:
		default:
			return out, nil
		}
	}
	t.Fatal("reader did not end")
	return nil, nil
}

func seeds() [][]byte {
	var classic bytes.Buffer
	w := pcapgo.NewWriterNanos(&classic)
	w.WriteFileHeader(65536, layers.LinkTypeEthernet)
	var ng bytes.Buffer
	nw, _ := pcapgo.NewNgWriter(&ng, layers.LinkTypeRaw)
	for i := range 3 {
		d := bytes.Repeat([]byte{byte(i)}, 60+100*i)
		w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(1, int64(i)), CaptureLength: len(d), Length: len(d)}, d)
		nw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(2, int64(i)), CaptureLength: len(d), Length: len(d) + 5}, d)
	}
	nw.Flush()
	c, n := classic.Bytes(), ng.Bytes()
	badTS := bytes.Clone(c)
	binary.LittleEndian.PutUint32(badTS[24+4:], 1e9)
	return [][]byte{c, n, c[:len(c)-5], n[:len(n)-5], badTS, {}, []byte("\x0a\x0d\x0d\x0a")}
}

// FuzzReader: any bytes fail at open or read to an end without panicking
// or looping, and the buffer size changes nothing but which records are
// skipped as too long: read with a 100-byte buffer and with a MaxRecord
// one, the same records come out in the same order with the same errors,
// except that a frame longer than 100 bytes is ErrTooLong in the first.
func FuzzReader(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		small, err := readAll(t, data, 100)
		if err != nil {
			if !errors.Is(err, ErrNotCapture) && !errors.Is(err, ErrUnsupportedLink) {
				t.Fatalf("open error %v wraps neither ErrNotCapture nor ErrUnsupportedLink", err)
			}
			return
		}
		big, _ := readAll(t, data, MaxRecord)
		if len(small) != len(big) {
			t.Fatalf("%d records with a small buffer, %d with a big one", len(small), len(big))
		}
		for i, s := range small {
			b := big[i]
			switch {
			case s.err == ErrTooLong:
				if b.err != nil || len(b.frame) <= 100 {
					t.Fatalf("record %d: too long for 100 bytes, but %d bytes, %v with a big buffer", i, len(b.frame), b.err)
				}
			case s.err == nil:
				if b.err != nil || !bytes.Equal(s.frame, b.frame) || s.link != b.link || s.ts != b.ts || s.orig != b.orig {
					t.Fatalf("record %d: %+v with a small buffer, %+v with a big one", i, s, b)
				}
			case s.err == io.EOF || b.err == io.EOF:
				if s.err != b.err {
					t.Fatalf("record %d: end %v vs %v", i, s.err, b.err)
				}
			default:
				if b.err == nil || b.err == ErrTooLong {
					t.Fatalf("record %d: error %v with a small buffer, none with a big one", i, s.err)
				}
			}
		}
	})
}

// TestSeeds: the well-formed seeds read back what pcapgo wrote, with the
// raw-IP link type and original lengths kept, and the damaged ones end
// where the damage is.
func TestSeeds(t *testing.T) {
	s := seeds()
	ng, err := readAll(t, s[1], MaxRecord)
	if err != nil || len(ng) != 4 || ng[3].err != io.EOF {
		t.Fatalf("pcapng: %+v, %v", ng, err)
	}
	for i, r := range ng[:3] {
		if r.err != nil || r.link != LinkRaw || len(r.frame) != 60+100*i || r.orig != 65+100*i || r.ts != 2e9+uint64(i) || r.frame[0] != byte(i) {
			t.Errorf("pcapng record %d: %d bytes, link %d, orig %d, ts %d, %v", i, len(r.frame), r.link, r.orig, r.ts, r.err)
		}
	}
	small, _ := readAll(t, s[0], 100)
	if len(small) != 4 || small[0].err != nil || small[1].err != ErrTooLong || small[2].err != ErrTooLong || small[3].err != io.EOF {
		t.Errorf("classic with a 100-byte buffer: %+v", small)
	}
	cut, _ := readAll(t, s[2], MaxRecord)
	var d *DamageError
	if len(cut) != 3 || !errors.As(cut[2].err, &d) || d.Record != 3 || d.Local {
		t.Errorf("truncated classic: %+v", cut)
	}
	bad, _ := readAll(t, s[4], MaxRecord)
	if len(bad) != 4 || !errors.As(bad[0].err, &d) || !d.Local || d.Record != 1 || bad[1].err != nil || bad[3].err != io.EOF {
		t.Errorf("impossible timestamp: %+v", bad)
	}
}

// TestLocalUseBlockIsDamage: a pcapng block reserved for local use — what
// one flipped bit makes of an enhanced packet block's type — is skipped
// and reported as a local damage (the rest of the file reads on): the
// packet it may have held must not vanish unnoticed.
func TestLocalUseBlockIsDamage(t *testing.T) {
	var ng bytes.Buffer
	nw, _ := pcapgo.NewNgWriter(&ng, layers.LinkTypeRaw)
	for i := range 3 {
		d := bytes.Repeat([]byte{byte(i)}, 60)
		nw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(2, int64(i)), CaptureLength: len(d), Length: len(d)}, d)
	}
	nw.Flush()
	b := ng.Bytes()
	// The second enhanced packet block (type 6), found by scanning blocks.
	off, epb := 0, 0
	for off+8 <= len(b) {
		typ, n := binary.LittleEndian.Uint32(b[off:]), int(binary.LittleEndian.Uint32(b[off+4:]))
		if typ == 6 {
			if epb++; epb == 2 {
				break
			}
		}
		off += n
	}
	b[off+3] ^= 0x80
	recs, err := readAll(t, b, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var good, local int
	for _, r := range recs {
		var d *DamageError
		switch {
		case r.err == nil:
			good++
		case errors.As(r.err, &d) && d.Local:
			local++
		}
	}
	if good != 2 || local != 1 {
		t.Fatalf("%d packets and %d local damages, want 2 and 1: %+v", good, local, recs)
	}
}

// TestReadFrames: every frame of a well-formed capture, copied; the
// frames before the damage and the damage of a truncated one.
func TestReadFrames(t *testing.T) {
	s := seeds()
	fs, err := ReadFrames(bytes.NewReader(s[1]))
	if err != nil || len(fs) != 3 {
		t.Fatalf("pcapng: %d frames, %v", len(fs), err)
	}
	for i, f := range fs {
		if len(f) != 60+100*i || f[0] != byte(i) {
			t.Errorf("frame %d: %d bytes, first %d", i, len(f), f[0])
		}
	}
	var d *DamageError
	if fs, err := ReadFrames(bytes.NewReader(s[2])); len(fs) != 2 || !errors.As(err, &d) {
		t.Errorf("truncated classic: %d frames, %v", len(fs), err)
	}
	if _, err := ReadFrames(bytes.NewReader([]byte("not a capture"))); err == nil {
		t.Error("no error for a file that is no capture")
	}
}

// TestTimestampPastInt64: a pcapng timestamp that fits 64 bits of
// nanoseconds but not 63 (past the year 2262) is an impossible timestamp,
// a local damage: the analyses subtract timestamps as int64.
func TestTimestampPastInt64(t *testing.T) {
	b := append([]byte(nil), seeds()[1]...)
	off := 0
	for binary.LittleEndian.Uint32(b[off:]) != 6 {
		off += int(binary.LittleEndian.Uint32(b[off+4:]))
	}
	const ns = 10_000_000_000_000_000_000 // the seed's interface stamps in ns
	binary.LittleEndian.PutUint32(b[off+12:], ns>>32)
	binary.LittleEndian.PutUint32(b[off+16:], ns&0xffffffff)
	recs, _ := readAll(t, b, MaxRecord)
	var d *DamageError
	if len(recs) != 4 || !errors.As(recs[0].err, &d) || !d.Local || d.Record != 1 || !strings.Contains(d.What, "impossible timestamp") || recs[1].err != nil {
		t.Fatalf("a timestamp past 2^63 ns: %+v", recs)
	}
}
