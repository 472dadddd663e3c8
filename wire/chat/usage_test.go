package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// toolPlan is a plan that offers the proxy's load_skill.
func toolPlan() *wire.Plan {
	return &wire.Plan{Changed: true, EnvelopeRole: "user",
		Tools: wire.ToolSet{Server: []wire.ToolSpec{{Name: "load_skill", Parameters: json.RawMessage(`{"type":"object"}`)}}}}
}

// A stream carries usage only when asked (stream_options.include_usage),
// and without it the proxy cannot take a hidden round's output from the
// client's cap (wire.Budget). When the client capped its answer and the
// proxy may run hidden rounds, the rewrite asks for usage itself, keeping
// the client's other stream_options, and nowhere else.
func TestRenderAsksForUsage(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, c := range []struct {
		name, body string
		plan       *wire.Plan
		want       string // stream_options as sent upstream ("" for none)
		asked      bool
	}{
		{"capped stream", `{"stream":true,"max_tokens":100,` + msgs + `}`, toolPlan(), `{"include_usage":true}`, true},
		{"max_completion_tokens", `{"stream":true,"max_completion_tokens":100,` + msgs + `}`, toolPlan(), `{"include_usage":true}`, true},
		{"other stream_options kept", `{"stream":true,"stream_options":{"continuous_usage_stats":true},"max_tokens":100,` + msgs + `}`, toolPlan(),
			`{"continuous_usage_stats":true,"include_usage":true}`, true},
		{"include_usage false", `{"stream":true,"stream_options":{"include_usage":false},"max_tokens":100,` + msgs + `}`, toolPlan(), `{"include_usage":true}`, true},
		{"stream_options null", `{"stream":true,"stream_options":null,"max_tokens":100,` + msgs + `}`, toolPlan(), `{"include_usage":true}`, true},
		{"the client asked", `{"stream":true,"stream_options":{"include_usage":true},"max_tokens":100,` + msgs + `}`, toolPlan(), `{"include_usage":true}`, false},
		{"no cap", `{"stream":true,` + msgs + `}`, toolPlan(), ``, false},
		{"cap null", `{"stream":true,"max_tokens":null,` + msgs + `}`, toolPlan(), ``, false},
		{"not streamed", `{"max_tokens":100,` + msgs + `}`, toolPlan(), ``, false},
		{"no proxy tools", `{"stream":true,"max_tokens":100,` + msgs + `}`,
			&wire.Plan{Changed: true, EnvelopeRole: "user", Catalog: "C", CatalogJSON: wire.Quote("C")}, ``, false},
		{"plan unchanged", `{"stream":true,"max_tokens":100,` + msgs + `}`, &wire.Plan{}, ``, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Render(c.plan)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(out); err != nil {
				t.Fatalf("rendered body does not parse: %v\n%s", err, out)
			}
			if got := gjson.GetBytes(out, "stream_options").Raw; got != c.want && !(c.want == "" && gjson.GetBytes(out, "stream_options").Type == gjson.Null) {
				t.Errorf("stream_options %s, want %s\n%s", got, c.want, out)
			}
			if r.AskedUsage() != c.asked {
				t.Errorf("AskedUsage %v, want %v", r.AskedUsage(), c.asked)
			}
			// The proxy's addition comes off again byte for byte (an upstream
			// that refuses stream_options gets the request as before).
			back, ok := r.WithoutUsageAsk(out)
			if ok != c.asked {
				t.Fatalf("WithoutUsageAsk %v, want %v", ok, c.asked)
			}
			if !ok {
				return
			}
			want := renderedWithoutAsk(t, c.body, c.plan)
			if string(back) != want {
				t.Errorf("without the ask\n%s\nwant\n%s", back, want)
			}
			if r.AskedUsage() {
				t.Error("still asked after WithoutUsageAsk")
			}
		})
	}
}

