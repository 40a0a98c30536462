package appliance

import (
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// TestKeepCachesIntervals: the sender keeps an interval's timestamp
// caches and recorded RDA cells while it ships repairKeepIntervals more
// (a receiver asks about a cut once both intervals around it have
// paired, which under control loss has taken four intervals), and then
// lets them go for reuse.
func TestKeepCachesIntervals(t *testing.T) {
	rda := synopsis.DefaultRDAConfig()
	set, err := dataplane.NewSynSet(dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, Classes: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := &answerer{cfg: &Config{Interval: time.Second}}
	for k := uint64(100); k <= 110; k++ {
		set.FirstK, set.LastK = k, k
		s.keepCaches(set, 100)
		for j := uint64(100); j <= k; j++ {
			kept := s.tscaches[j] != nil && s.tscaches[j][0] != nil
			if want := j+repairKeepIntervals >= k; kept != want {
				t.Errorf("after shipping %d: caches of %d kept %v, want %v", k, j, kept, want)
			}
			if fk := s.fulls[j] != nil; fk != kept {
				t.Errorf("after shipping %d: cells of %d kept %v, caches %v", k, j, fk, kept)
			}
		}
	}
	if repairKeepIntervals < 5 {
		t.Errorf("repairKeepIntervals %d: the edge check of a congested segment's first cut came four intervals after it", repairKeepIntervals)
	}
}
