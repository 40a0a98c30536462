package afxdp

import (
	"encoding/binary"
	"net"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

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
		for _, o := range offloadProblems("eth1", "ice", mode, all) {
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
	if o := offloadProblems("eth1", "ice", "driver", map[string]feature{"rx-checksum": {on: true}, "rx-lro": {}}); len(o) != 0 {
		t.Errorf("nothing harmful on: %v", o)
	}
	// veth strips no tag itself (TestVethVLANTag): its rxvlan is not reported.
	var veth []string
	for _, o := range offloadProblems("eth1", "veth", "driver", all) {
		veth = append(veth, o.Feature)
	}
	if want := []string{"rx-lro", "rx-gro-hw", "rx-vlan-filter"}; !reflect.DeepEqual(veth, want) {
		t.Errorf("veth: %v, want %v", veth, want)
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

// TestOffloadsLive reads a veth's features as ethtool -k shows them; with
// veth's defaults nothing is reported for veth, while a driver that strips
// would have both VLAN parsers reported, whose commands, run, turn them
// off; GRO is reported in generic mode only.
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
	if d, err := driverName(v.Host); err != nil || d != "veth" {
		t.Fatalf("driver %q, %v", d, err)
	}
	if offs, err := CheckOffloads(v.Host, "driver"); err != nil || len(offs) != 0 {
		t.Fatalf("veth defaults: %v, %v; want nothing (its rxvlan strips nothing)", offs, err)
	}
	// As for a NIC whose driver does strip: veth's defaults have both tag
	// parsers on, and the commands given turn them off.
	var names []string
	for _, o := range offloadProblems(v.Host, "", "driver", f) {
		names = append(names, o.Feature)
		t.Logf("%s: %s (%s)", o.Feature, o.Fix, o.Why)
		if o.Fix == "" {
			t.Fatalf("%s: no command", o.Feature)
		}
		ethtoolK(t, strings.Fields(o.Fix)[1:]...)
	}
	if want := []string{"rx-vlan-hw-parse", "rx-vlan-stag-hw-parse"}; !reflect.DeepEqual(names, want) {
		t.Errorf("veth defaults as any driver: %v, want %v", names, want)
	}
	if f, err = readFeatures(v.Host); err != nil {
		t.Fatal(err)
	}
	if offs := offloadProblems(v.Host, "", "driver", f); len(offs) != 0 {
		t.Fatalf("after the commands: %v", offs)
	}
	ethtoolK(t, "-K", v.Host, "gro", "on")
	if offs, _ := CheckOffloads(v.Host, "driver"); len(offs) != 0 {
		t.Errorf("GRO reported in driver mode: %v", offs)
	}
	if offs, _ := CheckOffloads(v.Host, "generic"); len(offs) != 1 || offs[0].Fix != "ethtool -K "+v.Host+" gro off" {
		t.Errorf("generic mode with GRO on: %v", offs)
	}
}

// TestVethVLANTag pins what the veth exception rests on: a VLAN tag the
// sending end's stack holds out of band (a tc program's bpf_skb_vlan_push,
// as a VLAN device does) is missing from the frame our socket receives
// when the sender's txvlan is on (veth's default), and in it when that is
// off, whatever the receiving end's rxvlan.
func TestVethVLANTag(t *testing.T) {
	if _, err := exec.LookPath("ethtool"); err != nil {
		nettest.Require(t)
		t.Skip("needs the ethtool command")
	}
	for _, c := range []struct {
		peerTx, hostRx string
		tagged         bool
	}{{"on", "on", false}, {"on", "off", false}, {"off", "on", true}, {"off", "off", true}} {
		v := nettest.NewVeth(t, nettest.Options{})
		ethtoolK(t, "-K", v.Host, "rxvlan", c.hostRx)
		if out, err := exec.Command("ip", "netns", "exec", v.NS, "ethtool", "-K", v.Peer, "txvlan", c.peerTx).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var l link.Link
		err := nettest.InNetns(v.NS, func() error {
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL", Instructions: asm.Instructions{
				// bpf_skb_vlan_push(skb, htons(ETH_P_8021Q), 10); return TCX_PASS
				asm.Mov.Imm(asm.R2, int32(binary.BigEndian.Uint16([]byte{0x00, 0x81}))),
				asm.Mov.Imm(asm.R3, 10),
				asm.FnSkbVlanPush.Call(),
				asm.Mov.Imm(asm.R0, 0),
				asm.Return(),
			}})
			if err != nil {
				return err
			}
			defer prog.Close()
			ifi, err := net.InterfaceByName(v.Peer)
			if err != nil {
				return err
			}
			l, err = link.AttachTCX(link.TCXOptions{Interface: ifi.Index, Program: prog, Attach: ebpf.AttachTCXEgress})
			return err
		})
		if err != nil {
			t.Skipf("cannot push a tag with a tcx program here: %v", err)
		}
		p := mustOpen(t, v, Config{Index: 50, RingSize: 64})
		peer := mustPeer(t, v)
		if err := peer.Send(nettest.Frame(v.HostMAC, v.PeerMAC, 7, 1, 64)); err != nil {
			t.Fatal(err)
		}
		pkts := newPackets(32)
		var got []byte
		for deadline := time.Now().Add(5 * time.Second); got == nil && time.Now().Before(deadline); {
			n := p.RxBurst(pkts)
			for _, pk := range pkts[:n] {
				if len(pk.Data) >= 18 && got == nil {
					got = append([]byte(nil), pk.Data...)
				}
			}
			p.Free(pkts[:n])
			time.Sleep(time.Millisecond)
		}
		if got == nil {
			t.Fatalf("peer txvlan %s, host rxvlan %s: nothing received", c.peerTx, c.hostRx)
		}
		tagged := binary.BigEndian.Uint16(got[12:14]) == 0x8100 && binary.BigEndian.Uint16(got[14:16])&0xfff == 10
		if tagged != c.tagged {
			t.Errorf("peer txvlan %s, host rxvlan %s (%s mode): tag in the frame %v, want %v (% x)", c.peerTx, c.hostRx, p.XDPMode(), tagged, c.tagged, got[:18])
		}
		p.Close()
		l.Close()
		v.Delete()
	}
}

