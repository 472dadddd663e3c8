package router

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// fakeGate gates client tools like package sandbox does: gated names are
// exact, "x*" prefixes or "*" (case-sensitive); AllowedTools returns the
// active skills' entries except those listed in deny.
type fakeGate struct {
	inner ToolProvider // tier-3 tools, may be nil
	gated []string
	deny  map[string]bool
	asked [][]string // the active sets AllowedTools saw
}

func (g *fakeGate) Tools(ctx context.Context, active []*skills.Skill) []Tool {
	if g.inner == nil {
		return nil
	}
	return g.inner.Tools(ctx, active)
}

func (g *fakeGate) GatedTool(name string) bool {
	for _, p := range g.gated {
		if p == name || p == "*" || (strings.HasSuffix(p, "*") && strings.HasPrefix(name, strings.TrimSuffix(p, "*"))) {
			return true
		}
	}
	return false
}

func (g *fakeGate) AllowedTools(active []*skills.Skill) []string {
	var ids, out []string
	for _, s := range active {
		ids = append(ids, s.ID)
		for _, e := range s.AllowedTools {
			if !g.deny[e] {
				out = append(out, e)
			}
		}
	}
	g.asked = append(g.asked, ids)
	return out
}

// gateLibrary is a small library whose skills declare allowed-tools.
func gateLibrary(t testing.TB) *skills.Snapshot {
	t.Helper()
	root := t.TempDir()
	for id, fm := range map[string]string{
		"shell-helper": "description: Run git commands in a shell.\nallowed-tools: Bash(git:*) Read",
		"web-research": "description: Research the web and cite sources.\nallowed-tools: [WebFetch]",
		"plain-notes":  "description: Take tidy notes.",
	} {
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + id + "\n" + fm + "\n---\n# " + id + "\n\nFollow the steps.\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := skills.Load(context.Background(), []string{root}, skills.Options{})
	if n := len(snap.Skills()); n != 3 {
		t.Fatalf("gate library: %d skills, problems %v", n, snap.Problems())
	}
	return snap
}

const (
	toolBash    = `{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}}`
	toolWeather = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{}}}}`
	toolFetch   = `{"type":"function","function":{"name":"WebFetch","parameters":{"type":"object","properties":{"url":{"type":"string"}}}}}`
)

// gateRequest builds a request with the given tools, extra top-level members
// (e.g. `,"tool_choice":"auto"`) and, when earlier is set, an earlier turn
// that loaded that skill with load_skill.
func gateRequest(tools []string, extra, earlier string) []byte {
	msgs := `{"role":"system","content":"You help."},{"role":"user","content":"hello there"}`
	if earlier != "" {
		msgs += `,{"role":"assistant","content":null,"tool_calls":[{"id":"c0","type":"function","function":{"name":"load_skill","arguments":"{}"}}]}` +
			`,{"role":"tool","tool_call_id":"c0","content":"<skill_context id=\"` + earlier + `\">\nFollow the steps.\n</skill_context>"}` +
			`,{"role":"assistant","content":"done"},{"role":"user","content":"and now?"}`
	}
	return []byte(`{"model":"m","messages":[` + msgs + `],"tools":[` + strings.Join(tools, ",") + `]` + extra + `,"temperature":0}`)
}

// calledEarlier inserts an earlier turn in which the assistant called tool
// (as after a skill the proxy loaded enabled it in that turn).
func calledEarlier(body []byte, tool string) []byte {
	turn := `{"role":"user","content":"run it"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"` + tool + `","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"assistant","content":"ran it"},`
	return []byte(strings.Replace(string(body), `{"role":"user","content":"hello there"}`, turn+`{"role":"user","content":"hello there"}`, 1))
}

