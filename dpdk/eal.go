package dpdk

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PMDDir is where Debian's DPDK 22.11 keeps its poll-mode drivers. With
// shared linkage EAL loads no driver unless told to, so the defaults pass it
// with -d.
const PMDDir = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0"

// ErrNotBuilt is returned by everything in this package when ldafwd was
// built without the dpdk build tag.
var ErrNotBuilt = errors.New("this ldafwd was built without DPDK support (build with -tags dpdk: make build does it when libdpdk-dev is installed)")

// ErrEALInit is wrapped by Init errors; EAL can be initialised once per
// process, so a second call returns the first call's outcome.
var ErrEALInit = errors.New("dpdk: EAL init")

// EALConfig is what Init needs to build the EAL command line.
type EALConfig struct {
	// Args are the user's EAL arguments (everything after "--" on the
	// ldafwd command line), passed verbatim. Defaults are added only for
	// options Args does not set.
	Args []string
	// Specs are the port specs the process will open; a PCI address among
	// them turns off the --no-pci default and allowlists it with -a.
	Specs []string
	// Cores are the CPUs for -l; empty means the first CPU this process may
	// run on.
	Cores []int
}

// EALArgs builds the argv given to rte_eal_init (argv[0] included):
// the user's Args followed by working defaults for what they leave out:
//
//	-l <cores>                     unless -l, -c or --lcores is given
//	--no-huge -m 1024              when no hugepages are free and neither --no-huge, -m nor --socket-mem is given
//	-d PMDDir                      unless -d is given (and the directory exists)
//	--file-prefix ldafwd-<pid>     unless --file-prefix is given, so two ldafwd processes never share runtime files
//	--no-telemetry                 unless --telemetry or --no-telemetry is given
//	--in-memory or --no-shconf     unless --in-memory, --no-shconf or --proc-type is given: no shared config
//	                               files (--no-shconf with --no-huge, which --in-memory refuses)
//	--no-pci                       when no spec is a PCI address and no -a/-b/--no-pci is given
//	-a <addr>                      per PCI spec when no -a/-b is given, so EAL takes only the NICs asked for
//
// hugeFree is the HugePages_Free count from /proc/meminfo.
func EALArgs(cfg EALConfig, hugeFree int, pid int, pmdDirExists bool) ([]string, error) {
	has := func(names ...string) bool {
		for _, a := range cfg.Args {
			for _, n := range names {
				if a == n || strings.HasPrefix(a, n+"=") || (len(n) == 2 && strings.HasPrefix(a, n) && n[1] != '-') {
					return true
				}
			}
		}
		return false
	}
	var pci []string
	for _, s := range cfg.Specs {
		if !strings.HasPrefix(s, "dpdk:") {
			continue
		}
		d, err := ParseSpec(s)
		if err != nil {
			return nil, err
		}
		if d.PCI {
			pci = append(pci, d.Name)
		}
	}
	argv := append([]string{"ldafwd"}, cfg.Args...)
	if !has("-l", "-c", "--lcores") {
		if len(cfg.Cores) == 0 {
			return nil, fmt.Errorf("%w: no cores given and no -l in the EAL arguments", ErrEALInit)
		}
		cs := make([]string, len(cfg.Cores))
		for i, c := range cfg.Cores {
			if c < 0 {
				return nil, fmt.Errorf("%w: core %d is negative", ErrEALInit, c)
			}
			cs[i] = strconv.Itoa(c)
		}
		argv = append(argv, "-l", strings.Join(cs, ","))
	}
	noHuge := has("--no-huge")
	if hugeFree == 0 && !has("--no-huge", "-m", "--socket-mem") {
		argv = append(argv, "--no-huge", "-m", "1024")
		noHuge = true
	}
	if pmdDirExists && !has("-d") {
		argv = append(argv, "-d", PMDDir)
	}
	if !has("--file-prefix") {
		argv = append(argv, "--file-prefix", "ldafwd-"+strconv.Itoa(pid))
	}
	if !has("--telemetry", "--no-telemetry") {
		// ldafwd exports its own metrics; telemetry would leave a
		// socket (and the runtime directory) behind every run.
		argv = append(argv, "--no-telemetry")
	}
	if !has("--in-memory", "--no-shconf", "--proc-type") {
		// --no-huge implies legacy memory, which --in-memory refuses.
		if noHuge {
			argv = append(argv, "--no-shconf")
		} else {
			argv = append(argv, "--in-memory")
		}
	}
	if !has("-a", "-b", "--allow", "--block", "--no-pci") {
		if len(pci) == 0 {
			argv = append(argv, "--no-pci")
		}
		for _, p := range pci {
			argv = append(argv, "-a", p)
		}
	}
	return argv, nil
}

// HugePagesFree reads HugePages_Free from /proc/meminfo (0 when unreadable).
func HugePagesFree() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "HugePages_Free:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// RuntimeDir is where EAL keeps per-prefix runtime files as root.
const RuntimeDir = "/var/run/dpdk"

// SweepRuntimeDirs removes dir/ldafwd-<pid> and dir/ldafwd-testpmd-<pid>
// directories whose process no longer exists — what a crashed or killed
// run leaves behind — and returns how many it removed.
func SweepRuntimeDirs(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "ldafwd-")
		if !ok || !e.IsDir() {
			continue
		}
		rest = strings.TrimPrefix(rest, "testpmd-")
		pid, err := strconv.Atoi(rest)
		if err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			continue // still running (or the pid was reused: leave it)
		}
		if os.RemoveAll(dir+"/"+e.Name()) == nil {
			n++
		}
	}
	return n
}
