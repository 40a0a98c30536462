package dataplane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/ldafwd/ldafwd/dataplane/pcapfile"
)

type pcapFrame struct {
	data []byte
	ts   uint64
}

// readPcapBytes reads a whole capture from memory as the pcap port does:
// opened by openPcapRx, Ethernet frames kept, raw-IP frames and frames
// longer than mtu skipped.
func readPcapBytes(data []byte, mtu int) (frames []pcapFrame, skipped int, end error, open error) {
	r, err := openPcapRx(bytes.NewReader(data))
	if err != nil {
		return nil, 0, nil, err
	}
	buf := make([]byte, mtu)
	for range len(data) + 1 { // every record consumes ≥ 12 bytes: this bounds the loop
		frame, link, ts, _, err := r.Next(buf)
		switch {
		case err == nil && link == pcapfile.LinkEthernet:
			frames = append(frames, pcapFrame{bytes.Clone(frame), ts})
		case err == nil, err == pcapfile.ErrTooLong:
			skipped++
		default:
			return frames, skipped, err, nil
		}
	}
	panic("pcap reader did not end")
}

func pcapSeeds() [][]byte {
	var classic bytes.Buffer
	w := pcapgo.NewWriterNanos(&classic)
	w.WriteFileHeader(65536, layers.LinkTypeEthernet)
	for i := range 3 {
		d := bytes.Repeat([]byte{byte(i)}, 60+i)
		w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(1, int64(i)), CaptureLength: len(d), Length: len(d)}, d)
	}
	var ng bytes.Buffer
	nw, _ := pcapgo.NewNgWriter(&ng, layers.LinkTypeEthernet)
	for i := range 3 {
		d := bytes.Repeat([]byte{byte(i)}, 61+i)
		nw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(2, int64(i)), CaptureLength: len(d), Length: len(d)}, d)
	}
	nw.Flush()
	c, n := classic.Bytes(), ng.Bytes()
	forged := bytes.Clone(c)
	binary.LittleEndian.PutUint32(forged[24+8:], 0xffffffff)
	badBlock := bytes.Clone(n)
	binary.LittleEndian.PutUint32(badBlock[4:], 7) // SHB length not a multiple of 4
	return [][]byte{c, n, c[:len(c)-5], n[:len(n)-5], forged, badBlock, {}, []byte("\xd4\xc3\xb2\xa1"), []byte("\x0a\x0d\x0d\x0a")}
}

// FuzzPcapReader: any bytes either fail at open or read to an end without
// panicking or looping; and the frames read, written again with pcapgo's
// writer, read back identically (round trip).
func FuzzPcapReader(f *testing.F) {
	for _, s := range pcapSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		frames, _, end, open := readPcapBytes(data, 2048)
		if open != nil {
			if !errors.Is(open, ErrPcapFormat) {
				t.Fatalf("open error %v does not wrap ErrPcapFormat", open)
			}
			return
		}
		if end == nil {
			t.Fatal("stream ended without a reason")
		}
		var out bytes.Buffer
		w := pcapgo.NewWriterNanos(&out)
		w.WriteFileHeader(65536, layers.LinkTypeEthernet)
		for _, fr := range frames {
			if len(fr.data) > 2048 {
				t.Fatalf("frame of %d bytes from a 2048-byte buffer", len(fr.data))
			}
			if fr.ts > 1<<63-1 {
				return // time.Unix cannot carry it; nothing to round-trip
			}
			w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(fr.ts)), CaptureLength: len(fr.data), Length: len(fr.data)}, fr.data)
		}
		again, skipped, end2, open2 := readPcapBytes(out.Bytes(), 2048)
		if open2 != nil || end2 != io.EOF || skipped != 0 || len(again) != len(frames) {
			t.Fatalf("round trip: %d frames → %d (skipped %d, end %v, open %v)", len(frames), len(again), skipped, end2, open2)
		}
		for i := range frames {
			if !bytes.Equal(frames[i].data, again[i].data) || frames[i].ts%(1<<32*1e9) != again[i].ts%(1<<32*1e9) {
				t.Fatalf("round trip frame %d: %+v → %+v", i, frames[i], again[i])
			}
		}
	})
}
