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
// lines end with \r\n, \n or a lone \r, a blank line ends an event,
// "data:" lines are joined, ":" lines are comments. A stream that ends
// without a blank line still yields its last event.
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
			s.keep(line)
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
		s.keep(line)
		if len(s.raw) > MaxEventSize {
			return nil, ErrEventTooLarge
		}
		if err != nil { // last line without newline
			return s.finish(ev, data), nil
		}
	}
}

// keep adds a line to Raw. Where dropped stray lines stood between a line
// ending in a lone \r and one starting with \n, the two would read as one
// CRLF, so the \n line gets a \r of its own.
func (s *EventReader) keep(line []byte) {
	if len(s.raw) > 0 && s.raw[len(s.raw)-1] == '\r' && line[0] == '\n' {
		s.raw = append(s.raw, '\r')
	}
	s.raw = append(s.raw, line...)
}

func (s *EventReader) finish(ev *Event, data []byte) *Event {
	ev.Raw = s.raw
	ev.Data = data
	return ev
}

// readLine returns one line including its terminator; lines longer than the
// buffer are assembled. At EOF the last, unterminated line comes with io.EOF.
//
// A \r that is the last byte read so far may be the first half of a CRLF,
// so the line waits for the next byte (or the end). With CRLF upstreams that
// byte is already on its way; with the rare upstream that ends lines with a
// lone \r, each event is relayed when the next one starts.
func (s *EventReader) readLine() ([]byte, error) {
	var long []byte
	scanned := 0 // bytes of the buffered part known to hold no line end
	for {
		buf, _ := s.br.Peek(s.br.Buffered()) // never blocks
		end, more := lineEnd(buf, scanned)
		if end > 0 {
			line := buf[:end]
			if long != nil {
				line = append(long, line...)
			}
			s.br.Discard(end)
			return line, nil
		}
		scanned = more
		if len(buf) == s.br.Size() {
			if buf[len(buf)-1] == '\r' { // keep it with what follows
				buf = buf[:len(buf)-1]
			}
			long = append(long, buf...)
			s.br.Discard(len(buf))
			scanned = 0
			if len(long) > MaxEventSize {
				return nil, ErrEventTooLarge
			}
			continue
		}
		// Wait for one more byte. An error means none came (bufio returns
		// what it read before it), so the rest is the last line.
		if _, err := s.br.Peek(len(buf) + 1); err != nil {
			buf, _ = s.br.Peek(s.br.Buffered()) // the read may have moved it
			s.br.Discard(len(buf))
			if long != nil {
				buf = append(long, buf...)
			}
			if len(buf) > 0 && buf[len(buf)-1] == '\r' {
				return buf, nil // terminated after all; the next call ends
			}
			return buf, err
		}
	}
}

// lineEnd returns the length of buf's first line with its terminator
// (\r\n, \n or \r). When buf holds no complete line it returns 0 and how
// much of buf is known to hold no line end: all of it, or all but a last
// \r that the next byte decides.
func lineEnd(buf []byte, from int) (end, scanned int) {
	scan := buf[from:]
	nl := bytes.IndexByte(scan, '\n')
	if nl >= 0 {
		scan = scan[:nl]
	}
	if cr := bytes.IndexByte(scan, '\r'); cr >= 0 {
		at := from + cr
		switch {
		case at+1 == len(buf):
			return 0, at
		case buf[at+1] == '\n':
			return at + 2, 0
		}
		return at + 1, 0
	}
	if nl >= 0 {
		return from + nl + 1, 0
	}
	return 0, len(buf)
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
