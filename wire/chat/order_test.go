package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

func envelopes(texts ...string) []wire.Envelope {
	var out []wire.Envelope
	for _, t := range texts {
		out = append(out, wire.Envelope{ID: t, Text: t, JSON: wire.Quote(t)})
	}
	return out
}

// With MergeEnvelopes the envelopes go inside the last user message, for an
// upstream that refuses them as messages of their own (mistral-common:
// "Unexpected role 'user' after role 'tool'"; strict chat templates: roles
// must alternate), whatever the envelope role; every other byte is as sent.
func TestRenderMergedEnvelopes(t *testing.T) {
	plan := func(role string, envs ...string) *wire.Plan {
		return &wire.Plan{Catalog: "C", CatalogJSON: wire.Quote("C"), EnvelopeRole: role, Changed: true, Envelopes: envelopes(envs...)}
	}
	for _, c := range []struct {
		name, body, want string
		plan             *wire.Plan
	}{
		{"string content", `{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}]}`,
			`{"messages":[{"role":"system","content":"S\n\nC"},{"role":"user","content":"q\n\nE"}]}`, plan("user", "E")},
		{"array content",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"q"},{"type":"image_url","image_url":{"url":"data:x"}}]}]}`,
			`{"messages":[{"role":"system","content":"C"},{"role":"user","content":[{"type":"text","text":"q"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"E"},{"type":"text","text":"F"}]}]}`,
			plan("user", "E", "F")},
		{"a tool run after the last user message",
			`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a.txt"}]}`,
			`{"messages":[{"role":"system","content":"S\n\nC"},{"role":"user","content":"q\n\nE"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a.txt"}]}`,
			plan("user", "E")},
		{"the last of several user messages",
			`{"messages":[{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user", "content" : "q2" ,"name":"u"}]}`,
			`{"messages":[{"role":"system","content":"C"},{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user", "content" : "q2\n\nE\n\nF\n\nG" ,"name":"u"}]}`,
			plan("user", "E", "F", "G")},
		{"a trailing prefix stays last",
			`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"},{"role":"assistant","content":"x = ","prefix":true}]}`,
			`{"messages":[{"role":"system","content":"S\n\nC"},{"role":"user","content":"q\n\nE"},{"role":"assistant","content":"x = ","prefix":true}]}`,
			plan("user", "E")},
		{"the envelope role system", `{"messages":[{"role":"developer","content":"S"},{"role":"user","content":"q"}]}`,
			`{"messages":[{"role":"developer","content":"S\n\nC"},{"role":"user","content":"q\n\nE"}]}`, plan("system", "E")},
		{"escapes kept", `{"messages":[{"role":"user","content":"q\u00e9\n"}]}`,
			`{"messages":[{"role":"system","content":"C"},{"role":"user","content":"q\u00e9\n\n\n\u003cE\u003e \"x\""}]}`,
			&wire.Plan{Catalog: "C", CatalogJSON: wire.Quote("C"), EnvelopeRole: "user", Changed: true,
				Envelopes: []wire.Envelope{{ID: "e", JSON: []byte(`"\u003cE\u003e \"x\""`)}}}},
		{"empty content", `{"messages":[{"role":"user","content":""}]}`,
			`{"messages":[{"role":"system","content":"C"},{"role":"user","content":"E\n\nF"}]}`, plan("user", "E", "F")},
		{"a system message after the user's", `{"messages":[{"role":"user","content":"q"},{"role":"system","content":"S"}]}`,
			`{"messages":[{"role":"user","content":"q\n\nE"},{"role":"system","content":"S\n\nC"}]}`, plan("user", "E")},
		{"no user message: messages of their own", `{"messages":[{"role":"system","content":"S"},{"role":"assistant","content":"a"}]}`,
			`{"messages":[{"role":"system","content":"S\n\nC"},{"role":"assistant","content":"a"},{"role":"user","content":"E"}]}`, plan("user", "E")},
		{"no envelope", `{"messages":[{"role":"user","content":"q"}]}`,
			`{"messages":[{"role":"system","content":"C"},{"role":"user","content":"q"}]}`, plan("user")},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			r.MergeEnvelopes()
			out, err := r.Render(c.plan)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Errorf("rendered\n%s\nwant\n%s", out, c.want)
			}
			if !json.Valid(out) {
				t.Errorf("not JSON: %s", out)
			}
			again, _ := Parse([]byte(c.body))
			again.MergeEnvelopes()
			if out2, _ := again.Render(c.plan); string(out2) != string(out) {
				t.Errorf("rendered again\n%s\nfirst\n%s", out2, out)
			}
		})
	}
}

