package e2e

// The real clients against the fake upstreams directly, no proxy: this pins
// what each client sends and accepts, so that the same runs pointed at the
// proxy (swap f.URL for the proxy's URL) test the proxy alone.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

const (
	weatherArgs   = `{"city":"Oslo"}`
	sunnyAnswer   = "It is sunny in Oslo, 21 degrees."
	helloAnswer   = "Hello from the fake upstream."
	weatherOutput = `{"city":"Oslo","sky":"sunny","celsius":21}`
)

func weatherCall() fakeai.Turn {
	return fakeai.Turn{ToolCalls: []fakeai.Call{{Name: "get_weather", Arguments: weatherArgs}}}
}

// itemsOf returns the input items of type typ.
func itemsOf(r fakeai.Request, typ string) []map[string]any {
	var out []map[string]any
	for _, it := range r.InputItems() {
		if it["type"] == typ {
			out = append(out, it)
		}
	}
	return out
}

func TestRealClientsAgainstFakeResponses(t *testing.T) {
	requireNode(t)
	for _, kase := range []string{"plain", "tool", "two-step", "chained", "conversation"} {
		for _, mode := range []string{"create", "stream", "helper"} {
			t.Run(kase+"/"+mode, func(t *testing.T) {
				t.Parallel()
				f := fakeai.New()
				defer f.Close()
				switch kase {
				case "plain":
					f.Script(fakeai.Reply(fakeai.Turn{Content: helloAnswer}))
				case "tool":
					f.Script(fakeai.Reply(weatherCall()))
				default:
					f.Script(fakeai.Reply(weatherCall()), fakeai.Reply(fakeai.Turn{Content: sunnyAnswer}))
				}
				r := runNode(t, "responses.mjs", f.URL, nil, kase, mode)
				// The conversation's creation and the reads of its items
				// are not the model's.
				reqs := slices.DeleteFunc(f.Requests(), func(r fakeai.Request) bool { return strings.HasPrefix(r.Path, "/v1/conversations") })
				first := reqs[0]
				if first.Path != "/v1/responses" || first.Header.Get("Authorization") != "Bearer sk-e2e-client" {
					t.Fatalf("request %s %v", first.Path, first.Header)
				}
				if stream := strings.Contains(string(first.Body), `"stream":true`); stream != (mode != "create") {
					t.Fatalf("mode %s sent stream=%v", mode, stream)
				}
				if mode != "helper" && r.Headers["x-request-id"] == "" {
					t.Errorf("x-request-id not seen by the client: %v", r.Headers)
				}
				if mode != "create" && (len(r.Events) == 0 || r.Events[len(r.Events)-1] != "response.completed") {
					t.Errorf("events %v", r.Events)
				}
				switch kase {
				case "plain":
					if r.Text != helloAnswer || r.Status != "completed" || first.Instructions() != "You are a terse assistant." {
						t.Fatalf("got %+v; instructions %q", r, first.Instructions())
					}
					if mode != "create" && r.Deltas < 2 {
						t.Errorf("text came in %d deltas", r.Deltas)
					}
				case "tool":
					if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_weather" || r.ToolCalls[0].Arguments != weatherArgs {
						t.Fatalf("tool calls %+v", r.ToolCalls)
					}
					if !slices.Equal(first.ToolNames(), []string{"get_weather"}) {
						t.Fatalf("tools %v", first.ToolNames())
					}
					roles := []any{}
					for _, it := range first.InputItems() {
						roles = append(roles, it["role"])
					}
					if !slices.Equal(roles, []any{"developer", "user"}) {
						t.Fatalf("input roles %v", roles)
					}
				default:
					if len(reqs) != 2 || r.Text != sunnyAnswer || len(r.Steps) != 2 {
						t.Fatalf("%d requests, result %+v", len(reqs), r)
					}
					callID := r.Steps[0].ToolCalls[0].CallID
					outs := itemsOf(reqs[1], "function_call_output")
					if len(outs) != 1 || outs[0]["call_id"] != callID || outs[0]["output"] != weatherOutput {
						t.Fatalf("outputs %v for call %s", outs, callID)
					}
					prev := gjsonString(reqs[1].Body, "previous_response_id")
					if kase == "conversation" {
						// The SDK's pager and retrieve read the conversation
						// back as the fake keeps it (node asserts that an item
						// retrieved by id is the one listed).
						var got []string
						for _, it := range r.Items {
							got = append(got, it.Type)
						}
						if want := []string{"message", "message", "function_call", "function_call_output", "message"}; prev != "" ||
							len(reqs[1].InputItems()) != 1 || !slices.Equal(got, want) {
							t.Fatalf("conversation: previous %q, %d items; read back %q, want %q", prev, len(reqs[1].InputItems()), got, want)
						}
					} else if kase == "chained" {
						if prev != r.Steps[0].ID || len(reqs[1].InputItems()) != 1 {
							t.Fatalf("chained request: previous %q, %d items", prev, len(reqs[1].InputItems()))
						}
					} else if prev != "" || len(itemsOf(reqs[1], "function_call")) != 1 {
						t.Fatalf("stateless request: previous %q, items %v", prev, reqs[1].InputItems())
					}
				}
			})
		}
	}
}

