package dataplane

import "testing"

// TestParseRemarks: --remark and --dscp read DSCPs the way --mec does
// and refuse what they cannot mean.
func TestParseRemarks(t *testing.T) {
	rs, err := ParseRemarks("cs2:0.05, af11>ef:1,16>8:0.5")
	if err != nil || len(rs) != 3 ||
		rs[0].From != 16 || rs[0].To != 0 || rs[0].Prob != 0.05 ||
		rs[1].From != 10 || rs[1].To != 46 || rs[1].Prob != 1 ||
		rs[2].From != 16 || rs[2].To != 8 {
		t.Errorf("ParseRemarks: %+v, %v", rs, err)
	}
	for _, bad := range []string{"cs2", "cs2:0", "cs2:1.5", "cs9:0.1", "cs2>cs2:0.1", "64:0.1", "cs2>x:0.1"} {
		if _, err := ParseRemarks(bad); err == nil {
			t.Errorf("--remark %q accepted", bad)
		}
	}
	if rs, err := ParseRemarks(""); err != nil || rs != nil {
		t.Errorf("empty --remark: %v %v", rs, err)
	}
	ds, err := ParseDSCPList("be,cs2,ef,63")
	if err != nil || len(ds) != 4 || ds[0] != 0 || ds[1] != 16 || ds[2] != 46 || ds[3] != 63 {
		t.Errorf("ParseDSCPList: %v %v", ds, err)
	}
	for _, bad := range []string{"", "be,,ef", "64", "cs2-cs4"} {
		if _, err := ParseDSCPList(bad); err == nil {
			t.Errorf("--dscp %q accepted", bad)
		}
	}
}
