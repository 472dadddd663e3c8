package streamtest

import (
	"bytes"
	"strings"
)

// DecoderLeak reports whether msg, an error message for the request body
// in, holds encoding/json's own wording ("json: cannot unmarshal ... into
// Go struct field"): a client should read the API's terms. Wording the
// client sent itself (a role or key the message quotes back) is not a leak.
func DecoderLeak(msg string, in []byte) bool {
	for _, w := range []string{"json: ", "Go struct", "Go value"} {
		if strings.Contains(msg, w) && !bytes.Contains(in, []byte(w)) {
			return true
		}
	}
	return false
}
