package report

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The table rows the commands print with --format table: each shows an
// interval line's fields, "-" where the JSON line has null.

// startCell is the interval column of the tables: its start as a UTC
// time of day (the JSON line has the interval number and start_ns), or
// "#" and the interval number when the line has no start (a failure
// reported before the interval's span was known).
func startCell(startNs, interval int64) string {
	if startNs <= 0 {
		return fmt.Sprintf("#%d", interval)
	}
	return time.Unix(0, startNs).UTC().Format("15:04:05.000")
}

// MicroburstRows are the table lines under an interval line: one per
// microburst it lists.
func MicroburstRows(r *Interval) []string {
	mbs, _ := r.Extra["microbursts"].([]Microburst)
	var rows []string
	for _, m := range mbs {
		rows = append(rows, fmt.Sprintf("%-12s   microburst %s/%s: %d losses from %s, +%.3f ms (%v)", "", r.MEC, r.Synopsis, m.Losses,
			time.Unix(0, int64(m.StartNs)).UTC().Format("15:04:05.000000"), float64(m.EndNs-m.StartNs)/1e6, r.Extra["microburst_source"]))
	}
	return rows
}

// RunRow is a table row of run: the interval's start as a time of day,
// "-" where the JSON line has null, the LDS flow (up to 97 characters
// for IPv6) after the fixed columns so that rows align, then the reason.
func RunRow(iv *Interval) string {
	noDelay := !iv.Valid || iv.Samples == 0 || iv.Synopsis == "sample"
	ok, why := "yes", ""
	if !iv.Valid {
		ok, why = "no", ": "+iv.Reason
	}
	flow, syn := "", iv.Synopsis
	if iv.Flow != "" {
		flow = " flow " + iv.Flow + fragmentsCell(iv) + flowP99Cell(iv, false)
	}
	if syn == "sample" {
		// As analyze's table: the quantiles after the columns.
		syn, flow = "smp", sampleCell(iv)
	}
	return fmt.Sprintf("%-12s %-5s %-8s %-3s %9d %9d %7d %10s %9s %10s %8d %s%s%s", startCell(iv.StartNs, iv.Interval), iv.Direction, iv.MEC, syn,
		iv.Sent, iv.Received, iv.Lost, usCell(iv.MeanNs, noDelay), usCell(iv.MeanCINs, noDelay), usCell(iv.StddevNs, noDelay || iv.Synopsis == "lds"),
		iv.Samples, ok, flow, why)
}

// fragmentsCell is what an LDS flow line counts of IP fragments, after
// its flow's name, where its extra says (docs/lds.md, "IP fragments"): a
// table reader takes the counts for the flow's traffic otherwise.
func fragmentsCell(r *Interval) string {
	switch r.Extra["fragments"] {
	case "whole_and_first":
		return fmt.Sprintf(" (whole packets and first fragments; later fragments in %v)", r.Extra["later_fragments_flow"])
	case "later":
		return " (later IP fragments)"
	}
	return ""
}

// usCell is a delay in µs with 3 decimals, or "-" for none.
func usCell(ns float64, none bool) string {
	if none {
		return "-"
	}
	return fmt.Sprintf("%.3f", ns/1e3)
}

// delayCell is a delay column of the tables: µs, or "-" where the JSON
// line has null (no estimate: invalid, no sample).
func delayCell(v float64, none bool, width int) string {
	if none || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%*s", width, "-")
	}
	return fmt.Sprintf("%*.2f", width, v/1e3)
}

// DemoRow is a table row of demo: the estimates beside the truth.
func DemoRow(r *Interval) string {
	tru := func(p *float64) string {
		if p == nil {
			return "     -"
		}
		return fmt.Sprintf("%8.2f", *p/1e3)
	}
	trueLost := "-"
	if r.TrueLost != nil {
		trueLost = fmt.Sprint(*r.TrueLost)
	}
	valid := "yes"
	if !r.Valid {
		valid = "no: " + r.Reason
	}
	noDelay := !r.Valid || r.Samples == 0
	if r.Flow != "" {
		// A flow of the LDS: indented under its interval; the flow's
		// name (up to 97 characters for IPv6) after the fixed columns,
		// so that IPv4 and IPv6 rows align.
		ok, why := "yes", ""
		if !r.Valid {
			ok, why = "no", ": "+r.Reason
		}
		return fmt.Sprintf("%-12s   flow %8d pkts  mean %s µs  lost %6d  %-3s  %s%s%s", "", r.Sent,
			delayCell(r.MeanNs, noDelay, 8), r.Lost, ok, r.Flow, fragmentsCell(r)+flowP99Cell(r, true), why)
	}
	if r.Synopsis == "sample" {
		// The quantiles with their bounds, each beside its true value
		// where the truth is known.
		return fmt.Sprintf("%-12s %-10s %10d %10d %8d %s  %s", startCell(r.StartNs, r.Interval), r.MEC+"/smp", r.Sent, r.Received, r.Samples,
			sampleCellTrue(r), valid)
	}
	ci := "      " // no "±" without a mean
	if !noDelay {
		ci = fmt.Sprintf("±%-5.2f", r.MeanCINs/1e3)
	}
	return fmt.Sprintf("%-12s %-10s %10d %10d %8d  %s%s(%s) %s (%s) %7d (%6s)  %s",
		startCell(r.StartNs, r.Interval), r.MEC+"/"+r.Synopsis, r.Sent, r.Received, r.Samples, delayCell(r.MeanNs, noDelay, 7), ci, tru(r.TrueMeanNs),
		delayCell(r.StddevNs, noDelay || r.Synopsis == "lds", 8), tru(r.TrueStddevNs), r.Lost, trueLost, valid)
}

