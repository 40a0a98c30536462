package service

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/dataplane/afxdp"
	"github.com/ldafwd/ldafwd/dpdk"
)

// checkQueues validates --queues against the ports and --cores.
func checkQueues(o *Config) error {
	if o.Queues < 1 || o.Queues > 64 {
		return fmt.Errorf("--queues %d: 1..64", o.Queues)
	}
	if o.Queues == 1 {
		return nil
	}
	if o.ForwardOnly {
		return fmt.Errorf("--queues %d: --forward-only runs one queue pair", o.Queues)
	}
	for _, s := range []string{o.PortA, o.PortB} {
		if kind, _, _ := strings.Cut(s, ":"); kind == "afxdp" && strings.Contains(s, "@") {
			return fmt.Errorf("--queues %d: afxdp port %q names a queue: give the interface only, its queues 0..%d are opened", o.Queues, s, o.Queues-1)
		}
	}
	if len(o.Cores) != 0 && len(o.Cores) != o.Queues {
		return fmt.Errorf("--cores %v: with --queues %d, none or one CPU per queue pair", o.Cores, o.Queues)
	}
	seen := slices.Clone(o.Cores)
	slices.Sort(seen)
	if len(slices.Compact(seen)) != len(o.Cores) {
		return fmt.Errorf("--cores %v: one CPU per queue pair, each its own", o.Cores)
	}
	return nil
}

// queues returns the n queues of each port (nil with n = 1) and what
// stops the software steering of ring ports. DPDK ports were opened with
// n queues, RSS with the fixed key; afxdp ports are one socket per queue
// (afxdp.Queues); ring ports are split by dataplane.SoftQueues.
func (ps *portSet) queues(n int) (qa, qb []dataplane.Port, stop func(), err error) {
	stop = func() {}
	if n == 1 {
		return nil, nil, stop, nil
	}
	if a, ok := ps.a.(*afxdp.Queues); ok {
		b := ps.b.(*afxdp.Queues)
		for i := 0; i < n; i++ {
			qa, qb = append(qa, a.Queue(i)), append(qb, b.Queue(i))
		}
		return qa, qb, stop, nil
	}
	if ps.dpdk {
		a, b := ps.a.(*dpdk.Port), ps.b.(*dpdk.Port)
		for i := 0; i < n; i++ {
			qa, qb = append(qa, a.Queue(i)), append(qb, b.Queue(i))
		}
		return qa, qb, stop, nil
	}
	sa, err := dataplane.NewSoftQueues(ps.a, n, 4096, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	sb, err := dataplane.NewSoftQueues(ps.b, n, 4096, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	sa.Start()
	sb.Start()
	return sa.Queues(), sb.Queues(), func() { sa.Stop(); sb.Stop() }, nil
}
