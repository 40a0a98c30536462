package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// RDAFactory makes the RDA of each MEC. Offline both ends' timestamp
// caches are at hand, so repair needs no request/reply exchange.
type RDAFactory struct{ Config synopsis.RDAConfig }

type rdaSide struct{ r *synopsis.RDA }

func (s *rdaSide) Add(m *classifier.Meta, _ uint16, ts uint64) { s.r.Add(m.Hash, ts) }
func (s *rdaSide) Reset()                                      { s.r.Reset() }

func (f RDAFactory) Name() string { return "rda" }
func (f RDAFactory) PerMEC() bool { return true }
func (f RDAFactory) New() (SideSynopsis, error) {
	r, err := synopsis.NewRDA(f.Config)
	if err != nil {
		return nil, err
	}
	return &rdaSide{r}, nil
}

func (f RDAFactory) Estimate(sender, receiver SideSynopsis, conf float64) []report.Interval {
	lines, _ := f.EstimateWith(sender, receiver, conf)
	return lines
}

// EstimateWith is Estimate with the estimate behind the line.
func (f RDAFactory) EstimateWith(sender, receiver SideSynopsis, conf float64) ([]report.Interval, []synopsis.Estimate) {
	var r report.Interval
	e, st, err := synopsis.EstimateRDA(sender.(*rdaSide).r, receiver.(*rdaSide).r, conf)
	if err != nil {
		r.Synopsis = "rda"
		r.Invalidate(report.Decode, err.Error())
		return []report.Interval{r}, []synopsis.Estimate{{Synopsis: "rda", Reason: r.Reason, Code: report.Decode}}
	}
	fill(&r, e)
	r.Extra = st.ReportFields()
	return []report.Interval{r}, []synopsis.Estimate{e}
}

// LDSFactory makes one LDS for all traffic (flows weighted by their MEC's
// weight) and reports one line per flow: the Top flows by packets, or all
// named flows when Top is 0.
//
// Each end's packets of an interval are kept (flow, identity, timestamp,
// weight) and the pair of sketches is built when the interval is
// estimated: with Auto, sized for the flows the sender saw
// (synopsis.SizeLDSConfig; the receiver takes the sender's config, as the
// appliance ships it with the sketch), otherwise with Config. The set
// difference is then decoded with an RDA over the same packets, sized for
// the interval, and the lost and extra packets it lists repair the LDS
// cells they spoiled before the flows are estimated
// (synopsis.EstimateLDSFlowsRepaired): what an appliance does with its
// decode and the sender's timestamp cache, here without a round trip.
type LDSFactory struct {
	Config     synopsis.LDSConfig
	Auto       bool
	Classifier *classifier.Classifier
	Top        int
}

type ldsSide struct {
	pkts    []synopsis.LDSPacket
	keys    map[uint64]synopsis.FlowKeyBytes
	weights []uint32
}

func (s *ldsSide) Add(m *classifier.Meta, mec uint16, ts uint64) {
	if m.FlowHash == 0 {
		return // not IP: no flow
	}
	s.pkts = append(s.pkts, synopsis.LDSPacket{FlowHash: m.FlowHash, Hash: m.Hash, Ts: ts, Weight: s.weights[mec]})
	if _, ok := s.keys[m.FlowHash]; !ok {
		s.keys[m.FlowHash] = synopsis.PackFlowKey(m.Flow.Src, m.Flow.Dst, m.Flow.SrcPort, m.Flow.DstPort, m.Flow.Proto, m.Flow.IPv6)
	}
}

func (s *ldsSide) Reset() {
	s.pkts = s.pkts[:0]
	clear(s.keys)
}

// sketch builds this end's LDS of the interval.
func (s *ldsSide) sketch(cfg synopsis.LDSConfig) (*synopsis.LDS, error) {
	l, err := synopsis.NewLDS(cfg)
	if err != nil {
		return nil, err
	}
	for _, p := range s.pkts {
		if k := l.AddFlowKey(p.FlowHash, p.Hash, p.Ts, p.ErrNs, p.Weight); k != nil {
			*k = s.keys[p.FlowHash]
		}
	}
	return l, nil
}

func (f LDSFactory) Name() string { return "lds" }
func (f LDSFactory) PerMEC() bool { return false }
func (f LDSFactory) New() (SideSynopsis, error) {
	if !f.Auto {
		if _, err := synopsis.NewLDS(f.Config); err != nil {
			return nil, err
		}
	}
	w := make([]uint32, f.Classifier.NumClasses())
	for i := range w {
		w[i] = f.Classifier.Weight(uint16(i))
	}
	return &ldsSide{keys: map[uint64]synopsis.FlowKeyBytes{}, weights: w}, nil
}

