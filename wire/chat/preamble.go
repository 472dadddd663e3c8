package chat

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

// Preamble reports whether out holds only chunks that say nothing yet: a
// role delta, empty deltas, no finish reason: so an error until the answer
// begins can still be an HTTP status.
func (s *Stream) Preamble(out []byte) bool {
	return wire.EveryEvent(out, func(data []byte) bool {
		if !gjson.ValidBytes(data) { // [DONE]
			return false
		}
		quiet := true
		gjson.GetBytes(data, "choices").ForEach(func(_, c gjson.Result) bool {
			if c.Get("finish_reason").Exists() && c.Get("finish_reason").Type != gjson.Null {
				quiet = false
				return false
			}
			c.Get("delta").ForEach(func(k, v gjson.Result) bool {
				// Whitespace alone (models write "\n\n" before a call) is
				// not an answer yet.
				if k.Str != "role" && v.Type != gjson.Null && strings.TrimSpace(v.String()) != "" {
					quiet = false
				}
				return quiet
			})
			return quiet
		})
		return quiet && !gjson.GetBytes(data, "usage").IsObject()
	})
}
