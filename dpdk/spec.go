package dpdk

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadSpec is wrapped by every port spec parse error.
var ErrBadSpec = errors.New("dpdk: bad port spec")

// Device is a parsed port spec: a PCI device by address or a virtual device
// (vdev) by driver-instance name, with its devargs.
type Device struct {
	Name string // "0000:3b:00.0" or "net_null0"; the ethdev name DPDK gives it
	Args string // devargs after the first comma, "" when none ("copy=1", "iface=veth1")
	PCI  bool
}

// Devargs is the string rte_dev_probe takes: name[,args].
func (d Device) Devargs() string {
	if d.Args == "" {
		return d.Name
	}
	return d.Name + "," + d.Args
}

// ParseSpec parses "dpdk:<PCI address or vdev devargs>" (the "dpdk:" prefix
// is optional): "0000:3b:00.0", "3b:00.0", "net_null0,copy=1",
// "net_af_xdp0,iface=veth1". A PCI address is normalised to the
// domain:bus:devid.function form DPDK names the ethdev after.
func ParseSpec(spec string) (Device, error) {
	s := strings.TrimPrefix(spec, "dpdk:")
	if s == "" {
		return Device{}, fmt.Errorf("%w %q: empty (want dpdk:<PCI address> or dpdk:net_<driver><n>[,key=value...])", ErrBadSpec, spec)
	}
	name, args, _ := strings.Cut(s, ",")
	if args != "" || strings.HasSuffix(s, ",") {
		for _, kv := range strings.Split(args, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" || strings.ContainsAny(kv, " \t\n") {
				return Device{}, fmt.Errorf("%w %q: device argument %q is not key=value", ErrBadSpec, spec, kv)
			}
		}
	}
	if pci, ok := parsePCI(name); ok {
		return Device{Name: pci, Args: args, PCI: true}, nil
	}
	if !strings.HasPrefix(name, "net_") || len(name) <= len("net_") {
		return Device{}, fmt.Errorf("%w %q: %q is neither a PCI address (0000:3b:00.0) nor a net_ vdev name (net_null0, net_af_xdp0)", ErrBadSpec, spec, name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return Device{}, fmt.Errorf("%w %q: vdev name %q has character %q (letters, digits and _ only)", ErrBadSpec, spec, name, c)
		}
	}
	return Device{Name: name, Args: args}, nil
}

// parsePCI accepts [dddd:]bb:dd.f in hex and returns dddd:bb:dd.f.
func parsePCI(s string) (string, bool) {
	parts := strings.Split(s, ":")
	if len(parts) == 2 {
		parts = append([]string{"0000"}, parts...)
	}
	if len(parts) != 3 {
		return "", false
	}
	dev, fn, ok := strings.Cut(parts[2], ".")
	if !ok || !isHex(parts[0], 4) || !isHex(parts[1], 2) || !isHex(dev, 2) || len(fn) != 1 || fn[0] < '0' || fn[0] > '7' {
		return "", false
	}
	return strings.ToLower(parts[0] + ":" + parts[1] + ":" + dev + "." + fn), true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
