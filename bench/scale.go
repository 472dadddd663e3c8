package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/skillrouter/skillrouter/skills"
)

// ScaleConfig runs the benchmark on libraries of growing size.
type ScaleConfig struct {
	Config          // Snapshot holds the real skills; Queries are routed at every size
	Sizes    []int  // library sizes, e.g. 10, 100, 1000, 10000
	Seed     uint64 // synthetic variants and the order of real skills
	Warnings func(string)
}

// ScalePoint is the benchmark at one library size.
type ScalePoint struct {
	Size         int     `json:"size"`
	Real         int     `json:"real"`
	Synthetic    int     `json:"synthetic"`
	WriteMS      float64 `json:"write_ms"`       // generating the library and writing its SKILL.md folders
	LoadMS       float64 `json:"load_ms"`        // skills.Load of those folders
	IndexBuildMS float64 `json:"index_build_ms"` // router.New
	// Library-wide prompt tokens in the primary encoding.
	CatalogTokens  int `json:"catalog_tokens"`
	StuffAllTokens int `json:"stuff_all_tokens"`
	// QueriesEvaluated is how many queries enter the quality metrics: those
	// whose expected skills are all in this library (latency and tokens use
	// every query).
	QueriesEvaluated int      `json:"queries_evaluated"`
	Results          []Result `json:"results"`
	// RSSMB is the process's resident memory after routing at this size,
	// after a collection (MB; 0 outside Linux): the library, its indexes
	// and the harness.
	RSSMB float64 `json:"rss_mb"`
}

// RunScale builds each library size, routes every query under every strategy
// and reports per size.
func RunScale(ctx context.Context, cfg ScaleConfig) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(cfg.Sizes) == 0 {
		return nil, errors.New("bench: no scale size")
	}
	for _, n := range cfg.Sizes {
		if n <= 0 {
			return nil, fmt.Errorf("bench: scale size must be positive, got %d", n)
		}
	}
	real := cfg.Snapshot.Skills()
	ordered := ScaleOrder(real, ExpectedIDs(cfg.Queries), cfg.Seed)
	rep := &Report{
		Dataset:   cfg.Dataset,
		Skills:    len(real),
		Queries:   len(cfg.Queries),
		Encodings: encodingNames(cfg.Tokens),
		Ks:        slices.Clone(cfg.Ks),
	}
	for _, q := range cfg.Queries {
		if len(q.Expected) == 0 {
			rep.EmptyQueries++
		} else {
			rep.RankedQueries++
		}
	}
	for _, size := range cfg.Sizes {
		pt, err := runSize(ctx, cfg, ordered, size)
		if err != nil {
			return nil, fmt.Errorf("bench: scale %d: %w", size, err)
		}
		rep.Scale = append(rep.Scale, *pt)
	}
	return rep, nil
}

func runSize(ctx context.Context, cfg ScaleConfig, ordered []*skills.Skill, size int) (*ScalePoint, error) {
	start := time.Now()
	files := ScaleLibrary(ordered, size, cfg.Seed)
	dir, err := WriteTemp(files)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	written := time.Now()
	snap, missing, err := LoadWritten(ctx, dir, files, skills.Options{})
	if err != nil {
		return nil, err
	}
	loaded := time.Now()
	for _, m := range missing {
		if cfg.Warnings != nil {
			cfg.Warnings(fmt.Sprintf("scale %d: skill not loaded: %s", size, m))
		}
	}
	lib, err := prepareLibrary(ctx, snap, cfg.Build, cfg.Tokens)
	if err != nil {
		return nil, err
	}
	defer lib.close()
	pt := &ScalePoint{
		Size:           len(snap.Skills()),
		Real:           min(size, len(ordered)),
		Synthetic:      max(size-len(ordered), 0),
		WriteMS:        durMS(written.Sub(start)),
		LoadMS:         durMS(loaded.Sub(written)),
		IndexBuildMS:   durMS(lib.build),
		CatalogTokens:  lib.catOnly[0],
		StuffAllTokens: lib.stuffAll[0],
	}
	inLibrary := func(q Query) bool {
		for _, id := range q.Expected {
			if _, ok := snap.Get(id); !ok {
				return false
			}
		}
		return true
	}
	for _, q := range cfg.Queries {
		if len(q.Expected) > 0 && inLibrary(q) {
			pt.QueriesEvaluated++
		}
	}
	for _, a := range cfg.rows() {
		if cfg.Progress != nil {
			cfg.Progress.Describe(fmt.Sprintf("%d skills, %s", size, a.label()))
		}
		res, err := runArm(ctx, lib, cfg.Config, a, cfg.Queries, inLibrary)
		if err != nil {
			return nil, err
		}
		pt.Results = append(pt.Results, res)
	}
	pt.RSSMB = residentMB()
	return pt, nil
}
