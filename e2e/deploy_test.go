package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deployCheck runs scripts/deploy-check.sh for kind with the guide at doc
// ("" for docs/deploy.md) and returns its output and error.
func deployCheck(t *testing.T, kind, doc string) (string, error) {
	t.Helper()
	cmd := exec.Command("./scripts/deploy-check.sh", kind)
	cmd.Dir = ".."
	cmd.Env = os.Environ()
	if doc != "" {
		cmd.Env = append(cmd.Env, "DEPLOY_DOC="+doc)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func needDeployCheck(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("installs and runs the appliance")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: mount and network namespaces")
	}
	for _, tool := range []string{"unshare", "ip", "curl", "promtool", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
}

// TestDeployGuide: every command block of docs/deploy.md's walk-through
// marked for a port kind runs, as written, in a scratch root
// (`make deploy-check`): AF_XDP on veth eth1/eth2, DPDK on net_null
// devices when the binary links DPDK.
func TestDeployGuide(t *testing.T) {
	needDeployCheck(t)
	kinds := []string{"afxdp"}
	if exec.Command("pkg-config", "--exists", "libdpdk").Run() == nil {
		kinds = append(kinds, "dpdk")
	}
	for _, kind := range kinds {
		out, err := deployCheck(t, kind, "")
		if err != nil || !strings.Contains(out, "deploy-check: "+kind+": ok") {
			t.Errorf("deploy-check %s: %v\n%s", kind, err, out)
		}
	}
}

// TestDeployGuideBroken: a guide whose `run --check` command is wrong
// fails the check, naming the block: the check runs what the page says.
func TestDeployGuideBroken(t *testing.T) {
	needDeployCheck(t)
	page, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	const good = "ldafwd run --check --config /etc/ldafwd/ldafwd.conf\n"
	if !strings.Contains(string(page), good) {
		t.Fatalf("docs/deploy.md has no %q", good)
	}
	broken := filepath.Join(t.TempDir(), "deploy.md")
	bad := strings.Replace(string(page), good, "ldafwd run --check --config /etc/ldafwd/ldafwd.cnf\n", 1)
	if err := os.WriteFile(broken, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := deployCheck(t, "afxdp", broken)
	if err == nil || strings.Contains(out, "deploy-check: afxdp: ok") || !strings.Contains(out, "ldafwd.cnf") {
		t.Errorf("a broken command passed the check (%v):\n%s", err, out)
	}
}