func (f LDSFactory) Estimate(sender, receiver SideSynopsis, conf float64) []report.Interval {
	snd, rcv := sender.(*ldsSide), receiver.(*ldsSide)
	fail := func(err error) []report.Interval {
		r := report.Interval{Synopsis: "lds"}
		r.Invalidate(report.Decode, err.Error())
		return []report.Interval{r}
	}
	cfg := f.Config
	if f.Auto {
		var err error
		if cfg, err = synopsis.SizeLDSConfig(len(snd.keys), len(rcv.keys)); err != nil {
			return fail(err)
		}
	}
	ls, err := snd.sketch(cfg)
	if err != nil {
		return fail(err)
	}
	lr, err := rcv.sketch(cfg)
	if err != nil {
		return fail(err)
	}
	// The estimator bounds what other flows' packets in a flow's cells
	// can move its mean by the spread of the delays: here the range the
	// two captures' paired packets show (an appliance has its configured
	// --min-delay/--max-delay instead).
	if lo, hi, ok := ldsDelayRange(snd, rcv); ok {
		lr.SetBound(synopsis.LDSBound{MinDelayNs: lo, MaxDelayNs: hi, Conf: conf})
	}
	rep, rst := ldsRepair(snd, rcv)
	flows, err := synopsis.EstimateLDSFlowsRepaired(ls, lr, rep)
	if err != nil {
		return fail(err)
	}
	synopsis.ApplyFragments(flows)
	if f.Top > 0 {
		flows = synopsis.TopFlows(flows, f.Top, synopsis.ByPackets)
	}
	c := ls.Config()
	shape := fmt.Sprintf("%d×%d k=%d", c.Rows, c.Cols, c.CellsPerFlow)
	out := make([]report.Interval, 0, len(flows))
	for i := range flows {
		fe := &flows[i]
		var r report.Interval
		fill(&r, fe.Estimate)
		r.Synopsis = "lds"
		r.MEC = "" // the caller's class; flows of every class share the sketch
		if fe.Named {
			r.Flow = FlowName(&fe.Key)
		}
		r.Extra = map[string]any{"flow_hash": fe.FlowHash, "weight": fe.Weight, "cells": fe.SelectedCells,
			"held_sent": fe.HeldSent, "held_received": fe.HeldReceived, "lds": shape, "repair": rst, "repair_complete": rep.Complete}
		if fe.RepairedLost > 0 {
			r.Extra["repaired_lost"] = fe.RepairedLost
		}
		if fe.RepairedExtra > 0 {
			r.Extra["repaired_extra"] = fe.RepairedExtra
		}
		FragmentExtra(r.Extra, fe)
		out = append(out, r)
	}
	return out
}

// ldsDelayRange is the smallest and largest delay of the interval's
// packets, each end's copies of an identity paired in time order (the
// first received with the first sent, …); copies left over on either side
// are the lost and extra packets, which no usable cell holds. Any pairing
// within identities gives a cell the same delay sum, so every cell's
// packets have delays in this range under one of them. ok is false when
// nothing pairs. A range of one value (every delay equal) bounds every
// flow's mean exactly, whatever shares its cells.
func ldsDelayRange(snd, rcv *ldsSide) (lo, hi int64, ok bool) {
	sorted := func(p []synopsis.LDSPacket) []synopsis.LDSPacket {
		q := slices.Clone(p)
		slices.SortFunc(q, func(a, b synopsis.LDSPacket) int {
			if c := cmp.Compare(a.Hash, b.Hash); c != 0 {
				return c
			}
			return cmp.Compare(a.Ts, b.Ts)
		})
		return q
	}
	s, r := sorted(snd.pkts), sorted(rcv.pkts)
	lo, hi = math.MaxInt64, math.MinInt64
	for i, j := 0, 0; i < len(s) && j < len(r); {
		switch {
		case s[i].Hash < r[j].Hash:
			i++
		case s[i].Hash > r[j].Hash:
			j++
		default:
			d := int64(r[j].Ts - s[i].Ts)
			lo, hi = min(lo, d), max(hi, d)
			i++
			j++
		}
	}
	return lo, hi, hi >= lo
}

