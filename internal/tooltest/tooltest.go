package tooltest

import (
	"os"
	"os/exec"
	"testing"
)

// Require returns the path of the program name from the Debian package
// debianPkg, skipping the test without it (failing under CI).
func Require(t testing.TB, name, debianPkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found under CI: scripts/deps.sh installs Debian's %s package", name, debianPkg)
		}
		t.Skipf("%s not found (Debian package %s; scripts/deps.sh installs it)", name, debianPkg)
	}
	return p
}
