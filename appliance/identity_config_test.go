package appliance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestConfigNamesIdentity: the configuration both ends compare names the
// packet identity's revision, so that a peer computing identities another
// way (one from before identities read through tunnels) is reported as a
// configuration mismatch naming "identity", not as loss of every tunneled
// packet; and it is part of the hash the Hello carries.
func TestConfigNamesIdentity(t *testing.T) {
	cl, err := classifier.NewClassifierFromSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Interval: time.Second, Classifier: cl, Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig()}}
	ours := describeConfig(&cfg)
	want := fmt.Sprintf(" identity=%d", classifier.IdentityRevision)
	if !strings.HasSuffix(ours, want) {
		t.Fatalf("config %q does not end with %q", ours, want)
	}
	older := strings.TrimSuffix(ours, want)
	if got := control.ConfigDiff(older, ours); got != fmt.Sprintf("identity: sender none, ours %d", classifier.IdentityRevision) {
		t.Errorf("a peer without the identity revision: %q", got)
	}
	if got := control.ConfigDiff(older+" identity=1", ours); !strings.HasPrefix(got, "identity: sender 1") {
		t.Errorf("a peer of identity revision 1: %q", got)
	}
}
