package afxdp

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Offload is a receive offload, found on, that changes or drops frames
// before the XDP program sees them.
type Offload struct {
	// Feature is the kernel's name (ethtool -k shows some under longer
	// ones: rx-lro is large-receive-offload, rx-vlan-hw-parse is
	// rx-vlan-offload, rx-gro is generic-receive-offload).
	Feature string
	// Fix is the command that turns it off; "" when the driver has it
	// fixed on (ethtool -k says [fixed]).
	Fix string
	// Why says what it does to the frames the port forwards.
	Why string
}

// feature is one row of ethtool -k: on, and whether it can be changed.
type feature struct{ on, fixed bool }

// badOffloads are the receive offloads checked, in the order reported,
// with the ethtool -K keyword that turns each off. Not among them:
// rx-checksum (the NIC only verifies checksums and marks the result; the
// frame's bytes are unchanged), and the transmit offloads (an AF_XDP
// socket transmits the frame as given, no checksum or segmentation
// offload is asked for).
//
// veth strips no tag on receive: whether a VLAN tag is in the frame is
// decided by the sending end's txvlan (a tag the sender's stack put out of
// band stays out of the frame XDP sees, whatever the receiving end's
// rxvlan; TestVethVLANTag), so the tag-stripping rows are not reported for
// veth, whose rxvlan is on by default; docs/afxdp.md has the lab's fix.
var badOffloads = []struct {
	name, keyword, why string
	genericOnly        bool // matters only before a generic-mode program
	notVeth            bool // does nothing on veth
}{
	{"rx-lro", "lro", "the NIC merges TCP segments into large frames before XDP: they are not the frames on the wire, and longer than the port's frames, so dropped", false, false},
	{"rx-gro-hw", "rx-gro-hw", "the NIC merges TCP segments into large frames before XDP: they are not the frames on the wire, and longer than the port's frames, so dropped", false, false},
	{"rx-gro", "gro", "with the XDP program in generic (skb) mode the kernel's GRO merges TCP segments before the program sees them: the merged frames are longer than the port's frames and dropped", true, false},
	{"rx-vlan-hw-parse", "rxvlan", "the NIC may strip 802.1Q tags into the receive descriptor: the frame XDP sees, and the appliance forwards, then has no tag", false, true},
	{"rx-vlan-stag-hw-parse", "rx-vlan-stag-hw-parse", "the NIC may strip 802.1ad (S-VLAN) tags into the receive descriptor: the frame XDP sees, and the appliance forwards, then has no tag", false, true},
	{"rx-vlan-filter", "rx-vlan-filter", "the NIC drops frames tagged with a VLAN this host has not configured (on some NICs even in promiscuous mode)", false, false},
	{"rx-vlan-stag-filter", "rx-vlan-stag-filter", "the NIC drops frames S-VLAN-tagged with a VLAN this host has not configured", false, false},
}

// CheckOffloads reads ifname's features (ETHTOOL_GFEATURES) and returns
// the receive offloads that are on and change or drop frames before an
// XDP program attached in xdpMode ("driver" or "generic") sees them. Read
// after the program is attached: attaching may turn some off (generic
// mode disables LRO and hardware GRO).
func CheckOffloads(ifname, xdpMode string) ([]Offload, error) {
	f, err := readFeatures(ifname)
	if err != nil {
		return nil, fmt.Errorf("afxdp: %s: read offloads (ETHTOOL_GFEATURES): %w", ifname, err)
	}
	drv, _ := driverName(ifname) // "" when unknown: every row applies
	return offloadProblems(ifname, drv, xdpMode, f), nil
}

func offloadProblems(ifname, driver, xdpMode string, f map[string]feature) []Offload {
	var out []Offload
	for _, b := range badOffloads {
		ft, ok := f[b.name]
		if !ok || !ft.on || b.genericOnly && xdpMode != "generic" || b.notVeth && driver == "veth" {
			continue
		}
		o := Offload{Feature: b.name, Why: b.why}
		if !ft.fixed {
			o.Fix = fmt.Sprintf("ethtool -K %s %s off", ifname, b.keyword)
		}
		out = append(out, o)
	}
	return out
}

