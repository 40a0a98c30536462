// Package model is part of ldafwd; see DESIGN.md.
package model
