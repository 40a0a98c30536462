package analyze

import (
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
		r.Synopsis, r.Valid, r.Reason = "rda", false, err.Error()
		return []report.Interval{r}, []synopsis.Estimate{{Synopsis: "rda", Reason: r.Reason}}
	}
	fill(&r, e)
	r.Extra = st.ReportFields()
	return []report.Interval{r}, []synopsis.Estimate{e}
}

// LDSFactory makes one LDS for all traffic (flows weighted by their MEC's
// weight) and reports one line per flow: the Top flows by packets, or all
// named flows when Top is 0.
type LDSFactory struct {
	Config     synopsis.LDSConfig
	Classifier *classifier.Classifier
	Top        int
}

type ldsSide struct {
	l       *synopsis.LDS
	weights []uint32
}

func (s *ldsSide) Add(m *classifier.Meta, mec uint16, ts uint64) {
	if m.FlowHash == 0 {
		return // not IP: no flow
	}
	// The key is packed only for a flow's first held packet.
	if k := s.l.AddFlowKey(m.FlowHash, m.Hash, ts, s.weights[mec]); k != nil {
		*k = synopsis.PackFlowKey(m.Flow.Src, m.Flow.Dst, m.Flow.SrcPort, m.Flow.DstPort, m.Flow.Proto, m.Flow.IPv6)
	}
}
func (s *ldsSide) Reset() { s.l.Reset() }

func (f LDSFactory) Name() string { return "lds" }
func (f LDSFactory) PerMEC() bool { return false }
func (f LDSFactory) New() (SideSynopsis, error) {
	l, err := synopsis.NewLDS(f.Config)
	if err != nil {
		return nil, err
	}
	w := make([]uint32, f.Classifier.NumClasses())
	for i := range w {
		w[i] = f.Classifier.Weight(uint16(i))
	}
	return &ldsSide{l: l, weights: w}, nil
}

func (f LDSFactory) Estimate(sender, receiver SideSynopsis, conf float64) []report.Interval {
	flows, err := synopsis.EstimateLDSFlows(sender.(*ldsSide).l, receiver.(*ldsSide).l)
	if err != nil {
		return []report.Interval{{Synopsis: "lds", Valid: false, Reason: err.Error()}}
	}
	if f.Top > 0 {
		flows = synopsis.TopFlows(flows, f.Top, synopsis.ByPackets)
	}
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
			"held_sent": fe.HeldSent, "held_received": fe.HeldReceived}
		out = append(out, r)
	}
	return out
}

// FlowName renders a packed flow key as the reports name flows (docs/reports.md).
func FlowName(k *synopsis.FlowKeyBytes) string {
	src, dst, sp, dp, proto, v6 := synopsis.UnpackFlowKey(k)
	return classifier.FlowKey{Src: src, Dst: dst, SrcPort: sp, DstPort: dp, Proto: proto, IPv6: v6}.String()
}
