package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeMCP: `router serve` answers MCP at /mcp, and stops promptly
// while a client holds its event stream open; --mcp=false turns it off.
func TestServeMCP(t *testing.T) {
	lib := t.TempDir()
	os.MkdirAll(filepath.Join(lib, "good"), 0o755)
	os.WriteFile(filepath.Join(lib, "good", "SKILL.md"), []byte("---\nname: good\ndescription: A good skill for slow postgres queries.\n---\nBody.\n"), 0o644)
	for _, enabled := range []bool{true, false} {
		addr := freeAddr(t)
		args := []string{"--skills", lib, "--listen", addr, "--watch=false"}
		if !enabled {
			args = append(args, "--mcp=false")
		}
		cfg, err := loadFor(t, args, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runServe(ctx, cfg, cfg.Skills, &strings.Builder{}) }()
		url := "http://" + addr + "/mcp"
		var up bool
		for range 200 { // until it listens
			if r, err := http.Get("http://" + addr + "/healthz"); err == nil {
				r.Body.Close()
				up = true
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !up {
			t.Fatal("router serve did not start")
		}
		if enabled {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {}, // keeps an event stream open
			}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_skills", Arguments: map[string]any{"query": "slow postgres"}})
			if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"id":"good"`) {
				t.Fatalf("search_skills: %v %+v", err, res)
			}
			defer cs.Close()
		} else {
			r, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != http.StatusNotFound {
				t.Errorf("--mcp=false: /mcp answered %d", r.StatusCode)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("runServe: %v", err)
		}
	}
}

// TestMCPFlags: `router mcp` takes the flags of the keys it reads and
// refuses serve's HTTP-side ones, which it would take and ignore; its help
// lists only its keys. A configuration file may still hold the others.
func TestMCPFlags(t *testing.T) {
	for _, flag := range []string{"--listen", "--upstream", "--tool-rounds", "--catalog-budget", "--max-connections", "--mcp"} {
		_, _, err := run(t, "mcp", "--skills", "../../examples/skills", flag+"=1")
		if err == nil || !strings.Contains(err.Error(), "unknown flag") {
			t.Errorf("%s: %v, want unknown flag", flag, err)
		}
	}
	out, _, err := run(t, "mcp", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--skills", "--embedder", "--strategy", "--exec", "--log-level", "--debug-listen", "rewrite.description_limit", "--print-config"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %s", want)
		}
	}
	for _, not := range []string{"upstream.url", "--listen", "ab.arms", "server.max_connections"} {
		if strings.Contains(out, not) {
			t.Errorf("help lists %s, which mcp does not read", not)
		}
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "router.yaml")
	if err := os.WriteFile(cfgFile, []byte("listen: 127.0.0.1:9\nupstream:\n  url: http://127.0.0.1:10/v1\nlog:\n  level: warn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "mcp", "--config", cfgFile, "--skills", "../../examples/skills", "--print-config")
	if err != nil || !strings.Contains(out, "level: warn") {
		t.Fatalf("a shared configuration file: %v\n%s", err, out)
	}
}
