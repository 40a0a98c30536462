// Package synopsis is part of ldafwd; see DESIGN.md.
package synopsis
