package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillrouter/skillrouter/proxy"
)

// demoPrompt is one sample request; topK, when set, is sent as X-Skillrouter-Top-K.
type demoPrompt struct {
	text string
	topK string
}

// demoPrompts show the three things the proxy does: auto-load a relevant
// skill, leave an off-topic question alone, and answer the model's own
// load_skill call server-side (auto-load is turned off for that request so
// the model has to fetch the skill itself).
var demoPrompts = []demoPrompt{
	{text: "My Postgres query on the orders table takes 9 seconds; here is the EXPLAIN ANALYZE output. How do I speed it up?"},
	{text: "What's the capital of Australia?"},
	{text: "Please load git-commit-messages and then write a message for my staged changes.", topK: "0"},
}

func newDemoCmd() *cobra.Command {
	var (
		dirs     []string
		listen   string
		keep     bool
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "demo [--skills DIR]... [\"message\"]...",
		Short: "Run the proxy end to end against a built-in stand-in model (no external service)",
		Long: "demo starts the real proxy (builtin embedder, hybrid strategy, all defaults) in front of a\n" +
			"deterministic stand-in model, sends chat requests through it over HTTP and prints what\n" +
			"the proxy decided and what the model received. With --keep it stays up so you can point\n" +
			"curl, an SDK or an agent CLI at it (--log-level info logs each request's decision to stderr).\n" +
			"The stand-in calls load_skill when a message says \"load <id>\".\n" +
			"Default library: " + builtinExamples + ", the example library built into this binary, so the\n" +
			"demo works from any folder.",
		Example: "  router demo\n  router demo \"write a regex for ISO dates\"\n  router demo --keep --listen 127.0.0.1:8080",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(dirs) == 0 {
				dirs = []string{builtinExamples}
			}
			prompts := demoPrompts
			if len(args) > 0 {
				prompts = nil
				for _, a := range args {
					prompts = append(prompts, demoPrompt{text: a})
				}
			}
			if _, err := parseLevel(logLevel); err != nil {
				return err
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), dirs, listen, keep, logLevel, prompts)
		},
	}
	addSkillsFlag(cmd.Flags(), &dirs)
	// demo's default is the built-in library, not the ecosystem's folders.
	cmd.Flags().Lookup("skills").Usage = "skill library folder; repeat for several (default: " + builtinExamples + ", the example library built into this binary)"
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "address of the demo proxy")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep serving after the sample requests (Ctrl-C to stop)")
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "the proxy's log level: "+oneOf(logLevelNames)+" (info: a line per request with its decision)")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, dirs []string, listen string, keep bool, logLevel string, prompts []demoPrompt) error {
	cfg := defaultConfig()
	cfg.Skills = dirs
	roots, err := requireRoots(&cfg, "router demo --skills "+builtinExamples)
	if err != nil {
		return err
	}
	d, err := startDemo(ctx, roots, listen, logLevel)
	if err != nil {
		return err
	}
	defer d.stop()
	base := d.base
	fmt.Fprintf(out, "skillrouter demo: %d skills from %s, proxy at %s, stand-in model behind it\n",
		d.skills, strings.Join(dirs, ", "), base)
	if d.skipped > 0 {
		fmt.Fprintf(out, "  %d more left out for errors: router skills validate --skills %s shows them\n", d.skipped, strings.Join(dirs, " --skills "))
	}

	for _, p := range prompts {
		if err := demoExchange(ctx, out, base, p); err != nil {
			return err
		}
	}
	if !keep {
		fmt.Fprintln(out, "\nNext: `router demo --keep` keeps this proxy up for curl or an SDK (model \"demo\"); "+
			"`router serve --skills DIR --upstream URL` puts your library in front of your model (README: Use it).")
	}
	if keep {
		fmt.Fprintf(out, "\nserving on %s (model \"demo\"; Chat Completions, Responses and Anthropic Messages), MCP at %s; Ctrl-C to stop\n",
			base, strings.TrimSuffix(base, "/v1")+"/mcp")
		<-ctx.Done()
	}
	return nil
}

// demoStack is the demo's proxy in front of the stand-in model.
type demoStack struct {
	base    string // the proxy's base URL, with /v1
	skills  int
	skipped int // skills left out for errors
	stop    func()
}

// startDemo starts the stand-in model and the proxy in front of it, logging
// to stderr at logLevel ("" is warn).
func startDemo(ctx context.Context, roots []string, listen, logLevel string) (*demoStack, error) {
	modelLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo model: %w", err)
	}
	model := &http.Server{Handler: http.HandlerFunc(serveDemoModel), ReadHeaderTimeout: 10 * time.Second}
	go model.Serve(modelLn)

	cfg := defaultConfig()
	cfg.Upstream.URL = "http://" + modelLn.Addr().String() + "/v1"
	cfg.Watch = false
	cfg.Log.Level = cmp.Or(logLevel, "warn")
	log := newLogger(cfg.Log, os.Stderr)
	// As serve wires it, MCP at /mcp included (its default).
	sv, err := buildServer(ctx, cfg, roots, log, cfg.MCP.Enabled, nil)
	if err == nil {
		err = sv.build(ctx)
	}
	if err != nil {
		model.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		sv.lib.close()
		model.Close()
		return nil, listenError(listen, err)
	}
	var handler http.Handler = sv.srv
	if sv.mcp != nil {
		handler = withMCP(sv.srv, sv.srv.Protect(sv.mcp.Handler(ctx, sv.srv.ClientID)))
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(proxy.ResetStalled(ln))
	snap := sv.reg.Snapshot()
	return &demoStack{base: "http://" + ln.Addr().String() + "/v1", skills: len(snap.Skills()), skipped: len(snap.All()) - snap.Len(),
		stop: func() { hs.Close(); model.Close(); sv.lib.close() }}, nil
}

func demoExchange(ctx context.Context, out io.Writer, base string, p demoPrompt) error {
	body, _ := json.Marshal(map[string]any{
		"model":    "demo",
		"messages": []any{map[string]string{"role": "user", "content": p.text}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if p.topK != "" {
		req.Header.Set("X-Skillrouter-Top-K", p.topK)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("demo request: %w", err)
	}
	defer resp.Body.Close()
	var got struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return fmt.Errorf("demo response: %w", err)
	}
	if got.Error != nil || len(got.Choices) == 0 {
		return fmt.Errorf("demo response %s: %+v", resp.Status, got.Error)
	}
	h := resp.Header
	selected := h.Get("X-Skillrouter-Selected")
	if ids, err := url.PathUnescape(selected); err == nil { // non-ASCII ids come percent-encoded
		selected = ids
	}
	if selected == "" {
		selected = "(none)"
	}
	fmt.Fprintf(out, "\n> %s\n", p.text)
	if p.topK != "" {
		fmt.Fprintf(out, "  (request header X-Skillrouter-Top-K: %s)\n", p.topK)
	}
	fmt.Fprintf(out, "  auto-loaded: %s   strategy: %s   fallback: %s   prompt tokens added: %s   server-side tool rounds: %s\n",
		selected, h.Get("X-Skillrouter-Strategy"), h.Get("X-Skillrouter-Fallback"),
		h.Get("X-Skillrouter-Added-Tokens"), orDash(h.Get("X-Skillrouter-Tool-Rounds")))
	fmt.Fprintf(out, "  model: %s\n", got.Choices[0].Message.Content)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
