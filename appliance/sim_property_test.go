package appliance_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ldafwd/ldafwd/appliance/demo"
	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/report"
	"github.com/ldafwd/ldafwd/synopsis"
	"github.com/rs/zerolog"
)

// simSeeds is how many seeds TestSimProperty runs (-short: simShortSeeds);
// SIM_PROPERTY_SEEDS sets another number (`make accuracy` runs 6000).
const (
	simSeeds      = 1000
	simShortSeeds = 12
)

// simCalmOneIn: one seed in that many starts with simCalmIntervals calm
// intervals.
const (
	simCalmOneIn     = 6
	simCalmIntervals = 21
)

// simKnownBad lists seeds of TestSimProperty that find a wrong valid
// line the code has not been fixed for yet, with the line. They still
// run: their failures are logged, not errors, and a listed seed that no
// longer fails is an error (take it off the list).
var simKnownBad = map[uint64]string{}

// simRegressionSeeds are seeds beyond simSeeds that once found a wrong
// valid line (or a wrong truth): TestSimPropertySeeds runs them on every
// run, -short included.
var simRegressionSeeds = []uint64{
	3389, 4438, // a packet held back across an End marker behind a frame the segment originated: the truth dropped it
	5391, // a packet reordered across the End marker and remarked: extra in another class of the next interval, an LDA line claimed it lost
	5521, // a sender restart: the next interval's copy, not the second cut's, decided the first cut's crossings
}

// TestSimPropertySeeds is TestSimProperty's check on simRegressionSeeds.
func TestSimPropertySeeds(t *testing.T) {
	if raceEnabled {
		t.Skip("the simulation is deterministic whatever the speed; the race detector only makes it slow")
	}
	tally := &simPropTally{reasons: map[string]int{}}
	for _, seed := range simRegressionSeeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			simPropSeed(t, seed, tally)
		})
	}
}

// simPropScenario draws one seed's segment and appliance settings from
// the seed: uniform or bursty loss (bursts long enough to take all
// copies of an End marker, and synopsis fragments), duplicates,
// reordering (now and then heavy), DSCP remarking, link-local frames, a
// sender restart, a step of the sender's clock, one or two classes, the RDA or not, one or two control copies, and a short
// run (four or five intervals of 50 to 150 ms) so a thousand seeds take
// minutes.
func simPropScenario(seed uint64) (demo.Config, string) {
	r := rand.New(rand.NewPCG(seed, 0x51d0_7e57))
	var desc []string
	var loss model.Loss
	if r.IntN(3) == 0 {
		rate, burst := 0.001+r.Float64()*0.02, float64(2+r.IntN(40))
		loss, _ = model.NewBurstyLoss(rate, burst)
		desc = append(desc, fmt.Sprintf("bursty loss %.4f×%g", rate, burst))
	} else {
		rate := r.Float64() * 0.006
		if r.IntN(8) == 0 {
			rate = 0
		}
		loss, _ = model.NewUniformLoss(rate)
		desc = append(desc, fmt.Sprintf("uniform loss %.4f", rate))
	}
	delay, _ := model.NewWeibull(40_000, 0.7)
	iv := time.Duration(50+50*r.IntN(3)) * time.Millisecond
	cfg := demo.Config{
		Duration: iv * time.Duration(4+r.IntN(2)), Interval: iv, Delay: delay, Loss: loss, Rate: 20_000, Seed: seed,
		DSCP: []uint8{0, 16}, ControlCopies: 1 + r.IntN(2), Insecure: true, Conf: 0.98, SimulatedTime: true,
		Log: zerolog.Nop(),
	}
	desc = append(desc, fmt.Sprintf("interval %v, duration %v, %d control copies", iv, cfg.Duration, cfg.ControlCopies))
	if r.IntN(3) == 0 {
		cfg.DupProb = 0.0002 + r.Float64()*0.005
		desc = append(desc, fmt.Sprintf("dup %.4f", cfg.DupProb))
	}
	switch r.IntN(6) {
	case 0, 1:
		cfg.ReorderProb = 0.001 + r.Float64()*0.05
	case 2:
		cfg.ReorderProb = 0.2
	}
	if cfg.ReorderProb > 0 {
		desc = append(desc, fmt.Sprintf("reorder %.4f", cfg.ReorderProb))
	}
	if r.IntN(8) == 0 {
		// The sender dies (no graceful end of its interval) and comes
		// back with a new session, somewhere after its first interval.
		cfg.RestartAt = iv + time.Duration(r.Int64N(int64(cfg.Duration-2*iv)))
		desc = append(desc, fmt.Sprintf("sender restart at %v", cfg.RestartAt))
	}
	if r.IntN(8) == 0 {
		// The sender's clock steps, forward or back, by 0.2 to 5 ms.
		cfg.ClockStepAt = iv/2 + time.Duration(r.Int64N(int64(cfg.Duration-iv)))
		cfg.ClockStepBy = time.Duration(200_000+r.Int64N(4_800_000)) * time.Duration(1-2*r.IntN(2))
		desc = append(desc, fmt.Sprintf("clock step %v at %v", cfg.ClockStepBy, cfg.ClockStepAt))
	}
	if r.IntN(4) == 0 {
		cfg.LinkLocalRate = float64(50 + r.IntN(250))
		desc = append(desc, fmt.Sprintf("link-local %g/s", cfg.LinkLocalRate))
	}
	var specs []string
	if r.IntN(3) > 0 {
		specs = []string{"c2=dscp:cs2"}
		if r.IntN(3) == 0 {
			p := 0.005 + r.Float64()*0.05
			cfg.Remark = []dataplane.Remark{{From: 16, To: 0, Prob: p}}
			desc = append(desc, fmt.Sprintf("remark cs2 %.4f", p))
		}
	} else {
		desc = append(desc, "one class")
	}
	cfg.Classifier, _ = classifier.NewClassifierFromSpecs(specs)
	cfg.Syn = dataplane.SynConfig{LDA: synopsis.DefaultLDAConfig(), Classes: cfg.Classifier.NumClasses()}
	if r.IntN(2) == 0 {
		rda := synopsis.DefaultRDAConfig()
		cfg.Syn.RDA = &rda
		desc = append(desc, "rda")
	}
	if r.IntN(simCalmOneIn) == 0 {
		// A calm start long enough for the receiver to check the
		// segment's order (orderChecksNeeded: 18 at 0.98), then the
		// drawn segment: the loss from the End markers' counts alone
		// stands only after it.
		calm := simCalmIntervals * iv
		cfg.CalmFor, cfg.Duration = calm, cfg.Duration+calm
		if cfg.RestartAt > 0 {
			cfg.RestartAt += calm
		}
		if cfg.ClockStepAt > 0 {
			cfg.ClockStepAt += calm
		}
		desc = append(desc, fmt.Sprintf("calm for the first %v", calm))
	}
	return cfg, strings.Join(desc, ", ")
}

