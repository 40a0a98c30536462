package sim

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/synopsis"
)

// TestRDAFig7Generate checks the interval generator against its own
// contract: d problem packets split d/2 + d/4 lost, d/4 extra, and the
// receiver sees the matched packets plus the extras.
func TestRDAFig7Generate(t *testing.T) {
	var iv rdaInterval
	for _, d := range []int{0, 1, 7, 1000} {
		rdaGenerate(10_000, d, 3, &iv)
		lost, extra := d/2+d/4, d-d/2-d/4
		if len(iv.lost) != lost || len(iv.extra) != extra {
			t.Fatalf("d=%d: %d lost, %d extra; want %d, %d", d, len(iv.lost), len(iv.extra), lost, extra)
		}
		if len(iv.sentHash) != 10_000 || len(iv.recvHash) != 10_000-lost+extra {
			t.Fatalf("d=%d: sent %d, received %d", d, len(iv.sentHash), len(iv.recvHash))
		}
		// The mean of a 100 µs + Exp(30 µs) delay over ~10 000 packets.
		if math.Abs(iv.meanNs-130e3) > 3e3 || math.Abs(iv.sdNs-30e3) > 3e3 {
			t.Fatalf("d=%d: truth mean %.0f sd %.0f, want ≈ 130000, 30000", d, iv.meanNs, iv.sdNs)
		}
	}
}

// TestRDAFig7WithinCapacity: with the default RDA and a set difference
// well within its capacity, every interval is exact (relative error of
// the mean ≤ 1e-9 against the independently accumulated truth), the
// lost and extra sets are exactly the generated ones and so is the loss,
// while the LDA (even without digest) notices the reordered packets.
func TestRDAFig7WithinCapacity(t *testing.T) {
	n, seeds := 40_000, 3
	if testing.Short() {
		n, seeds = 20_000, 2
	}
	ms := rdaFig7Methods(n)[:1] // rda 3x2048
	lda := synopsis.DefaultLDAConfig()
	lda.Digest = false // the paper's LDA
	ms = append(ms, rdaMethod{name: "lda", lda: &lda})
	s, err := newRDASides(ms)
	if err != nil {
		t.Fatal(err)
	}
	fooled, noticed := 0, 0
	// Fixed seeds: a decode that is not exact at these d is rare (a peeling
	// failure; false pure cells are caught by the check field, docs/rda.md,
	// "False pure cells"), and these seeds have none.
	for _, d := range []int{0, 200, 1000} {
		for seed := range seeds {
			rdaGenerate(n, d, uint64(100+seed), &s.iv)
			o, err := s.run(0, &s.iv)
			if err != nil {
				t.Fatal(err)
			}
			if !o.valid || !o.exact || !o.setsRight || !o.lossRight || o.outside {
				t.Fatalf("d=%d seed %d: rda %+v; want valid, exact, sets and loss right", d, seed, o)
			}
			// (Usable cells may fall short of all: a few are empty.)
			if !(o.meanErr <= 1e-9) || o.usable < 0.99 {
				t.Fatalf("d=%d seed %d: rda mean rel err %g, usable %g", d, seed, o.meanErr, o.usable)
			}
			if !(o.sdErr < 0.1) {
				t.Fatalf("d=%d seed %d: rda std-dev rel err %g", d, seed, o.sdErr)
			}
			l, err := s.run(1, &s.iv)
			if err != nil {
				t.Fatal(err)
			}
			if d > 0 && l.valid && l.outside {
				fooled++
			}
			if d > 0 && !l.valid {
				noticed++
			}
		}
	}
	// A lost packet at the interval's end and an extra one from the
	// previous interval in the same LDA bucket leave its count right and
	// its delay sum off by about the interval length; without digests only
	// the buckets with more packets at the receiver show the extras, which
	// is enough to make the interval invalid (its loss cannot be counted).
	if noticed == 0 {
		t.Errorf("the LDA never noticed the reordered packets; the generator does not reorder")
	}
	if fooled > 0 {
		t.Errorf("the LDA was fooled %d times: valid with the truth outside its bound", fooled)
	}
}

