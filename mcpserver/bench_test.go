package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillrouter/skillrouter/router"
)

// benchDir is ../shared/bench from the repository root; benchmarks skip
// without it.
func benchDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "shared", "bench")
	if _, err := os.Stat(filepath.Join(dir, "skills")); err != nil {
		tb.Skipf("bench data not found at %s", dir)
	}
	return dir
}

func benchQueries(tb testing.TB, dir string) []string {
	tb.Helper()
	f, err := os.Open(filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(sc.Bytes(), &q) == nil && q.Query != "" {
			qs = append(qs, q.Query)
		}
	}
	return qs
}

// timed runs fn b.N times and reports the p50 and p99 of one call.
func timed(b *testing.B, fn func(i int)) {
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		fn(i)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
}

// BenchmarkSearchSkills is one search_skills tool call through the MCP
// client and server (in-memory transport) on the 407-skill library and on
// the 1,267-skill one, cycling through the 44 upstream prompts; p50/p99 are
// per call.
func BenchmarkSearchSkills(b *testing.B) {
	dir := benchDir(b)
	queries := benchQueries(b, dir)
	for _, lib := range []struct {
		name  string
		roots []string
	}{
		{"skills=407", []string{filepath.Join(dir, "skills")}},
		{"skills=1267", []string{filepath.Join(dir, "skills"), filepath.Join(dir, "skills-extra")}},
	} {
		f := newFixtureRoots(b, lib.roots)
		cs := f.connect(b, nil)
		ctx := context.Background()
		// The same ranking without MCP, for the protocol's share.
		b.Run(lib.name+"/router.Search", func(b *testing.B) {
			timed(b, func(i int) {
				if len(f.rt.Search(ctx, queries[i%len(queries)], router.SearchDefaultLimit+4)) == 0 {
					b.Fatal("no hits")
				}
			})
		})
		b.Run(lib.name+"/mcp", func(b *testing.B) {
			timed(b, func(i int) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_skills", Arguments: map[string]any{"query": queries[i%len(queries)]}})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			})
		})
	}
}
