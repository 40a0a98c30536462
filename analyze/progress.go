package analyze

import (
	"github.com/ldafwd/ldafwd/progress"
)

// MeterProgress returns a Config.Progress that draws Run's progress on m:
// frames read, their rate, the share of both files read and the time left
// at that rate, then the intervals reported. Reading is most of the time
// of a long analysis (both captures are read before the first interval
// can be reported), so the ETA is the bytes left to read.
func MeterProgress(m *progress.Meter) func(Progress) {
	if !m.On() {
		return nil
	}
	return func(p Progress) {
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
