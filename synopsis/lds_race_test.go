//go:build race

package synopsis

// ldsRace is true under -race: the LDS accuracy tests are single-goroutine
// arithmetic the race detector has nothing to find in, and it slows them
// ~10×, so they skip there (they run in the normal test pass).
const ldsRace = true
