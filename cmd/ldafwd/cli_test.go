package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dpdk"
)

// mains runs each command's main with explicit stdout and stderr.
var mains = map[string]func(args []string, stdout, stderr io.Writer) error{
	"run":     func(a []string, o, e io.Writer) error { return runMain(context.Background(), a, o, e) },
	"demo":    demoMain,
	"analyze": analyzeMain,
	"sim":     func(a []string, o, e io.Writer) error { return simMain(context.Background(), a, o, e) },
	"bench":   benchMain,
	"keygen":  keygenMain,
	"rules":   func(a []string, o, _ io.Writer) error { return rulesMain(a, o) },
	"version": func(a []string, o, _ io.Writer) error { return versionMain(a, o) },
}

// flagValue matches a flag line of the help with a value placeholder.
var flagValue = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([\w-]+) (\S+)  `)

// TestHelpOnStdout: --help (and -h) print the command's usage line, its
// flags and examples on stdout, nothing on stderr, and succeed; the flag
// list shows no Go type names.
func TestHelpOnStdout(t *testing.T) {
	if len(mains) != len(commands) {
		t.Fatalf("%d commands registered, %d tested", len(commands), len(mains))
	}
	for name, m := range mains {
		for _, h := range []string{"--help", "-h"} {
			var out, errb bytes.Buffer
			if err := m([]string{h}, &out, &errb); err != nil {
				t.Errorf("%s %s: %v", name, h, err)
			}
			s := out.String()
			for _, want := range []string{"usage: ldafwd " + name, "examples:\n  ldafwd ", commands[name].summary} {
				if !strings.Contains(s, want) {
					t.Errorf("%s %s: stdout lacks %q:\n%s", name, h, want, s)
				}
			}
			for _, bad := range []string{"float64Slice", "stringArray", "stringSlice", "(default [])"} {
				if strings.Contains(s, bad) {
					t.Errorf("%s %s: help shows %q", name, h, bad)
				}
			}
			// A word in backquotes in a flag's usage becomes its value's
			// placeholder (pflag's UnquoteUsage): only type names belong there.
			for _, m := range flagValue.FindAllStringSubmatch(s, -1) {
				if !strings.Contains(" string int uint float floats duration strings ints uints ", " "+m[2]+" ") {
					t.Errorf("%s %s: --%s shows the value placeholder %q", name, h, m[1], m[2])
				}
			}
			if errb.Len() > 0 {
				t.Errorf("%s %s: stderr %q", name, h, errb.String())
			}
		}
	}
	var out bytes.Buffer
	mains["run"]([]string{"--help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "EAL arguments") || !strings.Contains(out.String(), "go after `--`") {
		t.Errorf("run --help does not say where EAL arguments go")
	}
	if strings.Contains(out.String(), "--rda-cache int                 RDA timestamp cache budget per side, bytes (0: no cache, no repair) (default -1)") {
		t.Errorf("--rda-cache shows a default of -1")
	}
}

// TestExitCodes: a usage or configuration error exits 2 and names the
// command; a runtime failure (a port that cannot be opened) exits 1.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"nosuchcommand"}, exitUsage, `unknown command "nosuchcommand"`},
		{[]string{"demo", "--bogus"}, exitUsage, "demo: unknown flag: --bogus"},
		{[]string{"analyze", "--bogus"}, exitUsage, "analyze: unknown flag: --bogus"},
		{[]string{"sim", "--bogus"}, exitUsage, "sim: unknown flag: --bogus"},
		{[]string{"bench", "--bogus"}, exitUsage, "bench: unknown flag: --bogus"},
		{[]string{"keygen", "--bogus"}, exitUsage, "keygen: unknown flag: --bogus"},
		{[]string{"version", "--bogus"}, exitUsage, "version: unknown flag: --bogus"},
		{[]string{"run", "--bogus"}, exitUsage, "run: unknown flag: --bogus"},
		// A typo names the flag meant.
		{[]string{"run", "--intervall", "1s"}, exitUsage, `run: unknown flag: --intervall (did you mean "--interval"?)`},
		{[]string{"demo", "--durration", "1s"}, exitUsage, `demo: unknown flag: --durration (did you mean "--duration"?)`},
		{[]string{"demo", "--duration", "-1s"}, exitUsage, "--duration"},
		{[]string{"keygen"}, exitUsage, "--out"},
		{[]string{"run", "--port-a", "ring:x.a", "--port-b", "ring:x.b", "--segment-port", "b", "--insecure", "--interval", "1ms"}, exitUsage, "--interval"},
		{[]string{"run", "--port-a", "ring:x.a", "--port-b", "ring:x.b", "--segment-port", "b"}, exitUsage, "--key-file"},
		{[]string{"run", "--config", filepath.Join(t.TempDir(), "missing.conf")}, exitUsage, "--config"},
		// A NIC that is not there is not the user's syntax: exit 1.
		{[]string{"run", "--port-a", "afxdp:ldafwdnone0", "--port-b", "afxdp:ldafwdnone1", "--segment-port", "b", "--insecure", "--duration", "1s"}, exitFailure, "ldafwdnone"},
		{[]string{"analyze", "--sender", "/nonexistent/a.pcap", "--receiver", "/nonexistent/b.pcap"}, exitFailure, "--sender"},
	} {
		m := mains[c.args[0]]
		if m == nil {
			m = func(a []string, _, _ io.Writer) error { return run(c.args) }
		}
		err := m(c.args[1:], io.Discard, io.Discard)
		if got := exitCode(err); got != c.code || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: exit %d (%v), want %d and %q", c.args, got, err, c.code, c.msg)
		}
	}
	if exitCode(nil) != exitOK {
		t.Error("nil error does not exit 0")
	}
}

// TestKeygenStdout: --out - writes the key to stdout in the key file's
// format (LoadKeyFile reads it back) and creates no file named "-".
func TestKeygenStdout(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var out, errb bytes.Buffer
	if err := keygenMain([]string{"--out", "-"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Fatal(`keygen --out - created a file named "-"`)
	}
	line := strings.TrimSuffix(out.String(), "\n")
	if b, err := hex.DecodeString(line); err != nil || len(b) != 32 || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("stdout %q: not one line of a hex 32-byte key", out.String())
	}
	path := filepath.Join(dir, "k")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := control.LoadKeyFile(path); err != nil {
		t.Fatalf("the printed key does not load as a key file: %v", err)
	}
}

// TestVersion: `version --format json` names the Go toolchain and
// whether DPDK is linked, as this test binary has them; --version is the
// same command.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := versionMain([]string{"--format", "json"}, &out); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Type, Version, GoVersion string `json:",omitempty"`
		Go                       string `json:"go_version"`
		DPDK                     bool   `json:"dpdk"`
		Schema                   int    `json:"schema"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Type != "version" || v.Version == "" || v.Go != runtime.Version() || v.DPDK != dpdk.Built || v.Schema < 1 {
		t.Fatalf("version %s", out.String())
	}
	out.Reset()
	if err := versionMain(nil, &out); err != nil || !strings.HasPrefix(out.String(), "ldafwd ") || !strings.Contains(out.String(), "dpdk: ") {
		t.Fatalf("version: %v %q", err, out.String())
	}
}