func TestRealClientsAgainstFakeMessages(t *testing.T) {
	requireNode(t)
	for _, kase := range []string{"plain", "tool", "two-step"} {
		for _, mode := range []string{"create", "stream"} {
			t.Run(kase+"/"+mode, func(t *testing.T) {
				t.Parallel()
				f := fakeai.New()
				defer f.Close()
				call := weatherCall()
				// A thinking block that must come back intact (the fake
				// checks its signature) in the two-step round.
				call.Thinking = &fakeai.Thinking{Text: "The user wants the weather; call the tool."}
				switch kase {
				case "plain":
					f.Script(fakeai.Reply(fakeai.Turn{Content: helloAnswer}))
				case "tool":
					f.Script(fakeai.Reply(call))
				default:
					f.Script(fakeai.Reply(call), fakeai.Reply(fakeai.Turn{Content: sunnyAnswer}))
				}
				r := runNode(t, "anthropic.mjs", f.URL, nil, kase, mode)
				reqs := f.Requests()
				first := reqs[0]
				// @anthropic-ai/sdk 1.x sends the key as a bearer token.
				key := first.Header.Get("X-Api-Key") + strings.TrimPrefix(first.Header.Get("Authorization"), "Bearer ")
				if first.Path != "/v1/messages" || key != "sk-e2e-client" || first.Header.Get("Anthropic-Version") == "" {
					t.Fatalf("request %s %v", first.Path, first.Header)
				}
				if r.RequestID == "" || r.RequestID != r.Headers["request-id"] {
					t.Errorf("request id %q, headers %v", r.RequestID, r.Headers)
				}
				if mode == "stream" && (len(r.Events) == 0 || r.Events[0] != "message_start" || r.Events[len(r.Events)-1] != "message_stop") {
					t.Errorf("events %v", r.Events)
				}
				switch kase {
				case "plain":
					if r.Text != helloAnswer || r.StopReason != "end_turn" || first.System() != "You are a terse assistant." {
						t.Fatalf("got %+v; system %q", r, first.System())
					}
				case "tool":
					if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_weather" || r.ToolCalls[0].Input["city"] != "Oslo" ||
						r.StopReason != "tool_use" || !slices.Equal(r.Thinking, []string{"thinking"}) {
						t.Fatalf("got %+v", r)
					}
					blocks := first.SystemBlocks()
					if len(blocks) != 2 || blocks[1]["cache_control"] == nil || !slices.Equal(first.ToolNames(), []string{"get_weather"}) {
						t.Fatalf("system %v tools %v", blocks, first.ToolNames())
					}
				default:
					if len(reqs) != 2 || r.Text != sunnyAnswer || len(r.Steps) != 2 {
						t.Fatalf("%d requests, result %+v", len(reqs), r)
					}
					msgs := reqs[1].Messages()
					if len(msgs) != 3 || msgs[1]["role"] != "assistant" || msgs[2]["role"] != "user" {
						t.Fatalf("messages %v", msgs)
					}
					result := msgs[2]["content"].([]any)[0].(map[string]any)
					if result["type"] != "tool_result" || result["tool_use_id"] != r.Steps[0].ToolCalls[0].ID || result["content"] != weatherOutput {
						t.Fatalf("tool result %v", result)
					}
				}
			})
		}
	}
}

