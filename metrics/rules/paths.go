package rules

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Config is a parsed paths file: the settings of the rules and the paths.
type Config struct {
	Window          string  // range of the recording rules' increase(), a Prometheus duration
	BaselineWindow  string  // range of the delay baseline (median of the window means)
	LossRatio       float64 // alert above this share of the sent packets lost
	DelayFactor     float64 // alert when the mean exceeds DelayFactor·baseline + DelayMargin
	DelayMargin     float64 // seconds
	InvalidCount    int     // alert after this many invalid intervals and no valid one …
	InvalidWindow   string  // … within this range
	UnmeasuredRatio float64 // alert when more than this share of the intervals that carried traffic went unmeasured (at least InvalidCount of them within InvalidWindow)
	For             string  // how long a loss or delay condition must hold before it fires
	DownFor         string  // how long a target must be down before it fires
	Job             string  // the scrape job of the appliances
	EvalInterval    string  // the rule groups' evaluation interval; "" uses Prometheus's global one
	Paths           []Path
	segmentsOfPaths map[string]bool
}

// Path is an ordered list of measured segments (and the direction of each
// that the path's packets take).
type Path struct {
	Name string
	Hops []Hop
}

// Hop is one segment of a path, in one direction.
type Hop struct {
	Segment   string
	Direction string // "a>b" or "b>a"
}

// defaults are what a paths file that sets nothing gets.
func defaults() Config {
	return Config{Window: "5m", BaselineWindow: "1d", LossRatio: 0.001, DelayFactor: 1.5, DelayMargin: 0.0001,
		InvalidCount: 3, InvalidWindow: "5m", UnmeasuredRatio: 0.5, For: "5m", DownFor: "1m", Job: "ldafwd"}
}

// promDuration is a Prometheus duration (model.ParseDuration's grammar,
// without its zero): units y w d h m s ms, largest first.
var promDuration = regexp.MustCompile(`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`)

func checkDuration(s string) error {
	if s == "" || !promDuration.MatchString(s) {
		return fmt.Errorf("%q is no Prometheus duration (e.g. 30s, 5m, 1h30m, 1d)", s)
	}
	// No digit but zeros: a zero range selects nothing.
	if strings.Trim(s, "0ywdhms") == "" {
		return fmt.Errorf("duration %q is zero", s)
	}
	return nil
}

// seconds is the length of a duration checkDuration accepted.
func seconds(s string) float64 {
	unit := map[string]float64{"y": 365 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 0.001}
	var total float64
	for _, m := range promDurationPart.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.ParseFloat(m[1], 64)
		total += n * unit[m[2]]
	}
	return total
}

var promDurationPart = regexp.MustCompile(`([0-9]+)(ms|y|w|d|h|m|s)`)

// maxName bounds segment and path names, as ldafwd bounds --segment-name.
const maxName = 64

func checkName(what, s string) error {
	if s == "" || len(s) > maxName || !utf8.ValidString(s) {
		return fmt.Errorf("%s %q: want 1..%d bytes of UTF-8", what, s, maxName)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%s %q: unprintable character %U", what, s, r)
		}
	}
	return nil
}

// fields splits a line into whitespace-separated words; a word may be a
// double-quoted Go string (for names holding spaces or '#').
func fields(line string) ([]string, error) {
	var out []string
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] == '#' {
			return out, nil
		}
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, fmt.Errorf("bad quoted word at %q", line)
			}
			w, _ := strconv.Unquote(q)
			out = append(out, w)
			line = line[len(q):]
			if line != "" && line[0] != ' ' && line[0] != '\t' {
				return nil, fmt.Errorf("no space after quoted word %s", q)
			}
			continue
		}
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			i = len(line)
		}
		out = append(out, line[:i])
		line = line[i:]
	}
}

// Parse reads a paths file. Each line is empty, a comment (#…), a setting
// `NAME VALUE`, or `path NAME SEGMENT[@DIRECTION] …` (direction a>b unless
// given).
func Parse(r io.Reader) (*Config, error) {
	c := defaults()
	c.segmentsOfPaths = map[string]bool{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	ln := 0
	for sc.Scan() {
		ln++
		w, err := fields(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", ln, err)
		}
		if len(w) == 0 {
			continue
		}
		if err := c.apply(w, seen); err != nil {
			return nil, fmt.Errorf("line %d: %v", ln, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) apply(w []string, seen map[string]bool) error {
	if w[0] == "path" {
		if len(w) < 3 {
			return fmt.Errorf("path: want `path NAME SEGMENT…` with at least one segment")
		}
		p := Path{Name: w[1]}
		if err := checkName("path name", p.Name); err != nil {
			return err
		}
		if seen[p.Name] {
			return fmt.Errorf("path %q defined twice", p.Name)
		}
		seen[p.Name] = true
		hops := map[Hop]bool{}
		for _, s := range w[2:] {
			h := Hop{Segment: s, Direction: "a>b"}
			if i := strings.LastIndexByte(s, '@'); i >= 0 && (s[i+1:] == "a>b" || s[i+1:] == "b>a") {
				h = Hop{Segment: s[:i], Direction: s[i+1:]}
			}
			if err := checkName("segment", h.Segment); err != nil {
				return fmt.Errorf("path %q: %v", p.Name, err)
			}
			if hops[h] {
				return fmt.Errorf("path %q crosses segment %q (%s) twice", p.Name, h.Segment, h.Direction)
			}
			hops[h] = true
			p.Hops = append(p.Hops, h)
			c.segmentsOfPaths[h.Segment] = true
		}
		c.Paths = append(c.Paths, p)
		return nil
	}
	if len(w) != 2 {
		return fmt.Errorf("%q: want `SETTING VALUE` or `path NAME SEGMENT…`", strings.Join(w, " "))
	}
	name, v := w[0], w[1]
	dur := map[string]*string{"window": &c.Window, "baseline_window": &c.BaselineWindow, "invalid_window": &c.InvalidWindow,
		"for": &c.For, "down_for": &c.DownFor, "evaluation_interval": &c.EvalInterval}
	if p, ok := dur[name]; ok {
		if err := checkDuration(v); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		*p = v
		return nil
	}
	num := map[string]*float64{"loss_ratio": &c.LossRatio, "delay_factor": &c.DelayFactor, "delay_margin_seconds": &c.DelayMargin,
		"unmeasured_ratio": &c.UnmeasuredRatio}
	if p, ok := num[name]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f != f || f > 1e300 {
			return fmt.Errorf("%s: %q is no finite number ≥ 0", name, v)
		}
		if (name == "loss_ratio" || name == "unmeasured_ratio") && f >= 1 {
			return fmt.Errorf("%s %v: want a share below 1", name, f)
		}
		if name == "delay_factor" && f < 1 {
			return fmt.Errorf("delay_factor %v: want ≥ 1 (a mean below its own baseline would alert)", f)
		}
		*p = f
		return nil
	}
	switch name {
	case "invalid_intervals":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			return fmt.Errorf("invalid_intervals: %q: want an integer 1..1000000", v)
		}
		c.InvalidCount = n
		return nil
	case "job":
		if err := checkName("job", v); err != nil {
			return err
		}
		c.Job = v
		return nil
	}
	return fmt.Errorf("unknown setting %q (window, baseline_window, loss_ratio, delay_factor, delay_margin_seconds, invalid_intervals, invalid_window, unmeasured_ratio, for, down_for, job, evaluation_interval, path)", name)
}
