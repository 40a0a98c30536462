package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by every ParseDelay/ParseLoss error.
var ErrSyntax = errors.New("model: syntax")

// maxText bounds the text a parser reads; flags are short.
const maxText = 1024

// ParseDelay reads a delay model in the syntax of the package doc, e.g.
// "weibull:mean=50us,shape=0.7". Errors name the bad token.
func ParseDelay(s string) (Delay, error) {
	if len(s) > maxText {
		return nil, fmt.Errorf("%w: delay text longer than %d bytes", ErrSyntax, maxText)
	}
	head, rest, isList := strings.Cut(s, ";")
	kind, params, err := splitKind(head)
	if err != nil {
		return nil, fmt.Errorf("delay %q: %w", s, err)
	}
	var d Delay
	if kind == "mix" {
		d, err = parseMix(params, rest, isList)
	} else if isList {
		err = fmt.Errorf("%w: ';' only separates the modes of a mix, found after %q", ErrSyntax, head)
	} else {
		d, err = parseSimple(kind, params)
	}
	if err != nil {
		return nil, fmt.Errorf("delay %q: %w", s, err)
	}
	return d, nil
}

// splitKind splits "kind:params" and lowercases kind.
func splitKind(s string) (kind string, params []param, err error) {
	k, p, _ := strings.Cut(s, ":")
	kind = strings.ToLower(strings.TrimSpace(k))
	if kind == "" {
		return "", nil, fmt.Errorf("%w: missing kind before ':' in %q", ErrSyntax, s)
	}
	params, err = splitParams(p)
	return kind, params, err
}

type param struct {
	key, val string // key empty for a bare value ("constant:50us")
	tok      string // the original token, for error messages
}

func splitParams(s string) ([]param, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ps []param
	for _, tok := range strings.Split(s, ",") {
		k, v, hasEq := strings.Cut(tok, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !hasEq {
			k, v = "", strings.TrimSpace(tok)
		}
		if v == "" || (hasEq && k == "") {
			return nil, fmt.Errorf("%w: empty token %q", ErrSyntax, tok)
		}
		for _, q := range ps {
			if q.key == k {
				return nil, fmt.Errorf("%w: %q given twice (token %q)", ErrSyntax, k, tok)
			}
		}
		ps = append(ps, param{key: k, val: v, tok: tok})
	}
	return ps, nil
}

// bind assigns every param to one of the named keys (bare → the first
// name, when bareOK) and rejects unknown ones.
func bind(ps []param, bareOK bool, names ...string) (map[string]param, error) {
	m := make(map[string]param, len(ps))
	for _, p := range ps {
		k := p.key
		if k == "" {
			if !bareOK {
				return nil, fmt.Errorf("%w: token %q needs key=value", ErrSyntax, p.tok)
			}
			k = names[0]
		}
		ok := false
		for _, n := range names {
			ok = ok || n == k
		}
		if !ok {
			return nil, fmt.Errorf("%w: unknown key %q (token %q; want one of %s)",
				ErrSyntax, k, p.tok, strings.Join(names, ", "))
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%w: %q given twice (token %q)", ErrSyntax, k, p.tok)
		}
		m[k] = p
	}
	return m, nil
}

func need(m map[string]param, kind string, keys ...string) error {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("%w: %s needs %s=", ErrSyntax, kind, k)
		}
	}
	return nil
}

func dur(m map[string]param, k string) (float64, error) {
	p := m[k]
	v, err := ParseDuration(p.val)
	if err != nil {
		return 0, fmt.Errorf("token %q: %w", p.tok, err)
	}
	return v, nil
}

func num(m map[string]param, k string) (float64, error) {
	p := m[k]
	v, err := parseNumber(p.val)
	if err != nil {
		return 0, fmt.Errorf("token %q: %w", p.tok, err)
	}
	return v, nil
}

// withToken wraps a constructor error with the token(s) it came from.
func withToken(err error, toks ...param) error {
	if err == nil {
		return nil
	}
	var q []string
	for _, t := range toks {
		q = append(q, strconv.Quote(t.tok))
	}
	return fmt.Errorf("token %s: %w", strings.Join(q, ", "), err)
}

