package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoCmd runs a command in the repository's root and returns its output.
func repoCmd(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// versionOf runs `BIN version` with the library path a scratch root
// would have, and returns its output.
func versionOf(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), "revision: ") {
		t.Fatalf("%s version says no revision:\n%s", bin, out)
	}
	return string(out)
}

// TestMakeInstall: `make install` into a scratch root (DESTDIR, PREFIX)
// writes the binary, the unit with ExecStart under PREFIX, the example
// config, the rules, the dashboard and the dissector; the installed binary
// runs.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs the binary")
	}
	root := t.TempDir()
	repoCmd(t, nil, "make", "--no-print-directory", "install", "DESTDIR="+root, "PREFIX=/usr")
	for _, f := range []string{"usr/bin/ldafwd", "usr/lib/systemd/system/ldafwd.service", "usr/share/ldafwd/ldafwd.conf.example",
		"usr/share/ldafwd/prometheus/paths.conf", "usr/share/ldafwd/prometheus/ldafwd-rules.yml",
		"usr/share/ldafwd/grafana/ldafwd-fleet.json", "usr/share/ldafwd/wireshark/ldafwd.lua"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("make install did not write %s: %v", f, err)
		}
	}
	unit, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/ldafwd.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("ExecStart=/usr/bin/ldafwd run --config /etc/ldafwd/ldafwd.conf")) || bytes.Contains(unit, []byte("/usr/local/bin")) {
		t.Errorf("the installed unit does not start PREFIX's binary:\n%s", unit)
	}
	versionOf(t, filepath.Join(root, "usr/bin/ldafwd"))
	// The installed rules are what the installed binary writes from the
	// installed paths file.
	rules, err := exec.Command(filepath.Join(root, "usr/bin/ldafwd"), "rules", "--paths", filepath.Join(root, "usr/share/ldafwd/prometheus/paths.conf")).Output()
	if err != nil {
		t.Fatal(err)
	}
	shipped, _ := os.ReadFile(filepath.Join(root, "usr/share/ldafwd/prometheus/ldafwd-rules.yml"))
	if !bytes.Equal(rules, shipped) {
		t.Error("the installed binary's rules differ from the installed rules file")
	}
}

// TestDebPackage: `make deb`'s script builds a .deb with dpkg-deb whose
// control names the shared libraries the binary links (dpkg-shlibdeps),
// whose files are those of make install under /usr, and whose binary,
// unpacked into a scratch root, runs.
func TestDebPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package")
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("not a Debian system: no dpkg-deb")
	}
	out := t.TempDir()
	repoCmd(t, nil, "make", "--no-print-directory", "build")
	deb := strings.TrimSpace(repoCmd(t, nil, "./scripts/deb.sh", "bin/ldafwd", out))
	info := repoCmd(t, nil, "dpkg-deb", "--info", deb)
	for _, want := range []string{"Package: ldafwd", "Version: 0~git", "Depends: libc6", "postinst"} {
		if !strings.Contains(info, want) {
			t.Errorf("dpkg-deb --info lacks %q:\n%s", want, info)
		}
	}
	dpdkLinked := exec.Command("pkg-config", "--exists", "libdpdk").Run() == nil
	if dpdkLinked && !strings.Contains(info, "librte-eal") {
		t.Errorf("the binary links DPDK but the package does not depend on it:\n%s", info)
	}
	root := t.TempDir()
	repoCmd(t, nil, "dpkg", "-x", deb, root)
	for _, f := range []string{"usr/bin/ldafwd", "usr/lib/systemd/system/ldafwd.service", "usr/share/ldafwd/ldafwd.conf.example",
		"usr/share/ldafwd/prometheus/paths.conf", "usr/share/ldafwd/prometheus/ldafwd-rules.yml",
		"usr/share/ldafwd/grafana/ldafwd-fleet.json", "usr/share/ldafwd/wireshark/ldafwd.lua"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the package lacks %s: %v", f, err)
		}
	}
	versionOf(t, filepath.Join(root, "usr/bin/ldafwd"))
	dpkgInstall(t, deb)
}

