package synopsis

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestClassChangesLDA: a segment that remarks a share of class c2's
// packets into class all (and loses some of each) gives LDA estimates on
// which ClassChanges marks both classes invalid naming the move, while the
// same traffic without the remark (loss only, or duplication only in all
// with c2 lossless) leaves c2 alone.
func TestClassChangesLDA(t *testing.T) {
	names := []string{"all", "c2"}
	for _, tc := range []struct {
		name              string
		remark, loss, dup float64
		want              [2]bool // a reason for all, for c2
	}{
		{"remark+loss", 0.05, 0.002, 0, [2]bool{true, true}},
		{"remark only", 0.02, 0, 0, [2]bool{true, true}},
		{"rare remark under heavier loss", 0.002, 0.01, 0, [2]bool{true, true}},
		{"loss only", 0, 0.01, 0, [2]bool{false, false}},
		{"dup in all, c2 lossless", 0, 0, 0.01, [2]bool{false, false}},
		{"clean", 0, 0, 0, [2]bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 9))
			var snd, rcv [2]*LDA
			for m := range snd {
				snd[m], rcv[m] = MustNewLDA(DefaultLDAConfig()), MustNewLDA(DefaultLDAConfig())
			}
			var remarked, lostC2 uint64
			for i := 0; i < 100_000; i++ {
				h := r.Uint64()
				m := 0
				if i%4 == 0 {
					m = 1
				}
				ts := uint64(i) * 10_000
				snd[m].Add(h, ts)
				if r.Float64() < tc.loss {
					if m == 1 {
						lostC2++
					}
					continue
				}
				to := m
				if m == 1 && r.Float64() < tc.remark {
					to = 0
					remarked++
				}
				rcv[to].Add(h, ts+30_000)
				if to == 0 && r.Float64() < tc.dup {
					rcv[0].Add(h, ts+30_000)
				}
			}
			var es []*Estimate
			for m := range snd {
				e, err := EstimateLDA(snd[m], rcv[m], 0.98)
				if err != nil {
					t.Fatal(err)
				}
				es = append(es, &e)
				t.Logf("%s: sent %d received %d lost %d extra %d valid %v %s", names[m], e.Sent, e.Received, e.Lost, e.Extra, e.Valid, e.Reason)
			}
			why := ClassChanges(es, names)
			for m := range names {
				got := m < len(why) && why[m] != ""
				if got != tc.want[m] {
					t.Errorf("%s: reason %v, want one: %v (remarked %d, c2 lost %d)", names[m], why, tc.want[m], remarked, lostC2)
				}
				if got && !strings.Contains(why[m], "changed class") {
					t.Errorf("%s: reason %q does not name the class change", names[m], why[m])
				}
			}
			if tc.remark > 0 && es[1].Valid && (len(why) < 2 || why[1] == "") {
				t.Errorf("c2 reports %d lost as valid, truth %d lost and %d remarked", es[1].Lost, lostC2, remarked)
			}
		})
	}
}

// TestClassChangesPure covers the rule on hand-made estimates.
func TestClassChangesPure(t *testing.T) {
	e := func(sent, recv, extra uint64) *Estimate {
		x := &Estimate{Sent: sent, Received: recv, Extra: extra}
		if sent > recv {
			x.Lost = sent - recv
		}
		return x
	}
	if w := ClassChanges([]*Estimate{e(10, 12, 2)}, nil); len(w) != 0 {
		t.Errorf("one class: %v", w)
	}
	if w := ClassChanges([]*Estimate{e(10, 12, 2), nil, e(5, 5, 0)}, nil); len(w) != 0 {
		t.Errorf("extras, no loss elsewhere: %v", w)
	}
	if w := ClassChanges([]*Estimate{e(10, 9, 0), e(5, 4, 0)}, nil); len(w) != 0 {
		t.Errorf("loss, no extras: %v", w)
	}
	w := ClassChanges([]*Estimate{e(10, 12, 3), nil, e(5, 3, 0), e(7, 7, 0)}, []string{"all", "x", "c2", "c3"})
	if len(w) != 4 || w[0] == "" || w[1] != "" || w[2] == "" || w[3] != "" {
		t.Fatalf("reasons %q", w)
	}
	if !strings.Contains(w[0], "3+ in class all") || !strings.Contains(w[2], "the 2 lost here") {
		t.Errorf("reasons %q", w)
	}
	// The class that lost packets to remarking holds the most extras
	// itself (its own duplicates): it is still suspect, the class the
	// packets moved into had extras too.
	c2 := &Estimate{Sent: 20, Received: 21, Extra: 5, Lost: 4}
	w = ClassChanges([]*Estimate{e(10, 12, 2), c2}, []string{"all", "c2"})
	if len(w) != 2 || w[0] == "" || w[1] == "" {
		t.Fatalf("lossy class with the most extras: reasons %q", w)
	}
	// An RDA decode left incomplete by the packets remarked into its
	// class: none decoded, its residual cells prove them. The class they
	// left counts them lost.
	all := &Estimate{Synopsis: "rda", Sent: 4000, Received: 4104, ExtraBuckets: 5}
	c2 = &Estimate{Synopsis: "rda", Sent: 4000, Received: 3888, Lost: 120, Extra: 8}
	w = ClassChanges([]*Estimate{all, c2}, []string{"all", "c2"})
	if len(w) != 2 || w[0] == "" || w[1] == "" {
		t.Fatalf("extras proven by an incomplete decode's cells: reasons %q", w)
	}
	// Without its own duplicates c2's reason names its loss.
	c2.Extra = 0
	w = ClassChanges([]*Estimate{all, c2}, []string{"all", "c2"})
	if len(w) != 2 || !strings.Contains(w[0], "1+ in class all") || !strings.Contains(w[1], "lost here may be among them") {
		t.Errorf("reasons %q", w)
	}
}
