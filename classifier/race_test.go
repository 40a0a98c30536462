//go:build race

package classifier

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
