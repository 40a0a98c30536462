package control_test

import (
	"testing"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
)

// TestEtherTypeMatchesClassifier ties the two copies of the control
// EtherType: the parser recognises control frames by the classifier's, the
// sender writes the control package's.
func TestEtherTypeMatchesClassifier(t *testing.T) {
	if control.EtherType != classifier.ControlEtherType {
		t.Fatalf("control.EtherType %#x, classifier.ControlEtherType %#x", control.EtherType, classifier.ControlEtherType)
	}
}
