package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSearchSkillsWholeNumberLimit: "limit": 20.0 (JSON Schema's integer
// allows it; Python hosts send it) was refused as not a whole number; 1e10
// is the most search_skills gives, 20.5 is still refused.
func TestSearchSkillsWholeNumberLimit(t *testing.T) {
	f := newFixture(t, false)
	cs := f.connect(t, nil)
	for _, tt := range []struct {
		limit   string
		isError bool
	}{
		{"20.0", false}, {"3.0", false}, {"50.0", false}, {"1e10", false}, {"2E0", false},
		{"20.5", true},
	} {
		res, text := call(t, cs, "search_skills", json.RawMessage(`{"query":"pdf","limit":`+tt.limit+`}`))
		if res.IsError != tt.isError || (!tt.isError && !strings.Contains(text, `"results":[{"id":`)) ||
			(tt.isError && !strings.Contains(text, `must be a whole number, got number `+tt.limit)) {
			t.Errorf("limit %s: isError=%v %s", tt.limit, res.IsError, text)
		}
	}
}