// dpkgInstall installs deb with `dpkg -i` into this system as seen
// through a mount namespace whose /etc, /usr and /var are overlays on a
// scratch directory (the install, its postinst's useradd and dpkg's
// database vanish with it), then checks what the package promises: the
// user ldafwd, /etc/ldafwd/ldafwd.conf from the example, a unit systemd
// accepts, and `ldafwd version` from the PATH. Skips where it cannot
// (not root, no unshare); returns `ldafwd version`'s output.
func dpkgInstall(t *testing.T, deb string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("not root: the package is not installed with dpkg -i")
		return ""
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Log("no unshare: the package is not installed with dpkg -i")
		return ""
	}
	scratch := t.TempDir()
	script := `set -euo pipefail
mount --make-rprivate /
for d in etc usr var; do
	mkdir -p "$S/up/$d" "$S/work/$d"
	mount -t overlay overlay -o "lowerdir=/$d,upperdir=$S/up/$d,workdir=$S/work/$d" "/$d"
done
dpkg -i "$DEB" >/dev/null
getent passwd ldafwd >/dev/null || { echo "no user ldafwd after dpkg -i" >&2; exit 1; }
test -f /etc/ldafwd/ldafwd.conf || { echo "no /etc/ldafwd/ldafwd.conf after dpkg -i" >&2; exit 1; }
if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze verify /usr/lib/systemd/system/ldafwd.service 2>&1)
	[ -z "$out" ] || { echo "systemd-analyze verify: $out" >&2; exit 1; }
fi
PATH=/usr/bin:$PATH ldafwd version
`
	cmd := exec.Command("unshare", "--mount", "--fork", "bash", "-c", script)
	cmd.Env = append(os.Environ(), "S="+scratch, "DEB="+deb)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "revision: ") {
		t.Fatalf("dpkg -i %s in a scratch root: %v\n%s", filepath.Base(deb), err, out)
	}
	return string(out)
}

// TestAFXDPOnlyBuild: `make build-afxdp` is a static binary (no DPDK or
// other shared library) that runs, says DPDK is not linked, and refuses a
// dpdk: port with a clear error; `make install BIN=bin/ldafwd-afxdp`
// installs it into a scratch root, and its package (make deb with the
// same BIN) depends on nothing and installs with dpkg -i.
func TestAFXDPOnlyBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary without cgo")
	}
	root := t.TempDir()
	repoCmd(t, nil, "make", "--no-print-directory", "install", "BIN=bin/ldafwd-afxdp", "DESTDIR="+root, "PREFIX=/usr")
	bin := filepath.Join(root, "usr/bin/ldafwd")
	if out, _ := exec.Command("ldd", bin).CombinedOutput(); !strings.Contains(string(out), "not a dynamic executable") {
		t.Errorf("ldd %s: a dynamic executable:\n%s", bin, out)
	}
	if v := versionOf(t, bin); !strings.Contains(v, "dpdk: not linked") {
		t.Errorf("version does not say DPDK is not linked:\n%s", v)
	}
	out, err := exec.Command(bin, "run", "--check", "--port-a", "dpdk:net_null0", "--port-b", "dpdk:net_null1", "--segment-port", "b", "--insecure").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not available in this build") {
		t.Errorf("a dpdk: port on the AF_XDP-only build: %v\n%s", err, out)
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		return
	}
	deb := strings.TrimSpace(repoCmd(t, nil, "./scripts/deb.sh", "bin/ldafwd-afxdp", t.TempDir()))
	if info := repoCmd(t, nil, "dpkg-deb", "--info", deb); strings.Contains(info, "Depends:") {
		t.Errorf("the AF_XDP-only package depends on something:\n%s", info)
	}
	if v := dpkgInstall(t, deb); v != "" && !strings.Contains(v, "dpdk: not linked") {
		t.Errorf("the installed AF_XDP-only package's version does not say DPDK is not linked:\n%s", v)
	}
}