// TestServiceUnit: scripts/ldafwd.service runs as a dedicated user with
// only the capabilities it names, hardened, and does not restart on a
// usage or configuration error (exitUsage); systemd-analyze verify, where
// installed, finds nothing to say about it (an unknown key is a warning
// there, so any output fails).
func TestServiceUnit(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join("..", "..", "scripts", "ldafwd.service"))
	if err != nil {
		t.Fatal(err)
	}
	u := string(unit)
	for _, want := range []string{"\nUser=ldafwd\n", "\nNoNewPrivileges=yes\n", "\nProtectSystem=strict\n", "\nType=exec\n",
		fmt.Sprintf("\nRestartPreventExitStatus=%d\n", exitUsage), "\nRestart=on-failure\n", "\nCapabilityBoundingSet=CAP_",
		"\nDocumentation=https://"} {
		if !strings.Contains(u, want) {
			t.Errorf("ldafwd.service lacks %q", strings.TrimSpace(want))
		}
	}
	amb := regexp.MustCompile(`(?m)^AmbientCapabilities=(.*)$`).FindStringSubmatch(u)
	bnd := regexp.MustCompile(`(?m)^CapabilityBoundingSet=(.*)$`).FindStringSubmatch(u)
	if amb == nil || bnd == nil || amb[1] != bnd[1] {
		t.Errorf("ambient %q and bounding %q capabilities differ", amb, bnd)
	}
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit's keys are not verified")
	}
	// verify needs an executable ExecStart: this test binary stands in.
	self, _ := os.Executable()
	dir := t.TempDir()
	path := filepath.Join(dir, "ldafwd.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(u, "/usr/local/bin/ldafwd", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
