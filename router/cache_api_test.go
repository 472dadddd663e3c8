package router

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
	"github.com/skillrouter/skillrouter/wire"
	chatwire "github.com/skillrouter/skillrouter/wire/chat"
	"github.com/skillrouter/skillrouter/wire/messages"
	"github.com/skillrouter/skillrouter/wire/responses"
)

// apiCase builds one API's request for a turn and says in which order the
// upstream reads its parts (what its prompt cache is keyed on).
type apiCase struct {
	name  string
	body  func(history []string) string // history: user, assistant, user, ...
	parse func([]byte) (interface {
		View() *wire.Request
		Render(*wire.Plan) ([]byte, error)
	}, error)
	parts []string // top-level keys, in prompt order; arrays are split into items
}

const cacheSystem = "You are a senior engineer on our platform team. Answer precisely."

func quoteJSON(s string) string { return string(wire.Quote(s)) }

var apiCases = []apiCase{
	{"chat", func(h []string) string {
		items := []string{`{"role":"system","content":` + quoteJSON(cacheSystem) + `}`}
		for i, t := range h {
			role := map[bool]string{true: "user", false: "assistant"}[i%2 == 0]
			items = append(items, `{"role":"`+role+`","content":`+quoteJSON(t)+`}`)
		}
		return `{"model":"m","messages":[` + strings.Join(items, ",") + `]}`
	}, func(b []byte) (interface {
		View() *wire.Request
		Render(*wire.Plan) ([]byte, error)
	}, error) {
		return chatwire.Parse(b)
	}, []string{"tools", "messages"}},
	{"responses", func(h []string) string {
		var items []string
		for i, t := range h {
			if i%2 == 0 {
				items = append(items, `{"role":"user","content":`+quoteJSON(t)+`}`)
			} else {
				items = append(items, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":`+quoteJSON(t)+`}]}`)
			}
		}
		return `{"model":"m","instructions":` + quoteJSON(cacheSystem) + `,"input":[` + strings.Join(items, ",") + `],"store":false}`
	}, func(b []byte) (interface {
		View() *wire.Request
		Render(*wire.Plan) ([]byte, error)
	}, error) {
		return responses.Parse(b)
	}, []string{"tools", "instructions", "input"}},
	{"messages", func(h []string) string {
		var items []string
		for i, t := range h {
			role := map[bool]string{true: "user", false: "assistant"}[i%2 == 0]
			items = append(items, `{"role":"`+role+`","content":`+quoteJSON(t)+`}`)
		}
		return `{"model":"m","max_tokens":1024,"system":[{"type":"text","text":` + quoteJSON(cacheSystem) +
			`,"cache_control":{"type":"ephemeral"}}],"messages":[` + strings.Join(items, ",") + `]}`
	}, func(b []byte) (interface {
		View() *wire.Request
		Render(*wire.Plan) ([]byte, error)
	}, error) {
		return messages.Parse(b)
	}, []string{"tools", "system", "messages"}},
}

// promptOrder serializes body's parts in the order the upstream reads them;
// clientEnd is where the client's own items end (before the auto-loaded
// envelopes that follow them).
func promptOrder(body []byte, parts []string) (prompt string, clientEnd int) {
	var b strings.Builder
	clientEnd = -1
	for _, key := range parts {
		v := gjson.GetBytes(body, key)
		if !v.IsArray() || key == "tools" || key == "system" {
			b.WriteString(v.Raw)
			b.WriteByte('\n')
			continue
		}
		for _, it := range v.Array() {
			if clientEnd < 0 && strings.Contains(it.Raw, "<skill_context") {
				clientEnd = b.Len()
			}
			b.WriteString(it.Raw)
			b.WriteByte('\n')
		}
	}
	if clientEnd < 0 {
		clientEnd = b.Len()
	}
	return b.String(), clientEnd
}

// TestPromptCacheReuseAPIs is TestPromptCacheReuse for the real request
// bodies of each client API, rewritten and rendered as the proxy does: how
// much of turn N's upstream prompt (in the API's prompt order) is a prefix
// of turn N+1's. The reusable prefix must cover the previous turn's whole
// client history. Numbers go to docs/prompt-caching.md
// (go test ./router -run PromptCacheReuseAPIs -v).
func TestPromptCacheReuseAPIs(t *testing.T) {
	snap := skills.Load(context.Background(), []string{filepath.Join(benchRoot(t), "skills")}, skills.Options{})
	r := newTestRouter(t, snap)
	ctx := context.Background()
	enc := tokens.Default()
	for _, api := range apiCases {
		var history []string
		var prev string
		var prevClient int
		for turn, q := range cacheConversation {
			history = append(history, q)
			req, err := api.parse([]byte(api.body(history)))
			if err != nil {
				t.Fatal(err)
			}
			rw, err := r.Rewrite(ctx, req.View(), RewriteOptions{}, Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := req.Render(rw.Plan)
			if err != nil {
				t.Fatal(err)
			}
			cur, clientEnd := promptOrder(out, api.parts)
			if turn > 0 {
				shared := commonPrefix(prev, cur)
				sharedTok, total := enc.Count(cur[:shared]), enc.Count(cur)
				t.Logf("%-9s turn %d→%d: %5d of %5d prompt tokens reusable (%3.0f%%)", api.name, turn, turn+1,
					sharedTok, total, 100*float64(sharedTok)/float64(total))
				if shared < prevClient {
					t.Errorf("%s turn %d: %d bytes shared, the previous turn's tools, system and client history are %d", api.name, turn+1, shared, prevClient)
				}
			}
			prev, prevClient = cur, clientEnd
			history = append(history, fmt.Sprintf("(answer %d)", turn+1))
		}
	}
}

// BenchmarkParseRenderAPIs measures what the wire layer adds to a rewrite
// for each client API, with the plan made in advance (no ranking): parse
// the client's body once, render the plan into it.
//
//	go test ./router -run '^$' -bench ParseRenderAPIs
func BenchmarkParseRenderAPIs(b *testing.B) {
	snap := benchLibrary(b)
	r := newTestRouter(b, snap)
	qs := upstreamQueries(b)
	for _, api := range apiCases {
		bodies := make([][]byte, len(qs))
		plans := make([]*wire.Plan, len(qs))
		for i, q := range qs {
			bodies[i] = []byte(api.body([]string{q}))
			req, err := api.parse(bodies[i])
			if err != nil {
				b.Fatal(err)
			}
			rw, err := r.Rewrite(context.Background(), req.View(), RewriteOptions{}, Overrides{})
			if err != nil {
				b.Fatal(err)
			}
			plans[i] = rw.Plan
		}
		b.Run(api.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				req, err := api.parse(bodies[i%len(bodies)])
				if err != nil {
					b.Fatal(err)
				}
				if _, err := req.Render(plans[i%len(plans)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
