package responses

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
)

// ErrorJSON renders e as an OpenAI error body.
func ErrorJSON(e *wire.Error) []byte { return openai.ErrorJSON(e) }

// ErrorEvent renders e as the final event of a started stream: an "error"
// event, which the OpenAI SDKs raise as an APIError.
func (s *Stream) ErrorEvent(e *wire.Error) []byte {
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
	return wire.AppendEvent(nil, "error", data)
}

// UpstreamErrorEvent turns an upstream error answer met after the client's
// stream started (a later tool round) into its final error event, and the
// message for the log.
func (s *Stream) UpstreamErrorEvent(status int, raw []byte, round int) ([]byte, string) {
	msg := openai.ErrorMessage(raw)
	if msg == "" {
		msg = fmt.Sprintf("upstream answered %d in tool round %d: %s", status, round, strings.TrimSpace(string(raw)))
	}
	return s.ErrorEvent(&wire.Error{Status: status, Kind: wire.KindUpstream, Code: "upstream_" + strconv.Itoa(status), Message: msg}), msg
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
	switch ev.Type() {
	case "response.completed", "response.failed", "response.incomplete", "error":
		return true
	}
	return false
}
