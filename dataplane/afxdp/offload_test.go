package afxdp

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane/nettest"
)

// TestOffloadProblems: which features are reported, in which XDP mode,
// with which command.
func TestOffloadProblems(t *testing.T) {
	all := map[string]feature{
		"rx-checksum":            {on: true},
		"tx-checksum-ip-generic": {on: true},
		"rx-lro":                 {on: true},
		"rx-gro-hw":              {on: true, fixed: true},
		"rx-gro":                 {on: true},
		"rx-vlan-hw-parse":       {on: true},
		"rx-vlan-stag-hw-parse":  {on: false},
		"rx-vlan-filter":         {on: true, fixed: true},
	}
	type row struct{ feature, fix string }
	got := func(mode string) []row {
		var r []row
		for _, o := range offloadProblems("eth1", mode, all) {
			if o.Why == "" {
				t.Errorf("%s: no reason given", o.Feature)
			}
			r = append(r, row{o.Feature, o.Fix})
		}
		return r
	}
	driver := []row{
		{"rx-lro", "ethtool -K eth1 lro off"},
		{"rx-gro-hw", ""},
		{"rx-vlan-hw-parse", "ethtool -K eth1 rxvlan off"},
		{"rx-vlan-filter", ""},
	}
	if g := got("driver"); !reflect.DeepEqual(g, driver) {
		t.Errorf("driver mode: %v, want %v", g, driver)
	}
	generic := append(driver[:2:2], append([]row{{"rx-gro", "ethtool -K eth1 gro off"}}, driver[2:]...)...)
	if g := got("generic"); !reflect.DeepEqual(g, generic) {
		t.Errorf("generic mode: %v, want %v", g, generic)
	}
	if o := offloadProblems("eth1", "driver", map[string]feature{"rx-checksum": {on: true}, "rx-lro": {}}); len(o) != 0 {
		t.Errorf("nothing harmful on: %v", o)
	}
}

// ethtoolK runs ethtool with args and returns its output.
func ethtoolK(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ethtool", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ethtool %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestOffloadsLive reads a veth's features as ethtool -k shows them, finds
// the receive VLAN offloads veth has on by default, and after the commands
// it gave were run finds none; GRO is reported in generic mode only.
func TestOffloadsLive(t *testing.T) {
	v := nettest.NewVeth(t, nettest.Options{})
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Skip("needs the ethtool command to compare with and to run the fixes")
	}
	f, err := readFeatures(v.Host)
	if err != nil {
		t.Fatal(err)
	}
	// Every feature ethtool -k lists under its kernel name has the state
	// and fixedness we read (a few it shows under older names).
	same := 0
	for _, line := range strings.Split(ethtoolK(t, "-k", v.Host), "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
		ft, known := f[name]
		if !ok || !known {
			continue
		}
		on := strings.HasPrefix(val, "on")
		fixed := strings.Contains(val, "[fixed]")
		if ft.on != on || ft.fixed != fixed {
			t.Errorf("%s: ethtool -k says %q, we read on %v fixed %v", name, val, ft.on, ft.fixed)
		}
		same++
	}
	t.Logf("%d features agree with ethtool -k", same)
	if same < 20 {
		t.Fatalf("only %d features matched by name with ethtool -k", same)
	}
	offs, err := CheckOffloads(v.Host, "driver")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range offs {
		names = append(names, o.Feature)
		t.Logf("%s: %s (%s)", o.Feature, o.Fix, o.Why)
		if o.Fix == "" {
			t.Fatalf("%s: no command", o.Feature)
		}
		ethtoolK(t, strings.Fields(o.Fix)[1:]...)
	}
	if want := []string{"rx-vlan-hw-parse", "rx-vlan-stag-hw-parse"}; !reflect.DeepEqual(names, want) {
		t.Errorf("veth defaults: %v, want %v", names, want)
	}
	if offs, err := CheckOffloads(v.Host, "driver"); err != nil || len(offs) != 0 {
		t.Fatalf("after the fixes: %v, %v", offs, err)
	}
	ethtoolK(t, "-K", v.Host, "gro", "on")
	if offs, _ := CheckOffloads(v.Host, "driver"); len(offs) != 0 {
		t.Errorf("GRO reported in driver mode: %v", offs)
	}
	if offs, _ := CheckOffloads(v.Host, "generic"); len(offs) != 1 || offs[0].Fix != "ethtool -K "+v.Host+" gro off" {
		t.Errorf("generic mode with GRO on: %v", offs)
	}
}
