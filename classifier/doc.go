// Package classifier is part of ldafwd; see DESIGN.md.
package classifier
