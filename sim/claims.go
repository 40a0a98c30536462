package sim

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Claim is one of the ToN LDA paper's Sec. IV claims checked against measured points: a `"type":"claim"` JSON line.
type Claim struct {
	Type    string  `json:"type"` // "claim"
	Name    string  `json:"name"`
	Paper   string  `json:"paper"`   // the claim as the paper makes it
	Checked int     `json:"checked"` // points it was checked on
	Pass    bool    `json:"pass"`
	Worst   float64 `json:"worst"` // the measured value closest to failing
	Limit   float64 `json:"limit"`
	Detail  string  `json:"detail"` // where the worst value was measured
}

// CheckClaims evaluates every claim for which pts hold points. A claim
// passes only if it holds at every point it applies to (no averaging across
// points). conf is the confidence the points' bounds were computed at.
func CheckClaims(pts []Point, conf float64) []Claim {
	var out []Claim
	add := func(c Claim) {
		if c.Checked > 0 {
			c.Type = "claim"
			// JSON has no NaN or ±Inf; NaN only arises from a missing
			// estimate, which already failed the claim.
			switch {
			case math.IsNaN(c.Worst):
				c.Worst = 0
			case math.IsInf(c.Worst, 1):
				c.Worst = math.MaxFloat64
			case math.IsInf(c.Worst, -1):
				c.Worst = -math.MaxFloat64
			}
			out = append(out, c)
		}
	}

	// Worst-case helper: upper limit, value per point.
	upper := func(name, paper string, limit float64, match func(*Point) bool, val func(*Point) *float64) {
		c := Claim{Name: name, Paper: paper, Limit: limit, Pass: true, Worst: math.Inf(-1)}
		for i := range pts {
			p := &pts[i]
			if !match(p) {
				continue
			}
			c.Checked++
			v := val(p)
			if v == nil { // no estimate at all: the claim fails there
				c.Pass, c.Worst = false, math.Inf(1)
				c.Detail = fmt.Sprintf("%s %s loss %g: no estimate", p.Series, p.Method, p.LossRate)
				continue
			}
			if *v > c.Worst {
				c.Worst = *v
				c.Detail = fmt.Sprintf("%s, %s, loss %g (%d runs)", p.Series, p.Method, p.LossRate, p.Runs)
				if se := seOf(p, v); se != nil {
					c.Detail = fmt.Sprintf("%s, %s, loss %g: %s ± %s %% (%d runs)", p.Series, p.Method, p.LossRate, pct(v), pct(se), p.Runs)
				}
			}
			if !(*v < limit) {
				c.Pass = false
			}
		}
		add(c)
	}
	meanErr := func(p *Point) *float64 { return p.MeanRelErr }
	fig4 := func(p *Point) bool { return p.Experiment == "fig4" }

	upper("fig4-mean-low-loss", "mean relative error < 0.3 % at loss < 0.1 % (single bank tuned for the loss)", 0.003,
		func(p *Point) bool { return fig4(p) && p.LossRate < 0.001 }, meanErr)
	upper("fig4-mean-20pct-loss", "mean relative error < 4 % at 20 % loss (single bank tuned for the loss)", 0.04,
		func(p *Point) bool { return fig4(p) && math.Abs(p.LossRate-0.2) < 1e-9 }, meanErr)
	upper("fig4-stddev-weibull", "std-dev relative error < 10 % for Weibull delays, independent of loss rate", 0.10,
		func(p *Point) bool { return fig4(p) && strings.HasPrefix(p.Series, "weibull") },
		func(p *Point) *float64 { return p.StddevRelErr })

	// Fig. 6: the two-bank LDA against 144 Hz probes, same loss rate.
	c := Claim{Name: "fig6-lda-vs-144hz", Paper: "two-bank LDA mean relative error ≥ 10× lower than 144 Hz Poisson probes at loss ≤ 1 %",
		Limit: 10, Pass: true, Worst: math.Inf(1)}
	for i := range pts {
		lda := &pts[i]
		if lda.Experiment != "fig6" || lda.Kind != "lda" || lda.LossRate > 0.01+1e-12 {
			continue
		}
		for j := range pts {
			pr := &pts[j]
			if pr.Experiment != "fig6" || pr.Kind != "probe" || pr.Config != "poisson 144 Hz" || pr.LossRate != lda.LossRate {
				continue
			}
			c.Checked++
			ratio := math.Inf(1)
			switch {
			case pr.MeanRelErr == nil || lda.MeanRelErr == nil:
				ratio = math.NaN()
			case *lda.MeanRelErr > 0:
				ratio = *pr.MeanRelErr / *lda.MeanRelErr
			}
			if !(ratio >= 10) {
				c.Pass = false
			}
			if ratio < c.Worst || math.IsNaN(ratio) {
				c.Worst = ratio
				c.Detail = fmt.Sprintf("loss %g: probes %s ± %s %%, LDA %s ± %s %%, ratio %.3g ± %.2g (%d runs)",
					lda.LossRate, pct(pr.MeanRelErr), pct(pr.MeanRelErrSE), pct(lda.MeanRelErr), pct(lda.MeanRelErrSE),
					ratio, ratioSE(ratio, pr, lda), lda.Runs)
			}
		}
	}
	add(c)

	// Every LDA run must count loss exactly (it counts every packet).
	c = Claim{Name: "lda-loss-exact", Paper: "LDA loss count equals the true loss in every run", Limit: 0, Pass: true}
	for i := range pts {
		if pts[i].LossExact != nil {
			c.Checked++
			if !*pts[i].LossExact {
				c.Pass = false
				c.Worst++
				c.Detail = fmt.Sprintf("%s %s loss %g", pts[i].Series, pts[i].Method, pts[i].LossRate)
			}
		}
	}
	add(c)

	// The Hoeffding interval (eq. 1, with the estimated σ) should cover the
	// true mean in at least its confidence share of LDA runs.
	var runs, misses int
	for i := range pts {
		if pts[i].Kind == "lda" {
			runs += pts[i].StddevRuns
			misses += pts[i].BoundMisses
		}
	}
	if runs > 0 {
		frac := float64(misses) / float64(runs)
		add(Claim{Name: "lda-bound-coverage",
			Paper:   fmt.Sprintf("%.3g %% Hoeffding bound (eq. 1) misses the true mean in ≤ %.3g %% of LDA runs", 100*conf, 100*(1-conf)),
			Checked: runs, Pass: frac <= 1-conf, Worst: frac, Limit: 1 - conf,
			Detail: fmt.Sprintf("%d of %d runs outside their bound", misses, runs)})
	}
	return out
}

