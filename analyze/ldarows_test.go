package analyze_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/analyze/analyzetest"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestLDARecordLarger: recorded at run's 8 × 1024 rows (Config.LDARecord)
// and estimated at the default 8 × 128, every line is byte for byte the
// line recorded at 8 × 128 gives, but where 40 % loss leaves its sample
// thin: there the line is estimated at the recorded shape, with the same
// counts, more samples, and says so (lda_rows, and the configured shape's
// samples). Streaming and whole-capture analysis agree; at 1 % loss
// nothing changes; a recorded shape that does not fold to the configured
// one is refused.
func TestLDARecordLarger(t *testing.T) {
	base := analyze.Config{Interval: 250 * time.Millisecond, LDA: synopsis.DefaultLDAConfig(), UseLDA: true, Truth: true}
	larger := base
	larger.LDARecord = synopsis.RecordLDAConfig()
	larger.LDARecord.Digest = base.LDA.Digest
	lines := func(out []*report.Interval) []string {
		var s []string
		for _, r := range out {
			c := *r
			c.Type = "" // set by the streaming path's writer only
			b, err := json.Marshal(&c)
			if err != nil {
				t.Fatal(err)
			}
			s = append(s, string(b))
		}
		return s
	}
	for _, loss := range []float64{0.4, 0.01} {
		snd, rcv, _ := captures(t, analyzetest.Config{Packets: 40_000, Rate: 20_000, Start: time.Unix(1_700_000_000, 0),
			MeanDelay: 50 * time.Microsecond, Loss: loss, Seed: 5})
		a, _ := run(t, snd, rcv, base)
		b, _ := run(t, snd, rcv, larger)
		whole := larger
		whole.WholeCapture = true
		w, _ := run(t, snd, rcv, whole)
		if lb, lw := lines(b), lines(w); strings.Join(lb, "\n") != strings.Join(lw, "\n") {
			for i := range min(len(lb), len(lw)) {
				if lb[i] != lw[i] {
					t.Errorf("loss %g: streaming and whole-capture reports differ:\n%s\n%s", loss, lb[i], lw[i])
					break
				}
			}
		}
		if len(a) != len(b) {
			t.Fatalf("loss %g: %d lines at 8 × 128, %d recorded larger", loss, len(a), len(b))
		}
		la, lb := lines(a), lines(b)
		n := 0
		for i, r := range b {
			shape, ok := r.Extra["lda_rows"]
			if !ok {
				if la[i] != lb[i] {
					t.Errorf("loss %g, interval %d: the line changed without lda_rows:\n%s\n%s", loss, r.Interval, la[i], lb[i])
				}
				continue
			}
			n++
			x := a[i]
			if shape != larger.LDARecord.Shape() || r.Extra["lda_rows_configured_samples"] != x.Samples ||
				r.Samples <= x.Samples || r.Sent != x.Sent || r.Received != x.Received || r.Lost != x.Lost ||
				!synopsis.LDAThin(x.Sent, x.Received, x.Samples) {
				t.Errorf("loss %g, interval %d: at %v %d samples (configured %v), sent/received/lost %d/%d/%d against %d samples, %d/%d/%d",
					loss, r.Interval, shape, r.Samples, r.Extra["lda_rows_configured_samples"], r.Sent, r.Received, r.Lost, x.Samples, x.Sent, x.Received, x.Lost)
			}
			t.Logf("loss %g, interval %d: %d → %d samples, mean %.0f ± %.0f (true %.0f)", loss, r.Interval, x.Samples, r.Samples, r.MeanNs, r.MeanCINs, *r.TrueMeanNs)
		}
		if want := loss > 0.1; (n >= 4) != want || !want && n > 0 {
			t.Errorf("loss %g: %d lines estimated at the recorded shape", loss, n)
		}
	}
	bad := base
	bad.LDARecord = synopsis.LDAConfig{Banks: []synopsis.BankConfig{{Rows: 1024, SampleLog2: 1}}, Digest: true}
	snd, rcv, _ := captures(t, analyzetest.Config{Packets: 1000, Rate: 10_000, Start: time.Unix(1_700_000_000, 0), MeanDelay: 50 * time.Microsecond, Seed: 5})
	if _, err := runErr(t, snd, rcv, bad); err == nil || !strings.Contains(err.Error(), "does not fold") {
		t.Errorf("a recorded shape of other banks: %v", err)
	}
}