func TestRealClientsAgainstFakeChatSDKs(t *testing.T) {
	requireNode(t)
	for _, script := range []string{"vercel-ai.mjs", "langchain.mjs"} {
		for _, kase := range []string{"plain", "stream", "tool", "tool-stream"} {
			t.Run(strings.TrimSuffix(script, ".mjs")+"/"+kase, func(t *testing.T) {
				t.Parallel()
				f := fakeai.New()
				defer f.Close()
				tool := strings.HasPrefix(kase, "tool")
				if tool {
					f.Script(fakeai.Reply(weatherCall()), fakeai.Reply(fakeai.Turn{Content: sunnyAnswer}))
				} else {
					f.Script(fakeai.Reply(fakeai.Turn{Content: helloAnswer}))
				}
				r := runNode(t, script, f.URL, nil, kase)
				reqs := f.Requests()
				streamed := strings.Contains(string(reqs[0].Body), `"stream":true`)
				if streamed != strings.HasSuffix(kase, "stream") {
					t.Fatalf("case %s sent stream=%v: %s", kase, streamed, reqs[0].Body)
				}
				if !tool {
					if r.Text != helloAnswer || len(reqs) != 1 {
						t.Fatalf("%d requests, result %+v", len(reqs), r)
					}
					return
				}
				if r.Text != sunnyAnswer || len(reqs) != 2 || len(r.ToolCalls) != 1 || r.ToolCalls[0].Input["city"] != "Oslo" {
					t.Fatalf("%d requests, result %+v", len(reqs), r)
				}
				msgs := reqs[1].Messages()
				last := msgs[len(msgs)-1]
				if last["role"] != "tool" || !strings.Contains(fakeai.Text(last["content"]), `"sky":"sunny"`) {
					t.Fatalf("tool message %v", last)
				}
			})
		}
	}
}

func TestRealClientsAgainstFakeCodex(t *testing.T) {
	requireNode(t)
	t.Run("answer", func(t *testing.T) {
		f := fakeai.New()
		defer f.Close()
		f.Script(fakeai.Reply(fakeai.Turn{Content: helloAnswer}))
		run := runCodex(t, f.URL, "Say hello.")
		if run.Answer != helloAnswer {
			t.Fatalf("answer %q\nstderr: %s", run.Answer, run.Stderr)
		}
		reqs := f.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		checkCodexRequest(t, reqs[0], "Say hello.")
	})
	t.Run("tool round", func(t *testing.T) {
		f := fakeai.New()
		defer f.Close()
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte("greetings from a file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f.Script(
			fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "Read the file first."},
				ToolCalls: []fakeai.Call{{Name: "exec_command", Arguments: `{"cmd":"cat hello.txt"}`}}}),
			fakeai.Reply(fakeai.Turn{Content: "The file says greetings."}))
		run := runCodexIn(t, f.URL, work, "What does hello.txt say?")
		if run.Answer != "The file says greetings." {
			t.Fatalf("answer %q\nstderr: %s", run.Answer, run.Stderr)
		}
		reqs := f.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		// Codex sends the whole transcript again (store:false): the
		// reasoning item with its encrypted_content, the call, its output.
		if len(itemsOf(reqs[1], "reasoning")) != 1 || len(itemsOf(reqs[1], "function_call")) != 1 {
			t.Fatalf("second request items %v", reqs[1].InputItems())
		}
		outs := itemsOf(reqs[1], "function_call_output")
		if len(outs) != 1 || outs[0]["call_id"] != itemsOf(reqs[1], "function_call")[0]["call_id"] {
			t.Fatalf("outputs %v", outs)
		}
		if out, _ := outs[0]["output"].(string); !strings.Contains(out, "greetings from a file") {
			t.Errorf("the command's output did not reach the model: %q", out)
		}
	})
}

