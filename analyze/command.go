package analyze

import (
	"fmt"
	"io"
	"time"

	"github.com/ldafwd/ldafwd/progress"
	"github.com/ldafwd/ldafwd/report"
)

// RunFiles is `ldafwd analyze` after its flags are checked: it opens the
// sender's and the receiver's captures, then the report (openReport:
// stdout in json mode, --report), runs the analysis, writes every
// interval line and the closing summary to the report, the table to table (nil:
// none) and the warnings and the matching statistics to stderr. Errors
// are prefixed "analyze:" and name the capture they are about. Unless
// quiet, a terminal stderr shows how far the analysis is (MeterProgress).
func RunFiles(sender, receiver string, cfg Config, openReport func() (*report.Writer, func() error, error), table, stderr io.Writer, quiet bool) error {
	snd, err := OpenCapture(sender)
	if err != nil {
		return fmt.Errorf("analyze: --sender: %w", err)
	}
	defer snd.Close()
	rcv, err := OpenCapture(receiver)
	if err != nil {
		return fmt.Errorf("analyze: --receiver: %w", err)
	}
	defer rcv.Close()

	w, closeReport, err := openReport()
	if err != nil {
		return err
	}
	defer closeReport()

	if table != nil {
		fmt.Fprintln(table, report.AnalyzeHeader(cfg.Truth))
	}
	meter := progress.New(stderr, quiet)
	cfg.Progress = MeterProgress(meter)
	var werr error
	st, err := Run(snd, rcv, cfg, func(r *report.Interval) {
		meter.Clear()
		if err := w.Write(r); err != nil && werr == nil {
			werr = err
		}
		if table != nil { // rows stream as intervals close: fixed widths, no buffering
			fmt.Fprintln(table, report.AnalyzeRow(r, cfg.Truth))
			if mbs, ok := r.Extra["microbursts"].([]Microburst); ok {
				for _, m := range mbs {
					fmt.Fprintf(table, "%-23s   microburst %s: %d losses from %s, +%.3f ms\n", "", r.MEC, m.Losses,
						time.Unix(0, int64(m.StartNs)).UTC().Format("15:04:05.000000"), float64(m.EndNs-m.StartNs)/1e6)
				}
			}
		}
	})
	meter.Clear()
	for _, warn := range st.Warnings {
		fmt.Fprintln(stderr, "analyze: warning:", warn)
	}
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	sum := NewSummary(st)
	if err := w.Write(sum); err != nil && werr == nil {
		werr = err
	}
	fmt.Fprintf(stderr, "analyze: %d intervals; sender %d frames (%d malformed, %d snapped, %d control, %d link-local not measured), receiver %d frames (%d malformed, %d snapped, %d control, %d link-local not measured)\n",
		st.Intervals, st.SenderFrames, st.SenderMalformed, st.SenderSnapped, st.SenderControl, st.SenderLinkLocal,
		st.ReceiverFrames, st.ReceiverMalformed, st.ReceiverSnapped, st.ReceiverControl, st.ReceiverLinkLocal)
	fmt.Fprintf(stderr, "analyze: %.1f %% of sender packets found at the receiver; %d crossed an interval boundary, %d received packets match no sent one; identities seen more than once: %d sent, %d received packets\n",
		100*st.MatchedShare, st.Crossed, st.ExtraReceived, st.SenderAmbiguous, st.ReceiverAmbiguous)
	if st.Segments > 0 {
		fmt.Fprintf(stderr, "analyze: read in %d time segments, up to %d at once\n", st.Segments, min(st.Segments, cfg.shards()))
	}
	return werr
}
