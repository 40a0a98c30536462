package appliance_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// simDemoJSON runs the demo on simulated time and returns every report
// line as JSON, then the summary, one per line.
func simDemoJSON(t *testing.T, cfg demo.Config) []byte {
	t.Helper()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	cfg.Reports = func(r *report.Interval) {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := demo.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "%+v\n", sum)
	return out.Bytes()
}

// simDemoConfig is a demo doing everything the segment can (loss in
// bursts that take End markers and fragments, duplicates, reordering,
// remarking, link-local frames) with the RDA and the LDS beside the LDA.
func simDemoConfig(seed uint64) demo.Config {
	delay, _ := model.NewWeibull(40_000, 0.7)
	loss, _ := model.NewBurstyLoss(0.005, 8)
	cl, _ := classifier.NewClassifierFromSpecs([]string{"c2=dscp:cs2"})
	rda := synopsis.DefaultRDAConfig()
	lds := synopsis.LDSConfig{Rows: 4, Cols: 512, CellsPerFlow: 2, MaxFlows: 4096}
	return demo.Config{
		Duration: 1200 * time.Millisecond, Interval: 200 * time.Millisecond, Delay: delay, Loss: loss, Rate: 20_000, Seed: seed,
		DupProb: 0.002, ReorderProb: 0.01, LinkLocalRate: 100, DSCP: []uint8{0, 16}, ControlCopies: 2,
		Remark: []dataplane.Remark{{From: 16, To: 0, Prob: 0.02}}, MicroburstGap: time.Millisecond,
		Syn:        dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds, Classes: cl.NumClasses()},
		Classifier: cl, Insecure: true, Conf: 0.98, SimulatedTime: true,
		Log: zerolog.Nop(),
	}
}

// TestSimDemoIdentical: on simulated time, the same seed and configuration
// give the same report lines and summary byte for byte, and another seed
// other ones (the seed is used, the runs are not trivially empty).
func TestSimDemoIdentical(t *testing.T) {
	a := simDemoJSON(t, simDemoConfig(7))
	b := simDemoJSON(t, simDemoConfig(7))
	if !bytes.Equal(a, b) {
		la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
		for i := 0; i < min(len(la), len(lb)); i++ {
			if la[i] != lb[i] {
				t.Fatalf("the same seed twice: line %d differs:\n%s\n%s", i, la[i], lb[i])
			}
		}
		t.Fatalf("the same seed twice: %d lines, then %d", len(la), len(lb))
	}
	if c := simDemoJSON(t, simDemoConfig(8)); bytes.Equal(a, c) {
		t.Errorf("seeds 7 and 8 gave the same reports")
	}
	valid := bytes.Count(a, []byte(`"valid":true`))
	lds := bytes.Count(a, []byte(`"synopsis":"lds"`))
	t.Logf("%d bytes, %d lines, %d valid, %d LDS lines", len(a), bytes.Count(a, []byte("\n")), valid, lds)
	if valid < 5 || lds == 0 {
		t.Errorf("%d valid lines and %d LDS lines: the run measured too little to be a test", valid, lds)
	}
}

// TestSimDemoRefuses: what the demo does not do on simulated time is an
// error, never silently ignored.
func TestSimDemoRefuses(t *testing.T) {
	for name, edit := range map[string]func(*demo.Config){
		"malformed frames": func(c *demo.Config) {
			c.Traffic = func(e time.Duration) (bool, bool) { return false, e > 100*time.Millisecond }
		},
		"queues": func(c *demo.Config) { c.Queues = 2 },
		"rate 0": func(c *demo.Config) { c.Rate = 0 },
		"taps": func(c *demo.Config) {
			c.Taps[1][0] = &dataplane.Tap{}
		},
	} {
		cfg := simDemoConfig(1)
		edit(&cfg)
		if _, err := demo.Run(cfg); err == nil || !strings.Contains(err.Error(), "simulated time") {
			t.Errorf("%s on simulated time: err %v, want a refusal", name, err)
		}
	}
}
