package service

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/metrics"
	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// InsecureWarning is what run logs every interval (at most once a second)
// while control frames are not authenticated.
const InsecureWarning = "--insecure: control frames are not authenticated; anyone on the segment can forge these reports"

// runOutput writes the reports: JSON lines (stdout in json mode and
// --report), the table (table mode), the metrics, and the --insecure
// warning. interval runs on the appliance's control goroutine, ports on
// main's; mu orders their table lines.
type runOutput struct {
	o     *Config
	w     *report.Writer
	table io.Writer // nil in json mode
	m     *metrics.Metrics
	log   zerolog.Logger

	q        *reportQueue     // interval lines on their way to interval (nil: written by the caller)
	excluded func() [2]uint64 // per port: link-local frames received there and left unmeasured
	wd       *watchdog        // the peer watchdog while serving (under mu)

	mu     sync.Mutex
	header bool
	werr   error
	lost   uint64 // report lines the sink refused
}

func (r *runOutput) init(o *Config, w *report.Writer, table io.Writer, m *metrics.Metrics, log zerolog.Logger) {
	r.o, r.w, r.table, r.m, r.log = o, w, table, m, log
}

// queued starts the report queue: put hands interval lines to a goroutine
// of their own (see reportQueue), drain writes what is left.
func (r *runOutput) queued() {
	r.q = newReportQueue(reportQueueLen, r.interval, r.log)
}

// put is the appliance's Reports: the line goes through the queue if there
// is one.
func (r *runOutput) put(iv *report.Interval) {
	if r.q == nil {
		r.interval(iv)
		return
	}
	r.q.put(iv)
}

// drain writes every queued line; put goes on working after it.
func (r *runOutput) drain() {
	if r.q != nil {
		r.q.close()
	}
}

func (r *runOutput) interval(iv *report.Interval) {
	iv.Segment = r.o.SegmentName
	r.m.Observe(iv)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wd != nil {
		r.wd.observe(iv)
	}
	if err := r.w.Write(iv); err != nil {
		r.sinkFailed(err)
	}
	if r.table != nil {
		if !r.header {
			fmt.Fprintf(r.table, "%-12s %-5s %-8s %-3s %9s %9s %7s %10s %9s %10s %8s %s\n",
				"start (UTC)", "dir", "mec", "syn", "sent", "recv", "lost", "mean_us", "±ci_us", "stddev_us", "samples", "valid")
			r.header = true
		}
		fmt.Fprintln(r.table, report.RunRow(iv))
		for _, row := range report.MicroburstRows(iv) {
			fmt.Fprintln(r.table, row)
		}
	}
}

func (r *runOutput) setWatchdog(w *watchdog) {
	r.mu.Lock()
	r.wd = w
	r.mu.Unlock()
}

func (r *runOutput) watchdog() *watchdog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wd
}

// status writes the watchdog's verdict: a JSON line, and a table line.
func (r *runOutput) status(st *report.Status) {
	st.Segment = r.o.SegmentName
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.w.Write(st); err != nil {
		r.sinkFailed(err)
	}
	if r.table != nil {
		fmt.Fprintf(r.table, "status %s", st.Status)
		for _, p := range st.Problems {
			fmt.Fprintf(r.table, "; %s: %s", p.Check, p.Reason)
		}
		fmt.Fprintln(r.table)
	}
}

// ports writes one port record per port: counters since start, rates over
// the last tick (over the whole run for the final record).
func (r *runOutput) ports(cur, prev [2]dataplane.Stats, elapsed, tick time.Duration, final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, name := range []string{"a", "b"} {
		c, p := cur[i], prev[i]
		rec := &report.Port{Type: "port", Segment: r.o.SegmentName, Port: name, Name: []string{r.o.PortA, r.o.PortB}[i], RxPackets: c.RxPackets, TxPackets: c.TxPackets,
			RxDropped: c.RxDropped, TxDropped: c.TxDropped, ElapsedS: elapsed.Seconds(), Final: final}
		if r.excluded != nil {
			rec.Excluded = r.excluded()[i]
		}
		if s := tick.Seconds(); s > 0 {
			rec.RxMpps = float64(c.RxPackets-p.RxPackets) / s / 1e6
			rec.TxMpps = float64(c.TxPackets-p.TxPackets) / s / 1e6
		}
		if err := r.w.Write(rec); err != nil {
			r.sinkFailed(err)
		}
		// The table shows the port rows at exit, and every
		// --stats-interval only when that flag was given: one pair a
		// second would bury the interval rows. JSON keeps every record.
		if r.table != nil && (final || r.o.Changed["stats-interval"]) {
			fin := ""
			if final {
				fin = " (final)"
			}
			fmt.Fprintf(r.table, "port %s %-24s rx %d (%.3f Mpps) tx %d (%.3f Mpps) rx_dropped %d tx_dropped %d at %.1fs%s\n",
				name, rec.Name, rec.RxPackets, rec.RxMpps, rec.TxPackets, rec.TxMpps, rec.RxDropped, rec.TxDropped, rec.ElapsedS, fin)
		}
	}
}

// sinkFailed handles a report line that could not be written (mu held):
// logged at once (then every 100th time), /healthz degraded, and the
// run's exit status an error. The line itself is not half-written
// (lineFile); forwarding and measurement go on.
func (r *runOutput) sinkFailed(err error) {
	r.lost++
	if r.werr == nil {
		r.werr = fmt.Errorf("writing reports: %w", err)
	}
	if r.lost == 1 || r.lost%100 == 0 {
		r.log.Error().Err(err).Uint64("lines_lost", r.lost).Msg("report sink failing: interval lines are being lost")
	}
	r.m.SetProblem(fmt.Sprintf("report sink failing (%d lines lost): %v", r.lost, err))
}

func (r *runOutput) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.werr
}
