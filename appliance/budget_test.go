package appliance_test

import (
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
)

// countPort counts, per interval, the control bytes the sender appliance
// puts on the segment: the independent truth for control_bytes.
type countPort struct {
	dataplane.Port
	mu    sync.Mutex
	bytes map[uint64]int
	f     control.Frame
	// tagged counts the frames with an 802.1Q tag (TPID 0x8100) before the
	// control EtherType, by type.
	tagged map[control.Type]int
}

func (p *countPort) TxBurst(pkts []*dataplane.Packet) int {
	n := p.Port.TxBurst(pkts)
	p.mu.Lock()
	for _, q := range pkts[:n] {
		d := q.Data
		tagged := len(d) >= 18 && binary.BigEndian.Uint16(d[12:]) == 0x8100 && binary.BigEndian.Uint16(d[16:]) == control.EtherType
		if (tagged || len(d) >= 14 && binary.BigEndian.Uint16(d[12:]) == control.EtherType) && control.ParseFrame(d, &p.f) == nil {
			p.bytes[p.f.Interval] += len(d)
			if tagged {
				p.tagged[p.f.Type]++
			}
		}
	}
	p.mu.Unlock()
	return n
}

// TestControlBudget: with all synopses and a budget of 1 % of the data,
// control_bytes is what the sender really put on the segment, every copy
// counted; it stays within the budget; the LDA and the (folded) RDA stay
// valid and exact; an LDS left out, folded so far that its flows share
// cells, or carrying only the largest flows' cells (sparse), gives invalid
// lines that say so, and for nothing else. With a control priority the
// fragments carry a 4-byte tag, End markers and Hellos none, and the
// bytes still agree. On simulated time: no estimation overruns an
// interval and no transmit call is preempted, whatever the host's load.
func TestControlBudget(t *testing.T) {
	skipSimSlowUnderRace(t)
	for _, prio := range []control.Priority{control.NoPriority, control.PCP(5)} {
		t.Run("priority="+prio.String(), func(t *testing.T) { controlBudget(t, prio) })
	}
}

func controlBudget(t *testing.T, prio control.Priority) {
	delay, _ := model.NewWeibull(30_000, 0.7)
	cl, _ := classifier.NewClassifier(nil)
	rda := synopsis.DefaultRDAConfig()
	lds, err := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 2000, CellsPerFlow: 2, MaxFlows: 8000})
	if err != nil {
		t.Fatal(err)
	}
	cp := &countPort{bytes: map[uint64]int{}, tagged: map[control.Type]int{}}
	var mu sync.Mutex
	var lines []report.Interval
	_, err = demo.Run(demo.Config{
		Duration: 3500 * time.Millisecond, Interval: 500 * time.Millisecond, Delay: delay, Loss: model.NoLoss{}, Rate: 20_000, Seed: 3,
		Flows: 2000, Syn: dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), RDA: &rda, LDS: &lds}, Classifier: cl, Insecure: true,
		ControlCopies: 2, BudgetFraction: 0.01, TopFlows: 5, ControlPriority: prio, SimulatedTime: true,
		WrapSegment: func(p dataplane.Port) dataplane.Port { cp.Port = p; return cp },
		Reports: func(r *report.Interval) {
			mu.Lock()
			lines = append(lines, *r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checked, rdaValid := 0, 0
	for _, r := range lines {
		if r.Sent == 0 || r.Synopsis == "lds" && r.Valid {
			continue
		}
		if r.Synopsis != "lds" {
			t.Logf("%d %s valid=%v sent=%d lost=%d control=%d %s", r.Interval, r.Synopsis, r.Valid, r.Sent, r.Lost, r.ControlBytes, r.Reason)
		}
		switch r.Synopsis {
		case "lda":
			if !r.Valid {
				t.Errorf("lda interval %d invalid: %s", r.Interval, r.Reason)
				continue
			}
			cp.mu.Lock()
			wire := cp.bytes[uint64(r.Interval)]
			cp.mu.Unlock()
			data := float64(r.Sent) * 128
			if r.ControlBytes != wire {
				t.Errorf("interval %d: control_bytes %d, the segment carried %d", r.Interval, r.ControlBytes, wire)
			}
			// 1 % of the data, at least appliance.MinControlBudget; the
			// LDA is the floor: a partial interval (the first, the last)
			// may cost more.
			if budget := math.Max(0.01*data, appliance.MinControlBudget); float64(wire) > budget && r.Sent > 9000 { // full intervals: 10 000 packets
				t.Errorf("interval %d: %d control bytes for %.0f data bytes: over the budget %.0f", r.Interval, wire, data, budget)
			}
			checked++
		case "rda":
			if r.Valid {
				rdaValid++
				if r.TrueLost == nil || r.Lost != *r.TrueLost {
					t.Errorf("rda interval %d: lost %d, truth %v", r.Interval, r.Lost, r.TrueLost)
				}
				if !strings.Contains(r.Config, "rda-shipped=3x") || strings.Contains(r.Config, "rda-shipped=3x2048") {
					t.Errorf("rda interval %d: config %q: want the folded shape", r.Interval, r.Config)
				}
			}
		case "lds":
			if !strings.Contains(r.Reason, "control budget") && !strings.Contains(r.Reason, "other flows' packets") {
				t.Errorf("lds interval %d invalid for another reason: %s", r.Interval, r.Reason)
			}
		}
	}
	t.Logf("%d lda intervals checked, %d valid rda lines", checked, rdaValid)
	// Every interval of the 3.5 s but the receiver's first (warm-up):
	// valid lda and rda lines.
	if checked < 6 || rdaValid != checked {
		t.Errorf("%d lda intervals checked, %d valid rda lines: want an rda line valid beside each of ≥ 6", checked, rdaValid)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.tagged[control.TypeEnd] != 0 || cp.tagged[control.TypeHello] != 0 || prio.Tagged() != (cp.tagged[control.TypeFragment] > 0) {
		t.Errorf("priority %v: tagged frames by type %v", prio, cp.tagged)
	}
}