// The columns of analyze's table: fixed widths so that each row is
// printed as its interval closes; the LDS flow (up to 97 characters for
// IPv6) and the reason of an invalid line come after the fixed columns,
// so rows align.
const (
	analyzeCols  = "%-23s %-8s %-3s %9s %9s %7s %10s %9s %10s %8s %11s %-5s"
	truthCols    = " %12s %12s %9s"
	analyzeStart = "2006-01-02 15:04:05.000" // captures may be from any day
)

// sampleCell is a sample line's quantiles for the table: " p50 23.343
// [22.506, 24.396]" and so on, µs; "-" for a quantile without a bound.
func sampleCell(r *Interval) string { return quantileCells(r, false, sampleCellKeys...) }

// sampleCellTrue is sampleCell with each quantile's true value after it,
// in parentheses, where the line has true_quantiles (the demo).
func sampleCellTrue(r *Interval) string { return quantileCells(r, true, sampleCellKeys...) }

// sampleCellKeys are the quantiles a sample line's cells show.
var sampleCellKeys = []string{"p50", "p90", "p99", "p99.9"}

// quantileCells are the cells of r's quantiles of keys, in that order.
func quantileCells(r *Interval, truth bool, keys ...string) string {
	qs, _ := r.Extra["quantiles"].(map[string]Quantile)
	tq, _ := r.Extra["true_quantiles"].(map[string]int64)
	var b strings.Builder
	for _, k := range keys {
		q, ok := qs[k]
		if !ok {
			continue
		}
		if q.EstimateNs == nil || q.LoNs == nil || q.HiNs == nil {
			fmt.Fprintf(&b, " %s -", k)
		} else {
			fmt.Fprintf(&b, " %s %.3f [%.3f, %.3f]", k, float64(*q.EstimateNs)/1e3, float64(*q.LoNs)/1e3, float64(*q.HiNs)/1e3)
		}
		if t, ok := tq[k]; ok && truth {
			fmt.Fprintf(&b, " (%.3f)", float64(t)/1e3)
		}
	}
	return b.String()
}

// flowP99Cell is an LDS flow line's sampled p99 for the tables, µs, after
// the flow's name: " p99 412.221 [398.005, 532.346]" (with truth, its
// true value after it, in parentheses, where the line has one); "" where
// the flow's samples do not bound it.
func flowP99Cell(r *Interval, truth bool) string {
	qs, _ := r.Extra["quantiles"].(map[string]Quantile)
	if q, ok := qs["p99"]; !ok || q.EstimateNs == nil || q.LoNs == nil || q.HiNs == nil {
		return ""
	}
	return quantileCells(r, truth, "p99")
}

// AnalyzeHeader is the header of analyze's table; truth adds the columns
// of the exact truth.
func AnalyzeHeader(truth bool) string {
	h := fmt.Sprintf(analyzeCols, "start (UTC)", "mec", "syn", "sent", "recv", "lost", "mean_us", "±ci_us", "stddev_us", "samples", "buckets", "valid")
	if truth {
		h += fmt.Sprintf(truthCols, "true_mean_us", "true_sd_us", "true_lost")
	}
	return h + " flow / reason"
}

// AnalyzeRow is a row of analyze's table: "-" where the JSON line has
// null.
func AnalyzeRow(r *Interval, truth bool) string {
	valid, why := "yes", ""
	if !r.Valid {
		valid, why = "no", ": "+r.Reason
	}
	flow := ""
	if r.Flow != "" {
		flow = " flow " + r.Flow + fragmentsCell(r) + flowP99Cell(r, truth)
	}
	noDelay := !r.Valid || r.Samples == 0 || r.Synopsis == "sample"
	syn := r.Synopsis
	if syn == "sample" {
		// The column holds three letters; a sample line's delays are its
		// quantiles, written after the columns.
		syn = "smp"
		flow = sampleCell(r) + flow
	}
	s := fmt.Sprintf(analyzeCols, time.Unix(0, r.StartNs).UTC().Format(analyzeStart), r.MEC, syn,
		fmt.Sprint(r.Sent), fmt.Sprint(r.Received), fmt.Sprint(r.Lost),
		usCell(r.MeanNs, noDelay), usCell(r.MeanCINs, noDelay), usCell(r.StddevNs, noDelay || r.Synopsis == "lds"),
		fmt.Sprint(r.Samples), fmt.Sprintf("%d/%d", r.Usable, r.Buckets), valid)
	if truth {
		// Each truth field on its own: a line may carry a true mean
		// without a true loss (a sample line whose rate is unknown).
		s += fmt.Sprintf(truthCols, truthUs(r.TrueMeanNs), truthUs(r.TrueStddevNs), truthCount(r.TrueLost))
	}
	return s + flow + why
}

// truthUs is a truth column in µs, "-" where the line has none.
func truthUs(ns *float64) string {
	if ns == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *ns/1e3)
}

// truthCount is a truth count column, "-" where the line has none.
func truthCount(n *uint64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}
