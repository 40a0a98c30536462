package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Titles say what each experiment reproduces (table headings, plot titles).
var Titles = map[string]string{
	"fig4": "Fig. 4 (Sec. IV-A): single-bank LDA tuned for the true loss, uniform loss",
	"fig5": "Fig. 5 (Sec. IV-B): multi-bank LDAs vs the tuned single bank, Weibull β=0.6, uniform loss",
	"fig6": "Fig. 6 (Sec. IV-C): two-bank LDA vs Poisson active probes, Weibull β=0.6, bursty loss",
}

// WriteTable prints points as readable tables, one per experiment, in the
// order given. Errors are percentages; "—" means no run produced that
// estimate.
func WriteTable(w io.Writer, pts []Point) error {
	tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', tabwriter.AlignRight)
	exp := ""
	for _, p := range pts {
		if p.Experiment != exp {
			if exp != "" {
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(w)
			}
			exp = p.Experiment
			title := Titles[exp]
			if title == "" {
				title = exp
			}
			fmt.Fprintf(w, "%s — N=%d packets, %d runs per point, delay mean %.4g ns\n", title, p.Packets, p.Runs, p.TrueMeanNs)
			fmt.Fprintln(tw, "series\tmethod\tloss\ttrue loss\tsamples\tmean err %\t±se\tmax %\t98% bound %\tmisses\tstd err %\tmax %\tconfig\t")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n",
			p.Series, p.Method, fmtG(p.LossRate), fmtG(p.TrueLossRate), fmtSamples(p.Samples),
			pct(p.MeanRelErr), pct(p.MeanRelErrSE), pct(p.MeanRelErrMax), pct(p.BoundRel), p.BoundMisses,
			pct(p.StddevRelErr), pct(p.StddevRelErrSE), pct(p.StddevRelErrMax), p.Config)
	}
	return tw.Flush()
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

func fmtSamples(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func pct(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(100**v, 'g', 3, 64)
}

// CSVHeader are the columns WriteCSV writes (the Point JSON names).
var CSVHeader = []string{
	"experiment", "series", "method", "kind", "config", "delay", "loss_model", "loss_rate",
	"packets", "runs", "true_loss_rate", "true_mean_ns", "true_stddev_ns",
	"mean_runs", "mean_ns", "mean_rel_err", "mean_rel_err_se", "mean_rel_err_max",
	"stddev_runs", "stddev_rel_err", "stddev_rel_err_se", "stddev_rel_err_max", "bound_rel", "bound_misses",
	"samples", "samples_min", "loss_exact",
}

// WriteCSV writes a header and one row per point; absent estimates are
// empty cells.
func WriteCSV(w io.Writer, pts []Point) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for _, p := range pts {
		le := ""
		if p.LossExact != nil {
			le = strconv.FormatBool(*p.LossExact)
		}
		row := []string{
			p.Experiment, p.Series, p.Method, p.Kind, p.Config, p.Delay, p.LossModel, f(p.LossRate),
			strconv.Itoa(p.Packets), strconv.Itoa(p.Runs), f(p.TrueLossRate), f(p.TrueMeanNs), f(p.TrueStddevNs),
			strconv.Itoa(p.MeanRuns), opt(p.MeanNs), opt(p.MeanRelErr), opt(p.MeanRelErrSE), opt(p.MeanRelErrMax),
			strconv.Itoa(p.StddevRuns), opt(p.StddevRelErr), opt(p.StddevRelErrSE), opt(p.StddevRelErrMax), opt(p.BoundRel), strconv.Itoa(p.BoundMisses),
			f(p.Samples), strconv.FormatUint(p.SamplesMin, 10), le,
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
