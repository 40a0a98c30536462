package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCheck: `run --check` opens and closes the ports, checks the
// report file and the metrics address, prints what would run and exits 0;
// each thing it cannot use exits 2 naming it. Nothing is forwarded: the
// command returns at once.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	ring := []string{"--port-a", "ring:chk.a", "--port-b", "ring:chk.b", "--segment-port", "b", "--insecure"}
	var out bytes.Buffer
	err := runMain(t.Context(), append([]string{"--check", "--report", filepath.Join(dir, "r.json")}, ring...), &out, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("check of ring ports: %v", err)
	}
	for _, want := range []string{"ok: measuring (segment on port b)", "ok: port a ring:chk.a opens", "ok: port b ring:chk.b opens", "NOT authenticated"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json")); !os.IsNotExist(err) {
		t.Errorf("--check created the report file (%v)", err)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{append([]string{"--report", "/nonexistent/dir/r.json"}, ring...), "--report: cannot create /nonexistent/dir/r.json"},
		{append([]string{"--report", dir}, ring...), "is a directory"},
		{append([]string{"--metrics-addr", busy.Addr().String()}, ring...), "--metrics-addr"},
		{[]string{"--port-a", "afxdp:ldfnochk0", "--port-b", "afxdp:ldfnochk1", "--segment-port", "b", "--insecure"}, "--port-a"},
		{[]string{"--port-a", "ring:chk.a", "--port-b", "ring:chk.b", "--segment-port", "b"}, "--key-file"},
	} {
		err := runMain(t.Context(), append([]string{"--check"}, c.args...), &bytes.Buffer{}, &bytes.Buffer{})
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v (exit %d), want exit 2 naming %q", c.args, err, exitCode(err), c.msg)
		}
	}
}

// TestRunCheckAFXDP: on a real veth pair the check binds an AF_XDP socket
// on each interface and lets go of it, so that the appliance's start right
// after it finds the queues free.
func TestRunCheckAFXDP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for veth and AF_XDP")
	}
	if err := exec.Command("ip", "link", "add", "ldfchk0", "type", "veth", "peer", "name", "ldfchk1").Run(); err != nil {
		t.Skipf("no veth: %v", err)
	}
	defer exec.Command("ip", "link", "del", "ldfchk0").Run()
	for _, i := range []string{"ldfchk0", "ldfchk1"} {
		if err := exec.Command("ip", "link", "set", i, "up").Run(); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--check", "--port-a", "afxdp:ldfchk0", "--port-b", "afxdp:ldfchk1", "--segment-port", "b", "--insecure"}
	for i := 0; i < 2; i++ { // the second check finds the queues released
		var out bytes.Buffer
		if err := runMain(t.Context(), args, &out, &bytes.Buffer{}); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
		if !strings.Contains(out.String(), "ok: port a afxdp:ldfchk0") || !strings.Contains(out.String(), "XDP mode") {
			t.Fatalf("check %d output:\n%s", i, out.String())
		}
	}
}
