package service

import (
	"fmt"
	"time"

	"github.com/ldafwd/ldafwd/report"
)

// StartCell is the interval column of the tables: its start as a UTC
// time of day (the JSON line has the interval number and start_ns), or
// "#" and the interval number when the line has no start (a failure
// reported before the interval's span was known).
func StartCell(startNs, interval int64) string {
	if startNs <= 0 {
		return fmt.Sprintf("#%d", interval)
	}
	return time.Unix(0, startNs).UTC().Format("15:04:05.000")
}

// MicroburstRows are the table lines under an interval line: one per
// microburst it lists.
func MicroburstRows(r *report.Interval) []string {
	mbs, _ := r.Extra["microbursts"].([]report.Microburst)
	var rows []string
	for _, m := range mbs {
		rows = append(rows, fmt.Sprintf("%-12s   microburst %s/%s: %d losses from %s, +%.3f ms (%v)", "", r.MEC, r.Synopsis, m.Losses,
			time.Unix(0, int64(m.StartNs)).UTC().Format("15:04:05.000000"), float64(m.EndNs-m.StartNs)/1e6, r.Extra["microburst_source"]))
	}
	return rows
}