// ldsRepair decodes the interval's set difference with an RDA over the
// packets both ends gave the LDS and places each decoded identity: the
// packet's flow, timestamp and weight at its own end (see place for
// identities seen more than once). The RDA has cells for the packets at a
// problem rate of twice the interval's net loss, at least 1 %
// (synopsis.SizeRDAConfig), so it decodes whenever reordering and
// rewriting do not outnumber the losses. The summary says how much was
// repaired: "complete" when every identity of a complete decode was
// placed, otherwise "partial: ..." and why.
func ldsRepair(snd, rcv *ldsSide) (synopsis.LDSRepair, string) {
	var rep synopsis.LDSRepair
	ns, nr := len(snd.pkts), len(rcv.pkts)
	rate := 0.01
	if ns > nr {
		rate = max(rate, 2*float64(ns-nr)/float64(ns))
	}
	cfg, err := synopsis.SizeRDAConfig(uint64(max(ns, nr)), min(rate, 1))
	if err != nil {
		return rep, "none: " + err.Error()
	}
	cfg.CacheBudget = 0 // the packets are at hand
	rs, err := synopsis.NewRDA(cfg)
	if err != nil {
		return rep, "none: " + err.Error()
	}
	rr, _ := synopsis.NewRDA(cfg)
	for _, p := range snd.pkts {
		rs.Add(p.Hash, p.Ts)
	}
	for _, p := range rcv.pkts {
		rr.Add(p.Hash, p.Ts)
	}
	dec, err := synopsis.DecodeRDA(rs, rr)
	if err != nil {
		return rep, "none: " + err.Error()
	}
	// A lost identity the sender sent more than once cannot be placed:
	// which copy was lost is unknown. An extra identity the receiver saw
	// more than once (a copy made inside the segment) is taken out as its
	// latest copy, the one pairing first in first out leaves unpaired.
	place := func(ids []uint64, pkts []synopsis.LDSPacket, latest bool) ([]synopsis.LDSPacket, int) {
		if len(ids) == 0 {
			return nil, 0
		}
		idx := make(map[uint64]int, len(ids))
		for _, id := range ids {
			idx[id] = -1
		}
		for i, p := range pkts {
			if j, ok := idx[p.Hash]; ok {
				if j == -1 || latest {
					idx[p.Hash] = i
				} else {
					idx[p.Hash] = -2 // seen twice: which copy is unknown
				}
			}
		}
		out := make([]synopsis.LDSPacket, 0, len(ids))
		for _, id := range ids {
			if i := idx[id]; i >= 0 {
				out = append(out, pkts[i])
			}
		}
		return out, len(ids) - len(out)
	}
	var unplacedL, unplacedE int
	rep.Lost, unplacedL = place(dec.Lost, snd.pkts, false)
	rep.Extra, unplacedE = place(dec.Extra, rcv.pkts, true)
	rep.Complete = dec.Complete && unplacedL+unplacedE == 0
	switch {
	case rep.Complete:
		return rep, fmt.Sprintf("complete: %d lost and %d extra packets taken out", len(rep.Lost), len(rep.Extra))
	case !dec.Complete:
		return rep, fmt.Sprintf("partial: the set difference did not decode (%d cells left); %d lost and %d extra packets taken out", dec.ResidualCells, len(rep.Lost), len(rep.Extra))
	default:
		return rep, fmt.Sprintf("partial: %d lost identities sent more than once (which copy was lost is unknown); %d lost and %d extra packets taken out", unplacedL+unplacedE, len(rep.Lost), len(rep.Extra))
	}
}

// FragmentExtra adds to a flow line's extra what the line counts of IP
// fragments (synopsis.ApplyFragments, docs/lds.md): "fragments" is
// "whole_and_first" on a flow whose hosts' later fragments are counted
// apart, in the flow "later_fragments_flow" names, and "later" on that
// fragments flow itself; neither field where the hosts have none.
func FragmentExtra(extra map[string]any, f *synopsis.FlowEstimate) {
	switch f.Fragments {
	case synopsis.FragmentsWholeAndFirst:
		extra["fragments"] = f.Fragments.String()
		extra["later_fragments_flow"] = FlowName(&f.FragmentsFlow)
	case synopsis.FragmentsLater:
		extra["fragments"] = f.Fragments.String()
	}
}

// FlowName renders a packed flow key as the reports name flows (docs/reports.md).
func FlowName(k *synopsis.FlowKeyBytes) string {
	src, dst, sp, dp, proto, v6 := synopsis.UnpackFlowKey(k)
	return classifier.FlowKey{Src: src, Dst: dst, SrcPort: sp, DstPort: dp, Proto: proto, IPv6: v6}.String()
}
