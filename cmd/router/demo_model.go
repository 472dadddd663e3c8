package main

// demoModel is a deterministic stand-in for an LLM behind the three client
// APIs (Chat Completions, Responses, Anthropic Messages), streaming and not,
// used only by `router demo` so the whole pipeline runs with no model
// server. It does not generate text: it reports what the proxy put in front
// of it, and it exercises the server-side tool loop by calling load_skill
// when asked to ("load <skill-id>"). Requests are read and answers written
// by the wire packages, the same code the proxy speaks the APIs with.

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/chat"
	"github.com/skillrouter/skillrouter/wire/messages"
	"github.com/skillrouter/skillrouter/wire/responses"
)

var (
	envelopeRe = regexp.MustCompile(`<skill_context id="([^"]+)">`)
	catalogRe  = regexp.MustCompile(`<skill>`)
	// A load_skill error as the proxy writes it (router.loadSkillError).
	skillErrorRe = regexp.MustCompile(`(?s)<skill_error id="([^"]*)" reason="([^"]*)">\s*<message>(.*?)</message>`)
	loadAskRe    = regexp.MustCompile(`(?i)\bload (?:the )?(?:skill )?([a-z0-9][a-z0-9/_.-]*)`)
)

// demoMemory gives each answer an id of its own and keeps the Responses
// conversations they end, so that a turn chained with previous_response_id
// goes on from its history, as the Responses API's stored state does (the
// last 1,024 responses).
type demoMemory struct {
	mu    sync.Mutex
	n     int
	turns map[string][]wire.Turn
	order []string
}

var demoMem = &demoMemory{turns: map[string][]wire.Turn{}}

func (m *demoMemory) newID(prefix string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	return prefix + strconv.Itoa(m.n)
}

func (m *demoMemory) history(id string) ([]wire.Turn, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.turns[id]
	return slices.Clone(t), ok
}

func (m *demoMemory) keep(id string, turns []wire.Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns[id] = turns
	m.order = append(m.order, id)
	if len(m.order) > 1024 {
		delete(m.turns, m.order[0])
		m.order = m.order[1:]
	}
}

func (m *demoMemory) drop(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.turns[id]
	delete(m.turns, id)
	return ok
}

func serveDemoModel(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if id, ok := strings.CutPrefix(r.URL.Path, "/v1/responses/"); ok && r.Method == http.MethodDelete {
		// The proxy deletes the stored responses of the rounds it hid.
		if !demoMem.drop(id) {
			writeDemo(w, http.StatusNotFound, "application/json", chat.ErrorJSON(&wire.Error{Status: http.StatusNotFound,
				Code: "not_found", Message: "no response " + id}))
			return
		}
		writeDemo(w, http.StatusOK, "application/json", wire.Marshal(map[string]any{"id": id, "object": "response.deleted", "deleted": true}))
		return
	}
	var prefix, previous string
	var (
		view   *wire.Request
		err    error
		encode func(wire.Reply) []byte
		errOut func(*wire.Error) []byte = chat.ErrorJSON
	)
	switch r.URL.Path {
	case "/v1/models":
		writeDemo(w, http.StatusOK, "application/json", wire.Marshal(map[string]any{"object": "list",
			"data": []any{map[string]any{"id": "demo", "object": "model", "owned_by": "skillrouter"}}}))
		return
	case "/v1/chat/completions":
		prefix = "chatcmpl-demo-"
		var req *chat.Request
		if req, err = chat.Parse(body); err == nil {
			view = req.View()
			encode = func(rep wire.Reply) []byte { return chat.EncodeReply(rep, view.Stream, req.IncludeUsage()) }
		}
	case "/v1/responses", "/v1/responses/input_tokens":
		prefix = "resp_demo_"
		var req *responses.Request
		if req, err = responses.Parse(body); err == nil {
			view = req.View()
			if previous = gjson.GetBytes(body, "previous_response_id").Str; previous != "" {
				h, ok := demoMem.history(previous)
				if !ok {
					err = wire.BadRequest("previous_response_not_found", "previous_response_id", "Previous response with id '%s' not found.", previous)
				}
				view.Turns = append(h, view.Turns...)
			}
			if strings.HasSuffix(r.URL.Path, "/input_tokens") {
				writeDemo(w, http.StatusOK, "application/json", wire.Marshal(map[string]any{"object": "response.input_tokens", "input_tokens": len(body) / 4}))
				return
			}
			encode = func(rep wire.Reply) []byte { return responses.EncodeReply(rep, view.Stream) }
		}
	case "/v1/messages", "/v1/messages/count_tokens":
		prefix = "msg_demo_"
		errOut = messages.ErrorJSON
		var req *messages.Request
		if req, err = messages.Parse(body); err == nil {
			view = req.View()
			if strings.HasSuffix(r.URL.Path, "/count_tokens") {
				// About four bytes a token: the stand-in has no tokenizer.
				writeDemo(w, http.StatusOK, "application/json", wire.Marshal(map[string]int{"input_tokens": len(body) / 4}))
				return
			}
			encode = func(rep wire.Reply) []byte { return messages.EncodeReply(rep, view.Stream) }
		}
	default:
		writeDemo(w, http.StatusNotFound, "application/json", chat.ErrorJSON(&wire.Error{Status: http.StatusNotFound,
			Code: "not_found", Message: "the demo model serves /v1/chat/completions, /v1/responses and /v1/messages"}))
		return
	}
	if err != nil {
		we, ok := err.(*wire.Error)
		if !ok {
			we = wire.BadRequest("invalid_request", "", "%v", err)
		}
		writeDemo(w, we.Status, "application/json", errOut(we))
		return
	}
	rep := demoReply(view)
	rep.ID = demoMem.newID(prefix)
	if prefix == "resp_demo_" {
		demoMem.keep(rep.ID, append(view.Turns, wire.Turn{Role: "assistant", Text: rep.Text}))
	}
	ctype := "application/json"
	if view.Stream {
		ctype = "text/event-stream"
	}
	writeDemo(w, http.StatusOK, ctype, encode(rep))
}

