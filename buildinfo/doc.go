// Package buildinfo says which build of ldafwd is running: the module
// version, the VCS revision it was built from, the Go version and whether
// DPDK is linked. `ldafwd version` prints it and the ldafwd_build_info
// metric carries it, so a report or a scrape can be traced to its code.
package buildinfo
