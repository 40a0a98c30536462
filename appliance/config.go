package appliance

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ldafwd/ldafwd/classifier"
	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
	"github.com/ldafwd/ldafwd/synopsis"
)

// DefaultInterval is Config.Interval's default, and `ldafwd run`'s.
const DefaultInterval = time.Second

// DefaultMicroburstGap is Config.MicroburstGap's default, as `ldafwd run
// --microburst-gap`.
const DefaultMicroburstGap = time.Millisecond

// DefaultBurst is Config.Burst's default: frames per rx/tx burst, as
// `ldafwd run --burst`.
const DefaultBurst = 32

// WithDefaults returns cfg with every optional setting left zero set to
// its default, the value `ldafwd run` takes when its flag is not given
// (TestLibraryDefaultsAreRunDefaults holds the two together): the
// interval, the classifier (one class, "all"), the confidence, the
// clocks, the delay bounds, the pairing timeout, the LDS's top flows, the
// control copies, MTU and clock skew, the burst, the microburst gap and
// minimum,
// the stamp error limit and the RDA's problem rate; and the per-class
// fields of Syn (Classes, Weights) from the classifier. The synopses
// themselves (Syn's LDA, RDA and LDS) and the ports are the caller's.
// Settings out of range are left for Validate.
func (cfg Config) WithDefaults() Config {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Classifier == nil {
		if cl, err := classifier.NewClassifier(nil); err == nil {
			cfg.Classifier = cl
		}
	}
	if cfg.Conf == 0 {
		cfg.Conf = 0.98
	}
	if cfg.Clock == nil {
		cfg.Clock = dataplane.RealtimeClock
		if cfg.ClockName == "" {
			cfg.ClockName = "CLOCK_REALTIME"
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Bounds == (synopsis.CompactBounds{}) {
		cfg.Bounds = synopsis.DefaultCompactBounds()
	}
	if cfg.Assumed == (DelayRange{}) {
		cfg.Assumed = DefaultAssumedDelay.Within(cfg.Bounds)
	}
	if cfg.PairTimeout == 0 {
		cfg.PairTimeout = cfg.Interval + 2*time.Second
	}
	if cfg.TopFlows == 0 {
		cfg.TopFlows = 10
	}
	if cfg.ControlCopies == 0 {
		cfg.ControlCopies = 1
	}
	if cfg.MTU == 0 {
		cfg.MTU = control.DefaultMTU
	}
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = time.Duration(control.DefaultMaxClockSkew)
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.MicroburstGap == 0 {
		cfg.MicroburstGap = DefaultMicroburstGap
	}
	if cfg.MicroburstMin == 0 {
		cfg.MicroburstMin = 5
	}
	if cfg.MaxStampErr == 0 {
		cfg.MaxStampErr = DefaultMaxStampErr
	}
	if cfg.RDAProblemRate == 0 {
		cfg.RDAProblemRate = DefaultRDAProblemRate
	}
	if cfg.Classifier != nil {
		cfg.Syn.Classes = cfg.Classifier.NumClasses()
		if cfg.Syn.Weights == nil {
			for i := 0; i < cfg.Syn.Classes; i++ {
				cfg.Syn.Weights = append(cfg.Syn.Weights, cfg.Classifier.Weight(uint16(i)))
			}
		}
	}
	return cfg
}

// Validate reports the first setting of cfg out of range, or nil. Call it
// on WithDefaults' result: a zero optional setting is out of range until
// defaulted.
func (cfg *Config) Validate() error {
	if cfg.PortA == nil || cfg.PortB == nil {
		return errors.New("appliance: two ports are required")
	}
	if cfg.Segment != "a" && cfg.Segment != "b" {
		return fmt.Errorf("appliance: segment port %q: want a or b", cfg.Segment)
	}
	if cfg.Interval < MinInterval {
		return fmt.Errorf("appliance: interval %v: at least %v", cfg.Interval, MinInterval)
	}
	if cfg.Classifier == nil {
		return errors.New("appliance: no classifier")
	}
	nq, err := queueCount(cfg)
	if err != nil {
		return err
	}
	if nq == 1 && len(cfg.Cores) > 2 {
		return fmt.Errorf("appliance: %d cores: one worker per direction at most (see docs/performance.md)", len(cfg.Cores))
	}
	if cfg.MicroburstMin < 1 {
		return fmt.Errorf("appliance: microburst minimum %d: want ≥ 1", cfg.MicroburstMin)
	}
	if cfg.ControlParity > 0.9 || math.IsNaN(cfg.ControlParity) {
		return fmt.Errorf("appliance: control parity for %v loss: at most 0.9 (negative: none)", cfg.ControlParity)
	}
	if cfg.ControlCopies < 1 || cfg.ControlCopies > MaxControlCopies {
		return fmt.Errorf("appliance: %d control copies: 1..%d", cfg.ControlCopies, MaxControlCopies)
	}
	if cfg.MaxStampErr < 0 {
		return fmt.Errorf("appliance: max stamp error %v must be ≥ 0", cfg.MaxStampErr)
	}
	if cfg.BudgetBytes < 0 || !(cfg.BudgetFraction >= 0 && cfg.BudgetFraction <= 1) {
		return fmt.Errorf("appliance: control budget %d bytes / %v of the data: want ≥ 0 / in [0, 1]", cfg.BudgetBytes, cfg.BudgetFraction)
	}
	if cfg.MaxClockSkew < 0 {
		return fmt.Errorf("appliance: max clock skew %v must be > 0", cfg.MaxClockSkew)
	}
	return nil
}

// MicroburstGapOff maps a gap where 0 means off (the --microburst-gap
// flags, DemoConfig) to Config.MicroburstGap's, where 0 means the default.
func MicroburstGapOff(gap time.Duration) time.Duration {
	if gap == 0 {
		return -1
	}
	return gap
}
