package e2e

// The real clients through the proxy: the same runs as clients_fake_test.go,
// pointed at the proxy in front of the fake upstream. The fake records what
// the proxy sent (catalog, auto-loaded body, the proxy's tools, the
// follow-up of a server-side load_skill round); the client reports what it
// got (the final answer, no load_skill call, decision headers).

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy"
	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// loadRound scripts a server-side round: the model calls load_skill for
// commit-message (after a thinking block, which must come back intact),
// then answers.
func loadRound(f *fakeai.Server, answer string) {
	f.Script(
		fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "A commit message skill fits."},
			ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: answer}))
}

// hasEnvelope reports whether any text of v holds the envelope of skill.
func hasEnvelope(body []byte, skill string) bool {
	return strings.Contains(string(body), `<skill_context id=\"`+skill+`\">`)
}

func checkDecisionHeaders(t *testing.T, h map[string]string) {
	t.Helper()
	if h["x-skillrouter-strategy"] != "hybrid" || h["x-skillrouter-added-tokens"] == "" {
		t.Errorf("decision headers not seen by the client: %v", h)
	}
}

func TestRealClientsThroughProxyResponses(t *testing.T) {
	for _, kase := range []string{"plain", "tool", "two-step", "chained", "load", "chained-load", "chained-dropped", "conversation-load", "count"} {
		for _, mode := range []string{"create", "stream", "helper"} {
			if kase == "chained-dropped" && mode == "create" {
				continue // a JSON answer holds the client's call back and answers the proxy's
			}
			if kase == "count" && mode != "create" {
				continue
			}
			t.Run(kase+"/"+mode, func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				script := kase
				switch kase {
				case "plain":
					e.up.Script(fakeai.Reply(fakeai.Turn{Content: helloAnswer}))
				case "tool":
					e.up.Script(fakeai.Reply(weatherCall()))
				case "load":
					loadRound(e.up, helloAnswer)
					script = "plain"
				case "chained-load":
					// A server-side round, then the client's call, then the
					// client continues from the response it got.
					e.up.Script(
						fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}}),
						fakeai.Reply(weatherCall()), fakeai.Reply(fakeai.Turn{Content: sunnyAnswer}))
					script = "chained"
				case "conversation-load":
					// As chained-load, in a conversation: the hidden round's
					// follow-up sends only its output.
					e.up.Script(
						fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}}),
						fakeai.Reply(weatherCall()), fakeai.Reply(fakeai.Turn{Content: sunnyAnswer}))
					script = "conversation"
				case "chained-dropped":
					// The client's call is streamed before the proxy's, so the
					// turn is the client's and load_skill is dropped from it; the
					// stored response still holds it, and the client's next turn
					// is refused until the proxy answers it (the refused request
					// takes a scripted answer too).
					turn := weatherCall()
					turn.ToolCalls = append(turn.ToolCalls, fakeai.Call{ID: "call_dropped", Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`})
					sunny := fakeai.Reply(fakeai.Turn{Content: sunnyAnswer})
					e.up.Script(fakeai.Reply(turn), sunny, sunny)
					script = "chained"
				default:
					e.up.Script(fakeai.Reply(weatherCall()), fakeai.Reply(fakeai.Turn{Content: sunnyAnswer}))
				}
				r := runNode(t, "responses.mjs", e.proxy.URL, nil, script, mode)
				// conversations.create, passed through, and the reads of the
				// conversation's items after the turns are not the model's.
				reqs := slices.DeleteFunc(e.up.Requests(), func(r fakeai.Request) bool { return strings.HasPrefix(r.Path, "/v1/conversations") })
				first := reqs[0]
				if !strings.Contains(first.Instructions(), "<available_skills>") {
					t.Fatalf("no catalog in instructions: %.300s", first.Instructions())
				}
				if names := first.ToolNames(); !slices.Contains(names, "load_skill") {
					t.Fatalf("tools upstream %v", names)
				}
				if mode != "helper" {
					checkDecisionHeaders(t, r.Headers)
				}
				for _, c := range r.ToolCalls {
					if c.Name == "load_skill" {
						t.Fatalf("the client saw the proxy's call: %+v", r)
					}
				}
				switch kase {
				case "plain":
					if r.Text != helloAnswer || len(reqs) != 1 || !strings.HasPrefix(first.Instructions(), "You are a terse assistant.") {
						t.Fatalf("got %+v; %d requests", r, len(reqs))
					}
				case "tool":
					if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_weather" {
						t.Fatalf("tool calls %+v", r.ToolCalls)
					}
				case "load":
					if r.Text != helloAnswer || len(reqs) != 2 {
						t.Fatalf("got %+v; %d upstream requests", r, len(reqs))
					}
				case "chained-load":
					if r.Text != sunnyAnswer || len(r.Steps) != 2 || len(reqs) != 3 {
						t.Fatalf("got %+v; %d upstream requests", r, len(reqs))
					}
					if prev := gjsonString(reqs[2].Body, "previous_response_id"); prev != r.Steps[0].ID {
						t.Fatalf("the client chains from %q, the upstream got %q", r.Steps[0].ID, prev)
					}
					outs := itemsOf(reqs[1], "function_call_output")
					if len(outs) != 1 || !strings.Contains(stringOf(outs[0]["output"]), `<skill_context id="commit-message">`) {
						t.Fatalf("follow-up outputs %v", outs)
					}
				case "conversation-load":
					if r.Text != sunnyAnswer || len(r.Steps) != 2 || len(reqs) != 3 {
						t.Fatalf("got %+v; %d upstream requests", r, len(reqs))
					}
					if in := reqs[1].InputItems(); len(in) != 1 || in[0]["type"] != "function_call_output" {
						t.Fatalf("the hidden round's follow-up input %v, want its output alone", in)
					}
					seen := map[string]bool{}
					for _, it := range e.up.Conversation(gjsonString(first.Body, "conversation")) {
						if seen[fakeai.WithoutID(it)] {
							t.Errorf("the conversation holds this item twice: %.160s", it)
						}
						seen[fakeai.WithoutID(it)] = true
					}
					if len(seen) == 0 {
						t.Error("the conversation is empty")
					}
					// Read back with the SDK's pager, one item a page, and
					// by id: the client's items, in order, none of the
					// proxy's (the envelope, its call, its output).
					var got []string
					for _, it := range r.Items {
						got = append(got, it.Type+":"+it.Role+it.Name)
						if strings.Contains(it.Text, "<skill_context") || it.Name == "load_skill" {
							t.Errorf("the client read back the proxy's item %+v", it)
						}
					}
					want := []string{"message:developer", "message:user", "function_call:get_weather", "function_call_output:", "message:assistant"}
					if !slices.Equal(got, want) {
						t.Errorf("the client read back %q, want %q", got, want)
					}
				case "count":
					// The count is the rewritten request's (the fake: its bytes / 4 + 1).
					if len(reqs) != 1 || first.Path != "/v1/responses/input_tokens" || r.Text != strconv.Itoa(len(first.Body)/4+1) {
						t.Fatalf("got %+v; upstream %d requests", r, len(reqs))
					}
				case "chained-dropped":
					// first turn, the refused second, GET of the stored response, the second again
					if r.Text != sunnyAnswer || len(r.Steps) != 2 || len(reqs) != 4 || reqs[2].Method != "GET" ||
						reqs[2].Path != "/v1/responses/"+r.Steps[0].ID {
						t.Fatalf("got %+v; %d upstream requests", r, len(reqs))
					}
					outs := itemsOf(reqs[3], "function_call_output")
					if len(outs) != 2 || outs[0]["call_id"] != "call_dropped" || !strings.Contains(stringOf(outs[0]["output"]), "not run") {
						t.Fatalf("retried outputs %v", outs)
					}
				default:
					if r.Text != sunnyAnswer || len(r.Steps) != 2 || len(reqs) != 2 {
						t.Fatalf("got %+v; %d requests", r, len(reqs))
					}
					if kase == "chained" && gjsonString(reqs[1].Body, "previous_response_id") != r.Steps[0].ID {
						t.Fatalf("chained: previous_response_id %q, first response %q", gjsonString(reqs[1].Body, "previous_response_id"), r.Steps[0].ID)
					}
				}
			})
		}
	}
}

func TestRealClientsThroughProxyMessages(t *testing.T) {
	for _, kase := range []string{"plain", "tool", "two-step", "load"} {
		for _, mode := range []string{"create", "stream"} {
			t.Run(kase+"/"+mode, func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				script := kase
				switch kase {
				case "plain":
					e.up.Script(fakeai.Reply(fakeai.Turn{Content: helloAnswer}))
				case "tool":
					e.up.Script(fakeai.Reply(weatherCall()))
				case "load":
					loadRound(e.up, helloAnswer)
					script = "plain"
				default:
					e.up.Script(fakeai.Reply(weatherCall()), fakeai.Reply(fakeai.Turn{Content: sunnyAnswer}))
				}
				r := runNode(t, "anthropic.mjs", e.proxy.URL, nil, script, mode)
				reqs := e.up.Requests()
				first := reqs[0]
				if first.Path != "/v1/messages" || !strings.Contains(first.System(), "<available_skills>") {
					t.Fatalf("no catalog in system: %s %.300s", first.Path, first.System())
				}
				if names := first.ToolNames(); !slices.Contains(names, "load_skill") {
					t.Fatalf("tools upstream %v", names)
				}
				checkDecisionHeaders(t, r.Headers)
				for _, c := range r.ToolCalls {
					if c.Name == "load_skill" {
						t.Fatalf("the client saw the proxy's call: %+v", r)
					}
				}
				switch kase {
				case "plain":
					if r.Text != helloAnswer || r.StopReason != "end_turn" || !strings.HasPrefix(first.System(), "You are a terse assistant.") {
						t.Fatalf("got %+v", r)
					}
				case "tool":
					if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_weather" || r.StopReason != "tool_use" {
						t.Fatalf("got %+v", r)
					}
				case "load":
					if r.Text != helloAnswer || len(reqs) != 2 || r.StopReason != "end_turn" {
						t.Fatalf("got %+v; %d upstream requests", r, len(reqs))
					}
					// The fake checks the thinking block's signature and the
					// tool_use / tool_result pairing; the envelope is the result.
					if !hasEnvelope(reqs[1].Body, "commit-message") {
						t.Fatalf("follow-up lacks the envelope: %s", reqs[1].Body)
					}
				default:
					if r.Text != sunnyAnswer || len(reqs) != 2 {
						t.Fatalf("got %+v; %d requests", r, len(reqs))
					}
				}
			})
		}
	}
}

func TestRealClientsThroughProxyChatSDKs(t *testing.T) {
	for _, script := range []string{"vercel-ai.mjs", "langchain.mjs"} {
		for _, kase := range []string{"plain", "stream", "tool", "tool-stream"} {
			t.Run(strings.TrimSuffix(script, ".mjs")+"/"+kase, func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				tool := strings.HasPrefix(kase, "tool")
				if tool {
					e.up.Script(fakeai.Reply(weatherCall()), fakeai.Reply(fakeai.Turn{Content: sunnyAnswer}))
				} else {
					// A server-side round first: the client never sees it.
					e.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"pdf-forms"}`}}}),
						fakeai.Reply(fakeai.Turn{Content: helloAnswer}))
				}
				r := runNode(t, script, e.proxy.URL, nil, kase)
				reqs := e.up.Requests()
				if !slices.Contains(reqs[0].ToolNames(), "load_skill") {
					t.Fatalf("tools upstream %v", reqs[0].ToolNames())
				}
				if !tool {
					if r.Text != helloAnswer || len(reqs) != 2 || !hasEnvelope(reqs[1].Body, "pdf-forms") {
						t.Fatalf("%d requests, result %+v", len(reqs), r)
					}
					return
				}
				if r.Text != sunnyAnswer || len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_weather" {
					t.Fatalf("%d requests, result %+v", len(reqs), r)
				}
			})
		}
	}
}

