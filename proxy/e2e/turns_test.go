package e2e

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/internal/syncbuf"
	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// A client that keeps the transcript itself never holds the proxy's hidden
// round, so a skill the model loaded with load_skill would be gone from
// the next step of the same turn: the one that reads the output of the
// tool the skill told it to run. The proxy loads it again on the turn's
// later steps, after the last message; not on a new user turn, and not in
// another conversation. For each API, streamed or not, through the real
// router.
func TestLoadedSkillStaysForTheTurn(t *testing.T) {
	root := writeSkills(t, map[string]string{
		"git-helper": "description: Inspect and commit changes with git version control.",
		"note-taker": "description: Keep tidy meeting notes.",
	})
	const ask = "what changed in my working tree?"
	type api struct {
		path  string
		first func(stream, ask string) string
		step  func(stream, ask string) string // the first request, the client's call and its result
		next  func(stream, ask string) string // the step, the model's answer and a new user ask
	}
	chatMsgs := func(ask string) string { return `[{"role":"user","content":"` + ask + `"}` }
	chatStep := func(ask string) string {
		return chatMsgs(ask) + `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_b","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"git status\"}"}}]},{"role":"tool","tool_call_id":"call_b","content":"TOOL-OUTPUT clean"}`
	}
	respItems := func(ask string) string { return `[{"role":"user","content":"` + ask + `"}` }
	respStep := func(ask string) string {
		return respItems(ask) + `,{"type":"function_call","call_id":"call_b","name":"bash","arguments":"{\"cmd\":\"git status\"}"},{"type":"function_call_output","call_id":"call_b","output":"TOOL-OUTPUT clean"}`
	}
	msgMsgs := func(ask string) string { return `[{"role":"user","content":"` + ask + `"}` }
	msgStep := func(ask string) string {
		// Claude Code notes some results in a text block beside them ("Tool
		// loaded." after ToolSearch): the same turn still.
		return msgMsgs(ask) + `,{"role":"assistant","content":[{"type":"tool_use","id":"call_b","name":"bash","input":{"cmd":"git status"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_b","content":"TOOL-OUTPUT clean"},{"type":"text","text":"Tool loaded."}]}`
	}
	const respBash = `{"type":"function","name":"bash","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}`
	const msgBash = `{"name":"bash","input_schema":{"type":"object","properties":{"cmd":{"type":"string"}}}}`
	apis := []api{
		{"/v1/chat/completions",
			func(st, a string) string {
				return `{"model":"m","stream":` + st + `,"messages":` + chatMsgs(a) + `],"tools":[` + clientBash + `]}`
			},
			func(st, a string) string {
				return `{"model":"m","stream":` + st + `,"messages":` + chatStep(a) + `],"tools":[` + clientBash + `]}`
			},
			func(st, a string) string {
				return `{"model":"m","stream":` + st + `,"messages":` + chatStep(a) + `,{"role":"assistant","content":"All clean."},{"role":"user","content":"thanks, and my notes?"}],"tools":[` + clientBash + `]}`
			}},
		{"/v1/responses",
			func(st, a string) string {
				return `{"model":"m","store":false,"stream":` + st + `,"input":` + respItems(a) + `],"tools":[` + respBash + `]}`
			},
			func(st, a string) string {
				return `{"model":"m","store":false,"stream":` + st + `,"input":` + respStep(a) + `],"tools":[` + respBash + `]}`
			},
			func(st, a string) string {
				return `{"model":"m","store":false,"stream":` + st + `,"input":` + respStep(a) + `,{"role":"assistant","content":"All clean."},{"role":"user","content":"thanks, and my notes?"}],"tools":[` + respBash + `]}`
			}},
		{"/v1/messages",
			func(st, a string) string {
				return `{"model":"m","max_tokens":1000,"stream":` + st + `,"messages":` + msgMsgs(a) + `],"tools":[` + msgBash + `]}`
			},
			func(st, a string) string {
				return `{"model":"m","max_tokens":1000,"stream":` + st + `,"messages":` + msgStep(a) + `],"tools":[` + msgBash + `]}`
			},
			func(st, a string) string {
				return `{"model":"m","max_tokens":1000,"stream":` + st + `,"messages":` + msgStep(a) + `,{"role":"assistant","content":"All clean."},{"role":"user","content":"thanks, and my notes?"}],"tools":[` + msgBash + `]}`
			}},
	}
	const envelope = `<skill_context id=\"git-helper\">`
	for _, a := range apis {
		for _, stream := range []bool{false, true} {
			t.Run(strings.TrimPrefix(a.path, "/v1/")+"/stream="+strconv.FormatBool(stream), func(t *testing.T) {
				st := strconv.FormatBool(stream)
				up, base, logs := turnProxy(t, root)
				hdr := map[string]string{"X-Skillrouter-Top-K": "0", "X-Api-Key": "sk-one", "Anthropic-Version": "2023-06-01"} // nothing auto-loaded
				send := func(body string) {
					t.Helper()
					n := len(up.Requests())
					resp, out := postWith(t, base+a.path, body, hdr)
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, out)
					}
					if bytes.Contains(out, []byte("load_skill")) || bytes.Contains(out, []byte("skill_context")) {
						t.Fatalf("the proxy's round leaked to the client: %s", out)
					}
					if len(up.Requests()) == n {
						t.Fatal("nothing went upstream")
					}
				}
				last := func() []byte { r := up.Requests(); return r[len(r)-1].Body }

				// Step 1: the model loads git-helper (a hidden round), then
				// calls the client's bash.
				up.Script(
					fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"git-helper"}`}}}),
					fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_b", Name: "bash", Arguments: `{"cmd":"git status"}`}}}),
				)
				send(a.first(st, ask))
				if !bytes.Contains(last(), []byte(envelope)) {
					t.Fatalf("the hidden round's follow-up lacks the loaded body: %s", last())
				}
				// Step 2: the client sends bash's output; the body is back,
				// after it.
				up.Script(fakeai.Reply(fakeai.Turn{Content: "All clean."}))
				send(a.step(st, ask))
				body := last()
				at, out := bytes.Index(body, []byte(envelope)), bytes.Index(body, []byte("TOOL-OUTPUT clean"))
				if at < 0 || out < 0 || at < out {
					t.Fatalf("step 2: the loaded skill's body must follow the tool output (at %d, output at %d): %s", at, out, body)
				}
				if bytes.Count(body, []byte(envelope)) != 1 {
					t.Fatalf("step 2: the body is there more than once: %s", body)
				}
				// A new user ask starts a new turn: nothing carried.
				up.Script(fakeai.Reply(fakeai.Turn{Content: "Here are your notes."}))
				send(a.next(st, ask))
				if bytes.Contains(last(), []byte(envelope)) {
					t.Fatalf("a new turn got the earlier turn's skill: %s", last())
				}
				// Another conversation's step: nothing carried.
				up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))
				send(a.step(st, "summarise my repository history"))
				if bytes.Contains(last(), []byte(envelope)) {
					t.Fatalf("another conversation got this one's skill: %s", last())
				}
				// Another client's credential: nothing carried.
				hdr["X-Api-Key"] = "sk-two"
				up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))
				send(a.step(st, ask))
				if bytes.Contains(last(), []byte(envelope)) {
					t.Fatalf("another credential got this conversation's skill: %s", last())
				}
				// Lines are written once each handler returns: read last.
				if !strings.Contains(logs.String(), `"carried":"git-helper"`) || !strings.Contains(logs.String(), `"loaded":"git-helper"`) {
					t.Errorf("the access log does not say what was loaded and carried:\n%s", logs.String())
				}
			})
		}
	}
}

// turnProxy serves the library at root through the proxy and the real
// router (BM25), in front of a fake upstream; logs go to the buffer.
func turnProxy(t *testing.T, root string) (*fakeai.Server, string, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	reg := skills.NewRegistry([]string{root}, skills.Options{})
	r, err := router.New(context.Background(), reg.Snapshot(), router.Options{Strategy: router.StrategyBM25})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	up := fakeai.New()
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.BaseURL())
	srv, err := proxy.New(proxy.Config{Upstream: u, Rewriter: proxy.NewRewriter(r, router.RewriteOptions{CatalogMode: router.CatalogAll}),
		Library: reg, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return up, ts.URL, logs
}
