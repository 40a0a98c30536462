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