// readFeatures is ethtool -k: the names of the feature bits
// (ETHTOOL_GSTRINGS of ETH_SS_FEATURES) and their state
// (ETHTOOL_GFEATURES). A feature is fixed, as ethtool says, when the
// driver cannot change it or never lets it change.
func readFeatures(ifname string) (map[string]feature, error) {
	const ssFeatures = 4 // ETH_SS_FEATURES
	info := make([]byte, 4+4+8+4)
	binary.NativeEndian.PutUint32(info, unix.ETHTOOL_GSSET_INFO)
	binary.NativeEndian.PutUint64(info[8:], 1<<ssFeatures)
	if err := ethtool(ifname, info); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO: %w", err)
	}
	if binary.NativeEndian.Uint64(info[8:])&(1<<ssFeatures) == 0 {
		return nil, fmt.Errorf("no feature names")
	}
	n := binary.NativeEndian.Uint32(info[16:])
	if n == 0 || n > 4096 {
		return nil, fmt.Errorf("%d feature names", n)
	}
	const strLen = 32 // ETH_GSTRING_LEN
	names := make([]byte, 12+int(n)*strLen)
	binary.NativeEndian.PutUint32(names, unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(names[4:], ssFeatures)
	binary.NativeEndian.PutUint32(names[8:], n)
	if err := ethtool(ifname, names); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSTRINGS: %w", err)
	}
	blocks := (n + 31) / 32
	st := make([]byte, 8+int(blocks)*16)
	binary.NativeEndian.PutUint32(st, unix.ETHTOOL_GFEATURES)
	binary.NativeEndian.PutUint32(st[4:], blocks)
	if err := ethtool(ifname, st); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GFEATURES: %w", err)
	}
	return decodeFeatures(n, names[12:], st[8:])
}

// decodeFeatures pairs n feature names (ETH_GSTRING_LEN bytes each,
// NUL-padded) with their bits in the state blocks (struct
// ethtool_get_features_block: available, requested, active,
// never_changed, u32 each, 32 features a block). Lengths are checked,
// not trusted: a short buffer is an error.
func decodeFeatures(n uint32, names, blocks []byte) (map[string]feature, error) {
	const strLen, blkLen = 32, 16
	if uint64(len(names)) < uint64(n)*strLen || uint64(len(blocks)) < (uint64(n)+31)/32*blkLen {
		return nil, fmt.Errorf("%d features: %d bytes of names, %d of state", n, len(names), len(blocks))
	}
	f := make(map[string]feature, n)
	for i := uint32(0); i < n; i++ {
		name := cString(names[i*strLen : (i+1)*strLen])
		blk := blocks[(i/32)*blkLen:]
		bit := uint32(1) << (i % 32)
		available := binary.NativeEndian.Uint32(blk[0:])
		active := binary.NativeEndian.Uint32(blk[8:])
		never := binary.NativeEndian.Uint32(blk[12:])
		f[name] = feature{on: active&bit != 0, fixed: available&bit == 0 || never&bit != 0}
	}
	return f, nil
}

// driverName is the interface's driver as ethtool -i shows it
// (ETHTOOL_GDRVINFO): "veth", "ice", "mlx5_core".
func driverName(ifname string) (string, error) {
	b := make([]byte, 4+32+32+32+32+32+12+5*4) // struct ethtool_drvinfo
	binary.NativeEndian.PutUint32(b, unix.ETHTOOL_GDRVINFO)
	if err := ethtool(ifname, b); err != nil {
		return "", err
	}
	return cString(b[4 : 4+32]), nil
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	if z := bytes.IndexByte(b, 0); z >= 0 {
		b = b[:z]
	}
	return string(b)
}
