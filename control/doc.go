// Package control is part of ldafwd; see DESIGN.md.
package control
