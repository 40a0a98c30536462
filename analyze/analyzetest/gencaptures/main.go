package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ldafwd/ldafwd/analyze/analyzetest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gencaptures:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg          analyzetest.Config
		sender, recv string
		start        string
		delay        time.Duration
	)
	flag.IntVar(&cfg.Packets, "packets", 100000, "packets sent")
	flag.Float64Var(&cfg.Rate, "rate", 100000, "packets per second at the sender")
	flag.IntVar(&cfg.Flows, "flows", 1024, "distinct 5-tuples")
	flag.DurationVar(&delay, "delay", 50*time.Microsecond, "mean one-way delay (Weibull)")
	flag.Float64Var(&cfg.Shape, "shape", 0.7, "Weibull shape of the delays")
	flag.Float64Var(&cfg.Loss, "loss", 0.001, "uniform loss probability")
	flag.Float64Var(&cfg.IPv6Share, "ipv6", 0.25, "fraction of flows that are IPv6")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "random seed: the same seed writes the same files")
	flag.StringVar(&start, "start", "2026-01-01T00:00:00Z", "first send time (RFC 3339)")
	flag.BoolVar(&cfg.PcapNG, "pcapng", false, "write the receiver capture as pcapng (ns); classic pcap (µs) otherwise")
	flag.StringVar(&sender, "sender", "", "sender capture to write (required)")
	flag.StringVar(&recv, "receiver", "", "receiver capture to write (required)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if sender == "" || recv == "" {
		return fmt.Errorf("--sender and --receiver are required")
	}
	if cfg.Packets < 1 || cfg.Rate <= 0 || cfg.Flows < 1 || cfg.Shape <= 0 || cfg.Loss < 0 || cfg.Loss >= 1 || delay <= 0 || cfg.IPv6Share < 0 || cfg.IPv6Share > 1 {
		return fmt.Errorf("--packets, --rate, --flows, --shape and --delay must be positive, --loss and --ipv6 within [0, 1)")
	}
	t, err := time.Parse(time.RFC3339, start)
	if err != nil {
		return fmt.Errorf("--start: %v", err)
	}
	cfg.Start, cfg.MeanDelay = t, delay
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
	tr, err := analyzetest.Write(cfg, sw, rw)
	if err != nil {
		return err
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
	fmt.Printf("sent %d received %d lost %d mean_ns %.1f stddev_ns %.1f\n", tr.Sent, tr.Received, tr.Lost, tr.MeanNs, tr.StddevNs)
	return nil
}
