//go:build !race

package synopsis

// ldsRace: see lds_race_test.go.
const ldsRace = false
