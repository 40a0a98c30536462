package eachtest

import "testing"

// Check requires that Each names each of n counters once and reports the
// value of the counter it names. only(i, v) returns the Each of a set in
// which counter i alone holds v (v > 0).
func Check(t testing.TB, n int, only func(i int, v uint64) func(fn func(name string, v uint64))) {
	t.Helper()
	names := map[string]bool{}
	for i := 0; i < n; i++ {
		hits := 0
		only(i, uint64(i+1))(func(name string, v uint64) {
			if i == 0 {
				if names[name] {
					t.Fatalf("name %q twice", name)
				}
				names[name] = true
			}
			if v != 0 {
				hits++
				if v != uint64(i+1) {
					t.Fatalf("counter %d reported as %d under %q", i, v, name)
				}
			}
		})
		if hits != 1 {
			t.Fatalf("counter %d reported %d times", i, hits)
		}
	}
	if len(names) != n {
		t.Fatalf("%d names for %d counters", len(names), n)
	}
}
