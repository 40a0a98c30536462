package service

import (
	"fmt"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/rs/zerolog"
)

// Capture is run's and demo's capture taps: a pcapng file of what a port
// receives (dataplane.Tap), written off the packet path. A and B are the
// files of the two capture points ("" none): run's ports a and b
// (--capture-a, --capture-b), demo's sender and receiver ends
// (--capture-sender, --capture-receiver); Labels are those flags'
// suffixes, for errors and the closing log line.
type Capture struct {
	Labels   [2]string
	A, B     string
	MaxBytes int64 // --capture-max-bytes: stop writing a file at this size (0: no limit)
	SnapLen  int   // --capture-snaplen
	Slots    int   // --capture-ring: frames each lane's ring holds
}

// Validate checks the capture flags; forwardOnly refuses any capture (the
// forwarding baseline does no per-frame work).
func (c *Capture) Validate(forwardOnly bool) error {
	if c.A == "" && c.B == "" {
		return nil
	}
	if forwardOnly {
		return fmt.Errorf("--capture-%s/--capture-%s: not with --forward-only (the forwarding baseline does no per-frame work)", c.Labels[0], c.Labels[1])
	}
	if c.A != "" && c.A == c.B {
		return fmt.Errorf("--capture-%s and --capture-%s name the same file %q", c.Labels[0], c.Labels[1], c.A)
	}
	if c.MaxBytes < 0 || c.SnapLen < 64 || c.SnapLen > 65535 || c.Slots < 64 || c.Slots > 1<<20 || c.Slots&(c.Slots-1) != 0 {
		return fmt.Errorf("--capture-max-bytes ≥ 0, --capture-snaplen 64..65535, --capture-ring a power of two 64..1048576")
	}
	return nil
}

// Open creates the capture files (nil taps for the points not captured;
// nameA and nameB name the interfaces in the files) and returns a
// function that closes them and logs what each captured, and what it
// could not (ring full, size limit), at warn level when anything is
// missing.
func (c *Capture) Open(nameA, nameB string, log zerolog.Logger) (a, b *dataplane.Tap, closeFn func() error, err error) {
	mk := func(path, name, label string) (*dataplane.Tap, error) {
		if path == "" {
			return nil, nil
		}
		t, err := dataplane.CreateTap(path, dataplane.TapConfig{Name: name, SnapLen: c.SnapLen, Slots: c.Slots, MaxBytes: c.MaxBytes})
		if err != nil {
			return nil, fmt.Errorf("--capture-%s: %w", label, err)
		}
		return t, nil
	}
	if a, err = mk(c.A, nameA, c.Labels[0]); err != nil {
		return nil, nil, nil, err
	}
	if b, err = mk(c.B, nameB, c.Labels[1]); err != nil {
		a.Close()
		return nil, nil, nil, err
	}
	closeFn = func() error {
		var first error
		for _, x := range []struct {
			t     *dataplane.Tap
			label string
			path  string
		}{{a, c.Labels[0], c.A}, {b, c.Labels[1], c.B}} {
			if x.t == nil {
				continue
			}
			err := x.t.Close()
			st := x.t.Stats()
			ev := log.Info()
			if err != nil || st.Skipped+st.Limited > 0 {
				ev = log.Warn().AnErr("error", err)
			}
			ev.Str("capture", x.label).Str("file", x.path).Uint64("captured", st.Captured).Uint64("ring_full", st.Skipped).
				Uint64("size_limit", st.Limited).Msg("capture closed")
			if err != nil && first == nil {
				first = fmt.Errorf("--capture-%s: %w", x.label, err)
			}
		}
		return first
	}
	return a, b, closeFn, nil
}

// captureSources are the taps for metrics.Sources.Captures.
func captureSources(a, b *dataplane.Tap) map[string]*dataplane.Tap {
	m := map[string]*dataplane.Tap{}
	if a != nil {
		m["a"] = a
	}
	if b != nil {
		m["b"] = b
	}
	return m
}
