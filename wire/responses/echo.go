package responses

import (
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

// A response object echoes parameters of the request it answers:
// instructions, tools, tool_choice, parallel_tool_calls (and the sampling
// and storage settings, which the proxy never changes). Upstream, the
// request is the proxy's: its catalog in the instructions, its tools after
// the client's, a gated client tool left out (and with it, when none was
// left, tool_choice and parallel_tool_calls). The client gets its own
// request back instead, the values it sent, in the JSON answer (Final) and
// in every event that carries the response object (Stream): an SDK that
// keeps the response, or a client that sends response.instructions and
// response.tools again, must not take the proxy's for its own.

// echoDefaults is what the API echoes for a parameter the client left out
// and the proxy added; the others the proxy only ever removes.
var echoDefaults = map[string][]byte{"instructions": []byte("null"), "tools": []byte("[]")}

// echoed is one echoed parameter the proxy changed, with the client's value.
type echoed struct {
	key   string
	value []byte
}

// rewrote records that the request sent upstream differs from the client's
// in the echoed parameter key.
func (r *Request) rewrote(key string) {
	value, ok := echoDefaults[key]
	if s, sent := jsonspan.Value(r.members, key); sent {
		value, ok = r.body[s.Start:s.End], true
	}
	if !ok { // left out by both: the upstream echoes its default either way
		return
	}
	for i := range r.echoes {
		if r.echoes[i].key == key {
			r.echoes[i].value = value
			return
		}
	}
	r.echoes = append(r.echoes, echoed{key, value})
}

// Echoes reports whether the rewrite changed a parameter the response
// object echoes: the answers then need Final, even after no tool round.
func (r *Request) Echoes() bool { return len(r.echoes) > 0 }

// echoEdits returns the edits that put the client's values back into a
// response object whose members are ms; an echo the upstream left out
// stays out.
func (r *Request) echoEdits(ms []jsonspan.Member) []jsonspan.Edit {
	var edits []jsonspan.Edit
	for _, e := range r.echoes {
		if s, ok := jsonspan.Value(ms, e.key); ok {
			edits = append(edits, jsonspan.Edit{At: s, With: e.value})
		}
	}
	return edits
}
