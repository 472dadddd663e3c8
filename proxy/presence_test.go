package proxy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// A turn that continues a stored response or conversation gets, as
// Overrides.Present, the skills the turns before it made active there
// (the fake rewriter auto-loads demo/pdf on each turn), so the router does
// not load them again; JSON and streamed, by response id and by
// conversation.
func TestResponsesPresenceAcrossStoredTurns(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, conv := range []bool{false, true} {
			t.Run("stream="+strconv.FormatBool(stream)+",conversation="+strconv.FormatBool(conv), func(t *testing.T) {
				h := newHarness(t, nil)
				cont := ""
				if conv {
					_, b := h.do("POST", "/v1/conversations", `{}`, nil)
					cont = `,"conversation":"` + gjson.GetBytes(b, "id").Str + `"`
				}
				turn := func(extra string) string {
					h.up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))
					resp, b := h.do("POST", "/v1/responses", `{"model":"m","stream":`+strconv.FormatBool(stream)+cont+extra+`,"input":"make me a pdf"}`, nil)
					if resp.StatusCode != 200 {
						t.Fatalf("%d %s", resp.StatusCode, b)
					}
					id, _ := completedResponse(t, b)
					return id
				}
				id := turn("")
				next := ""
				if !conv {
					next = `,"previous_response_id":"` + id + `"`
				}
				h.rw.mu.Lock()
				h.rw.selected = []string{"demo/xlsx"}
				h.rw.mu.Unlock()
				id = turn(next)
				if !conv {
					next = `,"previous_response_id":"` + id + `"`
				}
				turn(next)
				ovs := h.rw.overrides()
				got := [][]string{}
				for _, ov := range ovs {
					got = append(got, ov.Present)
				}
				if len(got) != 3 || got[0] != nil || !slices.Equal(got[1], []string{"demo/pdf"}) || !slices.Equal(got[2], []string{"demo/pdf", "demo/xlsx"}) {
					t.Errorf("present per turn %q, want [] [demo/pdf] [demo/pdf demo/xlsx]", got)
				}
			})
		}
	}
}

// A turn continuing a stored response this process did not serve (another
// replica's, one from before a restart) is counted, so that operators can
// see whether conversations stay on one replica; one it served is not,
// even when that turn made no skill active.
func TestStoredStateUnknownCounted(t *testing.T) {
	h := newHarness(t, nil)
	h.rw.mu.Lock()
	h.rw.selected = nil
	h.rw.mu.Unlock()
	turn := func(extra string) string {
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))
		resp, b := h.do("POST", "/v1/responses", `{"model":"m"`+extra+`,"input":"hello"}`, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return gjson.GetBytes(b, "id").Str
	}
	id := turn("")
	id = turn(`,"previous_response_id":"` + id + `"`)
	_, m := h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), "skillrouter_stored_state_unknown_total 0")
	h.srv.presence = skillMemory{} // as another replica, or after a restart
	turn(`,"previous_response_id":"` + id + `"`)
	_, m = h.do("GET", "/metrics", "", nil)
	mustContain(t, string(m), "skillrouter_stored_state_unknown_total 1")
}

// Nothing is remembered for an answer that is not stored (store: false),
// nor for other APIs.
func TestPresenceOnlyForStoredResponses(t *testing.T) {
	h := newHarness(t, nil)
	h.up.Script(fakeai.Reply(fakeai.Turn{Content: "ok"}))
	_, b := h.do("POST", "/v1/responses", `{"model":"m","store":false,"input":"make me a pdf"}`, nil)
	if id := gjson.GetBytes(b, "id").Str; id == "" || h.srv.presence.get("response "+id) != nil {
		t.Errorf("an unstored response %q remembered: %s", id, b)
	}
	h.chat(`{"model":"m","messages":[{"role":"user","content":"make me a pdf"}]}`, nil)
	if n := h.srv.presence.cache().Len(); n != 0 {
		t.Errorf("%d entries remembered", n)
	}
}

// The memory is bounded: the least recently used entry goes first.
func TestPresenceBounded(t *testing.T) {
	var p skillMemory
	for i := range presenceEntries + 10 {
		p.put("k"+strconv.Itoa(i), []string{"s"})
		if i == presenceEntries-1 {
			p.get("k0") // used again just before the memory is full: kept
		}
	}
	if p.cache().Len() != presenceEntries || p.get("k0") == nil || p.get("k1") != nil || p.get("k"+strconv.Itoa(presenceEntries+9)) == nil {
		t.Errorf("len %d, k0 %v, k1 %v", p.cache().Len(), p.get("k0"), p.get("k1"))
	}
	if strings.Join(p.get("k0"), "") != "s" {
		t.Error("value lost")
	}
}
