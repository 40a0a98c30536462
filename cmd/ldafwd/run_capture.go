package main

import (
	"fmt"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// captureFlags are run's and demo's capture taps: a pcapng file of what
// a port receives (dataplane.Tap).
type captureFlags struct {
	labels   [2]string // flag suffixes: "a", "b" (run) or "sender", "receiver" (demo)
	a, b     string
	maxBytes int64
	snapLen  int
	slots    int
}

// register adds --capture-<labels[0]> and --capture-<labels[1]> with the
// given help texts, and the limits.
func (c *captureFlags) register(fs *pflag.FlagSet, labels [2]string, helpA, helpB string) {
	c.labels = labels
	fs.StringVar(&c.a, "capture-"+labels[0], "", helpA)
	fs.StringVar(&c.b, "capture-"+labels[1], "", helpB)
	fs.Int64Var(&c.maxBytes, "capture-max-bytes", 1<<30, "stop capturing when a capture file reaches this many bytes (0: no limit); later frames are counted, not written")
	fs.IntVar(&c.snapLen, "capture-snaplen", 2048, "bytes kept of each captured frame (64..65535; a longer frame is cut, its length kept); each lane's ring holds --capture-ring × this")
	fs.IntVar(&c.slots, "capture-ring", 4096, "frames each lane's capture ring holds (a power of two, 64..1048576); frames that find it full are counted as ring_full, never delayed or dropped")
}

func (c *captureFlags) validate(forwardOnly bool) error {
	if c.a == "" && c.b == "" {
		return nil
	}
	if forwardOnly {
		return fmt.Errorf("--capture-%s/--capture-%s: not with --forward-only (the forwarding baseline does no per-frame work)", c.labels[0], c.labels[1])
	}
	if c.a != "" && c.a == c.b {
		return fmt.Errorf("--capture-%s and --capture-%s name the same file %q", c.labels[0], c.labels[1], c.a)
	}
	if c.maxBytes < 0 || c.snapLen < 64 || c.snapLen > 65535 || c.slots < 64 || c.slots > 1<<20 || c.slots&(c.slots-1) != 0 {
		return fmt.Errorf("--capture-max-bytes ≥ 0, --capture-snaplen 64..65535, --capture-ring a power of two 64..1048576")
	}
	return nil
}

// open creates the capture files (nil taps for the ports not captured)
// and returns a function that closes them and logs what each captured.
func (c *captureFlags) open(nameA, nameB string, log zerolog.Logger) (a, b *dataplane.Tap, closeFn func() error, err error) {
	mk := func(path, name, label string) (*dataplane.Tap, error) {
		if path == "" {
			return nil, nil
		}
		t, err := dataplane.CreateTap(path, dataplane.TapConfig{Name: name, SnapLen: c.snapLen, Slots: c.slots, MaxBytes: c.maxBytes})
		if err != nil {
			return nil, fmt.Errorf("--capture-%s: %w", label, err)
		}
		return t, nil
	}
	if a, err = mk(c.a, nameA, c.labels[0]); err != nil {
		return nil, nil, nil, err
	}
	if b, err = mk(c.b, nameB, c.labels[1]); err != nil {
		a.Close()
		return nil, nil, nil, err
	}
	closeFn = func() error {
		var first error
		for _, x := range []struct {
			t    *dataplane.Tap
			port string
			path string
		}{{a, c.labels[0], c.a}, {b, c.labels[1], c.b}} {
			if x.t == nil {
				continue
			}
			err := x.t.Close()
			st := x.t.Stats()
			ev := log.Info()
			if err != nil || st.Skipped+st.Limited > 0 {
				ev = log.Warn().AnErr("error", err)
			}
			ev.Str("capture", x.port).Str("file", x.path).Uint64("captured", st.Captured).Uint64("ring_full", st.Skipped).
				Uint64("size_limit", st.Limited).Msg("capture closed")
			if err != nil && first == nil {
				first = fmt.Errorf("--capture-%s: %w", x.port, err)
			}
		}
		return first
	}
	return a, b, closeFn, nil
}

// sources are the taps for metrics.Sources.Captures.
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
