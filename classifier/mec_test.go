package classifier

import (
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/google/gopacket/layers"
)

func TestParseMECGood(t *testing.T) {
	pfx := netip.MustParsePrefix
	tests := []struct {
		spec string
		want Rule
	}{
		{"voice=dscp:46,proto:udp,dport:16384-32767", Rule{Name: "voice", DSCP: []Range{{46, 46}},
			Proto: []Range{{17, 17}}, DstPort: []Range{{16384, 32767}}}},
		{"mgmt=src:10.0.0.0/8|192.168.0.0/16,vlan:100", Rule{Name: "mgmt", VLAN: []Range{{100, 100}},
			Src: []netip.Prefix{pfx("10.0.0.0/8"), pfx("192.168.0.0/16")}}},
		{" v6web = dst: 2001:db8::/32 , PROTO:TCP, dport:80|443 ,weight:4", Rule{Name: "v6web",
			Dst: []netip.Prefix{pfx("2001:db8::/32")}, Proto: []Range{{6, 6}}, DstPort: []Range{{80, 80}, {443, 443}}, Weight: 4}},
		{"af=dscp:af11-af43|EF|cs7|be", Rule{Name: "af", DSCP: []Range{{10, 38}, {46, 46}, {56, 56}, {0, 0}}}},
		{"host=src:10.1.2.3|2001:db8::1", Rule{Name: "host", Src: []netip.Prefix{pfx("10.1.2.3/32"), pfx("2001:db8::1/128")}}},
		{"any.thing_1-x=proto:0-255,sport:0-65535,vlan:0|4095", Rule{Name: "any.thing_1-x",
			Proto: []Range{{0, 255}}, SrcPort: []Range{{0, 65535}}, VLAN: []Range{{0, 0}, {4095, 4095}}}},
		{"dflt=dst:0.0.0.0/0|::/0", Rule{Name: "dflt", Dst: []netip.Prefix{pfx("0.0.0.0/0"), pfx("::/0")}}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseMEC(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			again, err := ParseMEC(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip %q: %+v %v", got.String(), again, err)
			}
		})
	}
}