// demoReply decides the stand-in's answer from the request it received.
func demoReply(req *wire.Request) wire.Reply {
	rep := wire.Reply{Model: req.Model} // the caller names it
	var catalog int
	var loaded []string
	var lastUser string
	for _, m := range req.Turns {
		if m.Role == "system" || m.Role == "developer" {
			catalog += len(catalogRe.FindAllStringIndex(m.Text, -1))
		}
		for _, g := range envelopeRe.FindAllStringSubmatch(m.Text, -1) {
			loaded = append(loaded, fmt.Sprintf("%s (%s)", g[1], m.Role))
		}
		if m.Role == "user" && !strings.Contains(m.Text, "<skill_context") {
			lastUser = m.Text
		}
	}
	hasLoadTool := false
	for _, t := range req.Tools {
		hasLoadTool = hasLoadTool || t.Name == "load_skill"
	}
	answered := len(req.Turns) > 0 && req.Turns[len(req.Turns)-1].Role == "tool"
	// Asked to load a skill and not answered by a tool result yet: call load_skill.
	if g := loadAskRe.FindStringSubmatch(lastUser); g != nil && hasLoadTool && !answered {
		args, _ := json.Marshal(map[string]string{"skill_id": g[1]})
		rep.Calls = []wire.ToolCall{{ID: "call_demo_1", Name: "load_skill", Arguments: args}}
		return rep
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[demo model] I received %d messages; the system prompt lists %d skills in its catalog", len(req.Turns), catalog)
	if len(loaded) > 0 {
		fmt.Fprintf(&b, "; skill instructions in my context: %s", strings.Join(loaded, ", "))
	} else {
		b.WriteString("; no skill instructions were loaded")
	}
	// A load_skill the proxy answered with an error (an id the library
	// does not have): say so, or the demo looks broken on other libraries.
	for _, m := range req.Turns {
		if m.Role != "tool" {
			continue
		}
		for _, g := range skillErrorRe.FindAllStringSubmatch(m.Text, -1) {
			fmt.Fprintf(&b, "; load_skill %q answered %s: %s", html.UnescapeString(g[1]), g[2], strings.TrimSuffix(html.UnescapeString(g[3]), "."))
		}
	}
	b.WriteString(".")
	rep.Text = b.String()
	return rep
}

func writeDemo(w http.ResponseWriter, status int, ctype string, body []byte) {
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
