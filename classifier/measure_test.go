package classifier_test

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/synopsis"
	"golang.org/x/sys/unix"
)

// measureFrames are 256 distinct untagged IPv4/UDP frames (14+20+8+64 bytes).
func measureFrames() [][]byte {
	out := make([][]byte, 256)
	for i := range out {
		f := make([]byte, 14+20+8+64)
		binary.BigEndian.PutUint16(f[12:], 0x0800)
		ip := f[14:]
		ip[0], ip[8], ip[9] = 0x45, 64, 17
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
		binary.BigEndian.PutUint16(ip[4:], uint16(i))
		copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, byte(i >> 8), byte(i)})
		udp := ip[20:]
		binary.BigEndian.PutUint16(udp[0:], uint16(1000+i))
		binary.BigEndian.PutUint16(udp[2:], 53)
		binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
		binary.BigEndian.PutUint32(udp[8:], uint32(i)*2654435761)
		out[i] = f
	}
	return out
}

var msink uint64

// BenchmarkMeasure is the issue-2 goal in one run: the full per-packet
// measurement (Parse + Classify with one rule + LDA.Add with the default
// LDA) against hashing the invariant bytes alone (xxhash.Sum64 over the 48
// bytes Parse hashes for IPv4), and against Parse alone. The
// two are timed in alternating blocks of 4096 packets by the thread's CPU
// clock (CLOCK_THREAD_CPUTIME_ID), so other load on the machine neither
// lands in one side nor counts as our time; "ratio" is full/baseline.
func BenchmarkMeasure(b *testing.B) {
	frames := measureFrames()
	var ids [256][48]byte
	for i := range ids {
		binary.LittleEndian.PutUint64(ids[i][:], uint64(i)*0x9e3779b97f4a7c15)
		ids[i][20] = byte(i)
	}
	c, err := classifier.NewClassifierFromSpecs([]string{"voice=dscp:ef,proto:udp,dport:16384-32767"})
	if err != nil {
		b.Fatal(err)
	}
	lda := synopsis.MustNewLDA(synopsis.DefaultLDAConfig())
	var m classifier.Meta
	const block = 4096
	var base, full, parse int64 // ns of thread CPU time
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += block {
		t0 := cpuNow()
		for i := 0; i < block; i++ {
			msink += xxhash.Sum64(ids[i&255][:])
		}
		t1 := cpuNow()
		for i := 0; i < block; i++ {
			classifier.Parse(frames[i&255], &m)
			msink += m.Hash
		}
		t2 := cpuNow()
		for i := 0; i < block; i++ {
			classifier.Parse(frames[i&255], &m)
			mec := c.Classify(&m)
			lda.Add(m.Hash, uint64(i)+uint64(mec))
		}
		t3 := cpuNow()
		base += t1 - t0
		parse += t2 - t1
		full += t3 - t2
	}
	n := float64((b.N + block - 1) / block * block)
	b.ReportMetric(float64(base)/n, "hash-ns/pkt")
	b.ReportMetric(float64(parse)/n, "parse-ns/pkt")
	b.ReportMetric(float64(full)/n, "ns/pkt")
	b.ReportMetric(float64(full)/float64(base), "ratio")
	b.ReportMetric(float64(parse)/float64(base), "parse-ratio")
	// The same goal read the other way: the identity hash as
	// Parse computes it from the frame, against the full measurement.
	b.ReportMetric(float64(full)/float64(parse), "ratio-vs-parse")
}

// cpuNow is this thread's CPU time in ns.
func cpuNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}
