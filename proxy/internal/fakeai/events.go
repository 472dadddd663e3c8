package fakeai

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ordered is a JSON object written with its keys in the given order
// (key, value, key, value, …), as the real servers write theirs ("type"
// first): a map would sort them.
type ordered []any

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(o); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(o[i].(string))
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(o[i+1])
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal encodes v without escaping <, > and & (the real servers send
// "<skill_context>" as it is).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func mustMarshal(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakeai: %v", err))
	}
	return b
}

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
		if t.Hold != nil && i == t.HoldAfter {
			select {
			case <-t.Hold:
			case <-r.Context().Done():
				return
			}
		}
		if t.Interval > 0 && i > 0 {
			select {
			case <-time.After(t.Interval):
			case <-r.Context().Done():
				return
			}
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