// TestVethChecksumLab pins the veth lab's other fix: a UDP datagram the
// sending end's stack leaves to checksum offload (veth's tx-checksumming,
// on by default) reaches our socket with its checksum not filled in, so
// the appliance would forward a frame no receiver accepts; with it off
// the checksum verifies. On a wire the NIC fills it in before sending.
func TestVethChecksumLab(t *testing.T) {
	if _, err := exec.LookPath("ethtool"); err != nil {
		nettest.Require(t)
		t.Skip("needs the ethtool command")
	}
	for _, c := range []struct {
		tx string
		ok bool
	}{{"on", false}, {"off", true}} {
		v := nettest.NewVeth(t, nettest.Options{})
		for _, args := range [][]string{
			{"ip", "netns", "exec", v.NS, "ethtool", "-K", v.Peer, "tx", c.tx},
			{"ip", "-n", v.NS, "addr", "add", "10.9.0.2/24", "dev", v.Peer},
			{"ip", "-n", v.NS, "neigh", "add", "10.9.0.1", "lladdr", v.HostMAC.String(), "dev", v.Peer},
		} {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%v: %v: %s", args, err, out)
			}
		}
		p := mustOpen(t, v, Config{Index: 51, RingSize: 64})
		if err := nettest.InNetns(v.NS, func() error {
			conn, err := net.Dial("udp4", "10.9.0.1:9")
			if err != nil {
				return err
			}
			defer conn.Close()
			_, err = conn.Write(make([]byte, 100))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		pkts := newPackets(32)
		var udp []byte
		var pseudo uint32
		for deadline := time.Now().Add(5 * time.Second); udp == nil && time.Now().Before(deadline); {
			n := p.RxBurst(pkts)
			for _, pk := range pkts[:n] {
				d := pk.Data
				if len(d) < 42 || binary.BigEndian.Uint16(d[12:14]) != 0x0800 || d[23] != 17 || udp != nil {
					continue
				}
				u := d[14+int(d[14]&15)*4:]
				ulen := int(binary.BigEndian.Uint16(u[4:6]))
				udp = append([]byte(nil), u[:ulen]...)
				for i := 26; i < 34; i += 2 { // source and destination address
					pseudo += uint32(binary.BigEndian.Uint16(d[i:]))
				}
				pseudo += 17 + uint32(ulen)
			}
			p.Free(pkts[:n])
			time.Sleep(time.Millisecond)
		}
		if udp == nil {
			t.Fatalf("tx-checksumming %s: no datagram received", c.tx)
		}
		sum := pseudo
		for i := 0; i+1 < len(udp); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(udp[i:]))
		}
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		if ok := sum == 0xffff; ok != c.ok {
			t.Errorf("sender's tx-checksumming %s: checksum verifies %v, want %v", c.tx, ok, c.ok)
		}
		p.Close()
		v.Delete()
	}
}

// FuzzDecodeFeatures: any count and buffers decode or are refused, never
// panic; a decoded feature's state is its bits'.
func FuzzDecodeFeatures(f *testing.F) {
	names := make([]byte, 3*32)
	copy(names, "rx-lro")
	copy(names[32:], "rx-gro")
	copy(names[64:], "rx-vlan-hw-parse")
	st := make([]byte, 16)
	binary.NativeEndian.PutUint32(st[0:], 0b011)  // available
	binary.NativeEndian.PutUint32(st[8:], 0b101)  // active
	binary.NativeEndian.PutUint32(st[12:], 0b000) // never changed
	f.Add(uint32(3), names, st)
	f.Add(uint32(0), []byte{}, []byte{})
	f.Add(uint32(33), names, st)
	f.Add(uint32(0xffffffff), names, st)
	f.Fuzz(func(t *testing.T, n uint32, names, st []byte) {
		m, err := decodeFeatures(n, names, st)
		if err != nil {
			return
		}
		for i := uint32(0); i < n && i < 64; i++ {
			name := cString(names[i*32 : (i+1)*32])
			if ft, ok := m[name]; !ok {
				t.Fatalf("feature %d %q not decoded", i, name)
			} else if last := lastIndex(names, n, name); last == i {
				blk := st[(i/32)*16:]
				bit := uint32(1) << (i % 32)
				on := binary.NativeEndian.Uint32(blk[8:])&bit != 0
				if ft.on != on {
					t.Fatalf("feature %d %q: on %v, bit says %v", i, name, ft.on, on)
				}
			}
		}
	})
}

// lastIndex is the last of the first n names equal to name (a later
// duplicate overwrites an earlier one).
func lastIndex(names []byte, n uint32, name string) uint32 {
	last := uint32(0)
	for i := uint32(0); i < n; i++ {
		if cString(names[i*32:(i+1)*32]) == name {
			last = i
		}
	}
	return last
}
