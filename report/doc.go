// Package report is part of ldafwd; see DESIGN.md.
package report
