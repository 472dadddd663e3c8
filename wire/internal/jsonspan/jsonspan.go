// Package jsonspan locates JSON values by byte span and splices new bytes
// into a document, for request rewrites. A request is edited by
// splicing new bytes into the original ones, so every field, number,
// whitespace and message the rewrite does not touch reaches the upstream
// byte-identical (decoding into map[string]any would reorder keys and turn
// large integers into floats). Inputs are checked with json.Valid first; the
// scanners below still bounds-check everything so they cannot panic.
package jsonspan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
)

var errNotJSON = errors.New("not valid JSON")

// Span is a half-open byte range [start, end) of a JSON value in its parent.
type Span struct{ Start, End int }

// Member is one key/value pair of a JSON object, located in the object's bytes.
type Member struct {
	Key      string // decoded key
	KeyStart int    // offset of the key's opening quote
	Value    Span
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

// Unquote decodes the JSON string literal b as encoding/json does. Most
// literals a request holds (keys, roles, plain text) have no escapes and
// are valid UTF-8: they are copied out without the decoder, which checks
// the whole literal again and costs several times the copy.
func Unquote(b []byte) (string, error) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		in := b[1 : len(b)-1]
		plain := true
		for _, c := range in {
			if c < 0x20 || c == '\\' || c == '"' {
				plain = false
				break
			}
		}
		if plain && utf8.Valid(in) {
			return string(in), nil
		}
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// Members lists the members of the object b (b is exactly the object).
func Members(b []byte) ([]Member, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []Member
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
		key, err := Unquote(b[i:ke])
		if err != nil {
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
		out = append(out, Member{Key: key, KeyStart: i0, Value: Span{vs, ve}})
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

// Elements lists the element spans of the array b (b is exactly the array).
func Elements(b []byte) ([]Span, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	var out []Span
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	for i < len(b) {
		e, err := valueEnd(b, i)
		if err != nil {
			return nil, err
		}
		out = append(out, Span{i, e})
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

// Value returns the value span of the last member named key (the one
// encoding/json and most servers honour when a key repeats).
func Value(ms []Member, key string) (Span, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Key == key {
			return ms[i].Value, true
		}
	}
	return Span{}, false
}

// StringAt reads the string at path in the JSON value b with each key
// matched exactly and the last repeat winning, as the APIs' servers read a
// request (encoding/json would match keys case-insensitively): "" and true
// when a member on the path is absent or null; "" and false when b or a
// value on the path is not an object, or the value is not a string.
func StringAt(b []byte, path ...string) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	for _, key := range path {
		if IsNull(b) {
			return "", true
		}
		ms, err := Members(b)
		if err != nil {
			return "", false
		}
		if b = Raw(b, ms, key); b == nil {
			return "", true
		}
	}
	if IsNull(b) {
		return "", true
	}
	s, err := Unquote(b)
	return s, err == nil
}

// Raw is the value of the last member named key of the object b (whose
// members are ms), or nil when there is none.
func Raw(b []byte, ms []Member, key string) []byte {
	if s, ok := Value(ms, key); ok {
		return b[s.Start:s.End]
	}
	return nil
}

// Result is the value of the last member named key as gjson reads it:
// gjson.Get takes the first of repeated keys, where servers take the last.
func Result(b []byte, ms []Member, key string) gjson.Result {
	if v := Raw(b, ms, key); v != nil {
		return gjson.ParseBytes(v)
	}
	return gjson.Result{}
}

// Unambiguous reports whether each of names is the key of at most one
// member of ms and no other key matches it by case folding: then the value
// Value finds is the one encoding/json would decode into a struct field of
// that name (it matches keys case-insensitively, the last repeat winning).
// Fast paths that read members instead of decoding check it first.
func Unambiguous(ms []Member, names ...string) bool {
	for _, n := range names {
		seen := false
		for _, m := range ms {
			if m.Key == n {
				if seen {
					return false
				}
				seen = true
			} else if strings.EqualFold(m.Key, n) {
				return false
			}
		}
	}
	return true
}

// PlainObject returns the members of raw when it is one valid JSON object
// whose names are unambiguous (see Unambiguous): what the fast paths that
// read an upstream's answer by spans, instead of decoding it, start from.
// Validity is gjson's check, which accepts what encoding/json accepts at a
// third of its cost.
func PlainObject(raw []byte, names ...string) ([]Member, bool) {
	if !gjson.ValidBytes(raw) {
		return nil, false
	}
	ms, err := Members(raw)
	if err != nil || !Unambiguous(ms, names...) {
		return nil, false
	}
	return ms, true
}

// StringField is the value of key in object b (whose members are ms) as
// encoding/json decodes it into a string field: "" when absent or null; ok
// is false when it is not a string.
func StringField(b []byte, ms []Member, key string) (v string, ok bool) {
	s, found := Value(ms, key)
	if !found || IsNull(b[s.Start:s.End]) {
		return "", true
	}
	v, err := Unquote(b[s.Start:s.End])
	return v, err == nil
}

// ObjectTypes calls each with the "type" member of every object in the
// array arr, as encoding/json decodes it into a string field ("" when
// absent); elements that are not objects are skipped (an API's items
// decoded one at a time, errors ignored, leave nothing). It returns false
// at once when arr is not an array, a type is ambiguous (see Unambiguous)
// or not a string, or each returns false.
func ObjectTypes(arr []byte, each func(typ string) bool) bool {
	els, err := Elements(arr)
	if err != nil {
		return false
	}
	for _, e := range els {
		el := arr[e.Start:e.End]
		if el[0] != '{' {
			continue
		}
		ms, err := Members(el)
		if err != nil || !Unambiguous(ms, "type") {
			return false
		}
		typ, ok := StringField(el, ms, "type")
		if !ok || !each(typ) {
			return false
		}
	}
	return true
}

// Splice returns b with b[s.Start:s.End] replaced by repl, in a new slice.
func Splice(b []byte, s Span, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(s.End-s.Start)+len(repl))
	out = append(out, b[:s.Start]...)
	out = append(out, repl...)
	return append(out, b[s.End:]...)
}

// Set replaces the value of key in object b, or adds the member at the
// end of the object when it is missing.
func Set(b []byte, key string, value []byte) ([]byte, error) {
	ms, err := Members(b)
	if err != nil {
		return nil, err
	}
	e := SetEdit(b, ms, key, value)
	return Splice(b, e.At, e.With), nil
}

// SetIn is Set on the object that is the value of member outer of object
// b; an error when b has no such member.
func SetIn(b []byte, outer, key string, value []byte) ([]byte, error) {
	ms, err := Members(b)
	if err != nil {
		return nil, err
	}
	at, ok := Value(ms, outer)
	if !ok {
		return nil, fmt.Errorf("no %q member", outer)
	}
	in, err := Set(b[at.Start:at.End], key, value)
	if err != nil {
		return nil, err
	}
	return Splice(b, at, in), nil
}

// SetEdit is Set as an edit of object b, whose members are ms, for Apply
// with other edits of b (at most one of them may add a member).
func SetEdit(b []byte, ms []Member, key string, value []byte) Edit {
	if s, ok := Value(ms, key); ok {
		return Edit{At: s, With: value}
	}
	a := NewAppender(b, ms)
	a.Add(key, value)
	e, _ := a.Edit()
	return e
}

// EditValue replaces the value of object b's member key with what edit
// makes of it; b without the member is returned as it is.
func EditValue(b []byte, key string, edit func(v []byte) ([]byte, error)) ([]byte, error) {
	ms, err := Members(b)
	if err != nil {
		return nil, err
	}
	at, ok := Value(ms, key)
	if !ok {
		return b, nil
	}
	v, err := edit(b[at.Start:at.End])
	if err != nil {
		return nil, err
	}
	return Splice(b, at, v), nil
}

// Remove drops every member named key from object b.
func Remove(b []byte, key string) ([]byte, error) {
	ms, err := Members(b)
	if err != nil {
		return nil, err
	}
	return Apply(b, Removals(ms, key)...), nil
}

// Append adds elems at the end of array b.
func Append(b []byte, elems ...[]byte) ([]byte, error) {
	if len(elems) == 0 {
		return b, nil
	}
	es, err := Elements(b)
	if err != nil {
		return nil, err
	}
	joined := bytes.Join(elems, []byte{','})
	if len(es) == 0 {
		open := skipWS(b, 0)
		return Splice(b, Span{open + 1, open + 1}, joined), nil
	}
	end := es[len(es)-1].End
	return Splice(b, Span{end, end}, append([]byte{','}, joined...)), nil
}

// AppendQuoted appends raw (already escaped) text and then the contents of
// the JSON string literal quoted to the JSON string literal b, keeping b's
// original escapes byte for byte (re-encoding would, e.g., turn a lone
// surrogate escape into U+FFFD).
func AppendQuoted(b []byte, raw string, quoted []byte) ([]byte, error) {
	open, rest, err := QuotedParts(b, quoted)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(raw)+len(quoted))
	out = append(out, open...)
	out = append(out, raw...)
	return append(out, rest...), nil
}

// QuotedParts returns AppendQuoted's pieces without copying them: b
// without its closing quote and quoted without its opening one. A caller
// that assembles a larger body appends open, the raw text and rest itself.
func QuotedParts(b, quoted []byte) (open, rest []byte, err error) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' || len(quoted) < 2 || quoted[0] != '"' {
		return nil, nil, errors.New("not a JSON string")
	}
	return b[:len(b)-1], quoted[1:], nil
}

