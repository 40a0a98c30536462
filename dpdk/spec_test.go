package dpdk

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/dataplane"
)

var specTests = []struct {
	spec string
	want Device
	err  bool
}{
	{"dpdk:net_null0", Device{Name: "net_null0"}, false},
	{"net_null0,copy=1", Device{Name: "net_null0", Args: "copy=1"}, false},
	{"dpdk:net_af_xdp0,iface=veth1,start_queue=0", Device{Name: "net_af_xdp0", Args: "iface=veth1,start_queue=0"}, false},
	{"dpdk:0000:3b:00.0", Device{Name: "0000:3b:00.0", PCI: true}, false},
	{"dpdk:3B:00.1", Device{Name: "0000:3b:00.1", PCI: true}, false},
	{"dpdk:0000:3b:00.0,rxq_cqe_comp_en=0", Device{Name: "0000:3b:00.0", Args: "rxq_cqe_comp_en=0", PCI: true}, false},
	{"", Device{}, true},
	{"dpdk:", Device{}, true},
	{"dpdk:eth0", Device{}, true},
	{"dpdk:net_", Device{}, true},
	{"dpdk:net_null0,", Device{}, true},
	{"dpdk:net_null0,copy", Device{}, true},
	{"dpdk:net_null0,=1", Device{}, true},
	{"dpdk:net-null0", Device{}, true},
	{"dpdk:0000:3b:00.8", Device{}, true},
	{"dpdk:000:3b:00.0", Device{}, true},
	{"dpdk:net_null0,iface=a b", Device{}, true},
}

func TestParseSpec(t *testing.T) {
	for _, tt := range specTests {
		t.Run(tt.spec, func(t *testing.T) {
			d, err := ParseSpec(tt.spec)
			if tt.err {
				if !errors.Is(err, ErrBadSpec) {
					t.Fatalf("ParseSpec(%q) = %+v, %v; want ErrBadSpec", tt.spec, d, err)
				}
				return
			}
			if err != nil || d != tt.want {
				t.Fatalf("ParseSpec(%q) = %+v, %v; want %+v", tt.spec, d, err, tt.want)
			}
		})
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, tt := range specTests {
		f.Add(tt.spec)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		d, err := ParseSpec(spec)
		if err != nil {
			if !errors.Is(err, ErrBadSpec) {
				t.Fatalf("error %v does not wrap ErrBadSpec", err)
			}
			return
		}
		// Round trip: the devargs parse back to the same device.
		d2, err := ParseSpec("dpdk:" + d.Devargs())
		if err != nil || d2 != d {
			t.Fatalf("%q → %+v → %q → %+v, %v", spec, d, d.Devargs(), d2, err)
		}
		if d.Name == "" || strings.Contains(d.Name, ",") {
			t.Fatalf("bad name %q", d.Name)
		}
	})
}

func TestEALArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  EALConfig
		huge int
		want []string
	}{
		{"defaults without hugepages", EALConfig{Cores: []int{1}, Specs: []string{"dpdk:net_null0"}}, 0,
			[]string{"ldafwd", "-l", "1", "--no-huge", "-m", "1024", "-d", PMDDir, "--file-prefix", "ldafwd-42", "--no-telemetry", "--no-shconf", "--no-pci"}},
		{"hugepages and a PCI port", EALConfig{Cores: []int{0, 1}, Specs: []string{"dpdk:3b:00.0", "afxdp:eth1", "ring:x"}}, 512,
			[]string{"ldafwd", "-l", "0,1", "-d", PMDDir, "--file-prefix", "ldafwd-42", "--no-telemetry", "--in-memory", "-a", "0000:3b:00.0"}},
		{"user args win", EALConfig{Args: []string{"-l2", "-m", "512", "-d", "/x", "--file-prefix=me", "--telemetry", "--no-shconf", "-a", "0000:01:00.0"}, Cores: []int{0}}, 0,
			[]string{"ldafwd", "-l2", "-m", "512", "-d", "/x", "--file-prefix=me", "--telemetry", "--no-shconf", "-a", "0000:01:00.0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EALArgs(tt.cfg, tt.huge, 42, true)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("EALArgs = %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
	if _, err := EALArgs(EALConfig{}, 0, 1, true); err == nil {
		t.Error("no cores and no -l: want an error")
	}
	if _, err := EALArgs(EALConfig{Cores: []int{0}, Specs: []string{"dpdk:bogus"}}, 0, 1, true); !errors.Is(err, ErrBadSpec) {
		t.Errorf("bad spec: %v, want ErrBadSpec", err)
	}
}

func TestSweepRuntimeDirs(t *testing.T) {
	dir := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	for _, d := range []string{"ldafwd-" + self, "ldafwd-999999999", "ldafwd-testpmd-999999998", "ldafwd-x", "other-999999999", "rte"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if n := SweepRuntimeDirs(dir); n != 2 {
		t.Fatalf("removed %d, want 2", n)
	}
	for _, d := range []string{"ldafwd-" + self, "ldafwd-x", "other-999999999", "rte"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}

// A lane's burst always fits the port's C arrays whole.
func TestMaxBurstCoversLanes(t *testing.T) {
	if MaxBurst < dataplane.MaxLaneBurst {
		t.Fatalf("dpdk.MaxBurst %d < dataplane.MaxLaneBurst %d", MaxBurst, dataplane.MaxLaneBurst)
	}
}
