package sim

import (
	"context"
	"fmt"
)

// Progress is told when a scenario starts (for a progress line on stderr).
type Progress func(experiment string, done, total int, s *Scenario)

// RunExperiments builds and runs the named experiments in order on a
// Runner with the given number of workers (≤ 0: GOMAXPROCS), calling emit
// with every point as soon as its scenario finishes. It stops at the first
// error from building, running (ctx cancelled) or emit.
func RunExperiments(ctx context.Context, names []string, o Options, workers int, progress Progress, emit func(Point) error) error {
	var all [][]Scenario
	total := 0
	for _, n := range names {
		sc, err := Build(n, o)
		if err != nil {
			return err
		}
		all = append(all, sc)
		total += len(sc)
	}
	r := Runner{Workers: workers}
	done := 0
	for i, sc := range all {
		for j := range sc {
			if progress != nil {
				progress(names[i], done, total, &sc[j])
			}
			pts, err := r.Run(ctx, sc[j])
			if err != nil {
				return fmt.Errorf("sim: %s %s loss %g: %w", names[i], sc[j].Series, sc[j].LossRate, err)
			}
			for _, p := range pts {
				if err := emit(p); err != nil {
					return err
				}
			}
			done++
		}
	}
	return nil
}