// simPropTally is what the seeds found, over all of them.
type simPropTally struct {
	mu                                  sync.Mutex
	seeds                               int
	lines, meanIn, lossLines, lossyLine int
	crossed, rdaProved, dups, remarked  int
	remarkSeeds, restartSeeds           int
	afterRestart                        int // valid lines of a restarted sender's new session
	byCounts                            int // loss_valid lines whose loss the End markers' counts stand for
	countsMiss                          int // of them, wrong: allowed at 1 − confidence (countProof's bound)
	reasons                             map[string]int
}

// TestSimProperty is TestDemoProperty's promise over a thousand seeds on
// simulated time, where a seed replays bit for bit: every a>b LDA and
// RDA line that claims its loss (loss_valid) has the impairment stage's
// exact loss in its class, every valid line has the truth and its mean
// within mean_ci_ns (exactly, when mean_ci_ns is 0) — allowing over all
// lines only the misses the stated 98 % confidence allows. The seeds
// together must have exercised what they draw (lossy valid lines, the
// RDA's proof, crossings, duplicates, remarking, lost control frames),
// so the property is never vacuous. A failing seed names the command
// that replays it.
func TestSimProperty(t *testing.T) {
	// The simulation is deterministic whatever the speed; the race
	// detector only makes it slow: 3 seeds under -race.
	n := propertySeeds(t, "SIM_PROPERTY_SEEDS", simSeeds, simShortSeeds, 3)
	tally := &simPropTally{reasons: map[string]int{}}
	t.Run("seeds", func(t *testing.T) {
		for seed := uint64(1); seed <= uint64(n); seed++ {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				simPropSeed(t, seed, tally)
			})
		}
	})
	tally.mu.Lock()
	defer tally.mu.Unlock()
	var rs []string
	for k, v := range tally.reasons {
		rs = append(rs, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(rs)
	t.Logf("%d seeds: %d valid lines, true mean inside the bound in %d; %d loss_valid lines, %d valid with loss; %d valid with a crossing, %d LDA lines proven by the RDA, %d with duplicates, %d with remarking (%d seeds remarked); %d loss_valid on the End markers' counts (%d wrong: misses); invalid lines by reason: %s",
		tally.seeds, tally.lines, tally.meanIn, tally.lossLines, tally.lossyLine, tally.crossed, tally.rdaProved, tally.dups, tally.remarked, tally.remarkSeeds, tally.byCounts, tally.countsMiss, strings.Join(rs, ", "))
	misses := tally.lines - tally.meanIn
	allowed := 0.02*float64(tally.lines) + 3*math.Sqrt(0.02*0.98*float64(tally.lines)) + 1
	if float64(misses) > allowed {
		t.Errorf("true mean outside the bound in %d of %d valid lines (allowed %.1f)", misses, tally.lines, allowed)
	}
	allowed = 0.02*float64(tally.byCounts) + 3*math.Sqrt(0.02*0.98*float64(tally.byCounts)) + 1
	if float64(tally.countsMiss) > allowed {
		t.Errorf("loss from the End markers' counts wrong in %d of %d loss_valid lines on them (allowed %.1f)", tally.countsMiss, tally.byCounts, allowed)
	}
	if tally.seeds < min(n, simSeeds) || n < simSeeds {
		return // -short, -race or a seed run alone (-run …/seed=N): the coverage below needs them all
	}
	// A valid line with remarking needs a third class the moves did not
	// touch: with two, both classes' lines are rightly invalid. What the
	// seeds must show of remarking is that it was caught.
	for what, got := range map[string]int{
		"valid lines with loss": tally.lossyLine, "LDA lines proven by the RDA": tally.rdaProved,
		"valid lines with a crossing": tally.crossed, "valid lines with duplicates": tally.dups,
		"seeds whose segment remarked": tally.remarkSeeds, "seeds whose sender restarted": tally.restartSeeds,
		"valid lines after a sender's restart": tally.afterRestart, "lines invalid for a clock step": tally.reasons[report.ClockStep.String()], "lines invalid for a class change": tally.reasons[report.ClassChange.String()],
		"loss_valid lines whose loss the End markers' counts stand for (after a calm start)": tally.byCounts,
		"lines with synopsis fragments lost":                                                 tally.reasons[report.FragmentLost.String()],
		"lines with every copy of an End marker lost (a copy spanning two intervals)":        tally.reasons[report.Session.String()],
	} {
		if got == 0 {
			t.Errorf("no %s over %d seeds: that path went untested", what, tally.seeds)
		}
	}
}

// simPropSeed runs one seed and checks its lines.
func simPropSeed(t *testing.T, seed uint64, tally *simPropTally) {
	cfg, desc := simPropScenario(seed)
	known, isKnown := simKnownBad[seed]
	failures := 0
	fail := func(format string, args ...any) {
		failures++
		if isKnown {
			t.Logf("KNOWN ("+known+"): "+format, args...)
			return
		}
		t.Errorf(format, args...)
	}
	defer func() {
		if failures > 0 || t.Failed() {
			t.Logf("scenario: %s", desc)
			t.Logf("replay: go test ./appliance -run '^%s$' -count=1 -v", t.Name())
		}
		if isKnown && failures == 0 {
			t.Errorf("seed %d is listed in simKnownBad but found nothing wrong: take it off the list", seed)
		}
	}()
	var got []report.Interval
	cfg.Reports = func(r *report.Interval) { got = append(got, *r) }
	sum, err := demo.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var lines, meanIn, lossLines, lossy, crossed, rdaProved, dups, remarked, afterRestart, byCounts, countsMiss int
	reasons := map[string]int{}
	// The intervals after the one a restart fell in are the new
	// session's (simulated time starts on an interval boundary).
	restartK := int64(math.MaxInt64)
	if cfg.RestartAt > 0 && len(got) > 0 {
		k0 := got[0].Interval
		for _, r := range got {
			k0 = min(k0, r.Interval)
		}
		restartK = k0 + int64(cfg.RestartAt/cfg.Interval)
	}
	for _, r := range got {
		if r.Synopsis != "lda" && r.Synopsis != "rda" || r.Flow != "" {
			continue
		}
		if !r.Valid {
			reasons[r.ReasonCode]++
		}
		if r.LossValid {
			lossLines++
			onCounts := r.Extra["loss_from"] == "end_markers" || r.Extra["loss_verified_by"] == "end_markers"
			if onCounts {
				byCounts++
			}
			switch {
			case onCounts && r.TrueLost != nil && r.Lost != *r.TrueLost:
				// The End markers' counts stand at the confidence: a
				// segment that has kept order through the checks may
				// still hide a crossing behind a loss with probability
				// up to 1 − conf (a segment that starts reordering
				// right after a calm start comes close). A miss, as a
				// mean outside its bound is, counted over all seeds.
				countsMiss++
				t.Logf("interval %d %s/%s: loss from the End markers' counts %d, truth %d (a miss; %s)", r.Interval, r.MEC, r.Synopsis, r.Lost, *r.TrueLost, desc)
			case r.TrueLost == nil || r.Lost != *r.TrueLost:
				fail("WRONG LOSS: interval %d %s/%s loss_valid (valid %v) with lost %d, truth %v (sent %d, received %d; %s; extra %v)",
					r.Interval, r.MEC, r.Synopsis, r.Valid, r.Lost, ptrStr(r.TrueLost), r.Sent, r.Received, r.Reason, r.Extra)
			}
		}
		if !r.Valid {
			continue
		}
		lines++
		if r.Interval > restartK {
			afterRestart++
		}
		if r.TrueLost == nil || r.TrueMeanNs == nil {
			fail("interval %d %s/%s valid without truth (sent %d received %d)", r.Interval, r.MEC, r.Synopsis, r.Sent, r.Received)
			continue
		}
		if *r.TrueLost > 0 {
			lossy++
		}
		if c, _ := r.Extra["true_crossed"].(uint64); c > 0 {
			crossed++
		}
		if d, _ := r.Extra["true_dups"].(uint64); d > 0 {
			dups++
		}
		if m, _ := r.Extra["true_remarked"].(uint64); m > 0 {
			remarked++
		}
		if r.Synopsis == "lda" && r.Lost > 0 && r.Extra["loss_verified_by"] == "rda" {
			rdaProved++
		}
		switch off := math.Abs(r.MeanNs - *r.TrueMeanNs); {
		case off <= r.MeanCINs:
			meanIn++
		case r.MeanCINs == 0 && off > 1:
			fail("interval %d %s/%s claims the exact mean %.1f, true %.1f (samples %d of %d received; %v)",
				r.Interval, r.MEC, r.Synopsis, r.MeanNs, *r.TrueMeanNs, r.Samples, r.Received, r.Extra)
		default:
			t.Logf("interval %d %s/%s mean %.1f ± %.1f, true %.1f (a miss; %s)", r.Interval, r.MEC, r.Synopsis, r.MeanNs, r.MeanCINs, *r.TrueMeanNs, desc)
		}
	}
	// The scenario did what it draws.
	switch {
	case cfg.DupProb > 0.001 && sum.Duplicated == 0,
		cfg.ReorderProb > 0.01 && sum.Reordered == 0,
		cfg.LinkLocalRate > 0 && (sum.Consumed != sum.LinkLocalSent || sum.ExcludedSent != sum.LinkLocalSent || sum.ExcludedReceived != sum.Injected):
		fail("the segment did not do what the scenario says: %+v", sum)
	}
	if sum.TruthTooLate > 0 {
		fail("the truth could not place %d delivered packets: the lines were held to a wrong truth", sum.TruthTooLate)
	}
	if sum.Generated == 0 || sum.Intervals == 0 {
		fail("nothing measured: %+v", sum)
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	tally.seeds++
	tally.lines += lines
	tally.meanIn += meanIn
	tally.lossLines += lossLines
	tally.lossyLine += lossy
	tally.crossed += crossed
	tally.rdaProved += rdaProved
	tally.dups += dups
	tally.remarked += remarked
	if sum.Remarked > 0 {
		tally.remarkSeeds++
	}
	if cfg.RestartAt > 0 {
		tally.restartSeeds++
	}
	tally.afterRestart += afterRestart
	tally.byCounts += byCounts
	tally.countsMiss += countsMiss
	for k, v := range reasons {
		tally.reasons[k] += v
	}
}

func ptrStr(p *uint64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

// propertySeeds is how many seeds a property test runs: def, or the
// number in the environment variable env; short under -short, race under
// the race detector.
func propertySeeds(t *testing.T, env string, def, short, race int) int {
	t.Helper()
	n := def
	if s := os.Getenv(env); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of seeds", env, s)
		}
	}
	if testing.Short() {
		n = short
	}
	if raceEnabled {
		n = race
	}
	return n
}
