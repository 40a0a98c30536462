package buildinfo

import (
	"runtime"
	"runtime/debug"

	"github.com/ldafwd/ldafwd/dpdk"
)

// stampedRevision is set at link time by the Makefile (-ldflags -X), for
// builds where the go tool records no VCS information (a git worktree,
// GOFLAGS=-buildvcs=false).
var stampedRevision string

// Info describes this binary.
type Info struct {
	Version   string `json:"version"`              // module version: a tag, a pseudo-version, or "(devel)" for a build from a work tree
	Revision  string `json:"revision,omitempty"`   // VCS commit, when the go tool recorded one
	Time      string `json:"vcs_time,omitempty"`   // commit time (RFC 3339)
	Modified  bool   `json:"vcs_modified"`         // the work tree had uncommitted changes
	GoVersion string `json:"go_version"`           // toolchain
	DPDK      bool   `json:"dpdk"`                 // built with -tags dpdk: dpdk: ports available
	Tags      string `json:"build_tags,omitempty"` // -tags as the go tool recorded them
}

// Get reads what the go tool embedded in the binary (debug.ReadBuildInfo):
// `go build` from a git work tree records the revision; `go test` and
// `go run` binaries record none, and Revision is then "".
func Get() Info {
	in := Info{Version: "unknown", GoVersion: runtime.Version(), DPDK: dpdk.Built}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		in.Revision = stampedRevision
		return in
	}
	if bi.Main.Version != "" {
		in.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "-tags":
			in.Tags = s.Value
		}
	}
	if in.Revision == "" {
		in.Revision = stampedRevision
	}
	return in
}

// Labels are the labels of the ldafwd_build_info metric.
func (in Info) Labels() map[string]string {
	dp := "false"
	if in.DPDK {
		dp = "true"
	}
	mod := "false"
	if in.Modified {
		mod = "true"
	}
	return map[string]string{"version": in.Version, "revision": in.Revision, "goversion": in.GoVersion, "dpdk": dp, "vcs_modified": mod}
}