// renderedWithoutAsk is body rendered with p as it was before the proxy
// asked for usage: what goes upstream once the ask is taken off again.
func renderedWithoutAsk(t *testing.T, body string, p *wire.Plan) string {
	t.Helper()
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := r.render(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// When the proxy asked for usage and the client did not, the client's
// stream is what it would be without the ask: no usage chunk, no usage
// member on any chunk (Mistral and Gemini's endpoint put it on the finish
// chunk, vLLM's continuous_usage_stats on every chunk), while the proxy
// still reads it to take each round's output from the client's cap.
func TestStreamHidesUsageTheProxyAskedFor(t *testing.T) {
	ch := func(delta, finish, usage string) string {
		s := `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]`
		if usage != "" {
			s += `,"usage":` + usage
		}
		return s + `}`
	}
	usageOnly := func(u string) string {
		return `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":` + u + `}`
	}
	const u1 = `{"prompt_tokens":50,"completion_tokens":40,"total_tokens":90}`
	const u2 = `{"prompt_tokens":60,"completion_tokens":20,"total_tokens":80}`
	load := `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]}`
	for _, c := range []struct {
		name   string
		rounds [][]string // the first loops
	}{
		{"usage chunk (OpenAI)", [][]string{
			{ch(`{"role":"assistant","content":null}`, "null", "null"), ch(load, "null", "null"), ch(`{}`, `"tool_calls"`, "null"), usageOnly(u1)},
			{ch(`{"role":"assistant","content":""}`, "null", "null"), ch(`{"content":"Done."}`, "null", "null"), ch(`{}`, `"stop"`, "null"), usageOnly(u2)}}},
		{"usage on the finish chunk (Mistral)", [][]string{
			{ch(`{"role":"assistant","content":""}`, "null", ""), ch(load, "null", ""), ch(`{}`, `"tool_calls"`, u1)},
			{ch(`{"role":"assistant","content":""}`, "null", ""), ch(`{"content":"Done."}`, "null", ""), ch(`{}`, `"stop"`, u2)}}},
		{"usage on every chunk (vLLM continuous_usage_stats)", [][]string{
			{ch(`{"role":"assistant","content":""}`, "null", `{"prompt_tokens":50,"completion_tokens":0,"total_tokens":50}`),
				ch(load, "null", `{"prompt_tokens":50,"completion_tokens":39,"total_tokens":89}`), ch(`{}`, `"tool_calls"`, u1), usageOnly(u1)},
			{ch(`{"role":"assistant","content":""}`, "null", `{"prompt_tokens":60,"completion_tokens":0,"total_tokens":60}`),
				ch(`{"content":"Done."}`, "null", `{"prompt_tokens":60,"completion_tokens":19,"total_tokens":79}`), ch(`{}`, `"stop"`, u2), usageOnly(u2)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := Parse([]byte(`{"stream":true,"max_tokens":100,"messages":[{"role":"user","content":"x"}]}`))
			if _, err := r.Render(toolPlan()); err != nil || !r.AskedUsage() {
				t.Fatalf("the rewrite did not ask for usage: %v", err)
			}
			s := r.NewStream(func(n string) bool { return n == "load_skill" })
			var out string
			for i, evs := range c.rounds {
				o, end := runRound(s, false, chunks(append(evs, `[DONE]`)...))
				out += o
				if (end.Loop != nil) != (i == 0) {
					t.Fatalf("round %d: %+v", i, end)
				}
				if end.Loop != nil && end.Loop.Output != 40 {
					t.Errorf("round %d used %d output tokens, want 40 from its usage", i, end.Loop.Output)
				}
			}
			if strings.Contains(out, `"usage"`) || strings.Contains(out, `"choices":[]`) {
				t.Errorf("the client, which did not ask for usage, got it:\n%s", out)
			}
			if !strings.Contains(out, "Done.") || !strings.Contains(out, `"finish_reason":"stop"`) || !strings.HasSuffix(out, "data: [DONE]\n\n") {
				t.Errorf("the client got:\n%s", out)
			}
		})
	}
}

// The usage the proxy asked for still ends a loop at the client's cap: the
// finish goes out "length", without usage.
func TestStreamHiddenUsageStillSpendsTheCap(t *testing.T) {
	for _, onFinish := range []bool{false, true} {
		r, _ := Parse([]byte(`{"stream":true,"max_completion_tokens":40,"messages":[{"role":"user","content":"x"}]}`))
		if _, err := r.Render(toolPlan()); err != nil {
			t.Fatal(err)
		}
		s := r.NewStream(func(n string) bool { return n == "load_skill" })
		const u = `{"prompt_tokens":50,"completion_tokens":40,"total_tokens":90}`
		evs := []string{`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":"{}"}}]},"finish_reason":null}]}`}
		if onFinish {
			evs = append(evs, `{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":`+u+`}`)
		} else {
			evs = append(evs, `{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, `{"id":"c1","choices":[],"usage":`+u+`}`)
		}
		out, end := runRound(s, false, chunks(append(evs, `[DONE]`)...))
		if end.Loop != nil || !strings.Contains(out, `"finish_reason":"length"`) {
			t.Errorf("usage on the finish chunk %v: the loop went on past the cap: %+v\n%s", onFinish, end, out)
		}
		if strings.Contains(out, `"usage"`) {
			t.Errorf("usage on the finish chunk %v: the client got usage:\n%s", onFinish, out)
		}
	}
}

// A refusal names the proxy's ask for usage when it names stream_options
// or include_usage anywhere but in what it echoes of the request (pydantic
// and FastAPI put the refused value, or the whole body, in "input"), and
// only a request that asked can have its ask refused.
func TestUsageAskRefused(t *testing.T) {
	for _, c := range []struct {
		name, refusal string
		want          bool
	}{
		{"message", `{"error":{"message":"Unrecognized request argument supplied: stream_options","param":null}}`, true},
		{"param", `{"error":{"message":"Unknown parameter.","param":"stream_options.include_usage"}}`, true},
		{"loc", `{"detail":[{"type":"extra_forbidden","loc":["body","stream_options"],"input":{"include_usage":true}}]}`, true},
		{"a key", `{"stream_options":["Unknown field."]}`, true},
		{"other case", `{"message":"Stream_Options is not supported"}`, true},
		{"text", `unrecognized argument include_usage`, true},
		{"text cut short", `{"error":{"message":"Unrecognized request argument supplied: stream_options`, true},
		{"echoed only", `{"detail":[{"type":"missing","loc":["body","model"],"input":{"stream_options":{"include_usage":true}}}]}`, false},
		{"echoed in input_value", `{"errors":[{"msg":"bad","input_value":"stream_options"}]}`, false},
		{"another parameter", `{"error":{"message":"max_tokens is too large","param":"max_tokens"}}`, false},
		{"stream, not stream_options", `{"error":{"message":"stream is not supported"}}`, false},
		{"empty", ``, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(`{"stream":true,"max_tokens":100,"messages":[{"role":"user","content":"x"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			if r.UsageAskRefused([]byte(c.refusal)) {
				t.Error("refused an ask the request did not make")
			}
			if _, err := r.Render(toolPlan()); err != nil || !r.AskedUsage() {
				t.Fatalf("the request did not ask: %v", err)
			}
			if got := r.UsageAskRefused([]byte(c.refusal)); got != c.want {
				t.Errorf("UsageAskRefused %v, want %v", got, c.want)
			}
		})
	}
}
