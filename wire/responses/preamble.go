package responses

import (
	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// Preamble reports whether out holds only the events a response opens
// with (response.created, response.in_progress): nothing the client
// reads yet, so an error until the answer begins can still be an HTTP
// status.
func (s *Stream) Preamble(out []byte) bool {
	return wire.EveryEvent(out, func(data []byte) bool {
		t := gjson.GetBytes(data, "type").Str
		return t == "response.created" || t == "response.in_progress"
	})
}
