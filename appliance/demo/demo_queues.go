package demo

import (
	"github.com/ldafwd/ldafwd/appliance"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
)

// splitQueues gives the ports of two demo appliances n software queues
// each (dataplane.SoftQueues, steered by dataplane.SteerQueue at every
// port, as the same RSS configuration would at two NICs) and returns what
// stops their goroutines. steerSeg, when set, steers what the last
// config's segment port receives instead (a test of wrong steering).
func splitQueues(n int, steerSeg func([]byte, int) int, cs ...*appliance.Config) (stop func(), err error) {
	var all []*dataplane.SoftQueues
	stop = func() {
		for _, s := range all {
			s.Stop()
		}
	}
	split := func(p dataplane.Port, steer func([]byte, int) int) ([]dataplane.Port, error) {
		s, err := dataplane.NewSoftQueues(p, n, 4096, nil)
		if err != nil {
			return nil, err
		}
		s.Steer = steer
		all = append(all, s)
		s.Start()
		return s.Queues(), nil
	}
	for i, c := range cs {
		var sa, sb func([]byte, int) int
		if i == len(cs)-1 && c.Segment == "a" {
			sa = steerSeg
		} else if i == len(cs)-1 {
			sb = steerSeg
		}
		if c.QueuesA, err = split(c.PortA, sa); err != nil {
			stop()
			return nil, err
		}
		if c.QueuesB, err = split(c.PortB, sb); err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}

// demoTruth is the link's exact account the demo holds reports to.
type demoTruth interface {
	Record(frame []byte, r *dataplane.TruthRecord)
	Next() (dataplane.TruthInterval, bool)
	LostData() uint64
	Authenticate(key []byte) error
	KeepDelays()
}

// laneTruth is the truth of an n-lane pair of appliances: one
// IntervalTruth per lane, each fed the frames steered to that lane
// (dataplane.SteerQueue, End markers by their lane), so each cuts its
// intervals at its own lane's End marker as the two appliances do; an
// interval's truth is the sum over the lanes once every lane has
// published it.
type laneTruth struct {
	lanes []*dataplane.IntervalTruth
	parts map[uint64][]dataplane.TruthInterval
	ready []dataplane.TruthInterval
}

func newLaneTruth(n int, direction uint16, cl *classifier.Classifier) (*laneTruth, error) {
	t := &laneTruth{parts: map[uint64][]dataplane.TruthInterval{}}
	for i := 0; i < n; i++ {
		l, err := dataplane.NewIntervalTruthClasses(direction, cl, 1)
		if err != nil {
			return nil, err
		}
		t.lanes = append(t.lanes, l)
	}
	return t, nil
}

func (t *laneTruth) Record(frame []byte, r *dataplane.TruthRecord) {
	t.lanes[dataplane.SteerQueue(frame, len(t.lanes))].Record(frame, r)
}

func (t *laneTruth) KeepDelays() {
	for _, l := range t.lanes {
		l.KeepDelays()
	}
}

func (t *laneTruth) Authenticate(key []byte) error {
	for _, l := range t.lanes {
		if err := l.Authenticate(key); err != nil {
			return err
		}
	}
	return nil
}

func (t *laneTruth) LostData() uint64 {
	var n uint64
	for _, l := range t.lanes {
		n += l.LostData()
	}
	return n
}

// Next returns the next interval every lane has published, summed.
func (t *laneTruth) Next() (dataplane.TruthInterval, bool) {
	for _, l := range t.lanes {
		for {
			ti, ok := l.Next()
			if !ok {
				break
			}
			ti.Classes = append([]dataplane.ClassTruth(nil), ti.Classes...)
			t.parts[ti.K] = append(t.parts[ti.K], ti)
			if len(t.parts[ti.K]) == len(t.lanes) {
				t.ready = append(t.ready, sumTruth(t.parts[ti.K]))
				delete(t.parts, ti.K)
			}
		}
	}
	if len(t.ready) == 0 {
		return dataplane.TruthInterval{}, false
	}
	ti := t.ready[0]
	t.ready = t.ready[1:]
	return ti, true
}

// tooLate is the truth's TooLate, over its lanes.
func tooLate(t demoTruth) uint64 {
	switch t := t.(type) {
	case *dataplane.IntervalTruth:
		return t.TooLate
	case *laneTruth:
		var n uint64
		for _, l := range t.lanes {
			n += l.TooLate
		}
		return n
	}
	return 0
}

func sumTruth(ps []dataplane.TruthInterval) dataplane.TruthInterval {
	s := ps[0]
	s.Classes = append([]dataplane.ClassTruth(nil), s.Classes...)
	for _, p := range ps[1:] {
		s.Delivered += p.Delivered
		s.Lost += p.Lost
		s.Dups += p.Dups
		s.Crossed += p.Crossed
		s.Excluded += p.Excluded
		s.Consumed += p.Consumed
		s.Injected += p.Injected
		s.Remarked += p.Remarked
		s.SumNs += p.SumNs
		s.SqNs += p.SqNs
		for m := range s.Classes {
			if m < len(p.Classes) {
				c := &s.Classes[m]
				c.Delivered += p.Classes[m].Delivered
				c.Lost += p.Classes[m].Lost
				c.Crossed += p.Classes[m].Crossed
				c.SumNs += p.Classes[m].SumNs
				c.SqNs += p.Classes[m].SqNs
				c.Delays = append(c.Delays[:len(c.Delays):len(c.Delays)], p.Classes[m].Delays...)
				c.DelayFlows = append(c.DelayFlows[:len(c.DelayFlows):len(c.DelayFlows)], p.Classes[m].DelayFlows...)
			}
		}
	}
	return s
}
