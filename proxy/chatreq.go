package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/skillrouter/skillrouter/router"
)

// chatRequest is the part of a chat.completions request the proxy itself reads.
// The router parses the body on its own; everything else passes through untouched.
type chatRequest struct {
	Model         string            `json:"model"` // only type-checked
	Messages      []json.RawMessage `json:"messages"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N    *int   `json:"n"`
	User string `json:"user"`
}

// requestError is a client error rendered as an OpenAI error.
type requestError struct {
	status int
	code   string
	param  string // the body parameter at fault, if any
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func (e *requestError) write(w http.ResponseWriter) {
	ae := newAPIError(errTypeInvalidRequest, e.code, e.msg)
	if e.param != "" {
		ae.Error.Param = &e.param
	}
	writeAPIError(w, e.status, ae)
}

func badRequest(code, format string, a ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, a...)}
}

// paramError is a 400 about one parameter of the body.
func paramError(code, param, format string, a ...any) *requestError {
	e := badRequest(code, format, a...)
	e.param = param
	return e
}

// paramTypes says, in API terms, what each parameter the proxy reads must
// be: encoding/json's own message names Go types ("Go struct field
// chatRequest.messages of type []json.RawMessage").
var paramTypes = map[string]string{
	"model":                        "a string",
	"messages":                     "an array of message objects",
	"stream":                       "a boolean",
	"stream_options":               "an object",
	"stream_options.include_usage": "a boolean",
	"n":                            "an integer",
	"user":                         "a string",
}

// typeError renders a json.UnmarshalTypeError in API terms.
func typeError(te *json.UnmarshalTypeError) *requestError {
	want, ok := paramTypes[te.Field]
	if !ok {
		return paramError("invalid_type", te.Field, "'%s' has the wrong type: got %s", te.Field, jsonValueName(te.Value))
	}
	return paramError("invalid_type", te.Field, "'%s' must be %s, got %s", te.Field, want, jsonValueName(te.Value))
}

// jsonValueName names what json.UnmarshalTypeError.Value describes:
// "string", "bool", "array", "object", "number" or "number 1.5".
func jsonValueName(v string) string {
	switch kind, lit, _ := strings.Cut(v, " "); kind {
	case "bool":
		return "a boolean"
	case "array", "object":
		return "an " + kind
	case "number":
		if lit != "" {
			return lit
		}
		return "a number"
	default:
		return "a " + kind
	}
}

// rawKind names the JSON type of a raw value.
func rawKind(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// readBody reads at most limit bytes of the request body.
func readBody(r *http.Request, limit int64) ([]byte, *requestError) {
	tooLarge := &requestError{status: http.StatusRequestEntityTooLarge, code: "request_too_large",
		msg: fmt.Sprintf("request body exceeds the limit of %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, badRequest("invalid_body", "reading request body: %v", err)
	}
	return body, nil
}

// parseChat validates a chat.completions body: a JSON object with a
// non-empty array of message objects, and the right types for the other
// parameters the proxy reads.
func parseChat(body []byte) (*chatRequest, *requestError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, badRequest("invalid_json", "request body is empty: expected a JSON chat completion request")
	}
	if trimmed[0] != '{' {
		return nil, badRequest("invalid_json", "request body must be a JSON object")
	}
	var req chatRequest
	if err := json.Unmarshal(trimmed, &req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, typeError(te)
		}
		return nil, badRequest("invalid_json", "request body is not valid JSON: %v", err)
	}
	if req.Messages == nil {
		return nil, paramError("missing_messages", "messages", "missing required parameter: 'messages'")
	}
	if len(req.Messages) == 0 {
		return nil, paramError("empty_messages", "messages", "'messages' must contain at least one message")
	}
	for i, m := range req.Messages {
		if k := rawKind(m); k != "an object" {
			p := fmt.Sprintf("messages[%d]", i)
			return nil, paramError("invalid_type", p, "'%s' must be a message object, got %s", p, k)
		}
	}
	return &req, nil
}

// firstUserText returns the text of the first user message (the A/B hash key
// when no session header is sent: stable for a conversation's life).
func (c *chatRequest) firstUserText() string {
	for _, raw := range c.Messages {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Role != "user" {
			continue
		}
		return contentText(m.Content)
	}
	return ""
}

// contentText joins the text of a message content: a string, or an array of
// parts of which only {"type":"text","text":...} count.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// overrides reads the X-Skillrouter-* request headers. strategyFromArm is
// set when X-Skillrouter-Strategy named an A/B arm rather than a strategy.
func overrides(h http.Header, strategyFromArm bool) (router.Overrides, *requestError) {
	var ov router.Overrides
	if v := strings.TrimSpace(h.Get(HeaderStrategy)); v != "" && !strategyFromArm {
		st := router.Strategy(strings.ToLower(v))
		if !validStrategy(st) {
			return ov, badRequest("invalid_skillrouter_header", "%s: unknown strategy %q (want one of %s)", HeaderStrategy, v, strategyList())
		}
		ov.Strategy = st
	}
	if v := strings.TrimSpace(h.Get(HeaderTopK)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return ov, badRequest("invalid_skillrouter_header", "%s: %q is not a non-negative integer", HeaderTopK, v)
		}
		ov.TopK = &n
	}
	if v := strings.TrimSpace(h.Get(HeaderDisable)); v != "" {
		b, err := strconv.ParseBool(strings.ToLower(v))
		if err != nil {
			return ov, badRequest("invalid_skillrouter_header", "%s: %q is not a boolean", HeaderDisable, v)
		}
		ov.Disable = b
	}
	if v := strings.TrimSpace(h.Get(HeaderCatalog)); v != "" {
		m := router.CatalogMode(strings.ToLower(v))
		switch m {
		case router.CatalogAll, router.CatalogEnabled, router.CatalogAuto:
			ov.CatalogMode = m
		default:
			return ov, badRequest("invalid_skillrouter_header", "%s: unknown catalog mode %q (want all, enabled or auto)", HeaderCatalog, v)
		}
	}
	return ov, nil
}

func strategyList() string {
	s := make([]string, len(router.Strategies))
	for i, v := range router.Strategies {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