func parseSimple(kind string, ps []param) (Delay, error) {
	// offset= applies to every kind; take it out first.
	var off *param
	rest := ps[:0:0]
	for i := range ps {
		if ps[i].key == "offset" {
			if off != nil {
				return nil, fmt.Errorf("%w: \"offset\" given twice (token %q)", ErrSyntax, ps[i].tok)
			}
			off = &ps[i]
			continue
		}
		rest = append(rest, ps[i])
	}
	d, err := parseBase(kind, rest)
	if err != nil {
		return nil, err
	}
	return applyOffset(d, off)
}

func applyOffset(d Delay, off *param) (Delay, error) {
	if off == nil {
		return d, nil
	}
	v, err := ParseDuration(off.val)
	if err == nil {
		err = checkDuration("offset", v)
	}
	if err != nil {
		return nil, withToken(err, *off)
	}
	return Shift{D: d, OffsetNs: v}, nil
}

func parseBase(kind string, ps []param) (Delay, error) {
	switch kind {
	case "constant", "const", "fixed":
		m, err := bind(ps, true, "value")
		if err == nil {
			err = need(m, kind, "value")
		}
		if err != nil {
			return nil, err
		}
		v, err := dur(m, "value")
		if err != nil {
			return nil, err
		}
		d, err := NewConstant(v)
		return d, withToken(err, m["value"])
	case "exp", "exponential":
		m, err := bind(ps, true, "mean")
		if err == nil {
			err = need(m, kind, "mean")
		}
		if err != nil {
			return nil, err
		}
		v, err := dur(m, "mean")
		if err != nil {
			return nil, err
		}
		d, err := NewExponential(v)
		return d, withToken(err, m["mean"])
	case "uniform":
		m, err := bind(ps, false, "min", "max")
		if err == nil {
			err = need(m, kind, "min", "max")
		}
		if err != nil {
			return nil, err
		}
		lo, err := dur(m, "min")
		if err != nil {
			return nil, err
		}
		hi, err := dur(m, "max")
		if err != nil {
			return nil, err
		}
		d, err := NewUniform(lo, hi)
		return d, withToken(err, m["min"], m["max"])
	case "weibull", "pareto":
		m, err := bind(ps, false, "mean", "scale", "shape")
		if err == nil {
			err = need(m, kind, "shape")
		}
		if err != nil {
			return nil, err
		}
		_, hasMean := m["mean"]
		_, hasScale := m["scale"]
		if hasMean == hasScale {
			return nil, fmt.Errorf("%w: %s needs exactly one of mean= or scale=", ErrSyntax, kind)
		}
		shape, err := num(m, "shape")
		if err != nil {
			return nil, err
		}
		key := "scale"
		if hasMean {
			key = "mean"
		}
		v, err := dur(m, key)
		if err != nil {
			return nil, err
		}
		var d Delay
		switch {
		case kind == "weibull" && hasMean:
			d, err = NewWeibull(v, shape)
		case kind == "weibull":
			d, err = NewWeibullScale(v, shape)
		case hasMean:
			d, err = NewPareto(v, shape)
		default:
			d, err = NewParetoScale(v, shape)
		}
		if err != nil {
			return nil, withToken(err, m[key], m["shape"])
		}
		return d, nil
	case "mix":
		return nil, fmt.Errorf("%w: mix components cannot be mixes", ErrSyntax)
	}
	return nil, fmt.Errorf("%w: unknown delay kind %q (want constant, exp, uniform, weibull, pareto or mix)", ErrSyntax, kind)
}

// parseMix reads "mix:p=P[,offset=O];A;B".
func parseMix(ps []param, rest string, isList bool) (Delay, error) {
	var off *param
	var pp *param
	for i := range ps {
		switch ps[i].key {
		case "offset":
			if off != nil {
				return nil, fmt.Errorf("%w: \"offset\" given twice (token %q)", ErrSyntax, ps[i].tok)
			}
			off = &ps[i]
		case "p", "":
			if pp != nil {
				return nil, fmt.Errorf("%w: \"p\" given twice (token %q)", ErrSyntax, ps[i].tok)
			}
			pp = &ps[i]
		default:
			return nil, fmt.Errorf("%w: unknown key %q (token %q; want p, offset)", ErrSyntax, ps[i].key, ps[i].tok)
		}
	}
	if pp == nil {
		return nil, fmt.Errorf("%w: mix needs p= (probability of the first mode)", ErrSyntax)
	}
	p, err := parseNumber(pp.val)
	if err != nil {
		return nil, withToken(err, *pp)
	}
	if !isList {
		return nil, fmt.Errorf("%w: mix needs two modes: mix:p=P;A;B", ErrSyntax)
	}
	as, bs, ok := strings.Cut(rest, ";")
	if !ok || strings.Contains(bs, ";") {
		return nil, fmt.Errorf("%w: mix needs exactly two modes separated by ';', got %q", ErrSyntax, rest)
	}
	var modes [2]Delay
	for i, t := range []string{as, bs} {
		kind, mps, err := splitKind(t)
		if err != nil {
			return nil, fmt.Errorf("mode %q: %w", t, err)
		}
		if modes[i], err = parseSimple(kind, mps); err != nil {
			return nil, fmt.Errorf("mode %q: %w", t, err)
		}
	}
	d, err := NewMix(p, modes[0], modes[1])
	if err != nil {
		return nil, withToken(err, *pp)
	}
	return applyOffset(d, off)
}

