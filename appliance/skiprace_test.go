package appliance_test

import "testing"

// skipSlowedByRace skips a test that needs the demo's appliances at full
// speed: under the race detector they run 5-10× slower and merge
// intervals. TestDemo covers the code under -race.
func skipSlowedByRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("the appliances slowed 5-10× merge intervals; TestDemo covers the code under -race")
	}
}