func TestRealClientsThroughProxyCodex(t *testing.T) {
	e := setup(t)
	loadRound(e.up, helloAnswer)
	run := runCodex(t, e.proxy.URL, "Fill in the PDF form tax.pdf with my address.")
	if run.Answer != helloAnswer {
		t.Fatalf("answer %q\nstderr: %s", run.Answer, run.Stderr)
	}
	reqs := e.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	// Codex sends its prompt as developer messages and no instructions: the
	// catalog becomes the instructions, the auto-loaded pdf-forms envelope
	// follows Codex's items, which stay as sent; Codex's tools keep theirs.
	items := reqs[0].InputItems()
	if !strings.Contains(reqs[0].Instructions(), "<available_skills>") || items[0]["role"] != "developer" ||
		!strings.Contains(fakeai.Text(items[len(items)-1]["content"]), `<skill_context id="pdf-forms">`) {
		t.Fatalf("rewrite: instructions %.120q, %d items, last %v", reqs[0].Instructions(), len(items), items[len(items)-1])
	}
	if names := reqs[0].ToolNames(); !slices.Contains(names, "exec_command") || !slices.Contains(names, "load_skill") {
		t.Fatalf("tools %v", names)
	}
	outs := itemsOf(reqs[1], "function_call_output")
	if len(outs) != 1 || !strings.Contains(stringOf(outs[0]["output"]), `<skill_context id="commit-message">`) {
		t.Fatalf("follow-up outputs %v", outs)
	}
}

