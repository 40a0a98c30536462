package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/internal/tooltest"
)

// TestRulesCommand: `ldafwd rules` writes what the shipped paths file
// generates (the shipped rules file, byte for byte), promtool accepts it,
// and a paths file with an error is a usage error naming the file.
func TestRulesCommand(t *testing.T) {
	var out bytes.Buffer
	if err := rulesMain([]string{"--paths", "../../scripts/prometheus/paths.conf"}, &out); err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile("../../scripts/prometheus/ldafwd-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), shipped) {
		t.Fatal("ldafwd rules does not write the shipped scripts/prometheus/ldafwd-rules.yml")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "rules.yml")
	if err := rulesMain([]string{"--paths", "../../scripts/prometheus/paths.conf", "--out", file}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	t.Run("promtool", func(t *testing.T) {
		pt := tooltest.Require(t, "promtool", "prometheus")
		if b, err := exec.Command(pt, "check", "rules", file).CombinedOutput(); err != nil || !bytes.Contains(b, []byte("SUCCESS")) {
			t.Fatalf("promtool check rules: %v\n%s", err, b)
		}
	})
	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("window banana\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--paths", bad}, exitUsage, "bad.conf"},
		{[]string{}, exitUsage, "--paths"},
		{[]string{"--paths", filepath.Join(dir, "missing.conf")}, exitFailure, "missing.conf"},
	} {
		err := rulesMain(c.args, &bytes.Buffer{})
		if exitCode(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v (exit %d), want %d naming %q", c.args, err, exitCode(err), c.code, c.msg)
		}
	}
}
