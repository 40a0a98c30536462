package appliance

import "github.com/ldafwd/ldafwd/dataplane"

// splitQueues gives the ports of two demo appliances n software queues
// each (dataplane.SoftQueues, steered by dataplane.SteerQueue at every
// port, as the same RSS configuration would at two NICs) and returns what
// stops their goroutines.
func splitQueues(n int, cs ...*Config) (stop func(), err error) {
	var all []*dataplane.SoftQueues
	stop = func() {
		for _, s := range all {
			s.Stop()
		}
	}
	split := func(p dataplane.Port) ([]dataplane.Port, error) {
		s, err := dataplane.NewSoftQueues(p, n, 4096, nil)
		if err != nil {
			return nil, err
		}
		all = append(all, s)
		s.Start()
		return s.Queues(), nil
	}
	for _, c := range cs {
		if c.QueuesA, err = split(c.PortA); err != nil {
			stop()
			return nil, err
		}
		if c.QueuesB, err = split(c.PortB); err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}
