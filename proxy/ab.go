package proxy

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/wire"
)

// DefaultABHeader is the request header hashed to assign an A/B arm.
const DefaultABHeader = "X-Session-Id"

const (
	defaultArmLabel  = "default"  // no A/B split configured
	explicitArmLabel = "explicit" // X-Skillrouter-Strategy named no arm and no arm's strategy
	abBuckets        = 10000      // percent resolution: 0.01
)

// ABConfig splits chat traffic between arms for online A/B tests.
//
// Assignment is sticky: the arm is chosen by a stable hash (FNV-1a) of Seed
// and the value of HashHeader, else of the request's "user" field, else of
// the first user message, so a conversation stays on one arm for its whole
// life. A client can pick an arm explicitly with X-Skillrouter-Arm: NAME, and
// X-Skillrouter-Strategy wins over the split: it picks the arm of that name,
// else the first arm using that strategy, else the first arm's router with
// that strategy (labelled "explicit").
type ABConfig struct {
	Arms       []Arm
	HashHeader string // default X-Session-Id
	Seed       string // change it to reshuffle assignments
}

// Arm is one side of an A/B split.
type Arm struct {
	Name     string          // label in logs, headers and metrics
	Percent  float64         // share of traffic; the arms' shares add up to 100
	Strategy router.Strategy // "" = the rewriter's default strategy
	Rewriter Rewriter        // nil = Config.Rewriter (same embedder and library)
}

type armState struct {
	name     string
	strategy router.Strategy
	rw       Rewriter
	upper    uint64 // exclusive upper bound of the arm's hash buckets
}

type splitter struct {
	def    *armState
	arms   []*armState
	header string
	seed   string
}

// CheckArms reports the first mistake in an A/B split's arms: fewer than
// two, a missing, reserved or repeated name, a percent outside 0–100, an
// unknown strategy, or percents that do not add up to 100. It is the one
// rule for arms: the proxy applies it when it starts, and configuration
// checks call it so a bad split is refused where it was written.
func CheckArms(arms []Arm) error {
	if len(arms) == 0 {
		return nil
	}
	if len(arms) < 2 {
		return errors.New("an A/B split needs at least two arms")
	}
	var total float64
	seen := map[string]bool{}
	for i, a := range arms {
		switch {
		case a.Name == "":
			return fmt.Errorf("A/B arm %d has no name", i+1)
		case a.Name == defaultArmLabel || a.Name == explicitArmLabel:
			return fmt.Errorf("A/B arm name %q is reserved", a.Name)
		case seen[a.Name]:
			return fmt.Errorf("A/B arm %q appears twice", a.Name)
		case a.Percent < 0 || a.Percent > 100 || math.IsNaN(a.Percent):
			return fmt.Errorf("A/B arm %q: percent %v must be between 0 and 100", a.Name, a.Percent)
		case a.Strategy != "" && !router.ValidStrategy(a.Strategy):
			return fmt.Errorf("A/B arm %q: unknown strategy %q", a.Name, a.Strategy)
		}
		seen[a.Name] = true
		total += a.Percent
	}
	if math.Abs(total-100) > 1e-6 {
		return fmt.Errorf("A/B arm percents add up to %v, want 100", total)
	}
	return nil
}

func newSplitter(cfg *ABConfig, def Rewriter) (*splitter, error) {
	s := &splitter{def: &armState{rw: def}}
	if cfg == nil || len(cfg.Arms) == 0 {
		return s, nil
	}
	if err := CheckArms(cfg.Arms); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	s.header = http.CanonicalHeaderKey(cfg.HashHeader)
	if s.header == "" {
		s.header = DefaultABHeader
	}
	s.seed = cfg.Seed
	var total float64
	for _, a := range cfg.Arms {
		total += a.Percent
		rw := a.Rewriter
		if rw == nil {
			rw = def
		}
		s.arms = append(s.arms, &armState{
			name: a.Name, strategy: a.Strategy, rw: rw,
			upper: uint64(math.Round(total * abBuckets / 100)),
		})
	}
	s.arms[len(s.arms)-1].upper = abBuckets
	return s, nil
}

// allArms lists every distinct arm (for readiness).
func (s *splitter) allArms() []*armState {
	if len(s.arms) == 0 {
		return []*armState{s.def}
	}
	return append([]*armState{s.def}, s.arms...)
}

// labels lists the arm labels requests are counted under (not "explicit",
// which only an X-Skillrouter-Strategy naming no arm produces).
func (s *splitter) labels() []string {
	if len(s.arms) == 0 {
		return []string{defaultArmLabel}
	}
	out := make([]string, len(s.arms))
	for i, a := range s.arms {
		out[i] = a.name
	}
	return out
}

// pick chooses the arm for a request. key is called only when the hash header is absent.
func (s *splitter) pick(h http.Header, key func() string) (*armState, string, error) {
	if len(s.arms) == 0 {
		return s.def, "", nil
	}
	if name := h.Get(HeaderArmIn); name != "" {
		for _, a := range s.arms {
			if a.name == name {
				return a, a.name, nil
			}
		}
		return nil, "", fmt.Errorf("unknown A/B arm %q in %s", wire.Clip(name), HeaderArmIn)
	}
	if st := h.Get(HeaderStrategy); st != "" {
		for _, a := range s.arms {
			if a.name == st {
				return a, a.name, nil
			}
		}
		for _, a := range s.arms {
			if string(a.strategy) == st {
				return a, a.name, nil
			}
		}
		return s.arms[0], explicitArmLabel, nil
	}
	k := h.Get(s.header)
	if k == "" {
		k = key()
	}
	b := bucket(s.seed, k)
	for _, a := range s.arms {
		if b < a.upper {
			return a, a.name, nil
		}
	}
	return s.arms[len(s.arms)-1], s.arms[len(s.arms)-1].name, nil // unreachable: last upper is abBuckets
}

// bucket hashes seed and key into [0, abBuckets).
func bucket(seed, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(seed))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return h.Sum64() % abBuckets
}
