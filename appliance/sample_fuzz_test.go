package appliance

import (
	"testing"

	"github.com/ldafwd/ldafwd/analyze"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// FuzzSamplePart: any bytes as a class's sample part (payload header and
// sample encoding, as pairSample reads them) decode or fail without
// panicking, and what decodes matches the receiver's own sample into a
// line whose every bounded quantile has lo ≤ estimate ≤ hi.
func FuzzSamplePart(f *testing.F) {
	own, _ := synopsis.NewSample(synopsis.SampleConfig{Capacity: 256})
	snd, _ := synopsis.NewSample(synopsis.SampleConfig{Capacity: 256})
	for i := uint64(1); i <= 300; i++ {
		h := i * 0x9E3779B97F4A7C15
		snd.Add(h, 1_000_000+i*50)
		if i%7 != 0 {
			own.Add(h, 1_000_000+i*50+20_000+i%13*1000)
		}
	}
	hdr := appendPayload(nil, payloadHeader{StampErrNs: 10, Frames: 300, Budget: 20 << 10})
	good, _ := snd.AppendBinary(append([]byte(nil), hdr...))
	f.Add(good)
	f.Add(appendPayload(nil, payloadHeader{Frames: 300, Flags: payloadOmitted}))
	f.Add(append(append([]byte(nil), hdr...), "SMP\x02\x80\x80\x80\x80\x10\x00\x00\x00\x00\x00"...)) // empty, every packet
	snd.CutToCount(100)
	cut, _ := snd.AppendBinary(append([]byte(nil), hdr...)) // a threshold between levels
	f.Add(cut)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := parsePayload(b)
		if err != nil || h.Flags&payloadOmitted != 0 {
			return
		}
		var s synopsis.Sample
		if s.UnmarshalBinary(body) != nil {
			return
		}
		l, _ := analyze.SampleLine(report.Interval{}, &s, own.Clone(), len(body), 0.98)
		if !l.DelayValid {
			return
		}
		for k, q := range l.Extra["quantiles"].(map[string]report.Quantile) {
			if q.EstimateNs != nil && (*q.LoNs > *q.EstimateNs || *q.EstimateNs > *q.HiNs) {
				t.Fatalf("%s: estimate %d outside [%d, %d]", k, *q.EstimateNs, *q.LoNs, *q.HiNs)
			}
		}
	})
}
