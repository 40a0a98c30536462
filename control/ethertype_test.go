package control

import (
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
)

// The dataplane recognises control frames by classifier.ControlEtherType;
// this package writes EtherType. They are the same number kept in two
// packages so that this one imports nothing from the dataplane side.
func TestEtherTypeMatchesClassifier(t *testing.T) {
	if EtherType != classifier.ControlEtherType {
		t.Fatalf("control.EtherType %#04x != classifier.ControlEtherType %#04x", EtherType, classifier.ControlEtherType)
	}
}