// TestRDAFig7BeyondCapacity: a small RDA (3 × 128 cells, peeling threshold
// ≈ 0.82 · 384 ≈ 310 packets) past capacity is not exact, and whenever it
// still calls its estimate valid the truth lies within the stated bound:
// it never reports a wrong number as valid. An interval it does call
// exact must be exactly right.
func TestRDAFig7BeyondCapacity(t *testing.T) {
	n, seeds := 40_000, 6
	if testing.Short() {
		n, seeds = 20_000, 3
	}
	small := synopsis.DefaultRDAConfig()
	small.Cells = 128
	s, err := newRDASides([]rdaMethod{{name: "rda 3x128", rda: small}})
	if err != nil {
		t.Fatal(err)
	}
	valid, inexact := 0, 0
	for _, d := range []int{400, 1000, 3000} {
		for seed := range seeds {
			rdaGenerate(n, d, uint64(200+seed), &s.iv)
			o, err := s.run(0, &s.iv)
			if err != nil {
				t.Fatal(err)
			}
			if o.exact {
				if !o.setsRight || !(o.meanErr <= 1e-9) {
					t.Fatalf("d=%d seed %d: exact but wrong: %+v", d, seed, o)
				}
				continue
			}
			inexact++
			if o.setsRight {
				t.Fatalf("d=%d seed %d: sets decoded yet not exact: %+v", d, seed, o)
			}
			if o.valid {
				valid++
				if o.outside || !(o.boundRel > 0) {
					t.Fatalf("d=%d seed %d: valid but truth outside mean ± bound: %+v", d, seed, o)
				}
			}
		}
	}
	// d = 1000 and 3000 are 3 and 10 times the capacity: never decodable.
	if inexact < 2*seeds {
		t.Fatalf("only %d of %d intervals beyond capacity were inexact", inexact, 3*seeds)
	}
	t.Logf("%d of %d intervals inexact; %d of those still valid (with a bound)", inexact, 3*seeds, valid)
}

func TestRunSynopsisExperimentRDA(t *testing.T) {
	var out, csvBuf, js bytes.Buffer
	o := SynopsisOptions{Packets: 8000, Runs: 1, Seed: 5, Quick: true, CSV: &csvBuf}
	if err := RunSynopsisExperiment("rda-fig7", o, &out); err != nil {
		t.Fatal(err)
	}
	// Quick diffs ≤ n/4 = 2000: 0 and 1000, five methods each.
	recs, err := csv.NewReader(&csvBuf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+2*len(rdaFig7Methods(8000)) || recs[0][1] != "d" {
		t.Fatalf("csv: %d records, header %v", len(recs), recs[0])
	}
	if !strings.Contains(out.String(), "rda 3x2048") || !strings.HasPrefix(out.String(), "# rda-fig7") {
		t.Fatalf("table:\n%s", out.String())
	}
	o.CSV, o.JSON = nil, true
	if err := RunSynopsisExperiment("rda-fig7", o, &js); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&js)
	lines := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("json line %q: %v", sc.Text(), err)
		}
		if m["type"] != "sim" || m["experiment"] != "rda-fig7" {
			t.Fatalf("json line %v", m)
		}
		// The default RDA is exact at d ≤ 1000: the error is reported as 0.
		if m["method"] == "rda 3x2048" && m["mean_err"] != 0.0 {
			t.Fatalf("rda 3x2048 line %v: mean_err not 0", m)
		}
		lines++
	}
	if lines != 2*len(rdaFig7Methods(8000)) {
		t.Fatalf("%d json lines", lines)
	}
	if err := RunSynopsisExperiment("fig4", o, &js); err == nil {
		t.Fatal("unknown experiment accepted")
	}
	for _, bad := range []SynopsisOptions{{Runs: -1}, {Packets: -1}, {Workers: -1}, {Packets: synMaxRDAPackets + 1}, {Runs: synMaxRuns + 1}} {
		if err := RunSynopsisExperiment("rda-fig7", bad, &js); err == nil {
			t.Fatalf("options %+v accepted", bad)
		}
	}
	if err := RunSynopsisExperiment("lds-fig10", SynopsisOptions{Packets: synMaxLDSFlows + 1}, &js); err == nil {
		t.Fatal("too many flows accepted")
	}
}

// TestSynopsisTable prints a full-size synopsis table until the command
// line is wired: LDAFWD_SYN_TABLE=rda-fig7 (or lds-fig10, lds-fig12)
// go test ./sim -run TestSynopsisTable -v -timeout 30m. LDAFWD_SYN_OUT
// names a directory for <name>.csv and the PNG plots. Skipped otherwise.
func TestSynopsisTable(t *testing.T) {
	name := os.Getenv("LDAFWD_SYN_TABLE")
	if name == "" {
		t.Skip("set LDAFWD_SYN_TABLE to an experiment of SynopsisExperiments")
	}
	o := SynopsisOptions{Seed: 1}
	if dir := os.Getenv("LDAFWD_SYN_OUT"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		o.CSV, o.PlotDir = f, dir
	}
	var out bytes.Buffer
	if err := RunSynopsisExperiment(name, o, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "\n") < 5 {
		t.Fatalf("table too short:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}
