package router

import (
	"context"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// TestDecodeToolArgsWholeNumbers: JSON Schema's integer allows 20.0 and
// 1e10, and Python hosts and models send them; DecodeToolArgs refused them
// ("must be a whole number, got number 20.0"). A whole number fills an
// integer field, one out of its range is the nearest bound (tools clamp
// their own ranges); a fraction is still refused.
func TestDecodeToolArgsWholeNumbers(t *testing.T) {
	type args struct {
		Limit *int    `json:"limit"`
		Small int8    `json:"small"`
		Count uint16  `json:"count"`
		Ratio float64 `json:"ratio"`
		Query string  `json:"query"`
		Inner struct {
			N int `json:"n"`
		} `json:"inner"`
	}
	for _, tt := range []struct {
		raw     string
		limit   int
		small   int8
		count   uint16
		inner   int
		ratio   float64
		wantErr string
	}{
		{raw: `{"limit":20}`, limit: 20},
		{raw: `{"limit":20.0}`, limit: 20},
		{raw: `{"limit":3.0,"query":"pdf"}`, limit: 3},
		{raw: `{"limit":50.00}`, limit: 50},
		{raw: `{"limit":1e10}`, limit: 1e10},
		{raw: `{"limit":2E1}`, limit: 20},
		{raw: `{"limit":-0.0}`, limit: 0},
		{raw: `{"limit":1e300}`, limit: 1<<63 - 1},
		{raw: `{"limit":-1e400}`, limit: -1 << 63},
		{raw: `{"limit":99999999999999999999}`, limit: 1<<63 - 1},
		{raw: `{"small":300.0,"count":-2.0,"limit":4.0}`, limit: 4, small: 127, count: 0},
		{raw: `{"small":-1e3,"count":7e4}`, small: -128, count: 65535},
		{raw: `{"inner":{"n":6.0},"ratio":2.5}`, inner: 6, ratio: 2.5},
		{raw: `"{\"limit\":8.0}"`, limit: 8}, // double-encoded
		{raw: `{"limit":20.5}`, wantErr: `argument "limit" must be a whole number, got number 20.5`},
		{raw: `{"limit":1e-3}`, wantErr: `argument "limit" must be a whole number, got number 1e-3`},
		{raw: `{"limit":3.0,"small":1.5}`, wantErr: `argument "small" must be a whole number, got number 1.5`},
		{raw: `{"limit":"20"}`, wantErr: `argument "limit" must be a whole number, got string`},
		// Whole by the digits, not by the float64 they round to.
		{raw: `{"limit":1e-400}`, wantErr: `argument "limit" must be a whole number, got number 1e-400`},
		{raw: `{"limit":20.000000000000001}`, wantErr: `argument "limit" must be a whole number, got number 20.000000000000001`},
		{raw: `{"limit":0.5e1}`, limit: 5},
		{raw: `{"limit":1234.5e1}`, limit: 12345},
		{raw: `{"limit":0e-999}`, limit: 0},
		{raw: `{"limit":1e99999999999999999999}`, limit: 1<<63 - 1},
		{raw: `{"limit":1e-99999999999999999999}`, wantErr: `argument "limit" must be a whole number, got number 1e-99999999999999999999`},
	} {
		var a args
		err := DecodeToolArgs(json.RawMessage(tt.raw), &a)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s: error %v, want %q", tt.raw, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.raw, err)
			continue
		}
		got := 0
		if a.Limit != nil {
			got = *a.Limit
		}
		if got != tt.limit || a.Small != tt.small || a.Count != tt.count || a.Inner.N != tt.inner || a.Ratio != tt.ratio {
			t.Errorf("%s: decoded %+v (limit %d)", tt.raw, a, got)
		}
	}
}

// limitSearch records the limits search_skills asks for.
type limitSearch struct{ limits []int }

func (l *limitSearch) Search(_ context.Context, _ string, limit int) []Scored {
	l.limits = append(l.limits, limit)
	return nil
}

