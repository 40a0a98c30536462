// Package analyze is part of ldafwd; see DESIGN.md.
package analyze
