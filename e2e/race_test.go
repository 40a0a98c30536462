//go:build race

package e2e

// raceEnabled: under the race detector the appliances run 5–10× slower and
// control frames time out (intervals reported invalid, never wrong): labs
// that require every interval valid skip.
const raceEnabled = true
