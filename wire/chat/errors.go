package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
)

// ErrorJSON renders e as an OpenAI error body.
func ErrorJSON(e *wire.Error) []byte { return openai.ErrorJSON(e) }

// ErrorEvent renders e as the final event of a stream that already started:
// data: {"error":{...}}, which the OpenAI SDKs raise as an APIError.
func ErrorEvent(e *wire.Error) []byte {
	return wire.AppendData(nil, openai.ErrorJSON(e))
}

// UpstreamErrorEvent turns an upstream error answer that arrived after the
// client's stream started (a later tool round) into the stream's final
// event: an OpenAI error body is relayed as it is, anything else wrapped. It
// returns the event and the message for the log.
func UpstreamErrorEvent(status int, raw []byte, round int) ([]byte, string) {
	if msg := openai.ErrorMessage(raw); msg != "" {
		var compact bytes.Buffer
		if json.Compact(&compact, raw) == nil { // one data: line
			return wire.AppendData(nil, compact.Bytes()), msg
		}
	}
	msg := fmt.Sprintf("upstream answered %d in tool round %d: %s", status, round, strings.TrimSpace(string(raw)))
	return ErrorEvent(&wire.Error{Status: status, Kind: wire.KindUpstream, Code: "upstream_error", Message: msg}), msg
}

// Failure reports the message of the upstream error an event of the
// stream carried (an error chunk), "" when none did.
func (s *Stream) Failure() string { return s.failure }

// errorMessage is an error object's message, or the object itself.
func errorMessage(raw json.RawMessage) string {
	if m := gjson.GetBytes(raw, "message").String(); m != "" {
		return m
	}
	return wire.Clip(string(raw))
}

// ErrorEvent renders e as the final event of the stream (see ErrorEvent).
func (s *Stream) ErrorEvent(e *wire.Error) []byte { return ErrorEvent(e) }

// UpstreamErrorEvent is UpstreamErrorEvent for the stream.
func (s *Stream) UpstreamErrorEvent(status int, raw []byte, round int) ([]byte, string) {
	return UpstreamErrorEvent(status, raw, round)
}

// Relayed notes an event relayed unchanged around the translator (a stream
// without the proxy's tools) and reports whether the stream is complete
// with it, by the rules End and relayChunk apply to a round: data: [DONE],
// an error chunk, or a finish_reason for every answer asked for (n).
func (s *Stream) Relayed(ev *wire.Event) (final bool) {
	if !ev.HasData {
		return false
	}
	if isDone(ev.Data) {
		return true
	}
	if plainDelta(ev.Data) {
		return false // no finish, usage or error: most of any stream
	}
	var ch chunk
	if json.Unmarshal(ev.Data, &ch) != nil {
		return false
	}
	if ch.errored() {
		s.failure = errorMessage(ch.Error)
		return true
	}
	for i := range ch.Choices {
		if c := &ch.Choices[i]; c.finished() {
			if s.relayFinished == nil {
				s.relayFinished = map[int]bool{}
			}
			s.relayFinished[c.Index] = true
		}
	}
	return len(s.relayFinished) >= s.n
}
