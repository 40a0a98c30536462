package main

import (
	"reflect"
	"testing"

	"github.com/ldafwd/ldafwd/appliance"
)

// TestLibraryDefaultsAreRunDefaults: `ldafwd run` with only the flags it
// requires and a library caller's appliance.Config with only the same
// fields set come out of WithDefaults with the same settings — the
// interval, classifier, delay bounds, confidence, pairing timeout, top
// flows, control copies, parity, priority, MTU, burst, clock skew, stamp
// error limit, microburst minimum and the RDA's problem rate — so one
// documented default holds for both. The synopses and how they are
// shipped (Syn, the Adapt* switches, the control budget) are what a
// library caller passes in its SynConfig and budget; run derives them
// from --synopsis and the sizing flags.
func TestLibraryDefaultsAreRunDefaults(t *testing.T) {
	o, err := parseAndValidate([]string{"--port-a", "ring:v.a", "--port-b", "ring:w.b", "--segment-port", "b", "--insecure"})
	if err != nil {
		t.Fatal(err)
	}
	run := o.cfg.Appliance().WithDefaults()
	lib := appliance.Config{Segment: "b", Insecure: true}.WithDefaults()
	// The caller's own choices, equal by construction.
	lib.Syn, lib.AdaptLDA, lib.AdaptRDA, lib.AdaptLDS, lib.BudgetBytes, lib.BudgetFraction = run.Syn, run.AdaptLDA, run.AdaptRDA, run.AdaptLDS, run.BudgetBytes, run.BudgetFraction
	lib.AdaptSample = run.AdaptSample
	// Functions do not compare: the same clock, named alike.
	if run.ClockName != lib.ClockName || run.Clock == nil || lib.Clock == nil || run.Now == nil || lib.Now == nil {
		t.Fatalf("clocks: run %q, library %q", run.ClockName, lib.ClockName)
	}
	run.Clock, lib.Clock, run.Now, lib.Now = nil, nil, nil, nil
	if got, want := run.Classifier.Names(), lib.Classifier.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("classes: run %v, library %v", got, want)
	}
	run.Classifier, lib.Classifier = nil, nil
	rv, lv := reflect.ValueOf(run), reflect.ValueOf(lib)
	for i := 0; i < rv.NumField(); i++ {
		name := rv.Type().Field(i).Name
		if !reflect.DeepEqual(rv.Field(i).Interface(), lv.Field(i).Interface()) {
			t.Errorf("%s: run's default %#v, a library caller's %#v", name, rv.Field(i).Interface(), lv.Field(i).Interface())
		}
	}
}