func TestRealClientsThroughProxyClaudeCode(t *testing.T) {
	e := setup(t)
	loadRound(e.up, helloAnswer)
	run := runClaude(t, e.proxy.URL, "Fill in the PDF form tax.pdf with my address.")
	if run.Answer != helloAnswer {
		t.Fatalf("answer %q\nstdout: %s", run.Answer, run.Stdout)
	}
	var main []fakeai.Request
	for _, r := range e.up.Requests() {
		if r.Path == "/v1/messages" {
			main = append(main, r)
		}
	}
	if len(main) != 2 {
		t.Fatalf("%d message requests", len(main))
	}
	checkClaudeRequest(t, main[0])
	// Claude Code's own Skill tool and the library's load_skill side by side.
	if names := main[0].ToolNames(); !slices.Contains(names, "load_skill") || !slices.Contains(names, "Skill") {
		t.Fatalf("tools %v", names)
	}
	if !strings.Contains(main[0].System(), "<available_skills>") || !hasEnvelope(main[0].Body, "pdf-forms") ||
		!hasEnvelope(main[1].Body, "commit-message") {
		t.Fatalf("catalog %v, auto-loaded pdf-forms %v, loaded commit-message %v", strings.Contains(main[0].System(), "<available_skills>"),
			hasEnvelope(main[0].Body, "pdf-forms"), hasEnvelope(main[1].Body, "commit-message"))
	}
}

