// Package bench is part of ldafwd; see DESIGN.md.
package bench
