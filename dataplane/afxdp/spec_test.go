package afxdp

import (
	"errors"
	"fmt"
	"testing"
)

var specTests = []struct {
	spec  string
	name  string
	queue int
	bad   bool
}{
	{"afxdp:eth1", "eth1", 0, false},
	{"afxdp:veth1@3", "veth1", 3, false},
	{"enp59s0f0@65535", "enp59s0f0", 65535, false},
	{"afxdp:", "", 0, true},
	{"afxdp:@1", "", 0, true},
	{"afxdp:eth1@", "", 0, true},
	{"afxdp:eth1@-1", "", 0, true},
	{"afxdp:eth1@65536", "", 0, true},
	{"afxdp:eth1@1@2", "", 0, true},
	{"afxdp:a/b", "", 0, true},
	{"afxdp:abcdefghijklmnop", "", 0, true},
	{"afxdp:..", "", 0, true},
	{"afxdp:e th", "", 0, true},
}

func TestParseSpec(t *testing.T) {
	for _, tt := range specTests {
		name, q, err := ParseSpec(tt.spec)
		if tt.bad {
			if !errors.Is(err, ErrBadSpec) {
				t.Errorf("ParseSpec(%q) = %q, %d, %v; want ErrBadSpec", tt.spec, name, q, err)
			}
			continue
		}
		if err != nil || name != tt.name || q != tt.queue {
			t.Errorf("ParseSpec(%q) = %q, %d, %v; want %q, %d", tt.spec, name, q, err, tt.name, tt.queue)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, tt := range specTests {
		f.Add(tt.spec)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		name, q, err := ParseSpec(spec)
		if err != nil {
			if !errors.Is(err, ErrBadSpec) {
				t.Fatalf("error %v does not wrap ErrBadSpec", err)
			}
			return
		}
		if len(name) == 0 || len(name) > 15 || q < 0 || q > 65535 {
			t.Fatalf("%q → %q@%d", spec, name, q)
		}
		n2, q2, err := ParseSpec(fmt.Sprintf("afxdp:%s@%d", name, q))
		if err != nil || n2 != name || q2 != q {
			t.Fatalf("round trip %q@%d → %q@%d, %v", name, q, n2, q2, err)
		}
	})
}
