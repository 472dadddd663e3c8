package responses

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
)

// benchRequest is a Codex-sized request (instructions and a few function
// tools) rendered with a catalog and load_skill, and the response object
// fields an upstream echoes for the rendered request.
func benchRequest(b *testing.B) (*Request, string) {
	b.Helper()
	instr := strings.Repeat("You are a coding agent. Follow the repository's conventions. ", 80)
	var tools []string
	for _, n := range []string{"shell", "apply_patch", "update_plan", "view_image"} {
		tools = append(tools, `{"type":"function","name":"`+n+`","description":"`+strings.Repeat("does things ", 20)+`","parameters":{"type":"object","properties":{"x":{"type":"string"}}},"strict":false}`)
	}
	body := `{"model":"m","stream":true,"instructions":` + string(wire.Quote(instr)) + `,"input":"make a pdf","tools":[` + strings.Join(tools, ",") + `]}`
	r, err := Parse([]byte(body))
	if err != nil {
		b.Fatal(err)
	}
	p := plan()
	p.Catalog = strings.Repeat("- demo/skill: does a thing with files\n", 60)
	p.CatalogJSON = wire.Quote(p.Catalog)
	sent, err := r.Render(p)
	if err != nil {
		b.Fatal(err)
	}
	q, _ := Parse(sent)
	echo := `"instructions":` + string(sent[q.instructions.Start:q.instructions.End]) + `,"tool_choice":"auto","tools":` + string(sent[q.tools.Start:q.tools.End])
	return r, echo
}

// BenchmarkResponsesStream translates one streamed answer of 1,000 text
// deltas whose response.created, .in_progress and .completed echo the
// rendered request. One op = one whole stream.
//
//	go test -run '^$' -bench Responses ./wire/responses
func BenchmarkResponsesStream(b *testing.B) {
	r, echo := benchRequest(b)
	resp := func(status, output, usage string) string {
		return `{"id":"resp_1","object":"response","status":"` + status + `",` + echo + `,"output":` + output + `,"usage":` + usage + `}`
	}
	events := []string{
		`{"type":"response.created","response":` + resp("in_progress", "[]", "null") + `}`,
		`{"type":"response.in_progress","response":` + resp("in_progress", "[]", "null") + `}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_0","role":"assistant","content":[]}}`,
	}
	for i := range 1000 {
		events = append(events, fmt.Sprintf(`{"type":"response.output_text.delta","output_index":0,"item_id":"msg_0","content_index":0,"delta":"tok%d "}`, i))
	}
	events = append(events,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_0","role":"assistant","content":[{"type":"output_text","text":"..."}]}}`,
		`{"type":"response.completed","response":`+resp("completed", `[{"type":"message","id":"msg_0"}]`, `{"input_tokens":5,"output_tokens":1000,"total_tokens":1005}`)+`}`)
	stream := sse(events...)
	mine := func(n string) bool { return n == "load_skill" }
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		out, end := runRound(r.NewStream(mine), false, stream)
		if end.Loop != nil || len(out) < len(stream)/2 {
			b.Fatalf("end %+v, %d bytes", end, len(out))
		}
	}
}

// BenchmarkResponsesFinal patches a JSON answer that echoes the rendered
// request, as the tool loop does for the client's answer of round 0.
func BenchmarkResponsesFinal(b *testing.B) {
	r, echo := benchRequest(b)
	raw := []byte(`{"id":"resp_1","object":"response","status":"completed",` + echo +
		`,"output":[{"type":"message","id":"msg_0","role":"assistant","content":[{"type":"output_text","text":"Done."}]}],"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}`)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Final(raw, 0, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