// WriteClaims prints claims as PASS/FAIL lines.
func WriteClaims(w io.Writer, cs []Claim) error {
	for _, c := range cs {
		verdict := "PASS"
		if !c.Pass {
			verdict = "FAIL"
		}
		if _, err := fmt.Fprintf(w, "%s  %-22s %s — worst %.4g (limit %.3g) at %s; %d checked\n",
			verdict, c.Name, c.Paper, c.Worst, c.Limit, c.Detail, c.Checked); err != nil {
			return err
		}
	}
	return nil
}

// ratioSE is the standard error of a/b propagated from the points'
// standard errors (first order): ratio·√((se_a/a)² + (se_b/b)²).
func ratioSE(ratio float64, a, b *Point) float64 {
	if a.MeanRelErr == nil || b.MeanRelErr == nil || a.MeanRelErrSE == nil || b.MeanRelErrSE == nil ||
		*a.MeanRelErr == 0 || *b.MeanRelErr == 0 {
		return math.NaN()
	}
	ra, rb := *a.MeanRelErrSE / *a.MeanRelErr, *b.MeanRelErrSE / *b.MeanRelErr
	return ratio * math.Sqrt(ra*ra+rb*rb)
}

// seOf returns the standard error that goes with v, one of p's averages.
func seOf(p *Point, v *float64) *float64 {
	switch v {
	case p.MeanRelErr:
		return p.MeanRelErrSE
	case p.StddevRelErr:
		return p.StddevRelErrSE
	}
	return nil
}
