package appliance

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestNewDefaultsReachTheAppliance: a library caller that leaves the
// optional fields zero gets the documented defaults in the configuration
// the appliance runs on (a.cfg, which the control side reads), not only
// in New's local copy. The RDA's problem rate was once defaulted after
// the appliance took its copy, so every library caller sized the RDA's
// cells for a rate of 0.
func TestNewDefaultsReachTheAppliance(t *testing.T) {
	link, err := dataplane.NewRingLink("", dataplane.LinkConfig{Size: 64, Pool: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer link.A().Close()
	defer link.B().Close()
	cl, _ := classifier.NewClassifier(nil)
	a, err := New(Config{PortA: link.A(), PortB: link.B(), Segment: "b", Interval: 100 * time.Millisecond, Classifier: cl,
		Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	c := a.cfg
	for _, d := range []struct {
		name string
		ok   bool
	}{
		{"RDAProblemRate", c.RDAProblemRate == DefaultRDAProblemRate},
		{"Conf", c.Conf == 0.98},
		{"Bounds", c.Bounds == synopsis.DefaultCompactBounds()},
		{"PairTimeout", c.PairTimeout == c.Interval+2*time.Second},
		{"TopFlows", c.TopFlows == 10},
		{"ControlCopies", c.ControlCopies == 1},
		{"MaxStampErr", c.MaxStampErr == DefaultMaxStampErr},
		{"Clock", c.Clock != nil && c.ClockName == "CLOCK_REALTIME"},
	} {
		if !d.ok {
			t.Errorf("%s not defaulted in the appliance's configuration: %+v", d.name, c)
		}
	}
}
