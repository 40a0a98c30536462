package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimSynopsisExperiments: the RDA/LDS experiments run from `ldafwd sim`,
// print JSON lines with --format json (to --report too), and write CSV.
func TestSimSynopsisExperiments(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick RDA and LDS experiments")
	}
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.jsonl")
	var out, errb bytes.Buffer
	err := simMain(t.Context(), []string{"--experiment", "lds-fig10,rda-fig7", "--quick", "--format", "json", "--report", rep,
		"--csv", filepath.Join(dir, "x.csv")}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		if m["type"] != "sim" {
			t.Errorf("line without type sim: %s", sc.Text())
		}
		n++
	}
	if n == 0 {
		t.Fatal("no lines")
	}
	if b, _ := os.ReadFile(rep); !bytes.Equal(b, out.Bytes()) {
		t.Error("--report differs from stdout")
	}
	for _, f := range []string{"x-lds-fig10.csv", "x-rda-fig7.csv"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	err = simMain(t.Context(), []string{"--experiment", "lds-fig12", "--report", rep}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "--format json") {
		t.Errorf("--report in table mode: %v", err)
	}
}
