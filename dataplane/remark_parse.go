package dataplane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ldafwd/ldafwd/classifier"
)

// ParseRemarks parses --remark: FROM[>TO]:PROB, comma-separated; DSCPs
// by number or name (be, cs0-cs7, af11-af43, ef, va).
func ParseRemarks(spec string) ([]Remark, error) {
	var out []Remark
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	for _, item := range strings.Split(spec, ",") {
		codes, p, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return nil, fmt.Errorf("%q: want FROM[>TO]:PROB (e.g. cs2:0.05)", item)
		}
		from, to, _ := strings.Cut(codes, ">")
		if to == "" {
			to = "be"
		}
		f, err := dscpValue(from)
		if err != nil {
			return nil, err
		}
		t, err := dscpValue(to)
		if err != nil {
			return nil, err
		}
		prob, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(prob > 0 && prob <= 1) {
			return nil, fmt.Errorf("%q: probability %q not in (0, 1]", item, p)
		}
		if f == t {
			return nil, fmt.Errorf("%q: remarks a DSCP to itself", item)
		}
		out = append(out, Remark{From: f, To: t, Prob: prob})
	}
	return out, nil
}

// ParseDSCPList parses --dscp: DSCPs, comma-separated.
func ParseDSCPList(spec string) ([]uint8, error) {
	var out []uint8
	for _, s := range strings.Split(spec, ",") {
		d, err := dscpValue(s)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// dscpValue reads a DSCP as the --mec syntax does (so the names agree).
func dscpValue(s string) (uint8, error) {
	r, err := classifier.ParseMEC("x=dscp:" + strings.TrimSpace(s))
	if err != nil || len(r.DSCP) != 1 || r.DSCP[0].Lo != r.DSCP[0].Hi {
		return 0, fmt.Errorf("bad DSCP %q (0-63 or be, cs0-cs7, af11-af43, ef, va)", s)
	}
	return uint8(r.DSCP[0].Lo), nil
}
