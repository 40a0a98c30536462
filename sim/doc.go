// Package sim is part of ldafwd; see DESIGN.md.
package sim
