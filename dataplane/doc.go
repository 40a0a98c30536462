// Package dataplane is part of ldafwd; see DESIGN.md.
package dataplane
