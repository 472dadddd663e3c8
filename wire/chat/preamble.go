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
			if !empty(c.Get("finish_reason")) {
				quiet = false
				return false
			}
			c.Get("delta").ForEach(func(k, v gjson.Result) bool {
				quiet = k.Str == "role" || empty(v)
				return quiet
			})
			return quiet
		})
		return quiet && !gjson.GetBytes(data, "usage").IsObject()
	})
}

// empty reports whether a chunk's field says nothing: absent, null, a
// string of whitespace alone (models write "\n\n" before a call), an empty
// array or object (some servers send "tool_calls": []).
func empty(v gjson.Result) bool {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return true
	case v.Type == gjson.String:
		return strings.TrimSpace(v.Str) == ""
	case v.IsArray() || v.IsObject():
		none := true
		v.ForEach(func(_, _ gjson.Result) bool { none = false; return false })
		return none
	}
	return false
}
