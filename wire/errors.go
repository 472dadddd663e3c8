package wire

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"github.com/skillrouter/skillrouter/internal/textcut"
)

// Error is an error the proxy itself gives a client; each API renders it in
// its own envelope.
type Error struct {
	Status  int    // HTTP status
	Kind    Kind   // what kind of error, mapped to the API's error type
	Code    string // stable short code (OpenAI "code")
	Param   string // the body parameter at fault, if any
	Message string
}

func (e *Error) Error() string { return e.Message }

// Kind classifies an Error.
type Kind int

const (
	KindInvalidRequest Kind = iota // the client's request is malformed (400, 413, 405, 404)
	KindUpstream                   // the upstream failed (502, 504)
	KindServer                     // the proxy failed (500)
)

// maxQuoted bounds a value an error message quotes from the request.
const maxQuoted = 200

// Clip cuts a value quoted from a request (a header, a path, a body
// field) to 200 bytes for an error message: the client chooses its length,
// and the message goes back to it and into the access log.
func Clip(s string) string {
	if len(s) > maxQuoted {
		return textcut.Prefix(s, maxQuoted) + "..."
	}
	return s
}

// BadRequest is a 400 the proxy gives for a malformed request.
func BadRequest(code, param, format string, a ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Kind: KindInvalidRequest, Code: code, Param: param, Message: fmt.Sprintf(format, a...)}
}

// TypeError is the 400 for a parameter of the wrong JSON type: "'param'
// must be want, got a string".
func TypeError(param, want string, got []byte) *Error {
	return BadRequest("invalid_type", param, "'%s' must be %s, got %s", param, want, KindOf(got))
}

// KindOf names the JSON type of a raw value for messages: "a string", "an
// array", "an object", "a boolean", "null" or "a number".
func KindOf(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// OneOf lists choices for a message: "a, b or c".
func OneOf(choices []string) string {
	switch len(choices) {
	case 0:
		return ""
	case 1:
		return choices[0]
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}
