//go:build race

package appliance_test

// raceEnabled: the race detector slows the appliances 5–10×, so tests that
// judge timing on the wall clock relax or skip; TestDemoLive still runs
// the live pipeline under it. (Tests on simulated time need neither.)
const raceEnabled = true