// TestSearchSkillsWholeNumberLimit: search_skills takes "limit": 20.0 as
// 20, and 1e10 as the most it gives (the range's nearest bound).
func TestSearchSkillsWholeNumberLimit(t *testing.T) {
	for _, tt := range []struct {
		limit string
		asked int // the session asks for 4 more than the limit (disabled skills are skipped)
	}{
		{"20.0", SearchMaxLimit + 4},
		{"3.0", 3 + 4},
		{"50.0", SearchMaxLimit + 4},
		{"1e10", SearchMaxLimit + 4},
		{"-1e10", 1 + 4},
	} {
		ls := &limitSearch{}
		rw := rewriteFixture(t, chat(t, "user", "db"), Decision{}, RewriteOptions{CatalogBudgetTokens: 200}, ls)
		res := rw.Session.Call(context.Background(), "c", ToolSearchSkills, json.RawMessage(`{"query":"pdf","limit":`+tt.limit+`}`))
		if res.Failed || strings.Contains(res.Content, `"error"`) || len(ls.limits) != 1 || ls.limits[0] != tt.asked {
			t.Errorf("limit %s: searched %v, want %d: %s", tt.limit, ls.limits, tt.asked, res.Content)
		}
	}
}

// TestToolAnswersQuoteLongInputsCut: search_skills gave a 5 MB query back
// whole, load_skill a 100 KB id twice, DecodeToolArgs a 100 KB number:
// what a call sent is quoted cut to 200 bytes (wire.Clip), in the proxy's
// answers as in the MCP server's (the same code), and a cut answer is
// still known as the tool's own (IsToolResult).
func TestToolAnswersQuoteLongInputsCut(t *testing.T) {
	long := strings.Repeat("ab/", 40<<10)
	rw := rewriteFixture(t, chat(t, "user", "db"), Decision{}, RewriteOptions{CatalogBudgetTokens: 200}, &fakeSearch{hits: []Scored{{ID: "sql-review"}}})
	for _, tt := range []struct {
		tool, args, want string
	}{
		{ToolSearchSkills, `{"query":"` + long + `"}`, `"results":[{"id":"sql-review"`},
		{ToolLoadSkill, `{"skill_id":"` + long + `"}`, `reason="not_found"`},
		{ToolSearchSkills, `{"query":"q","limit":1.` + strings.Repeat("5", 100<<10) + `}`, `must be a whole number, got number 1.555`},
	} {
		res := rw.Session.Call(context.Background(), "c", tt.tool, json.RawMessage(tt.args))
		if len(res.Content) > 1500 || !strings.Contains(res.Content, tt.want) || !strings.Contains(res.Content, "...") {
			t.Errorf("%s: %d bytes: %.400s", tt.tool, len(res.Content), res.Content)
		}
		if !IsToolResult(res.Content) {
			t.Errorf("%s: a cut answer is not known as the tool's own: %.400s", tt.tool, res.Content)
		}
	}
}

// More whole numbers written with a point than the decoder rewrites get a
// plain error, not "must be a whole number, got number 1.0".
func TestDecodeToolArgsManyWholeNumbers(t *testing.T) {
	var a struct {
		N []int `json:"n"`
	}
	raw := `{"n":[` + strings.TrimSuffix(strings.Repeat("1.0,", maxWholeRewrites+1), ",") + `]}`
	err := DecodeToolArgs(json.RawMessage(raw), &a)
	if err == nil || !strings.Contains(err.Error(), "write them as integers") {
		t.Errorf("error %v", err)
	}
	raw = `{"n":[` + strings.TrimSuffix(strings.Repeat("2.0,", maxWholeRewrites), ",") + `]}`
	if err := DecodeToolArgs(json.RawMessage(raw), &a); err != nil || len(a.N) != maxWholeRewrites || a.N[0] != 2 {
		t.Errorf("%d numbers: %v %v", maxWholeRewrites, err, a.N)
	}
}

// wholeLiteral agrees with exact rational arithmetic on every JSON number
// of a modest exponent.
func FuzzWholeLiteral(f *testing.F) {
	for _, s := range []string{"20", "20.0", "20.5", "1e-3", "0.5e1", "-0.0", "1234.5e1", "1e-400", "20.000000000000001", "0e-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		if !json.Valid([]byte(lit)) || len(lit) > 64 || strings.ContainsAny(lit, `"[{tfn `) {
			return
		}
		if i := strings.IndexAny(lit, "eE"); i >= 0 {
			if e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+")); err != nil || e > 400 || e < -400 {
				return // big.Rat would build the number whole
			}
		}
		r, ok := new(big.Rat).SetString(lit)
		if !ok {
			return
		}
		if got := wholeLiteral(lit); got != r.IsInt() {
			t.Errorf("wholeLiteral(%q) = %v, exact %v", lit, got, r.IsInt())
		}
	})
}
