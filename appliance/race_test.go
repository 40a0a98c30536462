//go:build race

package appliance_test

// raceEnabled: the race detector slows the appliances 5–10×, so tests that
// judge timing (every interval valid, recovery within 2 intervals) relax or
// skip; TestDemo still runs every code path under it.
const raceEnabled = true