func TestParseMECBad(t *testing.T) {
	tests := []struct{ spec, err string }{
		{"voice=dscp:64", `mec "voice": bad dscp "64" (0-63)`},
		{"voice", `want name=`},
		{"=dscp:1", `bad name`},
		{"all=dscp:1", `mec "all": name reserved`},
		{"a b=dscp:1", `mec "a b": bad name`},
		{strings.Repeat("n", 65) + "=dscp:1", `bad name`},
		{"x=", `mec "x": no conditions`},
		{"x=weight:3", `no match conditions`},
		{"x=dscp", `bad condition "dscp"`},
		{"x=color:red", `unknown key "color"`},
		{"x=dscp:1,dscp:2", `dscp given twice`},
		{"x=vlan:4096", `bad vlan "4096" (0-4095)`},
		{"x=proto:tcpp", `bad proto "tcpp"`},
		{"x=proto:256", `bad proto "256"`},
		{"x=dport:70000", `bad dport "70000" (0-65535)`},
		{"x=dport:9-3", `bad dport "9-3" (low end above high end)`},
		{"x=sport:1|", `bad sport ""`},
		{"x=sport:-5", `bad sport "-5"`},
		{"x=src:10.0.0.1/8", `bad src "10.0.0.1/8" (host bits set; did you mean 10.0.0.0/8?)`},
		{"x=dst:10.0.0.0/33", `bad dst "10.0.0.0/33"`},
		{"x=dst:fe80::1%eth0", `bad dst "fe80::1%eth0"`},
		{"x=src:example.com", `bad src "example.com"`},
		{"x=dscp:1,weight:0", `bad weight "0"`},
		{"x=dscp:1,weight:1.5", `bad weight "1.5"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := ParseMEC(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want it to contain %q", err, tt.err)
			}
		})
	}
}

func TestNewClassifierErrors(t *testing.T) {
	a, _ := ParseMEC("a=dscp:1")
	if _, err := NewClassifier([]Rule{a, a}); err == nil || !strings.Contains(err.Error(), `mec "a": duplicate name`) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := NewClassifier([]Rule{{Name: "b", DSCP: []Range{{5, 64}}}}); err == nil {
		t.Error("out-of-range Go-built rule accepted")
	}
	if _, err := NewClassifier([]Rule{{Name: "all", VLAN: []Range{{1, 1}}}}); err == nil {
		t.Error("reserved name accepted")
	}
	if _, err := NewClassifierFromSpecs([]string{"ok=dscp:1", "bad=dscp:99"}); err == nil || !strings.Contains(err.Error(), `bad dscp "99"`) {
		t.Errorf("specs: %v", err)
	}
	c, err := NewClassifier(nil)
	if err != nil || c.NumClasses() != 1 || c.Names()[0] != "all" || c.Weight(0) != 1 {
		t.Errorf("empty classifier %v %v", c, err)
	}
	var nilc *Classifier
	if nilc.Classify(&Meta{}) != 0 || nilc.NumClasses() != 1 || nilc.Names()[0] != "all" {
		t.Error("nil classifier")
	}
}

func TestClassify(t *testing.T) {
	c, err := NewClassifierFromSpecs([]string{
		"voice=dscp:ef,proto:udp,dport:16384-32767,weight:8",
		"mgmt=src:10.0.0.0/8|192.168.0.0/16,vlan:100",
		"v6web=dst:2001:db8::/32,proto:tcp,dport:80|443",
		"icmp=proto:icmp|icmpv6",
		"tagged=vlan:1-4095",
		"v4host=dst:10.0.0.2",
		"ported=sport:0-65535", // any packet with ports; never ICMP, GRE or non-IP
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Names(); !reflect.DeepEqual(got, []string{"all", "voice", "mgmt", "v6web", "icmp", "tagged", "v4host", "ported"}) {
		t.Fatalf("names %v", got)
	}
	if c.NumClasses() != 8 || c.Weight(1) != 8 || c.Weight(2) != 1 || c.Weight(999) != 1 {
		t.Fatal("NumClasses/Weight")
	}
	v6 := func(s string) net.IP { return net.ParseIP(s) }
	tests := []struct {
		name string
		f    []byte
		want string
	}{
		{"voice", pkt{proto: layers.IPProtocolUDP, tos: 46 << 2, dport: 20000}.frame(t), "voice"},
		{"voice-wrong-port", pkt{proto: layers.IPProtocolUDP, tos: 46 << 2, dport: 5060, dst: net.IPv4(1, 1, 1, 1)}.frame(t), "ported"},
		{"voice-ecn-bits-ignored", pkt{proto: layers.IPProtocolUDP, tos: 46<<2 | 3, dport: 32767}.frame(t), "voice"},
		{"voice-v6", pkt{v6: true, proto: layers.IPProtocolUDP, tos: 46 << 2, dport: 16384}.frame(t), "voice"},
		{"voice-tcp", pkt{proto: layers.IPProtocolTCP, tos: 46 << 2, dport: 20000, dst: net.IPv4(1, 1, 1, 1)}.frame(t), "ported"},
		// first match wins: mgmt before tagged
		{"mgmt", pkt{proto: layers.IPProtocolTCP, tags: []uint16{100}, src: net.IPv4(192, 168, 3, 4)}.frame(t), "mgmt"},
		{"mgmt-wrong-vlan", pkt{proto: layers.IPProtocolTCP, tags: []uint16{101}, src: net.IPv4(192, 168, 3, 4)}.frame(t), "tagged"},
		{"mgmt-wrong-src", pkt{proto: layers.IPProtocolTCP, tags: []uint16{100}, src: net.IPv4(172, 16, 0, 1)}.frame(t), "tagged"},
		{"v6web", pkt{v6: true, proto: layers.IPProtocolTCP, dst: v6("2001:db8:1::5"), dport: 443}.frame(t), "v6web"},
		{"v6web-other-prefix", pkt{v6: true, proto: layers.IPProtocolTCP, dst: v6("2001:db9::5"), dport: 443}.frame(t), "ported"},
		{"v6-gre", pkt{v6: true, proto: layers.IPProtocolGRE}.frame(t), "all"},
		{"v6-mapped-not-v4", pkt{v6: true, proto: layers.IPProtocolTCP, src: v6("::ffff:10.0.0.1"), tags: []uint16{100}}.frame(t), "tagged"},
		{"icmp", pkt{proto: layers.IPProtocolICMPv4}.frame(t), "icmp"},
		{"icmpv6", pkt{v6: true, proto: layers.IPProtocolICMPv6}.frame(t), "icmp"},
		{"v4host", pkt{proto: layers.IPProtocolGRE}.frame(t), "v4host"},
		{"non-ip-untagged", nonIPFrame(0x88cc, []byte("x")), "all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parsed(tt.f)
			if got := c.Names()[c.Classify(&m)]; got != tt.want {
				t.Errorf("class %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClassifyZeroAllocs(t *testing.T) {
	c, err := NewClassifierFromSpecs([]string{"a=vlan:7", "b=src:2001:db8::/32,dport:1-1000", "c=dscp:ef|af41,proto:udp"})
	if err != nil {
		t.Fatal(err)
	}
	m := parsed(pkt{v6: true, proto: layers.IPProtocolTCP, dport: 5000}.frame(t))
	if n := testing.AllocsPerRun(100, func() { c.Classify(&m) }); n != 0 {
		t.Errorf("Classify allocates %v", n)
	}
}

// FuzzParseMEC: never panics; a rule that parses renders (String) to a
// spec that parses to the same rule, NewClassifier accepts it, and
// Classify agrees with the rule's own reading (naiveMatch) on packets
// around its values, alone and behind 64 other rules.
func FuzzParseMEC(f *testing.F) {
	for _, s := range []string{
		"voice=dscp:46,proto:udp,dport:16384-32767", "mgmt=src:10.0.0.0/8|192.168.0.0/16,vlan:100",
		"v6=dst:2001:db8::/32|::ffff:1.2.3.4,weight:7", "af=dscp:af11-af43|ef", "x=dscp:64", "=", "all=vlan:1",
		"x=sport:1-|", "x=src:10.0.0.1/8", "x=proto:0-255,dport:0", "a=vlan:0,,", "x=weight:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		r, err := ParseMEC(spec)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "mec ") {
				t.Fatalf("error without the mec prefix: %v", err)
			}
			return
		}
		s := r.String()
		r2, err := ParseMEC(s)
		if err != nil {
			t.Fatalf("%q -> %q: %v", spec, s, err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("%q -> %q: %+v != %+v", spec, s, r, r2)
		}
		c, err := NewClassifier([]Rule{r})
		if err != nil {
			t.Fatalf("NewClassifier(%q): %v", s, err)
		}
		var m Meta
		if id := c.Classify(&m); id > 1 {
			t.Fatalf("id %d", id)
		}
		// The tables agree with the rule's own reading, with one rule
		// (one word) and behind 64 others (the multi-word tables).
		rules := []Rule{r}
		for i := 0; i < 64; i++ {
			rules = append([]Rule{{Name: fmt.Sprintf("f%d", i), VLAN: []Range{{4095, 4095}}, DSCP: []Range{{63, 63}}}}, rules...)
		}
		rules[len(rules)-1].Name = "last"
		big, err := NewClassifier(rules)
		if err != nil {
			t.Fatalf("NewClassifier(64 + %q): %v", s, err)
		}
		g := newPropGen(uint64(len(spec)))
		g.prefix = append(g.prefix, r.Src...)
		g.prefix = append(g.prefix, r.Dst...)
		for f, rs := range [][]Range{r.VLAN, r.DSCP, r.Proto, r.SrcPort, r.DstPort} {
			f = min(f, 3) // both port fields draw from the port edges
			for _, x := range rs {
				g.edges[f] = append(g.edges[f], x.Lo, x.Hi)
			}
		}
		for i := 0; i < 50; i++ {
			m := g.meta()
			if got, want := c.Classify(&m), naiveRuleClassify([]Rule{r}, &m); got != want {
				t.Fatalf("%q, %+v: Classify %d, reference %d", s, m, got, want)
			}
			if got, want := big.Classify(&m), naiveRuleClassify(rules, &m); got != want {
				t.Fatalf("64 + %q, %+v: Classify %d, reference %d", s, m, got, want)
			}
		}
	})
}

// TestDocsExample checks the example in docs/mec.md.
func TestDocsExample(t *testing.T) {
	c, err := NewClassifierFromSpecs([]string{
		"voice=dscp:ef,proto:udp,dport:16384-32767",
		"mgmt=src:10.0.0.0/8|192.168.0.0/16,vlan:100",
		"v6web=dst:2001:db8::/32,proto:tcp,dport:80|443,weight:4",
		"assured=dscp:af11-af43",
	})
	if err != nil {
		t.Fatal(err)
	}
	src := net.IPv4(10, 1, 2, 3)
	for _, tt := range []struct {
		p    pkt
		want string
	}{
		{pkt{proto: layers.IPProtocolUDP, src: src, tags: []uint16{100}, tos: 46 << 2, dport: 20000}, "voice"},
		{pkt{proto: layers.IPProtocolTCP, src: src, tags: []uint16{100}, tos: 46 << 2, dport: 20000}, "mgmt"},
		{pkt{proto: layers.IPProtocolTCP, src: src, tos: 26 << 2}, "assured"},
		{pkt{proto: layers.IPProtocolTCP, src: src}, "all"},
	} {
		m := parsed(tt.p.frame(t))
		if got := c.Names()[c.Classify(&m)]; got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.p, got, tt.want)
		}
	}
	if c.Weight(3) != 4 {
		t.Error("v6web weight")
	}
}
