package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Tool is one MetaTool tool (tools.jsonl: {"id", "description", ...}).
type Tool struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// LoadTools reads a MetaTool tools.jsonl. Blank lines are skipped; a
// malformed line, an empty id or description, or a repeated id is an error
// naming file:line.
func LoadTools(file string) ([]Tool, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("bench: tools: %w", err)
	}
	defer f.Close()
	return ParseTools(f, file)
}

// ParseTools parses tools.jsonl content; file names it in errors.
func ParseTools(r io.Reader, file string) ([]Tool, error) {
	var out []Tool
	seen := map[string]int{}
	err := readJSONLines(r, file, func(line int, b []byte) error {
		var t Tool
		if err := json.Unmarshal(b, &t); err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
		t.ID = strings.TrimSpace(t.ID)
		t.Description = strings.TrimSpace(t.Description)
		switch {
		case t.ID == "":
			return errors.New(`missing "id"`)
		case t.Description == "":
			return fmt.Errorf("tool %q has no description", t.ID)
		case seen[t.ID] > 0:
			return fmt.Errorf("tool %q repeats line %d", t.ID, seen[t.ID])
		}
		if err := validID(t.ID); err != nil {
			return err
		}
		seen[t.ID] = line
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ToolSkill turns a tool into a skill: id and folder = tool id, name = the id
// made valid, description and body = the tool description.
func ToolSkill(t Tool) SkillFile {
	return SkillFile{ID: t.ID, Content: SkillMarkdown(SkillName(t.ID), t.Description, t.Description)}
}

// Selection picks queries from a labelled set.
type Selection struct {
	Split  string // "" = all; otherwise the query's split must match
	Sample int    // >0: a seeded random sample of this many, kept in file order
	Seed   uint64
	Limit  int // >0: at most this many, from the start (after sampling)
}

// Select applies the split filter, then the sample, then the limit. The
// sample is a partial Fisher–Yates shuffle driven by PCG(seed), so the same
// file, size and seed give the same queries on every machine and Go version.
func Select(qs []Query, sel Selection) ([]Query, error) {
	if sel.Sample < 0 || sel.Limit < 0 {
		return nil, errors.New("bench: --sample and --limit must not be negative")
	}
	var out []Query
	for _, q := range qs {
		if sel.Split == "" || q.Split == sel.Split {
			out = append(out, q)
		}
	}
	if sel.Split != "" && len(out) == 0 {
		return nil, fmt.Errorf("bench: no query has split %q", sel.Split)
	}
	if sel.Sample > 0 && sel.Sample < len(out) {
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		rng := rand.New(rand.NewPCG(sel.Seed, 0x5eed5eed))
		for i := range sel.Sample {
			j := i + rng.IntN(len(idx)-i)
			idx[i], idx[j] = idx[j], idx[i]
		}
		idx = idx[:sel.Sample]
		slices.Sort(idx)
		sampled := make([]Query, len(idx))
		for i, j := range idx {
			sampled[i] = out[j]
		}
		out = sampled
	}
	if sel.Limit > 0 && sel.Limit < len(out) {
		out = out[:sel.Limit]
	}
	return out, nil
}

// MetaTool is the MetaTool data set: tools as skills, and labelled queries.
type MetaTool struct {
	Tools   []Tool
	Queries []Query
}

// LoadMetaTool reads dir/tools.jsonl and dir/queries.jsonl and selects queries.
// A query naming a tool that is not in tools.jsonl is an error: the data set
// would be inconsistent.
func LoadMetaTool(dir string, sel Selection) (*MetaTool, error) {
	switch sel.Split {
	case "", "single", "multi":
	default:
		return nil, fmt.Errorf("bench: --split %q: want single or multi", sel.Split)
	}
	tools, err := LoadTools(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		return nil, err
	}
	all, err := LoadQueries(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(tools))
	for _, t := range tools {
		known[t.ID] = true
	}
	for _, q := range all {
		for _, id := range q.Expected {
			if !known[id] {
				return nil, fmt.Errorf("bench: metatool query %s expects unknown tool %q", q.ID, id)
			}
		}
	}
	qs, err := Select(all, sel)
	if err != nil {
		return nil, err
	}
	return &MetaTool{Tools: tools, Queries: qs}, nil
}

// SkillFiles returns the tools as in-memory skills, in file order.
func (m *MetaTool) SkillFiles() []SkillFile {
	out := make([]SkillFile, len(m.Tools))
	for i, t := range m.Tools {
		out[i] = ToolSkill(t)
	}
	return out
}
