//go:build race

package analyze_test

// raceEnabled: the race detector slows the shards' channels and pairing
// 5–10×, so the heaviest comparisons run a smaller share of their cases
// under it (the race detector needs the goroutines, not every case).
const raceEnabled = true
