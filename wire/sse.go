package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/tidwall/gjson"
)

// MaxEventSize bounds one server-sent event; a larger one fails the stream
// rather than growing memory without end.
const MaxEventSize = 16 << 20

var ErrEventTooLarge = errors.New("server-sent event exceeds 16 MiB")

// Event is one server-sent event as received: Raw holds its bytes
// including the blank line that ends it, so an event the proxy does not
// touch is relayed byte for byte.
type Event struct {
	Raw     []byte
	Event   string // the event: field, if any
	Data    []byte // data: lines joined with \n
	HasData bool
	// Stray counts the lines dropped from Raw because they are not a field
	// of the format (data, event, id, retry) or a comment: clients ignore
	// them anyway, and an upstream sending them (an HTML error page, a
	// proxy's banner) is malformed. An event of stray lines only is
	// skipped whole; its lines are counted with the next event's.
	Stray int
}

// Type is the event's type as the OpenAI Responses and Anthropic Messages
// streams name it: the data's "type" member, else the event: field.
func (ev *Event) Type() string {
	if t := gjson.GetBytes(ev.Data, "type").String(); t != "" {
		return t
	}
	return ev.Event
}

// EventReader splits a text/event-stream into events (WHATWG HTML §9.2.6):
// lines end with \n or \r\n, a blank line ends an event, "data:" lines are
// joined, ":" lines are comments. A stream that ends without a blank line
// still yields its last event.
type EventReader struct {
	br  *bufio.Reader
	raw []byte
}

func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{br: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the next event. Its slices are valid until the next call.
func (s *EventReader) Next() (*Event, error) {
	s.raw = s.raw[:0]
	ev := &Event{}
	var data []byte
	stray := false // the event so far is stray lines only
	for {
		line, err := s.readLine()
		if len(line) == 0 && err != nil {
			if (len(s.raw) > 0 || ev.Stray > 0) && err == io.EOF {
				return s.finish(ev, data), nil
			}
			return nil, err
		}
		content := bytes.TrimRight(line, "\r\n")
		if len(content) == 0 {
			if stray && len(s.raw) == 0 {
				// The blank line ends an event of stray lines only: skip it.
				stray = false
				if err != nil {
					return nil, err
				}
				continue
			}
			// End of the event (a stray blank line between events is an
			// empty event of its own, relayed as it is).
			s.raw = append(s.raw, line...)
			return s.finish(ev, data), nil
		}
		field, value, _ := bytes.Cut(content, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if ev.HasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			ev.HasData = true
		case "event":
			ev.Event = string(value)
		case "", "id", "retry": // a comment, or fields the proxy passes on
		default:
			ev.Stray++
			stray = stray || len(s.raw) == 0
			if err != nil {
				if len(s.raw) == 0 {
					return nil, err
				}
				return s.finish(ev, data), nil
			}
			continue
		}
		stray = false
		s.raw = append(s.raw, line...)
		if len(s.raw) > MaxEventSize {
			return nil, ErrEventTooLarge
		}
		if err != nil { // last line without newline
			return s.finish(ev, data), nil
		}
	}
}

func (s *EventReader) finish(ev *Event, data []byte) *Event {
	ev.Raw = s.raw
	ev.Data = data
	return ev
}

// readLine returns one line including its terminator; lines longer than the
// buffer are assembled. At EOF the last, unterminated line comes with io.EOF.
func (s *EventReader) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == nil || err != bufio.ErrBufferFull {
		return line, err
	}
	long := append([]byte(nil), line...)
	for err == bufio.ErrBufferFull {
		line, err = s.br.ReadSlice('\n')
		long = append(long, line...)
		if len(long) > MaxEventSize {
			return nil, ErrEventTooLarge
		}
	}
	return long, err
}

// EveryEvent reports whether each event of out (server-sent events as the
// proxy writes them) passes ok, given its data; comments pass. It reads
// out whole, so it is meant for the few events a stream starts with.
func EveryEvent(out []byte, ok func(data []byte) bool) bool {
	rd := NewEventReader(bytes.NewReader(out))
	for {
		ev, err := rd.Next()
		if err != nil {
			return true // io.EOF: all read
		}
		if ev.HasData && !ok(ev.Data) {
			return false
		}
	}
}
