package responses

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
)

// ErrorJSON renders e as an OpenAI error body.
func ErrorJSON(e *wire.Error) []byte { return openai.ErrorJSON(e) }

// ErrorEvent renders e as the final event of a started stream: an "error"
// event, which the OpenAI SDKs raise as an APIError.
func (s *Stream) ErrorEvent(e *wire.Error) []byte {
	out := s.openedBytes()
	var param any
	if e.Param != "" {
		param = e.Param
	}
	data := wire.Marshal(struct {
		Type           string `json:"type"`
		Code           string `json:"code"`
		Message        string `json:"message"`
		Param          any    `json:"param"`
		SequenceNumber int    `json:"sequence_number"`
	}{"error", e.Code, e.Message, param, s.seq})
	s.seq++
	return wire.AppendEvent(out, "error", data)
}

// UpstreamErrorEvent turns an upstream error answer met after the client's
// stream started (a later tool round's follow-up refused: the skill it
// loaded pushed the input over the context window, a rate limit) into the
// events the Responses API ends a failed response with, and the message
// for the log: an "error" event with the upstream's code, message and
// param, then response.failed, whose response is the one the client was
// announced (response.created's id) with status "failed", the items shown
// so far, the usage so far and error {code, message}. Clients read the
// failure from there (Codex CLI only from there: without it, it takes the
// stream for a dropped connection and retries the request).
func (s *Stream) UpstreamErrorEvent(status int, raw []byte, round int) ([]byte, string) {
	e := upstreamError(status, raw, round)
	out := s.ErrorEvent(e)
	return append(out, s.failedEvent(e)...), e.Message
}

// upstreamError reads an upstream error answer: an OpenAI error body keeps
// its message, code (else its type) and param; anything else is wrapped.
func upstreamError(status int, raw []byte, round int) *wire.Error {
	e := &wire.Error{Status: status, Kind: wire.KindUpstream}
	if env := gjson.GetBytes(raw, "error"); env.IsObject() && env.Get("message").String() != "" {
		e.Message = env.Get("message").String()
		e.Code = env.Get("code").String()
		if e.Code == "" {
			e.Code = env.Get("type").String()
		}
		e.Param = env.Get("param").String()
	} else {
		e.Message = fmt.Sprintf("upstream answered %d in tool round %d: %s", status, round, strings.TrimSpace(string(raw)))
	}
	if e.Code == "" {
		e.Code = "upstream_" + strconv.Itoa(status)
	}
	return e
}

// failedEvent renders response.failed for e: the announced response (or,
// if none was, a bare one with the round's id) failed.
func (s *Stream) failedEvent(e *wire.Error) []byte {
	out := s.openedBytes()
	resp := s.announced
	if len(resp) == 0 {
		id := ""
		if s.rd != nil {
			id = s.rd.id
		}
		resp = wire.Marshal(struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		}{id, "response"})
	}
	set := func(key string, v []byte) {
		if out, err := jsonspan.Set(resp, key, v); err == nil {
			resp = out
		}
	}
	set("status", []byte(`"failed"`))
	set("error", wire.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{e.Code, e.Message}))
	set("output", jsonspan.Array(s.visible))
	if !s.usage.Empty() {
		set("usage", s.usage.Last())
	}
	data := wire.Marshal(struct {
		Type           string          `json:"type"`
		Response       json.RawMessage `json:"response"`
		SequenceNumber int             `json:"sequence_number"`
	}{"response.failed", resp, s.seq})
	s.seq++
	return wire.AppendEvent(out, "response.failed", data)
}

// Relayed notes an event relayed unchanged around the translator (a stream
// without the proxy's tools), so that an ErrorEvent after it carries the
// next sequence_number, and reports whether it ends the stream: the
// response's terminal event, or an error event.
func (s *Stream) Relayed(ev *wire.Event) (final bool) {
	if !ev.HasData {
		return false
	}
	if n := gjson.GetBytes(ev.Data, "sequence_number"); n.Type == gjson.Number {
		s.seq = int(n.Int()) + 1
	} else {
		s.seq++
	}
	switch t := ev.Type(); t {
	case "response.failed", "error":
		s.failure = failureOf(t, ev.Data)
		return true
	case "response.completed", "response.incomplete":
		return true
	}
	return false
}

// Failure reports the message of the upstream error an event of the
// stream carried (error, response.failed), "" when none did.
func (s *Stream) Failure() string { return s.failure }

// failureOf is the message of an error or response.failed event.
func failureOf(typ string, data []byte) string {
	e := gjson.ParseBytes(data)
	if typ == "response.failed" {
		e = e.Get("response.error")
	}
	if m := e.Get("message").String(); m != "" {
		if c := e.Get("code").String(); c != "" {
			return c + ": " + m
		}
		return m
	}
	return typ
}
