package analyze

import (
	"fmt"

	"github.com/ldafwd/ldafwd/progress"
)

// MeterProgress returns a Config.Progress that draws Run's progress on m.
// Streaming: the pass, packets read, their rate, how far into the two
// files the pass is, the time left at that rate for every pass, and the
// intervals reported so far (the last pass reports them as it reads).
// Whole-capture: the same while reading, then the intervals reported.
func MeterProgress(m *progress.Meter) func(Progress) {
	if !m.On() {
		return nil
	}
	return func(p Progress) {
		if p.Pass > 0 {
			s := fmt.Sprintf("analyze: pass %d of %d (%s): %d packets, %.2f Mpkt/s", p.Pass, p.Passes, p.Phase, p.Frames,
				m.Rate(float64(p.Read))/1e6)
			if p.TotalBytes > 0 {
				// (Read in time segments, the files' parts read twice count
				// twice: never more than the whole.)
				b := min(p.Bytes, p.TotalBytes)
				done := float64(p.Pass-1)*float64(p.TotalBytes) + float64(b)
				s += fmt.Sprintf(", %.0f %% of %.1f MB %s", 100*float64(b)/float64(p.TotalBytes), float64(p.TotalBytes)/1e6,
					progress.FormatETA(m.ETA(done, float64(p.Passes)*float64(p.TotalBytes))))
			}
			if p.Intervals > 0 {
				s += fmt.Sprintf("; %d intervals reported", p.Intervals)
			}
			m.Update("%s", s)
			return
		}
		if p.Phase == "intervals" {
			m.Update("analyze: %d intervals reported (%.1f s)", p.Intervals, m.Elapsed().Seconds())
			return
		}
		if p.TotalBytes <= 0 {
			m.Update("analyze: reading %s capture: %d packets, %.2f Mpkt/s", p.Phase, p.Frames, m.Rate(float64(p.Frames))/1e6)
			return
		}
		m.Update("analyze: reading %s capture: %d packets, %.2f Mpkt/s, %.0f %% of %.1f MB %s", p.Phase, p.Frames,
			m.Rate(float64(p.Frames))/1e6, 100*float64(p.Bytes)/float64(p.TotalBytes), float64(p.TotalBytes)/1e6,
			progress.FormatETA(m.ETA(float64(p.Bytes), float64(p.TotalBytes))))
	}
}
