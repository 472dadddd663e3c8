package router

// Reading an OpenAI chat.completions request: the messages (as router
// Messages for ranking, and located in the body for splicing) and the
// client's tools.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// chatRequest is a located view of a chat.completions body; spans index body.
type chatRequest struct {
	body     []byte
	messages byteSpan // the "messages" array
	msgs     []chatMessage

	members     []jsonMember // top-level members of body
	tools       byteSpan     // the "tools" value; valid when hasTools
	hasTools    bool         // a "tools" member exists (its value may be null)
	clientTools [][]byte
	clientNames map[string]bool
	functions   bool   // legacy "functions" present: adding tools would mix the two APIs
	toolChoice  []byte // the "tool_choice" value as sent; nil when absent
	// tool_choice "none": the model may call no tool, so none is offered
	// and the catalog does not tell it to call load_skill.
	toolChoiceNone bool
}

// chatMessage is one message of the request.
type chatMessage struct {
	raw     []byte   // the message's bytes in the body
	at      byteSpan // where raw sits in body
	role    string
	content []byte // raw "content" value; nil when absent
	text    string // text parts joined by newlines; images and other parts dropped
}

// parseRequest locates messages and tools in body. It fails on anything the
// rewrite cannot handle safely: invalid JSON, a non-object body, a missing or
// empty messages array, a message that is not an object with a string role,
// or tools that are not an array.
func parseRequest(body []byte) (*chatRequest, error) {
	if !json.Valid(body) {
		return nil, errors.New("request body is not valid JSON")
	}
	ms, err := objectMembers(body)
	if err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	req := &chatRequest{body: body, members: ms, clientNames: map[string]bool{}}
	msgSpan, ok := memberValue(ms, "messages")
	if !ok {
		return nil, errors.New("request has no messages")
	}
	raw := body[msgSpan.start:msgSpan.end]
	elems, err := arrayElements(raw)
	if err != nil {
		return nil, errors.New("messages must be an array")
	}
	if len(elems) == 0 {
		return nil, errors.New("messages must not be empty")
	}
	req.messages = msgSpan
	for i, e := range elems {
		at := byteSpan{msgSpan.start + e.start, msgSpan.start + e.end}
		m, err := parseMessage(body[at.start:at.end])
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		m.at = at
		req.msgs = append(req.msgs, m)
	}
	if _, ok := memberValue(ms, "functions"); ok {
		req.functions = true
	}
	if tc, ok := memberValue(ms, "tool_choice"); ok {
		req.toolChoice = body[tc.start:tc.end]
		req.toolChoiceNone = toolChoiceMode(req.toolChoice) == "none"
	}
	if ts, ok := memberValue(ms, "tools"); ok {
		req.tools, req.hasTools = ts, true
		traw := body[ts.start:ts.end]
		if isJSONNull(traw) {
			traw = []byte("[]")
		}
		tels, err := arrayElements(traw)
		if err != nil {
			return nil, errors.New("tools must be an array")
		}
		for _, e := range tels {
			t := traw[e.start:e.end]
			req.clientTools = append(req.clientTools, t)
			if name := toolName(t); name != "" {
				req.clientNames[name] = true
			}
		}
	}
	return req, nil
}

// parseMessage reads role and content of one message object.
func parseMessage(raw []byte) (chatMessage, error) {
	m := chatMessage{raw: raw}
	ms, err := objectMembers(raw)
	if err != nil {
		return m, errors.New("not an object")
	}
	rs, ok := memberValue(ms, "role")
	if !ok {
		return m, errors.New("missing role")
	}
	if err := json.Unmarshal(raw[rs.start:rs.end], &m.role); err != nil {
		return m, errors.New("role must be a string")
	}
	if cs, ok := memberValue(ms, "content"); ok {
		m.content = raw[cs.start:cs.end]
		m.text = contentText(m.content)
	}
	return m, nil
}

// contentText joins the text of a content value: a string, or an array of
// parts of which only {"type":"text","text":...} count (images, audio and
// files are not text the router can rank on).
func contentText(content []byte) string {
	if len(content) == 0 {
		return ""
	}
	switch content[0] {
	case '"':
		var s string
		if json.Unmarshal(content, &s) == nil {
			return s
		}
	case '[':
		var parts []json.RawMessage
		if json.Unmarshal(content, &parts) != nil {
			return ""
		}
		var texts []string
		for _, p := range parts {
			var part struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			}
			if json.Unmarshal(p, &part) != nil || part.Text == nil {
				continue
			}
			if part.Type == "text" || part.Type == "input_text" {
				texts = append(texts, *part.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// toolName returns function.name of an OpenAI tool definition, or "".
func toolName(def []byte) string {
	var t struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(def, &t) != nil {
		return ""
	}
	return t.Function.Name
}

// routerMessages converts the parsed messages for ranking.
func routerMessages(msgs []chatMessage) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{Role: m.role, Text: m.text}
	}
	return out
}

// MessagesFromChat extracts the text view of the messages of an OpenAI
// chat.completions request body (string content or text parts; images and
// other parts are dropped). It fails on the same bodies RewriteChat rejects.
func MessagesFromChat(body []byte) ([]Message, error) {
	req, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	return routerMessages(req.msgs), nil
}

// noTools reports whether the request cannot take the proxy's tools.
func (r *chatRequest) noTools() bool { return r.functions || r.toolChoiceNone }
