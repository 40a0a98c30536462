package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/ldafwd/ldafwd/buildinfo"
	"github.com/ldafwd/ldafwd/report"
)

func init() {
	register("version", "print the build: module version, VCS revision, Go version, DPDK linked or not", func(args []string) error {
		return versionMain(args, os.Stdout)
	})
}

// versionRecord is the `"type":"version"` JSON line of `ldafwd version
// --format json`.
type versionRecord struct {
	Type   string `json:"type"`
	Schema int    `json:"schema"`
	buildinfo.Info
}

// versionMain is `ldafwd version` and `ldafwd --version`.
func versionMain(args []string, stdout io.Writer) error {
	fs := newFlagSet("version", stdout)
	format := fs.String("format", "table", "table (readable) or json (one JSON line)")
	if help, err := parseFlags(fs, "version", args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("version: unexpected arguments %q", fs.Args())
	}
	in := buildinfo.Get()
	switch *format {
	case "json":
		b, err := json.Marshal(versionRecord{Type: "version", Schema: report.SchemaVersion, Info: in})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	case "table":
	default:
		return usageErrorf("version: --format %q: want table or json", *format)
	}
	rev := in.Revision
	if rev == "" {
		rev = "unknown (built without VCS information)"
	} else if in.Modified {
		rev += " (modified work tree)"
	}
	dp := "not linked (afxdp: and ring: ports only; build with -tags dpdk for dpdk: ports)"
	if in.DPDK {
		dp = "linked (dpdk: ports available)"
	}
	_, err := fmt.Fprintf(stdout, "ldafwd %s\nrevision: %s\ngo: %s\ndpdk: %s\nreport schema: %d\n", in.Version, rev, in.GoVersion, dp, report.SchemaVersion)
	return err
}