// The default placement is untouched: WithEnvelopesMerged renders the
// merged one once, as MergeEnvelopes before Render would have, keeping the
// ask for usage while it stands.
func TestWithEnvelopesMerged(t *testing.T) {
	body := `{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`
	plan := &wire.Plan{EnvelopeRole: "user", Changed: true, Envelopes: envelopes("E"),
		Tools: wire.ToolSet{Server: []wire.ToolSpec{{Name: "load_skill", Parameters: json.RawMessage(`{"type":"object"}`)}}}}
	r, _ := Parse([]byte(body))
	first, err := r.Render(plan)
	if err != nil {
		t.Fatal(err)
	}
	const separate = `{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"E"}]`
	if !contains(first, separate) {
		t.Fatalf("default placement changed: %s", first)
	}
	merged, ok := r.WithEnvelopesMerged()
	if !ok {
		t.Fatal("no merged placement")
	}
	want, _ := Parse([]byte(body))
	want.MergeEnvelopes()
	wantOut, _ := want.Render(plan)
	if string(merged) != string(wantOut) {
		t.Errorf("merged\n%s\nwant\n%s", merged, wantOut)
	}
	if !contains(merged, `{"role":"user","content":"q\n\nE"}`) || !contains(merged, `"stream_options":{"include_usage":true}`) {
		t.Errorf("merged %s", merged)
	}
	if _, ok := r.WithEnvelopesMerged(); ok {
		t.Error("merged twice")
	}
	if r.EnvelopeOrderRefused([]byte(`Unexpected role 'user' after role 'tool'`)) {
		t.Error("a merged request's refusal taken for the placement's")
	}

	// Without the ask (taken off after a refusal of it), none comes back.
	r, _ = Parse([]byte(body))
	r.Render(plan)
	r.WithoutUsageAsk(first)
	merged, _ = r.WithEnvelopesMerged()
	if contains(merged, "stream_options") {
		t.Errorf("the ask came back: %s", merged)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

// A refusal is taken for one of the envelopes' place only when it names a
// role-order rule the client's own messages keep, and the rewrite put an
// envelope in a message of its own with a user message to merge it into.
func TestEnvelopeOrderRefused(t *testing.T) {
	const (
		mistral = `{"object":"error","message":"Unexpected role 'user' after role 'tool'","type":"invalid_request_message_order","param":null,"code":"3230"}`
		vllm    = `{"error":{"message":"Unexpected role 'user' after role 'tool'","type":"BadRequestError","param":null,"code":400}}`
		system  = `{"object":"error","message":"Unexpected role 'system' after role 'tool'","type":"invalid_request_message_order","param":null,"code":"3230"}`
		tmpl    = `{"object":"error","message":"Conversation roles must alternate user/assistant/user/assistant/...","type":"BadRequestError","param":null,"code":400}`
		gemma   = `{"error":{"message":"Conversation roles must alternate user/model/user/model/...","type":"BadRequestError","param":null,"code":400}}`
		other   = `{"error":{"message":"This model's maximum context length is 32768 tokens.","type":"BadRequestError","param":null,"code":400}}`
		echoed  = `{"detail":[{"type":"missing","loc":["body","model"],"msg":"Field required","input":{"messages":[{"role":"user","content":"Unexpected role"}]}}]}`
	)
	toolStep := `{"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`
	plain := `{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}]}`
	for _, c := range []struct {
		name, body, refusal string
		envs                []string
		want                bool
	}{
		{"Mistral", toolStep, mistral, []string{"E"}, true},
		{"vLLM", toolStep, vllm, []string{"E"}, true},
		{"a system envelope", toolStep, system, []string{"E"}, true},
		{"text", toolStep, "Unexpected role 'user' after role 'tool'", []string{"E"}, true},
		{"a chat template", plain, tmpl, []string{"E"}, true},
		{"Gemma's template", plain, gemma, []string{"E"}, true},
		{"another reason", toolStep, other, []string{"E"}, false},
		{"echoed", toolStep, echoed, []string{"E"}, false},
		{"empty", toolStep, "", []string{"E"}, false},
		{"no envelope added", toolStep, mistral, nil, false},
		{"no user message", `{"messages":[{"role":"system","content":"S"},{"role":"assistant","content":"a"}]}`, mistral, []string{"E"}, false},
		{"the client's own order", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"},{"role":"user","content":"q2"}]}`,
			mistral, []string{"E"}, false},
		{"the client's own alternation", `{"messages":[{"role":"user","content":"q"},{"role":"user","content":"q2"}]}`, tmpl, []string{"E"}, false},
		{"alternation past a tool run", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}]}`,
			tmpl, []string{"E"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Render(&wire.Plan{EnvelopeRole: "user", Changed: true, Envelopes: envelopes(c.envs...)}); err != nil {
				t.Fatal(err)
			}
			if got := r.EnvelopeOrderRefused([]byte(c.refusal)); got != c.want {
				t.Errorf("EnvelopeOrderRefused = %v, want %v", got, c.want)
			}
		})
	}
}
