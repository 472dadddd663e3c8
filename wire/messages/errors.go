package messages

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// envelope is the Anthropic error body {"type":"error","error":{"type","message"}}.
type envelope struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// errorType is the Anthropic error type for a status the proxy gives.
func errorType(e *wire.Error) string {
	switch {
	case e.Status == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case e.Status == http.StatusNotFound:
		return "not_found_error"
	case e.Status == http.StatusUnauthorized:
		return "authentication_error"
	case e.Status == http.StatusForbidden:
		return "permission_error"
	case e.Status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case e.Status == http.StatusGatewayTimeout:
		return "timeout_error"
	case e.Status >= 500 || e.Kind != wire.KindInvalidRequest:
		return "api_error"
	}
	return "invalid_request_error"
}

// ErrorJSON renders e as an Anthropic error body; the parameter at fault,
// which the envelope has no field for, is named in the message.
func ErrorJSON(e *wire.Error) []byte {
	var env envelope
	env.Type = "error"
	env.Error.Type = errorType(e)
	env.Error.Message = e.Message
	if e.Param != "" && !strings.Contains(e.Message, e.Param) {
		env.Error.Message = e.Param + ": " + e.Message
	}
	return wire.Marshal(env)
}

// ErrorEvent renders e as the final event of a started stream: an "error"
// event, which the Anthropic SDKs raise as an APIError.
func (s *Stream) ErrorEvent(e *wire.Error) []byte {
	return wire.AppendEvent(nil, "error", ErrorJSON(e))
}

// UpstreamErrorEvent turns an upstream error answer met after the client's
// stream started (a later tool round) into its final error event (an
// Anthropic error body is relayed as it is), and the message for the log.
func (s *Stream) UpstreamErrorEvent(status int, raw []byte, round int) ([]byte, string) {
	var env envelope
	if json.Unmarshal(raw, &env) == nil && env.Type == "error" && env.Error.Message != "" {
		// As it came, on one line: members the proxy does not model
		// (request_id, which support asks for) stay.
		var data bytes.Buffer
		if json.Compact(&data, raw) != nil {
			return wire.AppendEvent(nil, "error", wire.Marshal(env)), env.Error.Message
		}
		return wire.AppendEvent(nil, "error", data.Bytes()), env.Error.Message
	}
	msg := fmt.Sprintf("upstream answered %d in tool round %d: %s", status, round, strings.TrimSpace(string(raw)))
	return s.ErrorEvent(&wire.Error{Status: status, Kind: wire.KindUpstream, Message: msg}), msg
}

// Relayed notes an event relayed unchanged around the translator (a stream
// without the proxy's tools; Anthropic events carry no sequence) and
// reports whether it ends the stream: message_stop, or an error event.
func (s *Stream) Relayed(ev *wire.Event) (final bool) {
	if !ev.HasData {
		return false
	}
	t := ev.Type()
	if t == "error" {
		s.failure = failureOf(ev.Data)
	}
	return t == "message_stop" || t == "error"
}

// Failure reports the message of the upstream error an event of the
// stream carried (an error event), "" when none did.
func (s *Stream) Failure() string { return s.failure }

// failureOf is an error event's message, its type when it has none.
func failureOf(data []byte) string {
	e := gjson.GetBytes(data, "error")
	if m := e.Get("message").String(); m != "" {
		return e.Get("type").String() + ": " + m
	}
	return cmp.Or(e.Get("type").String(), "error event")
}
