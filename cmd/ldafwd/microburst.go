package main

import (
	"fmt"
	"time"

	"github.com/ldafwd/ldafwd/report"
	"github.com/spf13/pflag"
)

// microburstFlags are run's and demo's --microburst-gap and
// --microburst-min: the names and meaning of analyze's, for the losses the
// appliance can time live (appliance.Config.MicroburstGap).
type microburstFlags struct {
	gap time.Duration
	min int
}

func (f *microburstFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.gap, "microburst-gap", time.Millisecond, "group the interval's losses whose send times are known (single-loss LDA buckets; with a completed RDA repair, every lost packet exactly) closer than this into microbursts, reported in each line's extra, the table and the metrics (0: off)")
	fs.IntVar(&f.min, "microburst-min", 5, "losses a microburst needs to be reported")
}

func (f *microburstFlags) validate() error {
	if f.gap < 0 || f.min < 1 {
		return fmt.Errorf("--microburst-gap %v must be ≥ 0 and --microburst-min %d ≥ 1", f.gap, f.min)
	}
	return nil
}

// microburstRows are the table lines under an interval line: one per
// microburst it lists.
func microburstRows(r *report.Interval) []string {
	mbs, _ := r.Extra["microbursts"].([]report.Microburst)
	var rows []string
	for _, m := range mbs {
		rows = append(rows, fmt.Sprintf("%-12s   microburst %s/%s: %d losses from %s, +%.3f ms (%v)", "", r.MEC, r.Synopsis, m.Losses,
			time.Unix(0, int64(m.StartNs)).UTC().Format("15:04:05.000000"), float64(m.EndNs-m.StartNs)/1e6, r.Extra["microburst_source"]))
	}
	return rows
}
