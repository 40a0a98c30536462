// Command genscale writes a pair of large captures for measuring what
// `ldafwd analyze` costs at capture scale (make analyze-scale,
// docs/analyze.md "Cost"). Unlike gencaptures it holds nothing but the
// packets in flight, so it writes captures of any length, fast: IPv4/UDP
// frames built by hand (1024 flows, a sequence number in every payload,
// so no two packets share an identity), sent at a fixed rate, delayed by
// a fixed base plus an exponential part (so packets reorder), lost
// uniformly, routed (TTL and MACs rewritten). Classic pcap, ns stamps.
//
//	go run ./analyze/analyzetest/genscale --packets 10000000 --sender s.pcap --receiver r.pcap
package main

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "genscale:", err)
		os.Exit(1)
	}
}

const frameLen = 14 + 20 + 8 + 24

type inFlight struct {
	recv int64
	seq  uint64
}

type recvHeap []inFlight

func (h recvHeap) Len() int { return len(h) }
func (h recvHeap) Less(i, j int) bool {
	return h[i].recv < h[j].recv || (h[i].recv == h[j].recv && h[i].seq < h[j].seq)
}
func (h recvHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recvHeap) Push(x any)   { *h = append(*h, x.(inFlight)) }
func (h *recvHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func run() error {
	var (
		packets      int
		rate, loss   float64
		base, jitter time.Duration
		sender, recv string
		seed         uint64
		startUnix    int64
		flows        int
	)
	flag.IntVar(&packets, "packets", 1_000_000, "packets sent")
	flag.Float64Var(&rate, "rate", 100_000, "packets per second")
	flag.DurationVar(&base, "delay", 40*time.Microsecond, "fixed part of the one-way delay")
	flag.DurationVar(&jitter, "jitter", 20*time.Microsecond, "mean of the exponential part of the delay")
	flag.Float64Var(&loss, "loss", 0.001, "uniform loss probability")
	flag.IntVar(&flows, "flows", 1024, "distinct 5-tuples")
	flag.Uint64Var(&seed, "seed", 1, "random seed")
	flag.Int64Var(&startUnix, "start", 1_767_225_600, "first send time, Unix seconds")
	flag.StringVar(&sender, "sender", "", "sender capture to write (required)")
	flag.StringVar(&recv, "receiver", "", "receiver capture to write (required)")
	flag.Parse()
	if sender == "" || recv == "" || packets < 1 || rate <= 0 || loss < 0 || loss >= 1 || flows < 1 || flows > 65536 {
		return fmt.Errorf("--sender and --receiver are required; --packets, --rate, --flows (≤ 65536) positive, --loss in [0, 1)")
	}
	sf, err := os.Create(sender)
	if err != nil {
		return err
	}
	defer sf.Close()
	rf, err := os.Create(recv)
	if err != nil {
		return err
	}
	defer rf.Close()
	sw, rw := bufio.NewWriterSize(sf, 1<<20), bufio.NewWriterSize(rf, 1<<20)
	for _, w := range []*bufio.Writer{sw, rw} {
		var h [24]byte
		binary.LittleEndian.PutUint32(h[0:], 0xa1b23c4d) // ns timestamps
		binary.LittleEndian.PutUint16(h[4:], 2)
		binary.LittleEndian.PutUint16(h[6:], 4)
		binary.LittleEndian.PutUint32(h[16:], 65535)
		binary.LittleEndian.PutUint32(h[20:], 1) // Ethernet
		w.Write(h[:])
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var frame [frameLen]byte
	build := func(seq uint64, routed bool) []byte {
		f := frame[:]
		clear(f)
		f[5], f[11] = 1, 2
		if routed {
			f[4], f[10] = 9, 9
		}
		binary.BigEndian.PutUint16(f[12:], 0x0800)
		ip := f[14:]
		fl := int(seq % uint64(flows))
		ip[0], ip[8], ip[9] = 0x45, 64, 17
		if routed {
			ip[8] = 63
		}
		binary.BigEndian.PutUint16(ip[2:], 20+8+24)
		binary.BigEndian.PutUint16(ip[4:], uint16(seq/uint64(flows)))
		ip[12], ip[13], ip[14], ip[15] = 10, 1, byte(fl>>8), byte(fl)
		ip[16], ip[17], ip[18], ip[19] = 10, 2, 0, 2
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(ip[i:]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
		udp := ip[20:]
		binary.BigEndian.PutUint16(udp[0:], uint16(1024+fl))
		binary.BigEndian.PutUint16(udp[2:], 5001)
		binary.BigEndian.PutUint16(udp[4:], 8+24)
		binary.BigEndian.PutUint64(udp[8:], seq)
		return f
	}
	write := func(w *bufio.Writer, ts int64, f []byte) {
		var h [16]byte
		binary.LittleEndian.PutUint32(h[0:], uint32(ts/1e9))
		binary.LittleEndian.PutUint32(h[4:], uint32(ts%1e9))
		binary.LittleEndian.PutUint32(h[8:], uint32(len(f)))
		binary.LittleEndian.PutUint32(h[12:], uint32(len(f)))
		w.Write(h[:])
		w.Write(f)
	}
	t0 := startUnix * 1e9
	gap := 1e9 / rate
	var fl recvHeap
	var lost, received uint64
	var sum float64
	for i := 0; i < packets; i++ {
		send := t0 + int64(float64(i)*gap)
		for fl.Len() > 0 && fl[0].recv <= send {
			x := heap.Pop(&fl).(inFlight)
			write(rw, x.recv, build(x.seq, true))
		}
		write(sw, send, build(uint64(i), false))
		if r.Float64() < loss {
			lost++
			continue
		}
		d := base.Nanoseconds() + int64(r.ExpFloat64()*float64(jitter.Nanoseconds()))
		sum += float64(d)
		received++
		heap.Push(&fl, inFlight{send + d, uint64(i)})
	}
	for fl.Len() > 0 {
		x := heap.Pop(&fl).(inFlight)
		write(rw, x.recv, build(x.seq, true))
	}
	for _, w := range []*bufio.Writer{sw, rw} {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if err := sf.Close(); err != nil {
		return err
	}
	if err := rf.Close(); err != nil {
		return err
	}
	fmt.Printf("sent %d received %d lost %d mean_ns %.1f\n", packets, received, lost, sum/float64(max(received, 1)))
	return nil
}