// ParseLoss reads a loss model: "none", "uniform:rate=0.001" (or
// "uniform:0.1%"), "bursty:rate=0.001,burst=100" (burst defaults to 100
// packets, the paper's Sec. IV-C episode length).
func ParseLoss(s string) (Loss, error) {
	if len(s) > maxText {
		return nil, fmt.Errorf("%w: loss text longer than %d bytes", ErrSyntax, maxText)
	}
	l, err := parseLoss(s)
	if err != nil {
		return nil, fmt.Errorf("loss %q: %w", s, err)
	}
	return l, nil
}

func parseLoss(s string) (Loss, error) {
	kind, ps, err := splitKind(s)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "none", "0":
		if len(ps) > 0 {
			return nil, fmt.Errorf("%w: none takes no parameters (token %q)", ErrSyntax, ps[0].tok)
		}
		return NoLoss{}, nil
	case "uniform", "random", "bernoulli":
		m, err := bind(ps, true, "rate")
		if err == nil {
			err = need(m, kind, "rate")
		}
		if err != nil {
			return nil, err
		}
		rate, err := parseRate(m["rate"].val)
		if err != nil {
			return nil, withToken(err, m["rate"])
		}
		l, err := NewUniformLoss(rate)
		if err != nil {
			return nil, withToken(err, m["rate"])
		}
		return l, nil
	case "bursty", "burst", "episodes":
		m, err := bind(ps, false, "rate", "burst")
		if err == nil {
			err = need(m, kind, "rate")
		}
		if err != nil {
			return nil, err
		}
		rate, err := parseRate(m["rate"].val)
		if err != nil {
			return nil, withToken(err, m["rate"])
		}
		burst := 100.0
		if _, ok := m["burst"]; ok {
			if burst, err = num(m, "burst"); err != nil {
				return nil, err
			}
		}
		l, err := NewBurstyLoss(rate, burst)
		if err != nil {
			return nil, withToken(err, m["rate"], m["burst"])
		}
		return l, nil
	}
	return nil, fmt.Errorf("%w: unknown loss kind %q (want none, uniform or bursty)", ErrSyntax, kind)
}

// parseRate reads a fraction ("0.001") or a percentage ("0.1%").
func parseRate(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := parseNumber(strings.TrimSuffix(s, "%"))
	if err != nil {
		return 0, err
	}
	if pct {
		v /= 100
	}
	return v, nil
}

func parseNumber(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %q is not a finite number", ErrSyntax, s)
	}
	return v, nil
}

// ParseDuration reads a duration as float64 nanoseconds: a number followed
// by ns, us, µs, ms or s; a bare number is ns. Unlike time.ParseDuration it
// keeps fractions of a nanosecond (the paper's 0.2 µs means have sub-ns
// Weibull scale parameters).
func ParseDuration(s string) (float64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suf string
		ns  float64
	}{{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"μs", 1e3}, {"ms", 1e6}, {"s", 1e9}}
	mul := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suf) {
			t, mul = strings.TrimSuffix(t, u.suf), u.ns
			break
		}
	}
	v, err := parseNumber(t)
	if err != nil {
		return 0, fmt.Errorf("%w: bad duration %q (want e.g. 200ns, 50us, 1.5ms)", ErrSyntax, s)
	}
	v *= mul
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: duration %q overflows", ErrSyntax, s)
	}
	return v, nil
}

// fmtNs prints ns so that ParseDuration reads back the same float64.
func fmtNs(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) + "ns" }

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
