package main

import (
	"fmt"
	"time"

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
