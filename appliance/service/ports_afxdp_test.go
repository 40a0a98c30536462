package service

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane/afxdp"
	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// TestAFXDPQueueVerdict: a port that binds fewer receive queues than its
// interface has is refused in the interface form and warned about with a
// named queue; each message names the queues lost and the remedies.
func TestAFXDPQueueVerdict(t *testing.T) {
	for _, c := range []struct {
		spec        string
		named       bool
		q, n, have  int
		fix         string
		warn, err   bool
		wantInMsg   []string
		unwantInMsg []string
	}{
		{spec: "afxdp:eth1", n: 1, have: 1},
		{spec: "afxdp:eth1", n: 2, have: 2},
		{spec: "afxdp:eth1", n: 4, have: 2}, // OpenQueues refuses this one itself
		{spec: "afxdp:eth1", n: 1, have: 0}, // unknown: nothing to say
		{spec: "afxdp:eth1", n: 1, have: 4, fix: "ethtool -L eth1 combined 1", err: true,
			wantInMsg: []string{"4 receive queues", "queue 0 only", "queues 1..3", "ethtool -L eth1 combined 1", "--queues 4"}},
		{spec: "afxdp:eth1", n: 2, have: 8, fix: "ethtool -L eth1 combined 2", err: true,
			wantInMsg: []string{"queues 0..1", "queues 2..7", "ethtool -L eth1 combined 2", "--queues 8"}},
		{spec: "afxdp:eth1", n: 1, have: 2, fix: "ethtool -L eth1 rx 1 tx 1", err: true,
			wantInMsg: []string{"on queue 1 would", "ethtool -L eth1 rx 1 tx 1", "--queues 2"}},
		{spec: "afxdp:eth1", n: 1, have: 3, err: true,
			wantInMsg: []string{"cannot change its queue count", "--queues 3"}, unwantInMsg: []string{"ethtool -L"}},
		{spec: "afxdp:eth1@0", named: true, n: 1, have: 1},
		{spec: "afxdp:eth1@2", named: true, q: 2, n: 1, have: 4, fix: "ethtool -L eth1 combined 1", warn: true,
			wantInMsg: []string{"queue 2 only", "4 receive queues", "ethtool -L eth1 combined 1", "afxdp:eth1"}},
	} {
		warn, err := afxdpQueueVerdict("--port-a", c.spec, "eth1", c.named, c.q, c.n, c.have, c.fix)
		if (err != nil) != c.err || (warn != "") != c.warn {
			t.Errorf("%s n=%d have=%d: warn %q, err %v", c.spec, c.n, c.have, warn, err)
			continue
		}
		msg := warn
		if err != nil {
			msg = err.Error()
		}
		for _, w := range c.wantInMsg {
			if !strings.Contains(msg, w) {
				t.Errorf("%s n=%d have=%d: %q lacks %q", c.spec, c.n, c.have, msg, w)
			}
		}
		for _, w := range c.unwantInMsg {
			if strings.Contains(msg, w) {
				t.Errorf("%s n=%d have=%d: %q has %q", c.spec, c.n, c.have, msg, w)
			}
		}
	}
}

// TestAFXDPQueuesLive: a 4-queue veth with one bound queue is refused with
// an ethtool command that, run, leaves one queue, after which it is
// accepted; binding all four is accepted as it is.
func TestAFXDPQueuesLive(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{Queues: 4})
	spec := "afxdp:" + v.Host
	if _, err := checkAFXDPQueues("--port-a", spec, 4); err != nil {
		t.Fatalf("4 of 4 queues: %v", err)
	}
	_, err := checkAFXDPQueues("--port-a", spec, 1)
	if err == nil {
		t.Fatal("1 of 4 queues accepted")
	}
	t.Log(err)
	fix := "ethtool -L " + v.Host + " rx 1 tx 1"
	if !strings.Contains(err.Error(), fix) {
		t.Fatalf("%v: want the command %q", err, fix)
	}
	if warn, err := checkAFXDPQueues("--port-a", spec+"@3", 1); err != nil || !strings.Contains(warn, "queue 3 only") {
		t.Fatalf("named queue: warn %q, err %v", warn, err)
	}
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Skip("no ethtool to run the command it gave")
	}
	f := strings.Fields(fix)
	if out, err := exec.Command(f[0], f[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", fix, err, out)
	}
	if got := afxdp.RxQueues(v.Host); got != 1 {
		t.Fatalf("after %s: %d rx queues", fix, got)
	}
	if _, err := checkAFXDPQueues("--port-a", spec, 1); err != nil {
		t.Fatalf("after %s: %v", fix, err)
	}
}

// TestCheckFailOpen: --fail-open is refused only where it cannot hold — an
// explicit one with dpdk: or ring: ports, and afxdp: ports on a single
// interface; the default (on, not given) passes with every kind.
func TestCheckFailOpen(t *testing.T) {
	for _, c := range []struct {
		a, b      string
		on, given bool
		err       string
	}{
		{a: "afxdp:eth1", b: "afxdp:eth2", on: true},
		{a: "afxdp:eth1", b: "afxdp:eth2", on: true, given: true},
		{a: "afxdp:eth1@0", b: "afxdp:eth1@1", on: true, err: "both on eth1"},
		{a: "afxdp:eth1@0", b: "afxdp:eth1@1", on: false},
		{a: "dpdk:0000:01:00.0", b: "dpdk:0000:01:00.1", on: true},
		{a: "dpdk:0000:01:00.0", b: "dpdk:0000:01:00.1", on: true, given: true, err: "hardware bypass"},
		{a: "dpdk:0000:01:00.0", b: "dpdk:0000:01:00.1", on: false, given: true},
		{a: "ring:l.a", b: "ring:m.b", on: true, given: true, err: "ring: ports cannot"},
	} {
		o := &Config{PortA: c.a, PortB: c.b, FailOpen: c.on, Changed: map[string]bool{"fail-open": c.given}}
		err := checkFailOpen(o)
		if (err != nil) != (c.err != "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s %s fail-open=%v given=%v: %v, want error %q", c.a, c.b, c.on, c.given, err, c.err)
		}
	}
}
