package appliance_test

import "testing"

// skipSlowedByRace skips a test that needs the demo's appliances at full
// speed on the wall clock: under the race detector they run 5-10× slower
// and merge intervals. (On simulated time a demo is the same under -race,
// only slower.) TestDemoLive covers the live code under -race.
func skipSlowedByRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("the appliances slowed 5-10× merge intervals; TestDemoLive covers the code under -race")
	}
}

// skipSimSlowUnderRace skips a test on simulated time that takes 15 s or
// more under the race detector (5–20× its plain run on a 2-core machine):
// its lines there are the same as without -race, and a simulation runs on
// one goroutine, where the detector has nothing to find. The plain test
// run holds it.
func skipSimSlowUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("on simulated time: the same lines as without -race, 15 s or more under it, on one goroutine the detector has nothing to find in")
	}
}
