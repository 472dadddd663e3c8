package fakeai

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ordered is a JSON object written with its keys in the given order
// (key, value, key, value, …), as the real servers write theirs ("type"
// first): a map would sort them.
type ordered []any

func (o ordered) MarshalJSON() ([]byte, error) { return appendJSON(nil, o), nil }

// rawJSON is JSON text written as it is.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// appendJSON encodes v: the types the fake builds its answers from
// directly (encoding/json would re-validate every nested Marshaler's output,
// and the Responses events repeat the echoed request several times), others
// through encoding/json. Like the real servers it does not escape <, > and &
// ("<skill_context>" is sent as it is).
func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendString(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case rawJSON:
		return append(b, x...)
	case ordered:
		b = append(b, '{')
		for i := 0; i+1 < len(x); i += 2 {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, x[i].(string))
			b = append(b, ':')
			b = appendJSON(b, x[i+1])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(fmt.Sprintf("fakeai: %v", err))
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// appendString writes s as a JSON string, escaping as encoding/json does
// except for <, > and &.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func mustMarshal(v any) []byte { return appendJSON(nil, v) }

func writeOrdered(w http.ResponseWriter, status int, header http.Header, v any) {
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(mustMarshal(v))
}

// event is one named server-sent event.
type event struct {
	name string
	data any
}

// writeEvents sends events as "event: name\ndata: json" pairs (the framing
// of both Responses and Messages streams), honouring the turn's Hold,
// HoldAfter and Interval like the chat stream.
func writeEvents(w http.ResponseWriter, r *http.Request, header http.Header, t Turn, events []event) {
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	var buf bytes.Buffer
	for i, ev := range events {
		if !t.beforeEvent(w, r, i) {
			return
		}
		buf.Reset()
		buf.WriteString("event: ")
		buf.WriteString(ev.name)
		buf.WriteString("\ndata: ")
		buf.Write(mustMarshal(ev.data))
		buf.WriteString("\n\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// usageFor fills a turn's default usage from the sizes of request and
// answer, as the chat fake does.
func usageFor(t Turn, body []byte) Usage {
	if t.Usage != nil {
		u := *t.Usage
		if u.TotalTokens == 0 {
			u.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
		return u
	}
	p := len(body)/4 + 1
	c := len(t.Content)/4 + 1
	for _, tc := range t.ToolCalls {
		c += len(tc.Arguments)/4 + 3
	}
	if t.Thinking != nil {
		c += len(t.Thinking.Text) / 4
	}
	return Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

// sigPrefix marks signatures the fake derived itself: such a signature must
// come back with the very text it was issued for.
const sigPrefix = "fakesig_"

// signature derives a thinking block's signature (or a reasoning item's
// encrypted_content) from its text.
func signature(text string) string {
	sum := sha256.Sum256([]byte(text))
	return sigPrefix + hex.EncodeToString(sum[:12])
}

// signatureValid reports whether sig fits text: signatures the fake did not
// derive (scripted ones, real ones) are taken as they are.
func signatureValid(sig, text string) bool {
	return !strings.HasPrefix(sig, sigPrefix) || sig == signature(text)
}

// Text joins the text of a content value of any of the three APIs: a
// string, or an array of parts/blocks whose "text" fields are joined
// (input_text, output_text, text; other parts are skipped).
func Text(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				if s, ok := pm["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}

// capUsage makes a turn honour the request's output-token cap (limit, a
// JSON number; anything else: none), as the APIs do: a turn that would
// generate more stops at the cap, its usage reporting the cap, and is
// Truncated. It reports whether it cut the turn.
func capUsage(t *Turn, u *Usage, limit gjson.Result) bool {
	// Below 1 (-1): no limit, as llama.cpp and LM Studio read it.
	if limit.Type != gjson.Number || limit.Int() < 1 || int64(u.CompletionTokens) <= limit.Int() {
		return false
	}
	u.CompletionTokens = int(limit.Int())
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	t.Truncated = true
	return true
}
