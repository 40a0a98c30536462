//go:build race

package main

// raceEnabled: under the race detector the demo's appliances run 5–10×
// slower and intervals may merge (reported invalid, never wrong), so tests
// that require every interval valid only check that what is valid is right.
const raceEnabled = true
