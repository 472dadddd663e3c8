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
		b.Run(lib.name, func(b *testing.B) {
			f := newFixtureRoots(b, lib.roots)
			cs := f.connect(b, nil)
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_skills", Arguments: map[string]any{"query": queries[i%len(queries)]}})
				lat = append(lat, time.Since(start))
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
		})
	}
}
