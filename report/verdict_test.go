package report

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestVerdictRendering: the line's valid, reason, reason_code, loss_valid
// and delay_valid follow its causes: the leading one by the precedence
// order whatever order they were found in, the scopes united.
func TestVerdictRendering(t *testing.T) {
	var iv Interval
	iv.SetVerdict(Verdict{})
	if !iv.Valid || !iv.LossValid || !iv.DelayValid || iv.Reason != "" || iv.ReasonCode != "" {
		t.Fatalf("empty verdict: %+v", iv)
	}
	iv.Invalidate(NextMissing, "next interval missing")
	if iv.Valid || iv.LossValid || !iv.DelayValid || iv.ReasonCode != "next_missing" || iv.Reason != "next interval missing" {
		t.Fatalf("next_missing: valid %v loss %v delay %v %q %q", iv.Valid, iv.LossValid, iv.DelayValid, iv.ReasonCode, iv.Reason)
	}
	iv.Invalidate(StampsUncertain, "timestamps uncertain by 41.6 µs")
	if iv.LossValid || iv.DelayValid || iv.ReasonCode != "stamps_uncertain" {
		t.Fatalf("stamps after next_missing: loss %v delay %v %q", iv.LossValid, iv.DelayValid, iv.ReasonCode)
	}
	iv.Invalidate(Session, "sender restarted")
	iv.Invalidate(Session, "a second sentence of the same code")
	if iv.ReasonCode != "session" || iv.Reason != "sender restarted" {
		t.Fatalf("session leads with its first sentence: %q %q", iv.ReasonCode, iv.Reason)
	}
	iv.Clear(Session, StampsUncertain)
	if iv.ReasonCode != "next_missing" || iv.DelayValid == false || iv.LossValid {
		t.Fatalf("after clearing: %q loss %v delay %v", iv.ReasonCode, iv.LossValid, iv.DelayValid)
	}
	iv.Clear(NextMissing)
	if !iv.Valid || iv.Reason != "" || iv.ReasonCode != "" {
		t.Fatalf("all cleared: %+v", iv)
	}

	// A delay-only cause leaves the loss valid; the JSON says so and keeps
	// the mean null (the line is not valid).
	var d Interval
	d.Samples, d.MeanNs = 10, 5
	d.Invalidate(DelayAboveMax, "delays above --max-delay in 3 buckets")
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["valid"] != false || m["loss_valid"] != true || m["delay_valid"] != false || m["reason_code"] != "delay_above_max" || m["mean_ns"] != nil {
		t.Fatalf("delay-only line: %s", b)
	}
	// A line built by hand as valid is valid for both.
	b, _ = json.Marshal(Interval{Valid: true})
	m = nil
	_ = json.Unmarshal(b, &m)
	if m["loss_valid"] != true || m["delay_valid"] != true {
		t.Fatalf("hand-built valid line: %s", b)
	}
}

// TestVerdictCopies: a copy of a line (analyze copies lines by value)
// gets causes of its own.
func TestVerdictCopies(t *testing.T) {
	var a Interval
	a.Invalidate(Extras, "x")
	b := a
	b.Invalidate(ReceiverDrops, "y")
	a.Invalidate(NextMissing, "z")
	if a.Verdict().Has(ReceiverDrops) || b.Verdict().Has(NextMissing) {
		t.Fatalf("copies share causes: a %v, b %v", a.Verdict(), b.Verdict())
	}
	b.Clear(Extras)
	if !a.Verdict().Has(Extras) {
		t.Fatalf("clearing a copy cleared the original: %v", a.Verdict())
	}
}

// TestCodeTable: every code has a distinct snake_case name without a
// digit (a label value, never a measured number), a scope and a meaning;
// schema.json's reason_code enum is exactly the table, in its order.
func TestCodeTable(t *testing.T) {
	name := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	var names []string
	for _, c := range Codes() {
		if !name.MatchString(c.String()) || c.Meaning() == "" || c.Scope() == 0 {
			t.Errorf("code %d: name %q, scope %v, meaning %q", c, c.String(), c.Scope(), c.Meaning())
		}
		if slices.Contains(names, c.String()) {
			t.Errorf("code name %q twice", c.String())
		}
		names = append(names, c.String())
	}
	b, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var sch struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &sch); err != nil {
		t.Fatal(err)
	}
	if got := sch.Defs["interval"].Properties["reason_code"].Enum; !slices.Equal(got, names) {
		t.Errorf("schema.json reason_code enum %v, the code table %v", got, names)
	}
	// The docs list every code with its scope (reports.md) and as a label
	// value (metrics.md).
	reports, err := os.ReadFile("../docs/reports.md")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	at := -1
	for _, c := range Codes() {
		row := fmt.Sprintf("| `%s` | %s | %s |", c, c.Scope(), c.Meaning())
		i := strings.Index(string(reports), row)
		switch {
		case i < 0:
			t.Errorf("docs/reports.md lacks the row %s", row)
		case i < at:
			t.Errorf("docs/reports.md lists %s out of the precedence order", c)
		default:
			at = i
		}
		if !strings.Contains(string(metrics), "`"+c.String()+"`") {
			t.Errorf("docs/metrics.md does not list %s", c)
		}
	}
}
