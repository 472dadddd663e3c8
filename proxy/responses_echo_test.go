package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/wire"
)

// echoedParams are the request parameters a Responses response object
// echoes that the proxy's rewrite can change, with what the API echoes for
// a request without them.
var echoedParams = []struct{ key, def string }{
	{"instructions", "null"}, {"tools", "[]"}, {"tool_choice", `"auto"`}, {"parallel_tool_calls", "true"},
}

// checkEcho fails unless the response object resp echoes the client's
// request body: each parameter as sent (compacted), else the API's default.
func checkEcho(t *testing.T, name, body, resp string) {
	t.Helper()
	for _, p := range echoedParams {
		want := p.def
		if v := gjson.Get(body, p.key); v.Exists() {
			want = v.Raw
		}
		got := gjson.Get(resp, p.key)
		if !got.Exists() {
			t.Errorf("%s: the response object has no %s: %.300s", name, p.key, resp)
			continue
		}
		var w, g bytes.Buffer
		_ = json.Compact(&w, []byte(want))
		_ = json.Compact(&g, []byte(got.Raw))
		if w.String() != g.String() {
			t.Errorf("%s: %s = %.300s, want the client's %s", name, p.key, g.String(), w.String())
		}
	}
}

// responseObjects returns the response object of each event of a stream
// that carries one, and the events' types.
func responseObjects(t *testing.T, body []byte) (types, objs []string) {
	t.Helper()
	for _, d := range sseData(t, body) {
		if r := gjson.Get(d, "response"); r.Exists() {
			types = append(types, gjson.Get(d, "type").Str)
			objs = append(objs, r.Raw)
		}
	}
	return types, objs
}

// withholding makes the fake rewriter gate client tools: Withheld (by
// index) go, and with noServer the proxy adds no tool of its own.
type withholding struct {
	*fakeRewriter
	withheld []int
	noServer bool
}

func (w *withholding) Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*Rewrite, error) {
	rw, err := w.fakeRewriter.Rewrite(ctx, req, ov)
	if err == nil && rw.Plan != nil {
		rw.Plan.Tools.Withheld = w.withheld
		if w.noServer {
			rw.Plan.Tools.Server = nil
		}
	}
	return rw, err
}

// TestResponsesAnswerEchoesTheClientsRequest: the response object echoes
// the request it answers, and upstream that is the proxy's (its catalog
// in instructions, load_skill in tools, a gated tool left out). The client
// reads its own request back: in the JSON answer and in every streamed
// event that carries the response object, with no tool round and when the
// answer comes from a hidden round's follow-up.
func TestResponsesAnswerEchoesTheClientsRequest(t *testing.T) {
	shell := `{"type":"function","name":"shell","description":"Run a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}`
	bash := `{"type":"function","name":"bash","parameters":{"type":"object","properties":{}}}`
	tests := []struct {
		name     string
		fields   string // the body's parameters beside model, stream and input
		withheld []int
		noServer bool
	}{
		{"instructions and tools", `"instructions":"Be brief.\u00e9","tools":[` + shell + `,{"type":"web_search"}],"tool_choice":"auto"`, nil, false},
		{"no instructions, no tools", `"store":false`, nil, false},
		{"null instructions", `"instructions":null`, nil, false},
		{"a gated tool withheld", `"instructions":"s","tools":[` + bash + `,` + shell + `]`, []int{0}, false},
		{"every tool withheld", `"tools":[` + bash + `],"tool_choice":"none","parallel_tool_calls":false`, []int{0}, true},
	}
	for _, tt := range tests {
		for _, rounds := range []int{0, 1} {
			if rounds > 0 && tt.noServer {
				continue // no load_skill to call
			}
			for _, stream := range []bool{false, true} {
				name := tt.name + "/rounds=" + strconv.Itoa(rounds) + "/stream=" + strconv.FormatBool(stream)
				h := newHarness(t, func(c *Config) {
					c.Rewriter = &withholding{fakeRewriter: c.Rewriter.(*fakeRewriter), withheld: tt.withheld, noServer: tt.noServer}
				})
				if rounds > 0 {
					h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_1", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}))
				}
				h.up.Script(fakeai.Reply(fakeai.Turn{Content: "Done."}))
				body := `{"model":"m","stream":` + strconv.FormatBool(stream) + `,"input":"make me a pdf",` + tt.fields + `}`
				resp, b := h.do("POST", "/v1/responses", body, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("%s: status %d: %s", name, resp.StatusCode, b)
				}
				reqs := h.up.Requests()
				if len(reqs) != rounds+1 || !strings.Contains(reqs[rounds].Instructions(), "CATALOG") {
					t.Fatalf("%s: %d upstream requests, the last without the catalog", name, len(reqs))
				}
				if !stream {
					checkEcho(t, name, body, string(b))
					continue
				}
				types, objs := responseObjects(t, b)
				if len(objs) != 3 || types[2] != "response.completed" {
					t.Fatalf("%s: events with a response object: %v\n%s", name, types, b)
				}
				for i, o := range objs {
					checkEcho(t, name+"/"+types[i], body, o)
				}
			}
		}
	}
}

// TestResponsesFailedEventEchoesTheClientsRequest: a stream that ends in
// response.failed carries the response object too.
func TestResponsesFailedEventEchoesTheClientsRequest(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "Done and more.", Fail: &fakeai.Failure{After: 4, Message: "overloaded"}}))
	body := `{"model":"m","stream":true,"instructions":"Be brief.","tools":[{"type":"function","name":"shell"}],"input":"make me a pdf"}`
	resp, b := h.do("POST", "/v1/responses", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	types, objs := responseObjects(t, b)
	if len(objs) != 3 || types[2] != "response.failed" {
		t.Fatalf("events with a response object: %v\n%s", types, b)
	}
	for i, o := range objs {
		checkEcho(t, types[i], body, o)
	}
}
