// Package ring is part of ldafwd; see DESIGN.md.
package ring
