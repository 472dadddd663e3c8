package proxy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
	"github.com/skillrouter/skillrouter/skills"
)

// A response read back by id (GET /v1/responses/{id}) shows what the
// client's POST showed, as far as the stored object tells: its own
// instructions and tools, no call of the proxy's in the output; its input
// items (GET /v1/responses/{id}/input_items) hold no envelope, no call of
// the proxy's and no output of one. Usage and what earlier rounds showed
// need state the proxy does not keep (see wire/responses/stored.go).
func TestResponsesStoredReadBackIsTheClients(t *testing.T) {
	catalog := skills.RenderCatalog([]*skills.Skill{{ID: "demo/pdf", Description: "Make PDF files."}},
		skills.CatalogOptions{Footer: "3 more skills are not listed here: call search_skills."})
	load := func(skill string) fakeai.Responder {
		return fakeai.Reply(fakeai.Turn{Thinking: &fakeai.Thinking{Text: "a skill fits"},
			ToolCalls: []fakeai.Call{{ID: "call_" + skill, Name: "load_skill", Arguments: `{"skill_id":"demo/` + skill + `"}`}}})
	}
	answer := fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."})
	weather := `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}}}]`
	tests := []struct {
		name   string
		body   string
		rounds int // MaxToolRounds; 0: the default
		script []fakeai.Responder
		input  string // the client's input items, as the list shows them (asc)
	}{
		{"instructions and tools, a hidden round", `{"model":"m","instructions":"Be brief.","tools":` + weather + `,"input":"make me a pdf"}`, 0,
			[]fakeai.Responder{load("pdf"), answer}, `["make me a pdf"]`},
		{"none of either", `{"model":"m","input":[{"role":"user","content":"make me a pdf"}]}`, 0,
			[]fakeai.Responder{load("pdf"), answer}, `["make me a pdf"]`},
		{"the round limit: the proxy's call in the output", `{"model":"m","instructions":"Be brief.","input":"make me a pdf"}`, 1,
			[]fakeai.Responder{load("pdf"), load("xlsx")}, `["make me a pdf"]`},
		{"no hidden round", `{"model":"m","instructions":"Be brief.","tools":` + weather + `,"input":"hi"}`, 0,
			[]fakeai.Responder{answer}, `["hi"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxToolRounds = tc.rounds })
			h.rw.catalog = catalog
			h.up.Script(tc.script...)
			resp, posted := h.do("POST", "/v1/responses", tc.body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("POST: %d %s", resp.StatusCode, posted)
			}
			id := gjson.GetBytes(posted, "id").Str
			resp, got := h.do("GET", "/v1/responses/"+id, "", nil)
			if resp.StatusCode != 200 || gjson.GetBytes(got, "id").Str != id {
				t.Fatalf("GET: %d %s", resp.StatusCode, got)
			}
			for _, k := range []string{"instructions", "tools", "output"} {
				if g, p := gjson.GetBytes(got, k).Raw, gjson.GetBytes(posted, k).Raw; g != p {
					t.Errorf("%s read back:\n%s\nthe POST's:\n%s", k, g, p)
				}
			}
			if strings.Contains(string(got), "Agent Skills") || strings.Contains(string(got), "load_skill") {
				t.Errorf("the proxy's catalog or tool read back: %s", got)
			}
			resp, items := h.do("GET", "/v1/responses/"+id+"/input_items?order=asc&limit=100", "", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("GET input_items: %d %s", resp.StatusCode, items)
			}
			var texts []string
			for _, it := range gjson.GetBytes(items, "data").Array() {
				texts = append(texts, strconv.Quote(it.Get("content").String()))
			}
			if g := "[" + strings.Join(texts, ",") + "]"; g != tc.input {
				t.Errorf("input items %s, want %s:\n%s", g, tc.input, items)
			}
		})
	}
}

// In a stream the client gets the first round's id (response.created):
// read back, it shows no call of the proxy's either. Other methods on a
// stored response, and a GET of it as a stream, pass through.
func TestResponsesStoredReadBackStreamAndOtherMethods(t *testing.T) {
	h := newHarness(t, nil)
	h.rw.catalog = skills.RenderCatalog([]*skills.Skill{{ID: "demo/pdf", Description: "Make PDF files."}}, skills.CatalogOptions{})
	h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
		fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."}))
	resp, b := h.do("POST", "/v1/responses", `{"model":"m","stream":true,"input":"make me a pdf"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	first := gjson.Get(sseData(t, b)[0], "response.id").Str
	finish(t, h)
	resp, got := h.do("GET", "/v1/responses/"+first, "", nil)
	if resp.StatusCode != 200 || gjson.GetBytes(got, "id").Str != first || gjson.GetBytes(got, "instructions").Type != gjson.Null ||
		gjson.GetBytes(got, "tools").Raw != "[]" || gjson.GetBytes(got, "output").Raw != "[]" {
		t.Errorf("first round read back: %d %s", resp.StatusCode, got)
	}
	n := len(h.up.Requests())
	for _, tc := range []struct{ method, path string }{
		{"DELETE", "/v1/responses/" + first},
		{"POST", "/v1/responses/" + first + "/cancel"},
		{"GET", "/v1/responses/" + first + "?stream=true"},
		{"HEAD", "/v1/responses/" + first},
	} {
		h.do(tc.method, tc.path, "", nil)
		reqs := append(h.up.Requests(), h.up.Deletes()...)
		if !slices.ContainsFunc(reqs, func(r fakeai.Request) bool { return r.Method == tc.method && r.Path == strings.Split(tc.path, "?")[0] }) {
			t.Errorf("%s %s did not reach the upstream", tc.method, tc.path)
		}
	}
	if len(h.up.Requests()) < n+3 {
		t.Errorf("requests %d after %d", len(h.up.Requests()), n)
	}
}

// The SDKs page input items with after=<the last item shown> and stop at
// an empty page even when has_more is true, so a page that held only the
// proxy's items must not come out empty while more follow: paging as the
// SDKs do, with small pages, the client gets its own items.
func TestResponsesStoredInputItemsPagedAsTheSDKs(t *testing.T) {
	for _, order := range []string{"asc", "desc"} {
		for _, limit := range []int{1, 2, 3} {
			t.Run(order+"/"+strconv.Itoa(limit), func(t *testing.T) {
				h := newHarness(t, nil)
				h.rw.catalog = skills.RenderCatalog([]*skills.Skill{{ID: "demo/pdf", Description: "Make PDF files."}}, skills.CatalogOptions{})
				h.up.Script(fakeai.Reply(fakeai.Turn{ToolCalls: []fakeai.Call{{ID: "call_l", Name: "load_skill", Arguments: `{"skill_id":"demo/pdf"}`}}}),
					fakeai.Reply(fakeai.Turn{Content: "Here is your pdf."}))
				resp, posted := h.do("POST", "/v1/responses", `{"model":"m","input":[{"role":"user","content":"first"},{"role":"user","content":"make me a pdf"}]}`, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("POST: %d %s", resp.StatusCode, posted)
				}
				id := gjson.GetBytes(posted, "id").Str
				var texts []string
				after := ""
				for page := 0; page < 20; page++ {
					q := "?order=" + order + "&limit=" + strconv.Itoa(limit)
					if after != "" {
						q += "&after=" + after
					}
					resp, items := h.do("GET", "/v1/responses/"+id+"/input_items"+q, "", nil)
					if resp.StatusCode != 200 {
						t.Fatalf("GET input_items: %d %s", resp.StatusCode, items)
					}
					data := gjson.GetBytes(items, "data").Array()
					for _, it := range data {
						texts = append(texts, it.Get("content").String())
					}
					if !gjson.GetBytes(items, "has_more").Bool() || len(data) == 0 {
						break
					}
					after = data[len(data)-1].Get("id").Str
				}
				want := []string{"first", "make me a pdf"}
				if order == "desc" {
					slices.Reverse(want)
				}
				if !slices.Equal(texts, want) {
					t.Errorf("paged like the SDKs, the client read %q, want %q", texts, want)
				}
			})
		}
	}
}
