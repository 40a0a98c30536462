package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestIntervalNulls: the delay fields are null exactly where there is no
// estimate, and every line carries the schema right after its type.
func TestIntervalNulls(t *testing.T) {
	for _, c := range []struct {
		name         string
		iv           Interval
		mean, sd, ci bool // want a number (not null)
	}{
		{"valid lda", Interval{Synopsis: "lda", Valid: true, Samples: 10, MeanNs: 5, StddevNs: 1, MeanCINs: 2}, true, true, true},
		{"invalid lda", Interval{Synopsis: "lda", Valid: false, Samples: 10, MeanNs: 5, StddevNs: 1, MeanCINs: 2}, false, false, false},
		{"valid, no sample", Interval{Synopsis: "lda", Valid: true}, false, false, false},
		{"valid lds", Interval{Synopsis: "lds", Valid: true, Samples: 3, MeanNs: 5, MeanCINs: 2}, true, false, true},
		{"NaN", Interval{Synopsis: "rda", Valid: true, Samples: 3, MeanNs: math.NaN(), StddevNs: math.Inf(1), MeanCINs: 2}, false, false, true},
	} {
		var buf bytes.Buffer
		if err := NewWriter(&buf).Write(&c.iv); err != nil {
			t.Fatal(err)
		}
		line := buf.String()
		if !strings.HasPrefix(line, `{"type":"interval","schema":1,`) || strings.Count(line, "\n") != 1 {
			t.Errorf("%s: %s", c.name, line)
		}
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]bool{"mean_ns": c.mean, "stddev_ns": c.sd, "mean_ci_ns": c.ci} {
			v, ok := m[k]
			if !ok || (v != nil) != want {
				t.Errorf("%s: %s = %v (present %v), want a number: %v", c.name, k, v, ok, want)
			}
		}
	}
}

// TestEncodeSchema: lines of every record type get the schema after
// their type; '>' is not escaped.
func TestEncodeSchema(t *testing.T) {
	b, err := Encode(&Port{Type: "port", Port: "a", Name: "ring:x>y"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"type":"port","schema":1,"port":"a","name":"ring:x>y"`) {
		t.Errorf("%s", b)
	}
	if b, _ := Encode(map[string]int{"a": 1}); string(b) != "{\"a\":1}\n" {
		t.Errorf("a line without a leading type changed: %s", b)
	}
}

// TestSchemaNamesEveryField: schema.json lists every JSON field of the
// record types defined here, so a field added to a struct without a word
// in the contract fails at once (additionalProperties is false: the
// command tests would fail too, but only where the field is written).
func TestSchemaNamesEveryField(t *testing.T) {
	b, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var sch struct {
		Defs map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &sch); err != nil {
		t.Fatal(err)
	}
	for def, v := range map[string]any{"interval": Interval{}, "port": Port{}, "bench": Bench{}, "demo_summary": DemoSummary{}, "status": Status{}} {
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if _, ok := sch.Defs[def].Properties[name]; !ok {
				t.Errorf("report/schema.json: %s lacks %q (%s.%s): add it there and to docs/reports.md", def, name, typ.Name(), typ.Field(i).Name)
			}
		}
	}
}
