package service

import (
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/dpdk"
)

// TestNoHugeFallbackWarned: the argv EALArgs builds when no hugepages are
// free is detected as a fallback (run then warns); with hugepages free, or
// when the user asked for --no-huge, it is not.
func TestNoHugeFallbackWarned(t *testing.T) {
	cfg := dpdk.EALConfig{Specs: []string{"dpdk:0000:03:00.0", "dpdk:0000:03:00.1"}, Cores: []int{0}}
	for _, c := range []struct {
		free int
		user []string
		want bool
	}{{0, nil, true}, {512, nil, false}, {0, []string{"--no-huge"}, false}, {0, []string{"-m", "512"}, false}} {
		cfg.Args = c.user
		argv, err := dpdk.EALArgs(cfg, c.free, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := ealFellBackToNoHuge(argv, c.user); got != c.want {
			t.Errorf("%d hugepages free, user %q: argv %q, fallback %v", c.free, c.user, argv, got)
		}
	}
	if !strings.Contains(noHugeWarning, "--no-huge") || !strings.Contains(noHugeWarning, "nr_hugepages") {
		t.Error("the warning does not say what happened and what to do")
	}
}

// TestArrivalStamps: AF_XDP programs stamp arrivals only on a port whose
// arrival times are used: the segment's (its frames are a receiver's), or
// a captured one; a sender's user side and plain forwarding skip them.
func TestArrivalStamps(t *testing.T) {
	for _, c := range []struct {
		o    Config
		a, b bool
	}{
		{o: Config{Segment: "b"}, a: false, b: true},
		{o: Config{Segment: "a"}, a: true, b: false},
		{o: Config{ForwardOnly: true}, a: false, b: false},
		{o: Config{ForwardOnly: true, Capture: Capture{A: "a.pcapng"}}, a: true, b: false},
		{o: Config{Segment: "b", Capture: Capture{A: "a.pcapng"}}, a: true, b: true},
		{o: Config{Segment: "a", Capture: Capture{B: "b.pcapng"}}, a: true, b: true},
	} {
		if a, b := arrivalStamps(&c.o, "a"), arrivalStamps(&c.o, "b"); a != c.a || b != c.b {
			t.Errorf("segment %q, forward-only %v, captures %q %q: stamps a %v b %v, want %v %v",
				c.o.Segment, c.o.ForwardOnly, c.o.Capture.A, c.o.Capture.B, a, b, c.a, c.b)
		}
	}
}