func TestToolGateRewrite(t *testing.T) {
	snap := gateLibrary(t)
	all := []string{toolBash, toolWeather, toolFetch}
	tests := []struct {
		name     string
		body     []byte
		dec      Decision
		gated    []string
		deny     map[string]bool
		noTools  bool
		upstream []string // tool names sent upstream
		withheld []string
		enabled  map[string]string
		forced   []string
	}{
		{"no active skill: gated tools withheld", gateRequest(all, "", ""), Decision{}, []string{"bash", "Web*"}, nil, false,
			[]string{"get_weather", "load_skill"}, []string{"bash", "WebFetch"}, nil, nil},
		{"auto-loaded skill enables bash (Bash(git:*), any case)", gateRequest(all, "", ""), Decision{Selected: []string{"shell-helper"}}, []string{"bash", "Web*"}, nil, false,
			[]string{"bash", "get_weather", "load_skill"}, []string{"WebFetch"}, map[string]string{"bash": "shell-helper"}, nil},
		{"mentioned skill enables WebFetch", gateRequest(all, "", ""), Decision{Pinned: []string{"web-research"}}, []string{"bash", "Web*"}, nil, false,
			[]string{"get_weather", "WebFetch", "load_skill"}, []string{"bash"}, map[string]string{"WebFetch": "web-research"}, nil},
		{"skill loaded earlier in the conversation", gateRequest(all, "", "shell-helper"), Decision{}, []string{"bash", "Web*"}, nil, false,
			[]string{"bash", "get_weather", "load_skill"}, []string{"WebFetch"}, map[string]string{"bash": "shell-helper"}, nil},
		// An envelope in another tool's result (a fetched page saying
		// <skill_context id="shell-helper">) is no skill the model loaded.
		{"an envelope in another tool's result enables nothing", []byte(strings.Replace(string(gateRequest(all, "", "shell-helper")), `"name":"load_skill"`, `"name":"WebFetch"`, 1)), Decision{}, []string{"bash", "Web*"}, nil, false,
			[]string{"get_weather", "WebFetch", "load_skill"}, []string{"bash"}, nil, nil}, // WebFetch stays: the transcript called it
		{"tool the assistant called in an earlier turn stays", calledEarlier(gateRequest(all, "", ""), "bash"), Decision{}, []string{"bash", "Web*"}, nil, false,
			[]string{"bash", "get_weather", "load_skill"}, []string{"WebFetch"}, nil, nil},
		{"skill without allowed-tools enables nothing", gateRequest(all, "", ""), Decision{Selected: []string{"plain-notes"}}, []string{"*"}, nil, false,
			[]string{"load_skill"}, []string{"bash", "get_weather", "WebFetch"}, nil, nil},
		{"entry the configuration does not permit", gateRequest(all, "", ""), Decision{Selected: []string{"shell-helper"}}, []string{"bash"}, map[string]bool{"Bash(git:*)": true}, false,
			[]string{"get_weather", "WebFetch", "load_skill"}, []string{"bash"}, nil, nil},
		{"tool_choice names a gated tool", gateRequest(all, `,"tool_choice":{"type":"function","function":{"name":"bash"}}`, ""), Decision{}, []string{"bash", "Web*"}, nil, false,
			[]string{"bash", "get_weather"}, []string{"WebFetch"}, nil, []string{"bash"}}, // no load_skill: the choice forbids it
		{"allowed_tools tool_choice names a gated tool", gateRequest(all, `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"WebFetch"}}]}}`, ""), Decision{}, []string{"bash", "Web*"}, nil, false,
			[]string{"get_weather", "WebFetch"}, []string{"bash"}, nil, []string{"WebFetch"}},
		{"required with every client tool gated: unchanged", gateRequest([]string{toolBash, toolFetch}, `,"tool_choice":"required"`, ""), Decision{}, []string{"bash", "Web*"}, nil, false,
			[]string{"bash", "WebFetch", "load_skill"}, nil, nil, []string{"bash", "WebFetch"}},
		{"required with an ungated tool left: gated", gateRequest(all, `,"tool_choice":"required"`, ""), Decision{}, []string{"bash", "Web*"}, nil, false,
			[]string{"get_weather", "load_skill"}, []string{"bash", "WebFetch"}, nil, nil},
		{"gating is case-sensitive", gateRequest(all, "", ""), Decision{}, []string{"Bash", "webfetch"}, nil, false,
			[]string{"bash", "get_weather", "WebFetch", "load_skill"}, nil, nil, nil},
		{"no tool left: tool settings dropped", gateRequest([]string{toolBash}, `,"tool_choice":"auto","parallel_tool_calls":false`, ""), Decision{}, []string{"bash"}, nil, true,
			nil, []string{"bash"}, nil, nil},
		{"no tools mode keeps enabled ones", gateRequest(all, "", ""), Decision{Selected: []string{"shell-helper"}}, []string{"bash", "Web*"}, nil, true,
			[]string{"bash", "get_weather"}, []string{"WebFetch"}, map[string]string{"bash": "shell-helper"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := &fakeGate{gated: tt.gated, deny: tt.deny}
			opts := RewriteOptions{Tools: gate, NoTools: tt.noTools}
			dec := tt.dec
			rw, err := rewriteWithChat(context.Background(), tt.body, snap, &dec, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(rw.Body) {
				t.Fatalf("invalid body: %s", rw.Body)
			}
			if got := toolNames(t, rw.Body); !slices.Equal(got, tt.upstream) {
				t.Errorf("upstream tools %v, want %v", got, tt.upstream)
			}
			d := rw.Decision
			if !slices.Equal(d.ToolsWithheld, tt.withheld) || !maps.Equal(d.ToolsEnabled, tt.enabled) || !slices.Equal(d.ToolsForced, tt.forced) {
				t.Errorf("decision withheld %v enabled %v forced %v, want %v %v %v",
					d.ToolsWithheld, d.ToolsEnabled, d.ToolsForced, tt.withheld, tt.enabled, tt.forced)
			}
			if got := rw.Session.WithheldTools(); !slices.Equal(got, tt.withheld) {
				t.Errorf("session withheld %v", got)
			}
			if len(tt.withheld) > 0 || len(tt.forced) > 0 || len(tt.enabled) > 0 {
				checkOthersKept(t, tt.body, rw.Body, tt.upstream == nil)
			}
			// Deterministic: the same request gives the same bytes.
			dec2 := tt.dec
			again, err := rewriteWithChat(context.Background(), tt.body, snap, &dec2, RewriteOptions{Tools: &fakeGate{gated: tt.gated, deny: tt.deny}, NoTools: tt.noTools}, nil)
			if err != nil || !bytes.Equal(again.Body, rw.Body) {
				t.Fatalf("second rewrite differs: %v", err)
			}
		})
	}
}

// checkOthersKept asserts every top-level member but messages and tools is
// byte-identical (tool_choice and parallel_tool_calls may go with the tools
// when dropped is set).
func checkOthersKept(t *testing.T, in, out []byte, dropped bool) {
	t.Helper()
	others := func(b []byte) []string {
		var kv []string
		for _, m := range topMembers(t, b) {
			switch m.key {
			case "messages", "tools":
				continue
			case "tool_choice", "parallel_tool_calls":
				if dropped {
					continue
				}
			}
			kv = append(kv, m.key+"="+string(m.value))
		}
		return kv
	}
	if a, b := others(in), others(out); !slices.Equal(a, b) {
		t.Fatalf("members changed:\n%v\n%v", a, b)
	}
	if dropped {
		for _, k := range []string{`"tools"`, `"tool_choice"`, `"parallel_tool_calls"`} {
			if bytes.Contains(out, []byte(k)) {
				t.Fatalf("%s left in a request without tools: %s", k, out)
			}
		}
	}
}

// With nothing gated the rewrite is byte-identical to the golden files,
// whether the provider is no gate, a gate with an empty configuration, or
// one whose names no client tool has.
func TestToolGateNothingGatedIsByteIdentical(t *testing.T) {
	snap := fixture(t)
	for _, tc := range goldenCases() {
		want, err := os.ReadFile(filepath.Join("testdata", "golden", tc.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		in, err := os.ReadFile(filepath.Join("testdata", "requests", tc.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, gated := range [][]string{nil, {"Bash", "mcp_*", "run_shell_x"}} {
			opts := tc.opts
			opts.Tools = &fakeGate{inner: tc.opts.Tools, gated: gated}
			dec := tc.dec
			rw, err := rewriteWithChat(context.Background(), in, snap, &dec, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rw.Body, want) {
				t.Errorf("%s with gate %v: body differs from the golden file", tc.name, gated)
			}
			if d := rw.Decision; d.ToolsWithheld != nil || d.ToolsEnabled != nil || d.ToolsForced != nil {
				t.Errorf("%s: gating recorded %+v", tc.name, d)
			}
		}
	}
	// The golden client-tools request does gate when its tool is named.
	in, _ := os.ReadFile(filepath.Join("testdata", "requests", "client-tools.json"))
	rw, err := rewriteWithChat(context.Background(), in, snap, &Decision{}, RewriteOptions{Tools: &fakeGate{gated: []string{"run_*"}}}, nil)
	if err != nil || slices.Contains(toolNames(t, rw.Body), "run_shell") {
		t.Fatalf("run_shell not withheld: %v %s", err, rw.Body)
	}
}

// A skill the model loads through load_skill puts the client tools it
// enables back into the next round's tools, from the client's definitions.
func TestToolGateLoadSkillRestoresTools(t *testing.T) {
	snap := gateLibrary(t)
	body := gateRequest([]string{toolBash, toolWeather, toolFetch}, `,"tool_choice":"auto"`, "")
	rw, err := rewriteWithChat(context.Background(), body, snap, &Decision{}, RewriteOptions{Tools: &fakeGate{gated: []string{"bash", "WebFetch"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := rw.Session
	if got := toolNames(t, rw.Body); !slices.Equal(got, []string{"get_weather", "load_skill"}) {
		t.Fatalf("first round tools %v", got)
	}
	ctx := context.Background()
	round := func(in []byte, id, skill string) []byte {
		t.Helper()
		args := `{\"skill_id\":\"` + skill + `\"}`
		res := s.Call(ctx, id, ToolLoadSkill, json.RawMessage(`{"skill_id":"`+skill+`"}`))
		a := json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"load_skill","arguments":"` + args + `"}}]}`)
		next, err := rw.followUp(in, a, []ToolResult{res})
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	next := round(rw.Body, "c1", "plain-notes")
	if got := toolNames(t, next); !slices.Equal(got, []string{"get_weather", "load_skill"}) {
		t.Fatalf("a skill without allowed-tools restored %v", got)
	}
	next = round(next, "c2", "shell-helper")
	if got := toolNames(t, next); !slices.Equal(got, []string{"bash", "get_weather", "load_skill"}) {
		t.Fatalf("after loading shell-helper: %v", got)
	}
	if !strings.Contains(string(next), toolBash) {
		t.Fatalf("bash must come back byte for byte: %s", next)
	}
	if got := s.WithheldTools(); !slices.Equal(got, []string{"WebFetch"}) {
		t.Errorf("still withheld %v", got)
	}
	if got := s.EnabledTools(); !maps.Equal(got, map[string]string{"bash": "shell-helper"}) {
		t.Errorf("enabled %v", got)
	}
	// The decision handed out at the rewrite does not change.
	if !slices.Equal(rw.Decision.ToolsWithheld, []string{"bash", "WebFetch"}) || rw.Decision.ToolsEnabled != nil {
		t.Errorf("decision changed: %+v", rw.Decision)
	}
	// Routing state is unchanged: the server-side tools are still answered.
	if s.Handles("bash") || !s.Handles(ToolLoadSkill) {
		t.Error("a restored client tool must go back to the client")
	}
}

// Overrides.Session names the conversation: the id tier-3 tools receive
// (and so the output directory) differs for differently named conversations
// with identical openings, and stays the same across a named one's turns.
func TestSessionNamesConversation(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	ctx := context.Background()
	turn1 := chat(t, "system", "You help.", "user", "resize my images")
	turn2 := chat(t, "system", "You help.", "user", "resize my images", "assistant", "ok", "user", "smaller")
	conv := func(body []byte, session string) string {
		t.Helper()
		rw, err := rewriteChat(ctx, r, body, RewriteOptions{}, Overrides{Session: session})
		if err != nil {
			t.Fatal(err)
		}
		if rw.Prompt.Conversation != rw.Session.Conversation() {
			t.Fatalf("prompt and session disagree: %q %q", rw.Prompt.Conversation, rw.Session.Conversation())
		}
		return rw.Session.Conversation()
	}
	plain, a, b := conv(turn1, ""), conv(turn1, "alice-chat-1"), conv(turn1, "alice-chat-2")
	if plain != conversationID(upstreamMessages(t, turn1)) {
		t.Fatal("without a session the id must stay the opening's")
	}
	if a == b || a == plain || b == plain {
		t.Fatalf("named conversations share an id: %s %s %s", plain, a, b)
	}
	if conv(turn2, "alice-chat-1") != a || conv(turn1, "  alice-chat-1 ") != a {
		t.Fatal("a named conversation's id must not change between turns")
	}
	if conv(chat(t, "system", "You help.", "user", "other task"), "alice-chat-1") == a {
		t.Fatal("a reused name with another opening must not share the id")
	}
}

// FuzzToolGate: whatever the request, gating never panics and a rewrite it
// changes is valid JSON whose tools are a subset of the client's plus ours.
func FuzzToolGate(f *testing.F) {
	f.Add(string(gateRequest([]string{toolBash, toolWeather, toolFetch}, `,"tool_choice":"required"`, "")), "shell-helper")
	f.Add(string(gateRequest([]string{toolBash}, `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"bash"}}]}}`, "web-research")), "")
	f.Add(`{"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"bash"}},{"type":"custom"},null,1],"tool_choice":{"function":null}}`, "plain-notes")
	// Keys the gate once read case-insensitively or first-wins: a tool it
	// reported withheld was still sent under the upstream's reading.
	f.Add(`{"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"bash"}},{"function":{"name":"bash"},"Function":{"name":"y"}}]}`, "")
	f.Add(`{"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"bash"}},{"Type":"x","function":{"name":"bash"}}]}`, "")
	f.Add(`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"bash"}}],"tools":[{"type":"function","function":{"name":"bash"}}]}`, "")
	f.Add(`{"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"bash"}},{"function":{"name":"bash"},"function":{"name":"y"}}]}`, "")
	snap := gateLibrary(f)
	f.Fuzz(func(t *testing.T, body, selected string) {
		dec := &Decision{Selected: []string{selected}}
		rw, err := rewriteWithChat(context.Background(), []byte(body), snap, dec, RewriteOptions{Tools: &fakeGate{gated: []string{"bash", "Web*"}}}, nil)
		if err != nil {
			return
		}
		if !json.Valid(rw.Body) {
			t.Fatalf("invalid JSON: %s", rw.Body)
		}
		if _, err := parseRequest(rw.Body); err != nil {
			t.Fatalf("rewritten body does not parse: %v: %s", err, rw.Body)
		}
		sent := toolNames(t, rw.Body)
		for _, name := range rw.Decision.ToolsWithheld {
			if slices.Contains(sent, name) && name != ToolLoadSkill {
				t.Fatalf("withheld %s still sent: %s", name, rw.Body)
			}
		}
	})
}

// BenchmarkToolGate measures what gating adds to a rewrite: "off" has no
// gate, "nothing-gated" a gate none of the client's tools match (the
// default configuration's cost), "gated" withholds two of three tools and
// enables one through an auto-loaded skill.
func BenchmarkToolGate(b *testing.B) {
	snap := gateLibrary(b)
	body := gateRequest([]string{toolBash, toolWeather, toolFetch}, `,"tool_choice":"auto"`, "")
	for _, bc := range []struct {
		name string
		opts RewriteOptions
	}{
		{"off", RewriteOptions{}},
		{"nothing-gated", RewriteOptions{Tools: &fakeGate{gated: []string{"other_tool"}}}},
		{"gated", RewriteOptions{Tools: &fakeGate{gated: []string{"bash", "Web*"}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if g, ok := bc.opts.Tools.(*fakeGate); ok {
					g.asked = g.asked[:0]
				}
				if _, err := rewriteWithChat(ctx, body, snap, &Decision{Selected: []string{"shell-helper"}}, bc.opts, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