// TestRealClientsWithoutPassThrough: Codex CLI and Claude Code need
// nothing but the requests the proxy routes (docs/security.md recommends
// a short upstream.passthrough on that ground): with nothing passing
// through, a turn with a load_skill round works and nothing was refused.
func TestRealClientsWithoutPassThrough(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, baseURL, prompt string) agentRun
	}{{"codex", runCodex}, {"claude", runClaude}} {
		t.Run(c.name, func(t *testing.T) {
			e := setup(t, func(cfg *proxy.Config) { cfg.PassThrough = []string{} })
			loadRound(e.up, helloAnswer)
			run := c.run(t, e.proxy.URL, "Fill in the PDF form tax.pdf with my address.")
			if run.Answer != helloAnswer {
				t.Fatalf("answer %q\nstdout: %s\nstderr: %s", run.Answer, run.Stdout, run.Stderr)
			}
			resp, err := http.Get(e.proxy.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			m, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if i := strings.Index(string(m), `outcome="passthrough_refused"`); i >= 0 {
				t.Fatalf("%s asked for a path that does not pass: %s", c.name, m[max(0, i-100):min(len(m), i+100)])
			}
		})
	}
}

// An upstream that ignores stream:true answers every round with JSON: the
// Responses (raw events and the responses.stream() helper) and Anthropic
// (messages.stream()) SDKs read whole answers from the streams the proxy
// renders of it, with the load_skill round and its reasoning handled as
// in a stream.
func TestRealClientsStreamAnsweredWithJSON(t *testing.T) {
	for _, c := range []struct{ script, mode, stop string }{
		{"responses.mjs", "stream", ""}, {"responses.mjs", "helper", ""}, {"anthropic.mjs", "stream", "end_turn"},
	} {
		t.Run(strings.TrimSuffix(c.script, ".mjs")+"/"+c.mode, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.up.Script(
				fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "A commit message skill fits."},
					ToolCalls: []fakeai.Call{{Name: "load_skill", Arguments: `{"skill_id":"commit-message"}`}}, IgnoreStream: true}),
				fakeai.Reply(fakeai.Turn{Content: helloAnswer, IgnoreStream: true}))
			r := runNode(t, c.script, e.proxy.URL, nil, "plain", c.mode)
			reqs := e.up.Requests()
			if r.Text != helloAnswer || len(reqs) != 2 || r.StopReason != c.stop || !hasEnvelope(reqs[1].Body, "commit-message") {
				t.Fatalf("got %+v; %d upstream requests", r, len(reqs))
			}
			for _, call := range r.ToolCalls {
				if call.Name == "load_skill" {
					t.Fatalf("the client saw the proxy's call: %+v", r)
				}
			}
		})
	}
}
