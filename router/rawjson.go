package router

// Byte-level JSON editing for request rewrites. A chat request is edited by
// splicing new bytes into the original ones, so every field, number,
// whitespace and message the rewrite does not touch reaches the upstream
// byte-identical (decoding into map[string]any would reorder keys and turn
// large integers into floats). Inputs are checked with json.Valid first; the
// scanners below still bounds-check everything so they cannot panic.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

var errNotJSON = errors.New("not valid JSON")

// byteSpan is a half-open byte range [start, end) of a JSON value in its parent.
type byteSpan struct{ start, end int }

// jsonMember is one key/value pair of a JSON object, located in the object's bytes.
type jsonMember struct {
	key      string // decoded key
	keyStart int    // offset of the key's opening quote
	value    byteSpan
}

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// valueEnd returns the end of the JSON value starting at b[i] (valid JSON assumed).
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errNotJSON
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, err := stringEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errNotJSON
	default: // number, true, false, null
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return 0, errNotJSON
				}
				return j, nil
			}
			j++
		}
		if j == i {
			return 0, errNotJSON
		}
		return j, nil
	}
}

// stringEnd returns the index just past the closing quote of the string at b[i].
func stringEnd(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errNotJSON
}

// objectMembers lists the members of the object b (b is exactly the object).
func objectMembers(b []byte) ([]jsonMember, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []jsonMember
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return out, nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return nil, errNotJSON
		}
		i0 := i
		ke, err := stringEnd(b, i)
		if err != nil {
			return nil, err
		}
		var key string
		if err := json.Unmarshal(b[i:ke], &key); err != nil {
			return nil, errNotJSON
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, errNotJSON
		}
		vs := skipWS(b, i+1)
		ve, err := valueEnd(b, vs)
		if err != nil {
			return nil, err
		}
		out = append(out, jsonMember{key: key, keyStart: i0, value: byteSpan{vs, ve}})
		i = skipWS(b, ve)
		if i >= len(b) {
			return nil, errNotJSON
		}
		if b[i] == '}' {
			return out, nil
		}
		if b[i] != ',' {
			return nil, errNotJSON
		}
		i = skipWS(b, i+1)
	}
	return nil, errNotJSON
}

// arrayElements lists the element spans of the array b (b is exactly the array).
func arrayElements(b []byte) ([]byteSpan, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	var out []byteSpan
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	for i < len(b) {
		e, err := valueEnd(b, i)
		if err != nil {
			return nil, err
		}
		out = append(out, byteSpan{i, e})
		i = skipWS(b, e)
		if i >= len(b) {
			return nil, errNotJSON
		}
		if b[i] == ']' {
			return out, nil
		}
		if b[i] != ',' {
			return nil, errNotJSON
		}
		i = skipWS(b, i+1)
	}
	return nil, errNotJSON
}

// memberValue returns the value span of the last member named key (the one
// encoding/json and most servers honour when a key repeats).
func memberValue(ms []jsonMember, key string) (byteSpan, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i].value, true
		}
	}
	return byteSpan{}, false
}

// spliceBytes returns b with b[s.start:s.end] replaced by repl, in a new slice.
func spliceBytes(b []byte, s byteSpan, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(s.end-s.start)+len(repl))
	out = append(out, b[:s.start]...)
	out = append(out, repl...)
	return append(out, b[s.end:]...)
}

// setMember replaces the value of key in object b, or adds the member at the
// end of the object when it is missing.
func setMember(b []byte, key string, value []byte) ([]byte, error) {
	ms, err := objectMembers(b)
	if err != nil {
		return nil, err
	}
	if s, ok := memberValue(ms, key); ok {
		return spliceBytes(b, s, value), nil
	}
	kv := append(marshalString(key), ':')
	kv = append(kv, value...)
	if len(ms) == 0 {
		open := skipWS(b, 0)
		return spliceBytes(b, byteSpan{open + 1, open + 1}, kv), nil
	}
	end := ms[len(ms)-1].value.end
	return spliceBytes(b, byteSpan{end, end}, append([]byte{','}, kv...)), nil
}

// removeMembers drops every member named key from object b.
func removeMembers(b []byte, key string) ([]byte, error) {
	for {
		ms, err := objectMembers(b)
		if err != nil {
			return nil, err
		}
		idx := -1
		for i, m := range ms {
			if m.key == key {
				idx = i
				break
			}
		}
		if idx < 0 {
			return b, nil
		}
		// Cut from this key to the next key, or from the end of the previous
		// value to the end of this one, so the separators stay valid.
		var cut byteSpan
		switch {
		case idx+1 < len(ms):
			cut = byteSpan{ms[idx].keyStart, ms[idx+1].keyStart}
		case idx > 0:
			cut = byteSpan{ms[idx-1].value.end, ms[idx].value.end}
		default:
			cut = byteSpan{ms[idx].keyStart, ms[idx].value.end}
		}
		b = spliceBytes(b, cut, nil)
	}
}

// appendElements adds elems at the end of array b.
func appendElements(b []byte, elems ...[]byte) ([]byte, error) {
	if len(elems) == 0 {
		return b, nil
	}
	es, err := arrayElements(b)
	if err != nil {
		return nil, err
	}
	joined := bytes.Join(elems, []byte{','})
	if len(es) == 0 {
		open := skipWS(b, 0)
		return spliceBytes(b, byteSpan{open + 1, open + 1}, joined), nil
	}
	end := es[len(es)-1].end
	return spliceBytes(b, byteSpan{end, end}, append([]byte{','}, joined...)), nil
}

// appendQuoted appends raw (already escaped) text and then the contents of
// the JSON string literal quoted to the JSON string literal b, keeping b's
// original escapes byte for byte (re-encoding would, e.g., turn a lone
// surrogate escape into U+FFFD).
func appendQuoted(b []byte, raw string, quoted []byte) ([]byte, error) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' || len(quoted) < 2 || quoted[0] != '"' {
		return nil, errors.New("not a JSON string")
	}
	out := make([]byte, 0, len(b)+len(raw)+len(quoted))
	out = append(out, b[:len(b)-1]...)
	out = append(out, raw...)
	return append(out, quoted[1:]...), nil
}

// marshalString encodes s as a JSON string without HTML escaping, so the
// upstream (and anyone reading logs) sees <skill_context> rather than \u003c.
func marshalString(s string) []byte {
	b, _ := marshalJSON(s) // a string always encodes
	return b
}

// marshalJSON encodes v compactly without HTML escaping and without the
// trailing newline json.Encoder writes.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// isJSONNull reports whether the raw JSON value is the literal null.
func isJSONNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }
