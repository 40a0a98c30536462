package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/ldafwd/ldafwd/flagfile"
	"github.com/spf13/pflag"
)

// Exit statuses of ldafwd (docs/run.md, "Exit status"). A service manager
// tells them apart: a usage error will fail the same way again, so the
// systemd unit does not restart on it (RestartPreventExitStatus=2).
const (
	exitOK      = 0 // done; also a run stopped by SIGINT, SIGTERM or SIGHUP
	exitFailure = 1 // a runtime failure: a port that cannot be opened, a report sink that fails, a capture that cannot be read
	exitUsage   = 2 // the command line or --config file is wrong: unknown command or flag, a bad or missing value
)

// usageError is an error in what the user asked for (flags, arguments,
// --config), as opposed to what happened while doing it.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageErrorf is fmt.Errorf for a usage error.
func usageErrorf(format string, a ...any) error {
	return usageError{fmt.Errorf(format, a...)}
}

// asUsage marks err, if not nil, as a usage error.
func asUsage(err error) error {
	if err == nil || errors.As(err, new(usageError)) {
		return err
	}
	return usageError{err}
}

// exitCode maps what run returned to the process's exit status.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, new(usageError)):
		return exitUsage
	default:
		return exitFailure
	}
}

// parseFlags parses args into fs. help is true when --help or -h was
// given (the help is then printed on stdout, see newFlagSet). A parse
// error names the command ("demo: unknown flag: --bogus") and is a usage
// error.
func parseFlags(fs *pflag.FlagSet, name string, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, usageErrorf("%s: %w%s (ldafwd %s --help lists the flags)", name, err, flagfile.ForError(fs, err), name)
	}
	return false, nil
}

// commandHelp is what --help prints around a command's flags: the usage
// line and worked examples.
type commandHelp struct {
	usage    string   // after "usage: ldafwd "
	notes    string   // printed after the flags, before the examples
	examples []string // command lines, each printed on its own line
}

var helps = map[string]commandHelp{
	"run": {
		usage: "run --port-a SPEC --port-b SPEC --segment-port a|b (--key-file FILE | --insecure) [flags] [-- EAL args]",
		notes: "DPDK EAL arguments (cores, devices, hugepage options) go after `--`; they are refused when no port is dpdk:.\n" +
			"Exit status: 0 stopped as asked, 1 runtime failure (a port, the report sink), 2 usage or --config error.",
		examples: []string{
			"ldafwd keygen --out /etc/ldafwd/segment.key",
			"ldafwd run --port-a dpdk:0000:03:00.0 --port-b dpdk:0000:03:00.1 --segment-port b --key-file /etc/ldafwd/segment.key -- -l 2-3",
			"ldafwd run --port-a afxdp:eth1 --port-b afxdp:eth2 --segment-port b --insecure --format json --report /var/log/ldafwd/reports.jsonl",
			"ldafwd run --config /etc/ldafwd/ldafwd.conf --metrics-addr 127.0.0.1:9464",
		},
	},
	"demo": {
		usage: "demo [flags]",
		examples: []string{
			"ldafwd demo --duration 5s",
			"ldafwd demo --loss bursty:rate=0.01,burst=20 --synopsis lda,rda --format json | jq 'select(.type==\"interval\")'",
			"ldafwd demo --mec c2=dscp:cs2 --remark cs2:0.05",
		},
	},
	"analyze": {
		usage: "analyze --sender FILE --receiver FILE [flags]",
		examples: []string{
			"ldafwd analyze --sender a.pcapng --receiver b.pcapng --truth",
			"ldafwd analyze --sender a.pcap --receiver b.pcap --synopsis all --interval 100ms --format json",
		},
	},
	"sim": {
		usage: "sim [flags]",
		examples: []string{
			"ldafwd sim --quick",
			"ldafwd sim --experiment fig5 --plot plots/ --csv fig5.csv",
			"ldafwd sim --experiment custom --delay exp:mean=20us --losses 0.01,0.1 --format json",
		},
	},
	"bench": {
		usage: "bench [flags]",
		examples: []string{
			"ldafwd bench --list",
			"ldafwd bench --only forward --duration 5s --format json",
			"ldafwd bench --write-captures /tmp/ldafwd-captures",
		},
	},
	"keygen": {
		usage: "keygen --out FILE|- [--force]",
		examples: []string{
			"ldafwd keygen --out /etc/ldafwd/segment.key",
			"ldafwd keygen --out - | ssh peer 'umask 077; cat > /etc/ldafwd/segment.key'",
		},
	},
	"rules": {
		usage: "rules --paths FILE [--out FILE|-]",
		notes: "The paths file names the segments, the paths composed of them, the window and the alert thresholds (docs/fleet.md); check the output with promtool check rules.",
		examples: []string{
			"ldafwd rules --paths /etc/ldafwd/paths.conf --out /etc/prometheus/rules/ldafwd-rules.yml",
			"ldafwd rules --paths paths.conf | promtool check rules /dev/stdin",
		},
	},
	"version": {
		usage:    "version [--format table|json]",
		examples: []string{"ldafwd version", "ldafwd --version"},
	},
}

// typeNames replaces pflag's Go type names in the flag list by what a
// user types.
var typeNames = regexp.MustCompile(`(--[a-z0-9-]+) (float64Slice|stringArray|stringSlice|durationSlice|intSlice)\b`)

var typeWords = map[string]string{
	"float64Slice": "floats", "stringArray": "string", "stringSlice": "strings",
	"durationSlice": "durations", "intSlice": "ints",
}

// writeHelp prints a command's help: summary, usage line, flags, notes,
// examples.
func writeHelp(w io.Writer, name string, fs *pflag.FlagSet) {
	h := helps[name]
	usage := h.usage
	if usage == "" {
		usage = name + " [flags]"
	}
	fmt.Fprintf(w, "ldafwd %s: %s\n\nusage: ldafwd %s\n", name, commands[name].summary, usage)
	if fs != nil && fs.HasFlags() {
		// The shorter word is padded to the type name's width: the
		// descriptions stay in one column.
		flags := typeNames.ReplaceAllStringFunc(fs.FlagUsages(), func(s string) string {
			i := strings.LastIndexByte(s, ' ')
			typ := s[i+1:]
			return s[:i+1] + typeWords[typ] + strings.Repeat(" ", len(typ)-len(typeWords[typ]))
		})
		flags = strings.ReplaceAll(flags, " (default [])", "")
		fmt.Fprintf(w, "\nflags:\n%s", flags)
	}
	if h.notes != "" {
		fmt.Fprintf(w, "\n%s\n", h.notes)
	}
	if len(h.examples) > 0 {
		b := &strings.Builder{}
		for _, e := range h.examples {
			fmt.Fprintf(b, "  %s\n", e)
		}
		fmt.Fprintf(w, "\nexamples:\n%s", b.String())
	}
}

// newFlagSet makes a command's flag set: errors are returned, not
// exit(2); --help prints the command's help on stdout (so that `ldafwd
// run --help | less` works) and Parse returns pflag.ErrHelp.
func newFlagSet(name string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("ldafwd "+name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard) // pflag prints nothing itself: errors are returned
	fs.Usage = func() { writeHelp(stdout, name, fs) }
	return fs
}
