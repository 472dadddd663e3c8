// Package streamtest holds what the API packages' tests share: it drives a
// stream translator through one upstream round the way the proxy does, and
// tells whether an error message leaks the decoder's wording.
package streamtest

import (
	"bytes"

	"github.com/skillrouter/skillrouter/wire"
)

// Stream is the translator side of proxy's apiStream.
type Stream interface {
	Round(final bool)
	Event(ev *wire.Event, out []byte) ([]byte, bool)
	End(out []byte) ([]byte, wire.RoundEnd)
}

// RunRound starts a round on s, feeds it the SSE events of body until the
// body or the round's stream ends, settles it and returns what the client
// got.
func RunRound(s Stream, final bool, body []byte) (string, wire.RoundEnd) {
	s.Round(final)
	rd := wire.NewEventReader(bytes.NewReader(body))
	var out []byte
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		var more bool
		if out, more = s.Event(ev, out); !more {
			break
		}
	}
	out, end := s.End(out)
	return string(out), end
}
