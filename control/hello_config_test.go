package control

import (
	"strings"
	"testing"
)

// The Hello carries the sender's configuration; it survives the wire, and
// an encoding with a broken configuration length is rejected.
func TestHelloConfigRoundTrip(t *testing.T) {
	h := Hello{IntervalNs: 1e9, ConfigHash: 9, Lanes: 1, Clock: "c", MECs: []string{"all"},
		Parts: []PartKey{{0, KindLDA}}, Config: "interval=1s lds=4x1024"}
	b, err := h.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var g Hello
	if err := g.UnmarshalBinary(b); err != nil || g.Config != h.Config || !g.sameConfig(&h) {
		t.Fatalf("decoded %+v (%v), want %+v", g, err, h)
	}
	// Without a configuration the encoding is the older one: nothing after the parts.
	h.Config = ""
	b0, _ := h.AppendBinary(nil)
	if len(b0) != len(b)-2-len("interval=1s lds=4x1024") {
		t.Fatalf("empty config adds %d bytes", len(b)-len(b0))
	}
	for _, bad := range [][]byte{append(b0[:len(b0):len(b0)], 0), append(b0[:len(b0):len(b0)], 0, 0), append(b0[:len(b0):len(b0)], 0, 5, 'a'), b[:len(b)-1]} {
		if err := g.UnmarshalBinary(bad); err == nil {
			t.Errorf("accepted %x", bad[len(b0):])
		}
	}
}

func TestConfigDiff(t *testing.T) {
	ours := "interval=1s mecs=all lda=1024:0 rda=off lds=4x1024 lds-cells-per-flow=2"
	for _, c := range []struct{ sender, want string }{
		{ours, ""},
		{"interval=1s mecs=all lda=1024:0 rda=off lds=4x512 lds-cells-per-flow=2", "lds: sender 4x512, ours 4x1024"},
		{"interval=2s mecs=all lda=1024:0 rda=3x2048 lds=4x1024 lds-cells-per-flow=2", "interval: sender 2s, ours 1s; rda: sender 3x2048, ours off"},
		{"interval=1s mecs=all lda=1024:0 rda=off lds=4x1024", "lds-cells-per-flow: sender none, ours 2"},
		{ours + " extra=1", "extra: sender 1, ours none"},
	} {
		if got := ConfigDiff(c.sender, ours); got != c.want {
			t.Errorf("ConfigDiff(%q) = %q, want %q", c.sender, got, c.want)
		}
	}
}

// A receiver with another configuration fails every interval and its
// failure detail names the setting that differs.
func TestConfigMismatchNamesSetting(t *testing.T) {
	s, err := NewSender(SenderConfig{Key: testKey, MTU: DefaultMTU, Direction: 1,
		Hello: Hello{IntervalNs: 1e9, ConfigHash: 77, Lanes: 1, Clock: "CLOCK_REALTIME",
			MECs: []string{"all", "voice"}, Parts: twoParts, Config: "interval=1s lds=4x512"}})
	if err != nil {
		t.Fatal(err)
	}
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.ConfigHash, c.Config = 78, "interval=1s lds=4x1024" })
	deliver(t, s, r, 1, 1, nil)
	res := r.Results(nil)
	wantFailure(t, res, 1, ReasonConfigMismatch)
	if d := res[0].Failure.Detail; !strings.Contains(d, "lds: sender 4x512, ours 4x1024") {
		t.Errorf("failure detail %q does not name the LDS size", d)
	}
}

// FuzzHelloConfig: a Hello that decodes, configuration or not, encodes
// back to the same bytes.
func FuzzHelloConfig(f *testing.F) {
	for _, c := range []string{"", "interval=1s lds=4x1024", "a=b c"} {
		h := Hello{IntervalNs: 1e9, ConfigHash: 9, Lanes: 1, Clock: "c", MECs: []string{"all"}, Parts: []PartKey{{0, KindLDA}}, Config: c}
		b, _ := h.AppendBinary(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Hello
		if h.UnmarshalBinary(b) != nil {
			return
		}
		e, err := h.AppendBinary(nil)
		if err != nil || string(e) != string(b) {
			t.Fatalf("re-encoding %+v: %x (%v), want %x", h, e, err, b)
		}
		_ = ConfigDiff(h.Config, "interval=1s")
	})
}

// A sender without a configuration in its Hello (an older build, or a
// small MTU) gets the hashes in the detail, not a list of every setting.
func TestConfigMismatchWithoutDescription(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 1, twoParts)
	r := newTestReceiver(t, func(c *ReceiverConfig) { c.ConfigHash, c.Config = 78, "interval=1s lds=4x1024" })
	deliver(t, s, r, 1, 1, nil)
	res := r.Results(nil)
	wantFailure(t, res, 1, ReasonConfigMismatch)
	if d := res[0].Failure.Detail; !strings.Contains(d, "config hash") || strings.Contains(d, "sender none") {
		t.Errorf("failure detail %q", d)
	}
}
