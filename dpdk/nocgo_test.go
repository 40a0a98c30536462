//go:build !dpdk

package dpdk

import (
	"errors"
	"testing"
)

func TestNotBuilt(t *testing.T) {
	_, err := Open("dpdk:net_null0", Config{})
	if !errors.Is(err, ErrNotBuilt) || err.Error() != "this ldafwd was built without DPDK support (build with -tags dpdk: make build does it when libdpdk-dev is installed)" {
		t.Fatalf("Open = %v, want ErrNotBuilt", err)
	}
	if _, err := Open("dpdk:eth0", Config{}); !errors.Is(err, ErrBadSpec) {
		t.Fatalf("bad spec: %v, want ErrBadSpec", err)
	}
	if err := Init(nil); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Init = %v", err)
	}
}
