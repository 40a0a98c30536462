// Package dpdk is part of ldafwd; see DESIGN.md.
package dpdk
