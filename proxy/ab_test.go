package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/router"
)

func TestSplitterValidation(t *testing.T) {
	rw := newFakeRewriter()
	tests := []struct {
		name string
		cfg  ABConfig
		want string
	}{
		{"one arm", ABConfig{Arms: []Arm{{Name: "a", Percent: 100}}}, "at least two arms"},
		{"sum not 100", ABConfig{Arms: []Arm{{Name: "a", Percent: 50}, {Name: "b", Percent: 40}}}, "add up to 90"},
		{"duplicate", ABConfig{Arms: []Arm{{Name: "a", Percent: 50}, {Name: "a", Percent: 50}}}, "appears twice"},
		{"no name", ABConfig{Arms: []Arm{{Percent: 50}, {Name: "b", Percent: 50}}}, "has no name"},
		{"reserved", ABConfig{Arms: []Arm{{Name: "default", Percent: 50}, {Name: "b", Percent: 50}}}, "reserved"},
		{"negative", ABConfig{Arms: []Arm{{Name: "a", Percent: -10}, {Name: "b", Percent: 110}}}, "between 0 and 100"},
		{"bad strategy", ABConfig{Arms: []Arm{{Name: "a", Percent: 50, Strategy: "magic"}, {Name: "b", Percent: 50}}}, "unknown strategy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newSplitter(&tc.cfg, rw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestABAssignmentStableAndProportional(t *testing.T) {
	rwA, rwB := newFakeRewriter(), newFakeRewriter()
	s, err := newSplitter(&ABConfig{Arms: []Arm{
		{Name: "control", Percent: 70, Strategy: router.StrategyHybrid, Rewriter: rwA},
		{Name: "bm25", Percent: 30, Strategy: router.StrategyBM25, Rewriter: rwB},
	}}, newFakeRewriter())
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	const n = 20000
	for i := 0; i < n; i++ {
		h := http.Header{}
		h.Set("X-Session-Id", fmt.Sprintf("session-%d", i))
		a, label, err := s.pick(h, func() string { t.Fatal("key func called despite the header"); return "" })
		if err != nil {
			t.Fatal(err)
		}
		// Stable: the same session always lands on the same arm.
		for j := 0; j < 3; j++ {
			b, label2, _ := s.pick(h, nil)
			if b != a || label2 != label {
				t.Fatalf("session-%d moved from %s to %s", i, label, label2)
			}
		}
		counts[label]++
	}
	// Deterministic hash: the split is fixed; check it is near 70/30.
	if c := float64(counts["control"]) / n; c < 0.68 || c > 0.72 {
		t.Fatalf("control share %.3f, want about 0.70 (%v)", c, counts)
	}
	// A different seed reshuffles.
	s2, _ := newSplitter(&ABConfig{Seed: "other", Arms: []Arm{{Name: "control", Percent: 70}, {Name: "bm25", Percent: 30}}}, newFakeRewriter())
	moved := 0
	for i := 0; i < 1000; i++ {
		h := http.Header{}
		h.Set("X-Session-Id", fmt.Sprintf("session-%d", i))
		_, l1, _ := s.pick(h, nil)
		_, l2, _ := s2.pick(h, nil)
		if l1 != l2 {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("seed has no effect")
	}
}

func TestABThroughProxy(t *testing.T) {
	rwA, rwB := newFakeRewriter(), newFakeRewriter()
	h := newHarness(t, func(c *Config) {
		c.AB = &ABConfig{HashHeader: "x-user", Arms: []Arm{
			{Name: "control", Percent: 50, Rewriter: rwA},
			{Name: "lexical", Percent: 50, Strategy: router.StrategyBM25, Rewriter: rwB},
		}}
	})
	// The first user message decides when no header is sent: same conversation, same arm.
	arms := map[string]string{}
	for i := 0; i < 40; i++ {
		first := fmt.Sprintf("question %d", i%10)
		body := `{"model":"m","messages":[{"role":"user","content":"` + first + `"},{"role":"assistant","content":"a"},{"role":"user","content":"turn ` + fmt.Sprint(i) + `"}]}`
		resp, b := h.chat(body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		arm := resp.Header.Get(HeaderArm)
		if prev, ok := arms[first]; ok && prev != arm {
			t.Fatalf("conversation %q moved from %s to %s", first, prev, arm)
		}
		arms[first] = arm
	}
	seen := map[string]bool{}
	for _, a := range arms {
		seen[a] = true
	}
	if !seen["control"] || !seen["lexical"] {
		t.Fatalf("10 conversations all on one arm: %v", arms)
	}
	// The lexical arm routes with its own strategy.
	for _, ov := range rwB.overrides() {
		if ov.Strategy != router.StrategyBM25 {
			t.Fatalf("lexical arm got strategy %q", ov.Strategy)
		}
	}
	if len(rwA.overrides()) == 0 || len(rwB.overrides()) == 0 {
		t.Fatal("an arm's own rewriter was not used")
	}

	// Header hashing, explicit arm and explicit strategy.
	resp, _ := h.chat(simpleChat, map[string]string{"X-User": "alice"})
	alice := resp.Header.Get(HeaderArm)
	for i := 0; i < 5; i++ {
		resp, _ = h.chat(`{"model":"m","messages":[{"role":"user","content":"other `+fmt.Sprint(i)+`"}]}`, map[string]string{"X-User": "alice"})
		if resp.Header.Get(HeaderArm) != alice {
			t.Fatal("same user header, different arm")
		}
	}
	resp, _ = h.chat(simpleChat, map[string]string{HeaderArmIn: "lexical"})
	if resp.Header.Get(HeaderArm) != "lexical" {
		t.Fatalf("explicit arm: %v", resp.Header)
	}
	// An arm run with another strategy is counted as explicit, not as the arm.
	resp, _ = h.chat(simpleChat, map[string]string{HeaderArmIn: "lexical", HeaderStrategy: "keyword"})
	if resp.Header.Get(HeaderArm) != "explicit" || resp.Header.Get(HeaderStrategy) != "keyword" {
		t.Fatalf("arm with another strategy: %v", resp.Header)
	}
	resp, _ = h.chat(simpleChat, map[string]string{HeaderArmIn: "lexical", HeaderStrategy: "bm25"})
	if resp.Header.Get(HeaderArm) != "lexical" {
		t.Fatalf("arm with its own strategy: %v", resp.Header)
	}
	resp, _ = h.chat(simpleChat, map[string]string{HeaderStrategy: "bm25"})
	if resp.Header.Get(HeaderArm) != "lexical" || resp.Header.Get(HeaderStrategy) != "bm25" {
		t.Fatalf("strategy header should pick the arm using it: %v", resp.Header)
	}
	resp, _ = h.chat(simpleChat, map[string]string{HeaderStrategy: "keyword"})
	if resp.Header.Get(HeaderArm) != "explicit" || resp.Header.Get(HeaderStrategy) != "keyword" {
		t.Fatalf("explicit strategy: %v", resp.Header)
	}
	resp, _ = h.chat(simpleChat, map[string]string{HeaderStrategy: "control"})
	if resp.Header.Get(HeaderArm) != "control" || resp.Header.Get(HeaderStrategy) != "hybrid" {
		t.Fatalf("strategy header naming an arm: %v", resp.Header)
	}
	resp, b := h.chat(simpleChat, map[string]string{HeaderArmIn: "nope"})
	if resp.StatusCode != 400 {
		t.Fatalf("unknown arm: %d %s", resp.StatusCode, b)
	}

	// Arm labels reach logs and metrics.
	mustContain(t, h.logText(), `"arm":"lexical"`)
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), `skillrouter_requests_total{arm="lexical",method="POST",outcome="complete",path="/v1/chat/completions",status="200"}`)
	mustContain(t, string(m), `skillrouter_selected_skills_count{api="chat",arm="control"}`)
	// Latency by arm, the figure an A/B test of strategies compares.
	mustContain(t, string(m), `skillrouter_request_duration_seconds_count{arm="lexical",method="POST",path="/v1/chat/completions"}`)
	mustContain(t, string(m), `skillrouter_upstream_duration_seconds_count{arm="control",path="/v1/chat/completions"}`)
}

// A Responses conversation continued with previous_response_id sends only
// its new input: without the A/B header or a name for the conversation,
// each turn was hashed on its own input and changed arms. The key its
// conversation was first picked by now goes with each stored response; a
// conversation named with X-Skillrouter-Session is picked by that name.
func TestABStickyAcrossStoredTurns(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.AB = &ABConfig{Arms: []Arm{
			{Name: "control", Percent: 50, Rewriter: newFakeRewriter()},
			{Name: "lexical", Percent: 50, Strategy: router.StrategyBM25, Rewriter: newFakeRewriter()},
		}}
	})
	for c := 0; c < 4; c++ {
		prev, arm := "", ""
		for turn := 0; turn < 6; turn++ {
			id := fmt.Sprintf("resp_%d_%d", c, turn)
			h.up.Script(fakeai.Raw(200, "application/json", `{"id":"`+id+`","object":"response","status":"completed","output":[{"type":"message","id":"m","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`))
			body := `{"model":"m","input":"conversation ` + fmt.Sprint(c) + ` turn ` + fmt.Sprint(turn) + ` with its own words"}`
			if prev != "" {
				body = `{"model":"m","previous_response_id":"` + prev + `","input":"turn ` + fmt.Sprint(turn) + ` asks something else ` + fmt.Sprint(turn*7) + `"}`
			}
			resp, b := h.do("POST", "/v1/responses", body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			got := resp.Header.Get(HeaderArm)
			if arm != "" && got != arm {
				t.Fatalf("conversation %d moved from %s to %s at turn %d", c, arm, got, turn)
			}
			arm, prev = got, id
		}
	}
	// Named with X-Skillrouter-Session: the name picks, whatever the input.
	first := ""
	for i := 0; i < 6; i++ {
		resp, _ := h.do("POST", "/v1/responses", `{"model":"m","input":"unrelated `+fmt.Sprint(i*13)+`"}`, map[string]string{HeaderSession: "conv-42"})
		if got := resp.Header.Get(HeaderArm); first == "" {
			first = got
		} else if got != first {
			t.Fatalf("a named conversation moved from %s to %s", first, got)
		}
	}
}
