package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStartup measures `router mcp` on the 407-skill library (builtin
// embedder) from launching the process to the first answered search_skills
// call, as a host sees it: cold (nothing persisted) and with the vector
// index persisted by an earlier run (routing.index_dir).
func BenchmarkStartup(b *testing.B) {
	lib := filepath.Join("..", "..", "..", "shared", "bench", "skills")
	if _, err := os.Stat(lib); err != nil {
		b.Skipf("bench data not found at %s", lib)
	}
	for _, mode := range []string{"cold", "persisted"} {
		b.Run(mode, func(b *testing.B) {
			indexDir := b.TempDir()
			if mode == "persisted" {
				firstSearch(b, lib, indexDir) // writes the index
			}
			var lat []time.Duration
			for b.Loop() {
				dir := ""
				if mode == "persisted" {
					dir = indexDir
				}
				lat = append(lat, firstSearch(b, lib, dir))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
		})
	}
}

// firstSearch launches the server and returns the time to the first
// search_skills answer. indexDir "" persists nothing.
func firstSearch(tb testing.TB, lib, indexDir string) time.Duration {
	tb.Helper()
	ctx := context.Background()
	cmd := exec.Command(routerBin, "mcp", "--skills", lib, "--log-level", "warn", "--watch=false")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+tb.TempDir())
	if indexDir != "" {
		cmd.Env = append(cmd.Env, "SKILLROUTER_ROUTING_INDEX_DIR="+indexDir)
	}
	start := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_skills", Arguments: map[string]any{"query": "my postgres query is slow"}})
	d := time.Since(start)
	if err != nil || res.IsError {
		tb.Fatal(err, res)
	}
	return d
}
