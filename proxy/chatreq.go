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
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(code, format string, a ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, a...)}
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
// non-empty messages array.
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
			return nil, badRequest("invalid_type", "invalid type for '%s': %v", te.Field, err)
		}
		return nil, badRequest("invalid_json", "request body is not valid JSON: %v", err)
	}
	if req.Messages == nil {
		return nil, badRequest("missing_messages", "missing required parameter: 'messages'")
	}
	if len(req.Messages) == 0 {
		return nil, badRequest("empty_messages", "'messages' must contain at least one message")
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
