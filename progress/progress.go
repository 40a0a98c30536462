package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultEvery is how often a Meter redraws at most: often enough to look
// alive, rarely enough that drawing costs nothing next to the work.
const DefaultEvery = 250 * time.Millisecond

// Terminal is implemented by writers that know whether they are a
// terminal (a test's fake terminal, say); IsTerminal asks it first.
type Terminal interface {
	IsTerminal() bool
}

// IsTerminal reports whether w is a terminal: a writer implementing
// Terminal says so itself; an *os.File is one when the TCGETS ioctl
// succeeds on it; anything else is not.
func IsTerminal(w io.Writer) bool {
	switch t := w.(type) {
	case Terminal:
		return t.IsTerminal()
	case *os.File:
		_, err := unix.IoctlGetTermios(int(t.Fd()), unix.TCGETS)
		return err == nil
	}
	return false
}

// Meter draws progress lines on w. The zero value and a nil *Meter are
// off: every method does nothing.
type Meter struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	every time.Duration
	now   func() time.Time
	start time.Time
	last  time.Time // last draw; zero: never drawn
	shown bool      // a line is on the terminal
}

// New returns a Meter writing to w, on when w is a terminal and quiet is
// false.
func New(w io.Writer, quiet bool) *Meter {
	return NewWith(w, !quiet && IsTerminal(w), DefaultEvery, time.Now)
}

// NewWith returns a Meter that is on or off as told, redraws at most
// every every, and reads the time from now (tests pass a fake clock).
func NewWith(w io.Writer, on bool, every time.Duration, now func() time.Time) *Meter {
	return &Meter{w: w, on: on, every: every, now: now, start: now()}
}

// On reports whether the meter draws anything.
func (m *Meter) On() bool { return m != nil && m.on }

// Update redraws the line with the formatted text if Every has passed
// since the last draw (the first call always draws).
func (m *Meter) Update(format string, args ...any) {
	if !m.On() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.now()
	if !m.last.IsZero() && t.Sub(m.last) < m.every {
		return
	}
	m.draw(t, fmt.Sprintf(format, args...))
}

// Set redraws the line now, whatever the time since the last draw: for a
// change of what is running (a bench case, a sim point) the user should
// see even when it is quick.
func (m *Meter) Set(format string, args ...any) {
	if !m.On() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.draw(m.now(), fmt.Sprintf(format, args...))
}

func (m *Meter) draw(t time.Time, s string) {
	m.last = t
	m.shown = true
	fmt.Fprintf(m.w, "\r\x1b[K%s", s)
}

// Clear erases the progress line, if one is shown, so that the next line
// written to the terminal (a result row, a message) starts clean. The
// next Update draws again at once.
func (m *Meter) Clear() {
	if !m.On() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shown {
		fmt.Fprint(m.w, "\r\x1b[K")
		m.shown = false
		m.last = time.Time{}
	}
}

// Elapsed is the time since the meter was made.
func (m *Meter) Elapsed() time.Duration {
	if m == nil {
		return 0
	}
	return m.now().Sub(m.start)
}

// ETA is the time left at the average rate so far when done of total
// units of work are done; ok is false while nothing is done yet or the
// total is unknown.
func (m *Meter) ETA(done, total float64) (left time.Duration, ok bool) {
	el := m.Elapsed()
	if done <= 0 || total <= 0 || el <= 0 {
		return 0, false
	}
	if done >= total {
		return 0, true
	}
	return time.Duration(float64(el) * (total - done) / done), true
}

// Rate is units per second over the meter's life.
func (m *Meter) Rate(n float64) float64 {
	el := m.Elapsed().Seconds()
	if el <= 0 {
		return 0
	}
	return n / el
}

// FormatETA is "ETA 1m05s", or "" when ok is false.
func FormatETA(left time.Duration, ok bool) string {
	if !ok {
		return ""
	}
	return "ETA " + left.Round(time.Second).String()
}
