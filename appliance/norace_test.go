//go:build !race

package appliance_test

const raceEnabled = false