// IsNull reports whether the raw JSON value is the literal null.
func IsNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }

// RemovePath deletes the member at the end of a path of object keys,
// leaving everything else byte-identical.
func RemovePath(b []byte, path ...string) ([]byte, error) {
	if len(path) == 1 {
		return Remove(b, path[0])
	}
	ms, err := Members(b)
	if err != nil {
		return nil, err
	}
	s, ok := Value(ms, path[0])
	if !ok {
		return b, nil
	}
	inner, err := RemovePath(b[s.Start:s.End], path[1:]...)
	if err != nil {
		return nil, err
	}
	return Splice(b, s, inner), nil
}

// Edit replaces the bytes of At (an empty span inserts at At.Start).
type Edit struct {
	At   Span
	With []byte
}

// Apply returns b with the edits made, in one copy. Edits must not
// overlap; their order does not matter.
func Apply(b []byte, edits ...Edit) []byte {
	sorted := make([]Edit, 0, len(edits))
	n := len(b)
	for _, e := range edits {
		sorted = append(sorted, e)
		n += len(e.With) - (e.At.End - e.At.Start)
	}
	for i := 1; i < len(sorted); i++ { // insertion sort: a handful of edits
		for j := i; j > 0 && sorted[j].At.Start < sorted[j-1].At.Start; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	out := make([]byte, 0, n)
	at := 0
	for _, e := range sorted {
		out = append(out, b[at:e.At.Start]...)
		out = append(out, e.With...)
		at = e.At.End
	}
	return append(out, b[at:]...)
}

// Appender collects members to add at the end of an object, after its
// last member (or inside its braces when it has none): Add each, then
// Edit gives the one edit that inserts them all.
type Appender struct {
	end      Span // just after the last member, or the opening brace
	nonEmpty bool // the object has members: the first added needs a comma
	added    []byte
}

// NewAppender starts the members to add to object b, whose members are ms.
func NewAppender(b []byte, ms []Member) *Appender {
	if len(ms) > 0 {
		e := ms[len(ms)-1].Value.End
		return &Appender{end: Span{e, e}, nonEmpty: true}
	}
	open := skipWS(b, 0)
	return &Appender{end: Span{open + 1, open + 1}}
}

// Add adds the member key with the JSON value.
func (a *Appender) Add(key string, value []byte) {
	if a.nonEmpty || len(a.added) > 0 {
		a.added = append(a.added, ',')
	}
	a.added = append(a.added, wire.Quote(key)...)
	a.added = append(a.added, ':')
	a.added = append(a.added, value...)
}

// Edit returns the edit that inserts the added members; ok is false when
// none were added.
func (a *Appender) Edit() (e Edit, ok bool) {
	return Edit{At: a.end, With: a.added}, len(a.added) > 0
}

// Body checks that a request body is one valid JSON object and lists its
// members; what names the expected request in the error for an empty body.
// names are the top-level parameters the proxy reads or writes: one
// written in another case ("Tools") is refused, as the APIs refuse an
// unknown parameter; passed on, it would sit beside the member the proxy
// adds, which an upstream in Go reads as the same.
func Body(body []byte, what string, names ...string) ([]Member, *wire.Error) {
	trimmed := body
	for len(trimmed) > 0 && (trimmed[0] == ' ' || trimmed[0] == '\t' || trimmed[0] == '\n' || trimmed[0] == '\r') {
		trimmed = trimmed[1:]
	}
	if len(trimmed) == 0 {
		return nil, wire.BadRequest("invalid_json", "", "request body is empty: expected %s", what)
	}
	if trimmed[0] != '{' {
		return nil, wire.BadRequest("invalid_json", "", "request body must be a JSON object")
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return nil, wire.BadRequest("invalid_json", "", "request body is not valid JSON: %v", err)
	}
	ms, err := Members(body)
	if err != nil {
		return nil, wire.BadRequest("invalid_json", "", "request body must be a JSON object")
	}
	// encoding/json accepts invalid UTF-8 in strings (and decodes it to
	// U+FFFD), upstreams answer it with a 400 of their own or worse: it is
	// rejected here, naming the value that holds it.
	if at := invalidUTF8(body); at >= 0 {
		p := PathAt(body, at)
		return nil, wire.BadRequest("invalid_utf8", p, "%s is not valid UTF-8 (byte 0x%02x at offset %d)", quotedPath(p), body[at], at)
	}
	// The proxy reads and edits a member's first copy; upstreams decode
	// the last (Python's json, encoding/json), and those in Go match names
	// regardless of case (Ollama's "Messages" is its messages). Two copies
	// of messages or tools would have the model read what the proxy did not
	// route or edit.
	if k, ok := repeated(ms); ok {
		return nil, wire.BadRequest("duplicate_parameter", k, "%s appears more than once in the request body; send each parameter once", quotedPath(k))
	}
	for _, m := range ms {
		for _, n := range names {
			if m.Key != n && strings.EqualFold(m.Key, n) {
				return nil, wire.BadRequest("unknown_parameter", m.Key, "unknown parameter %s: the API's is %s", quotedPath(m.Key), quotedPath(n))
			}
		}
	}
	return ms, nil
}

// repeated returns a key that two members share, compared without case.
// A request has a dozen members; a body of thousands gets a map, not a
// quadratic scan.
func repeated(ms []Member) (string, bool) {
	if len(ms) > 32 {
		seen := make(map[string]struct{}, len(ms))
		for _, m := range ms {
			k := strings.ToLower(m.Key)
			if _, ok := seen[k]; ok {
				return m.Key, true
			}
			seen[k] = struct{}{}
		}
		return "", false
	}
	for i := 1; i < len(ms); i++ {
		for _, m := range ms[:i] {
			if strings.EqualFold(m.Key, ms[i].Key) {
				return ms[i].Key, true
			}
		}
	}
	return "", false
}

// invalidUTF8 returns the offset of the first byte of b that is not part of
// a valid UTF-8 sequence, or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

func quotedPath(p string) string {
	if p == "" {
		return "the request body"
	}
	return "'" + p + "'"
}

// PathAt names the innermost value of the JSON document b that holds the
// byte at off, in the notation of error params ("messages[1].content[0].text");
// a byte inside a member's key names that member. "" for the top level.
func PathAt(b []byte, off int) string {
	var path strings.Builder
	for {
		i := skipWS(b, 0)
		if i >= len(b) {
			return path.String()
		}
		switch b[i] {
		case '{':
			ms, err := Members(b)
			if err != nil {
				return path.String()
			}
			found := false
			for _, m := range ms {
				if off >= m.KeyStart && off < m.Value.End {
					if path.Len() > 0 {
						path.WriteByte('.')
					}
					path.WriteString(m.Key)
					if off < m.Value.Start {
						return path.String()
					}
					b, off = b[m.Value.Start:m.Value.End], off-m.Value.Start
					found = true
					break
				}
			}
			if !found {
				return path.String()
			}
		case '[':
			els, err := Elements(b)
			if err != nil {
				return path.String()
			}
			found := false
			for k, e := range els {
				if off >= e.Start && off < e.End {
					fmt.Fprintf(&path, "[%d]", k)
					b, off = b[e.Start:e.End], off-e.Start
					found = true
					break
				}
			}
			if !found {
				return path.String()
			}
		default:
			return path.String()
		}
	}
}

// Array renders elements as a compact JSON array.
func Array(els [][]byte) []byte {
	n := 2
	for _, e := range els {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range els {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
}

// Removals are the edits that remove every member named one of keys from
// the object whose members are ms, for one Apply: each run of adjacent
// such members goes from its first key to the next key, or, at the end of
// the object, from the end of the value before it, so the separators stay
// valid and no two edits overlap (removing two adjacent members one by one
// would cut the comma between them twice).
func Removals(ms []Member, keys ...string) []Edit {
	var edits []Edit
	for i := 0; i < len(ms); i++ {
		if !slices.Contains(keys, ms[i].Key) {
			continue
		}
		j := i // the run is ms[i..j]
		for j+1 < len(ms) && slices.Contains(keys, ms[j+1].Key) {
			j++
		}
		switch {
		case j+1 < len(ms):
			edits = append(edits, Edit{At: Span{ms[i].KeyStart, ms[j+1].KeyStart}})
		case i > 0:
			edits = append(edits, Edit{At: Span{ms[i-1].Value.End, ms[j].Value.End}})
		default:
			edits = append(edits, Edit{At: Span{ms[i].KeyStart, ms[j].Value.End}})
		}
		i = j
	}
	return edits
}

// Decode decodes the value of member key of the object whose members are ms
// into v, when it is present and not null; a value v cannot take is the
// 400 that names key and what it must be (want: "a string").
func Decode(body []byte, ms []Member, key string, v any, want string) *wire.Error {
	s, ok := Value(ms, key)
	if !ok || IsNull(body[s.Start:s.End]) {
		return nil
	}
	raw := body[s.Start:s.End]
	if sp, ok := v.(*string); ok {
		str, err := Unquote(raw)
		if err != nil {
			return wire.TypeError(key, want, raw)
		}
		*sp = str
		return nil
	}
	if json.Unmarshal(raw, v) != nil {
		return wire.TypeError(key, want, raw)
	}
	return nil
}

// Objects lists the elements of the array raw, the value of param, each of
// which must be an object (what names one: "a tool object"); otherwise the
// 400 naming param or the element at fault.
func Objects(raw []byte, param, what string) ([][]byte, *wire.Error) {
	els, err := Elements(raw)
	if err != nil {
		return nil, wire.TypeError(param, "an array of "+strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a ")+"s", raw)
	}
	out := make([][]byte, len(els))
	for i, e := range els {
		el := raw[e.Start:e.End]
		if el[0] != '{' {
			return nil, wire.TypeError(fmt.Sprintf("%s[%d]", param, i), what, el)
		}
		out[i] = el
	}
	return out, nil
}

// SetTools sets the "tools" of a follow-up body to ts as render renders
// it, when ts differs from the client's tools; nothing when render gives
// nil (no tool left).
func SetTools(body []byte, ts wire.ToolSet, render func(wire.ToolSet) []byte) ([]byte, error) {
	if !ts.Changed() {
		return body, nil
	}
	tools := render(ts)
	if tools == nil {
		return body, nil
	}
	return Set(body, "tools", tools)
}

// SetBudget sets key to what is left of b when the client set that limit
// (see wire.Budget); a body without it is returned as it is.
func SetBudget(body []byte, key string, b wire.Budget) ([]byte, error) {
	if !b.Set {
		return body, nil
	}
	return Set(body, key, strconv.AppendInt(nil, b.Left, 10))
}