// checkCodexRequest pins what Codex sends (docs/clients.md describes it).
func checkCodexRequest(t *testing.T, r fakeai.Request, prompt string) {
	t.Helper()
	var body struct {
		Instructions *string
		Stream       bool
		Store        *bool
		Include      []string
	}
	_ = json.Unmarshal(r.Body, &body)
	if r.Path != "/v1/responses" || !body.Stream || body.Store == nil || *body.Store || !slices.Contains(body.Include, "reasoning.encrypted_content") {
		t.Errorf("Codex request: path %s stream %v store %v include %v", r.Path, body.Stream, body.Store, body.Include)
	}
	if body.Instructions != nil && *body.Instructions != "" {
		t.Errorf("Codex sent instructions (expected its prompt as developer messages): %.80q", *body.Instructions)
	}
	items := r.InputItems()
	if len(items) < 2 || items[0]["role"] != "developer" || fakeai.Text(items[len(items)-1]["content"]) != prompt {
		t.Errorf("Codex input: %d items, first role %v", len(items), items[0]["role"])
	}
	if !slices.Contains(r.ToolNames(), "exec_command") {
		t.Errorf("Codex tools %v", r.ToolNames())
	}
	if r.Header.Get("Authorization") != "Bearer sk-e2e-codex" {
		t.Errorf("Codex auth header %q", r.Header.Get("Authorization"))
	}
}

func TestRealClientsAgainstFakeClaudeCode(t *testing.T) {
	requireNode(t)
	t.Run("answer", func(t *testing.T) {
		f := fakeai.New()
		defer f.Close()
		f.Script(fakeai.Reply(fakeai.Turn{Content: helloAnswer}))
		run := runClaude(t, f.URL, "Say hello.")
		if run.Answer != helloAnswer {
			t.Fatalf("answer %q\nstdout: %s", run.Answer, run.Stdout)
		}
		var main []fakeai.Request
		for _, r := range f.Requests() {
			if r.Path == "/v1/messages" {
				main = append(main, r)
			}
		}
		if len(main) != 1 {
			t.Fatalf("%d message requests", len(main))
		}
		checkClaudeRequest(t, main[0])
	})
	t.Run("tool round", func(t *testing.T) {
		f := fakeai.New()
		defer f.Close()
		work := t.TempDir()
		file := filepath.Join(work, "hello.txt")
		if err := os.WriteFile(file, []byte("greetings from a file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"file_path": file})
		f.Script(
			fakeai.Reply(fakeai.Turn{Content: "Let me read it.", ToolCalls: []fakeai.Call{{Name: "Read", Arguments: string(args)}}}),
			fakeai.Reply(fakeai.Turn{Content: "The file says greetings."}))
		run := runClaudeIn(t, f.URL, work, "What does hello.txt say?")
		if run.Answer != "The file says greetings." {
			t.Fatalf("answer %q\nstdout: %s", run.Answer, run.Stdout)
		}
		reqs := f.Requests()
		last := reqs[len(reqs)-1].Messages()
		var result map[string]any
		for _, m := range last {
			if c, ok := m["content"].([]any); ok {
				for _, b := range c {
					if bm, _ := b.(map[string]any); bm["type"] == "tool_result" {
						result = bm
					}
				}
			}
		}
		if result == nil || !strings.Contains(fakeai.Text(result["content"])+stringOf(result["content"]), "greetings from a file") {
			t.Fatalf("tool_result %v", result)
		}
	})
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// checkClaudeRequest pins what Claude Code sends (docs/clients.md).
func checkClaudeRequest(t *testing.T, r fakeai.Request) {
	t.Helper()
	if r.RawQuery != "beta=true" || r.Header.Get("Anthropic-Version") == "" || r.Header.Get("Anthropic-Beta") == "" ||
		r.Header.Get("X-Api-Key") != "sk-ant-e2e-dummy" {
		t.Errorf("Claude Code request: query %q headers %v", r.RawQuery, r.Header)
	}
	blocks := r.SystemBlocks()
	cached := 0
	for _, b := range blocks {
		if b["cache_control"] != nil {
			cached++
		}
	}
	if len(blocks) < 2 || cached == 0 {
		t.Errorf("Claude Code system: %d blocks, %d with cache_control", len(blocks), cached)
	}
	if !slices.Contains(r.ToolNames(), "Skill") || !slices.Contains(r.ToolNames(), "Bash") {
		t.Errorf("Claude Code tools %v", r.ToolNames())
	}
	if !strings.Contains(string(r.Body), `"stream":true`) {
		t.Errorf("Claude Code did not stream")
	}
}

func gjsonString(body []byte, path string) string {
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	s, _ := m[path].(string)
	return s
}
