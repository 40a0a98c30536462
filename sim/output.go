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
	"fig4":   "Fig. 4 (Sec. IV-A): single-bank LDA tuned for the true loss, uniform loss",
	"fig5":   "Fig. 5 (Sec. IV-B): multi-bank LDAs vs the tuned single bank, Weibull β=0.6, uniform loss",
	"fig6":   "Fig. 6 (Sec. IV-C): two-bank LDA vs Poisson active probes, Weibull β=0.6, bursty loss",
	"custom": "Custom: your delay and loss model — LDA for the design loss rates, tuned single bank, appliance default, probes",
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

// WriteSummary prints, per experiment and method, the range of the mean's
// relative error and of the effective sample size over two loss regimes
// (≤ 1 % and above): the table's message in a few lines.
func WriteSummary(w io.Writer, pts []Point) error {
	type key struct{ exp, method string }
	type agg struct {
		n              int
		errLo, errHi   float64
		sampLo, sampHi float64
		lossLo, lossHi float64
	}
	var order []key
	groups := map[key]map[bool]*agg{}
	for i := range pts {
		p := &pts[i]
		if p.MeanRelErr == nil {
			continue
		}
		k := key{p.Experiment, p.Method}
		if p.Experiment == "fig4" { // one method, four distributions
			k.method = p.Series
		}
		if groups[k] == nil {
			groups[k] = map[bool]*agg{}
			order = append(order, k)
		}
		low := p.LossRate <= 0.01
		a := groups[k][low]
		if a == nil {
			a = &agg{errLo: *p.MeanRelErr, errHi: *p.MeanRelErr, sampLo: p.Samples, sampHi: p.Samples, lossLo: p.LossRate, lossHi: p.LossRate}
			groups[k][low] = a
		}
		a.n++
		a.errLo, a.errHi = min(a.errLo, *p.MeanRelErr), max(a.errHi, *p.MeanRelErr)
		a.sampLo, a.sampHi = min(a.sampLo, p.Samples), max(a.sampHi, p.Samples)
		a.lossLo, a.lossHi = min(a.lossLo, p.LossRate), max(a.lossHi, p.LossRate)
	}
	exp := ""
	for _, k := range order {
		if k.exp != exp {
			exp = k.exp
			if _, err := fmt.Fprintf(w, "Summary %s (mean delay, relative error averaged over runs; effective samples):\n", exp); err != nil {
				return err
			}
		}
		for _, low := range []bool{true, false} {
			a := groups[k][low]
			if a == nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "  %-38s loss %s–%s: error %s–%s %%, %s–%s samples\n", k.method,
				fmtG(a.lossLo), fmtG(a.lossHi), fmtG(100*a.errLo), fmtG(100*a.errHi), fmtSamples(a.sampLo), fmtSamples(a.sampHi)); err != nil {
				return err
			}
		}
	}
	return nil
}
