package chat

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/streamtest"
)

func chunks(events ...string) []byte {
	var b bytes.Buffer
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.Bytes()
}

// runRound runs one upstream round through s (see streamtest.RunRound).
func runRound(s *Stream, final bool, body []byte) (string, wire.RoundEnd) {
	return streamtest.RunRound(s, final, body)
}

func TestStreamTwoRounds(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(n string) bool { return n == "load_skill" })
	out1, end1 := runRound(s, false, chunks(
		`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"load_skill","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"skill_id\":\"x\"}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`[DONE]`))
	if end1.Loop == nil || len(end1.Loop.Calls) != 1 || strings.Contains(out1, "load_skill") || strings.Contains(out1, "[DONE]") {
		t.Fatalf("round 1: %+v\n%s", end1, out1)
	}
	out2, end2 := runRound(s, false, chunks(
		`{"id":"c2","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"c2","choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":null}]}`,
		`{"id":"c2","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`[DONE]`))
	if end2.Loop != nil || end2.Incomplete {
		t.Fatalf("round 2: %+v", end2)
	}
	if n := strings.Count(out1+out2, `"role"`); n != 1 {
		t.Errorf("the client got %d role deltas, want 1:\n%s%s", n, out1, out2)
	}
	if strings.Contains(out2, `"c2"`) || !strings.Contains(out2, "Done.") || !strings.HasSuffix(out2, "data: [DONE]\n\n") {
		t.Errorf("round 2 relayed as:\n%s", out2)
	}
}

func TestStreamIncomplete(t *testing.T) {
	r, _ := Parse([]byte(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
	s := r.NewStream(func(string) bool { return false })
	_, end := runRound(s, false, chunks(`{"id":"c1","choices":[{"index":0,"delta":{"content":"Hal"},"finish_reason":null}]}`))
	if !end.Incomplete {
		t.Fatal("a stream without finish_reason or [DONE] must be incomplete")
	}
}
