package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// reportTailBytes is how much of the end of its --report file run reads
// back at start: far more than one interval's lines, so the last interval
// line of each direction is in it however many classes and flows an
// interval reports.
const reportTailBytes = 1 << 20

// reportTail is what the end of a report file says about the run that
// wrote it.
type reportTail struct {
	// last is, per direction, the interval line with the highest
	// interval number.
	last map[string]tailLine
	// torn: the file does not end with a newline. A process killed in
	// the middle of a write leaves that; the partial line is skipped.
	torn bool
	// foreign counts complete lines that are not JSON report lines
	// (someone else's file, or damage).
	foreign int
}

// tailLine is the part of an interval line a restart needs.
type tailLine struct {
	k      uint64
	config string
}

// readReportTail reads the interval lines in the last reportTailBytes of
// a report file of size bytes. Nothing in the file makes it fail: what is
// not a report line is counted and skipped; only a read error is an error.
func readReportTail(r io.ReaderAt, size int64) (reportTail, error) {
	t := reportTail{last: map[string]tailLine{}}
	if size <= 0 {
		return t, nil
	}
	off := max(0, size-reportTailBytes)
	buf := make([]byte, size-off)
	if n, err := r.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return t, err
	}
	t.torn = buf[len(buf)-1] != '\n'
	lines := bytes.Split(buf, []byte{'\n'})
	if off > 0 {
		lines = lines[1:] // starts inside a line
	}
	// The piece after the last newline is empty, or the torn line.
	lines = lines[:len(lines)-1]
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var v struct {
			Type      string `json:"type"`
			Interval  *int64 `json:"interval"`
			Direction string `json:"direction"`
			Config    string `json:"config"`
		}
		if err := json.Unmarshal(l, &v); err != nil || v.Type == "" {
			t.foreign++
			continue
		}
		if v.Type != "interval" || v.Interval == nil || *v.Interval < 0 || v.Direction == "" {
			continue
		}
		k := uint64(*v.Interval)
		if prev, ok := t.last[v.Direction]; !ok || k >= prev.k {
			t.last[v.Direction] = tailLine{k: k, config: v.Config}
		}
	}
	return t, nil
}

// configInterval is the interval length a line's config names
// ("interval=1s mecs=…"), or false.
func configInterval(config string) (time.Duration, bool) {
	for _, f := range strings.Fields(config) {
		if v, ok := strings.CutPrefix(f, "interval="); ok {
			d, err := time.ParseDuration(v)
			return d, err == nil
		}
	}
	return 0, false
}

// LastReported reads back what an earlier run last reported to path: the
// last interval per direction, for the restarted receiver to report the
// intervals it missed (appliance.Config.LastReported). A missing or empty
// file, one that is not a regular file, or one that holds no interval
// line of ours gives nothing; no content makes run fail — what cannot be
// used is logged and skipped.
func LastReported(path string, interval time.Duration, log zerolog.Logger) map[string]uint64 {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn().Err(err).Str("report", path).Msg("cannot read the report file back: intervals missed before this start are not reported")
		}
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return nil
	}
	t, err := readReportTail(f, st.Size())
	if err != nil {
		log.Warn().Err(err).Str("report", path).Msg("cannot read the report file back: intervals missed before this start are not reported")
		return nil
	}
	if t.torn {
		log.Warn().Str("report", path).Msg("the report file ends in a partial line (the last run was killed while writing it?): skipped; new lines start on a line of their own")
	}
	if t.foreign > 0 {
		log.Warn().Str("report", path).Int("lines", t.foreign).Msg("lines at the end of the report file are not report lines: skipped")
	}
	last := map[string]uint64{}
	for dir, l := range t.last {
		if d, ok := configInterval(l.config); !ok || d != interval {
			// Interval numbers count intervals of one length: another
			// length's numbers say nothing about which of ours were missed.
			log.Warn().Str("report", path).Str("direction", dir).Uint64("interval", l.k).Str("config", l.config).Dur("want", interval).
				Msg("the report file's last line was measured with another --interval (or names none): no intervals reported as missed")
			continue
		}
		last[dir] = l.k
		log.Info().Str("report", path).Str("direction", dir).Uint64("interval", l.k).Msg("last interval the report file holds")
	}
	return last
}
