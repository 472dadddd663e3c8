package router

// Server-side tools the rewrite offers (load_skill, search_skills) and the
// shapes of their answers.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// Names of the router's own tools.
const (
	ToolLoadSkill    = "load_skill"
	ToolSearchSkills = "search_skills"
)

// IsTool reports whether name is one of the router's own tools, offered on
// some turn or other.
func IsTool(name string) bool { return name == ToolLoadSkill || name == ToolSearchSkills }

// Limits of search_skills.
const (
	SearchDefaultLimit = 5
	SearchMaxLimit     = 20
)

// searchSkillsSpec is the search_skills tool.
var searchSkillsSpec = wire.ToolSpec{
	Name:        ToolSearchSkills,
	Description: "Search the whole skill library, including skills not listed in <available_skills>. Returns the id and description of the best matches; load one with load_skill.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What the task is about, in a few words."},"limit":{"type":"integer","description":"How many matches to return (default 5, at most 20).","minimum":1,"maximum":20}},"required":["query"]}`),
}.Rendered()

// loadSkillSpec returns the load_skill tool for the eligible skills. When
// the catalog leaves skills out, the id enum is dropped: search_skills hands
// out ids the catalog does not show, and an enum would grow with the library
// while the point of the budget is a constant-size prompt.
func (l *skillLib) loadSkillSpec(partial bool) wire.ToolSpec {
	l.mu.Lock()
	d, ok := l.loadTool[partial]
	l.mu.Unlock()
	if ok {
		return d
	}
	list := l.eligible
	if partial {
		list = nil
	}
	d = skills.LoadSkillSpec(list).Rendered()
	l.mu.Lock()
	l.loadTool[partial] = d
	l.mu.Unlock()
	return d
}

// DecodeToolArgs decodes tool-call arguments into v, for every tool the
// proxy answers (tier 3's included). Models send an object, but also ""
// (no arguments) or the object double-encoded as a JSON string. Errors say
// which argument is wrong in the model's terms, never Go's.
func DecodeToolArgs(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return errors.New("arguments are not valid JSON")
		}
		if strings.TrimSpace(s) == "" {
			s = "{}"
		}
		raw = []byte(s)
	}
	if !json.Valid(raw) {
		return errors.New("arguments are not valid JSON")
	}
	if bytes.TrimSpace(raw)[0] != '{' {
		return errors.New("arguments must be a JSON object")
	}
	if err := unmarshalWhole(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			want := te.Type.Kind().String()
			switch te.Type.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				want = "a whole number"
			case reflect.Float32, reflect.Float64:
				want = "a number"
			case reflect.String:
				want = "a string"
			case reflect.Slice:
				want = "an array"
			case reflect.Struct, reflect.Map:
				want = "an object"
			case reflect.Bool:
				want = "true or false"
			}
			return fmt.Errorf("argument %q must be %s, got %s", wire.Clip(te.Field), want, wire.Clip(te.Value))
		}
		if errors.Is(err, errTooManyWhole) {
			return err
		}
		return errors.New("arguments have the wrong types")
	}
	return nil
}

// unmarshalWhole is json.Unmarshal, but a whole number written with a
// fraction or an exponent (20.0, 1e10: JSON Schema's integer allows them,
// and Python hosts and models send them) fills an integer field, and a
// whole number out of the field's range is taken as the nearest bound
// (tools clamp their own ranges). Such a number is rewritten where the
// decoder reports it and the decode runs again: arguments hold few of them,
// and the usual call decodes once.
func unmarshalWhole(raw []byte, v any) error {
	err := json.Unmarshal(raw, v)
	for range maxWholeRewrites {
		var te *json.UnmarshalTypeError
		if err == nil || !errors.As(err, &te) {
			return err
		}
		lit, ok := strings.CutPrefix(te.Value, "number ")
		end := int(te.Offset)
		if !ok || end < len(lit) || end > len(raw) || string(raw[end-len(lit):end]) != lit {
			return err
		}
		n, ok := wholeNumber(lit, te.Type)
		if !ok {
			return err
		}
		raw = slices.Concat(raw[:end-len(lit)], []byte(n), raw[end:])
		err = json.Unmarshal(raw, v)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && strings.HasPrefix(te.Value, "number ") {
		if _, whole := wholeNumber(strings.TrimPrefix(te.Value, "number "), te.Type); whole {
			return errTooManyWhole
		}
	}
	return err
}

// maxWholeRewrites bounds the decodes unmarshalWhole runs again.
const maxWholeRewrites = 64

var errTooManyWhole = fmt.Errorf("arguments hold more than %d whole numbers written with a fraction or an exponent: write them as integers (20, not 20.0)", maxWholeRewrites)

// wholeNumber writes the JSON number lit as an integer literal of type t's
// range (clamped to it), when lit is a whole number and t an integer type.
func wholeNumber(lit string, t reflect.Type) (string, bool) {
	if !wholeLiteral(lit) {
		return "", false // not whole (20.5, 1e-400, 20.000000000000001)
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		hi := math.Ldexp(1, t.Bits()-1) // 2^(bits-1): the first value out of range
		switch {
		case f >= hi:
			return strconv.FormatInt(int64(uint64(1)<<(t.Bits()-1)-1), 10), true
		case f < -hi:
			return strconv.FormatInt(-int64(uint64(1)<<(t.Bits()-1)-1)-1, 10), true
		}
		return strconv.FormatInt(int64(f), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		switch {
		case f < 0:
			return "0", true
		case f >= math.Ldexp(1, t.Bits()):
			return strconv.FormatUint(math.MaxUint64>>(64-t.Bits()), 10), true
		}
		return strconv.FormatUint(uint64(f), 10), true
	}
	return "", false
}

// wholeLiteral reports whether the JSON number lit is a whole number, by
// its digits (a float64 rounds 1e-400 to 0 and 20.000000000000001 to 20):
// its significant digits times 10 to its exponent, less the fraction's
// length, needs no digits after the point.
func wholeLiteral(lit string) bool {
	mant, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil { // beyond int: as large as numbers go, or as small
			return !strings.HasPrefix(lit[i+1:], "-") || strings.Trim(mant, "-0.") == ""
		}
		exp = e
	}
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimRight(intPart+frac, "0")
	if strings.Trim(digits, "0") == "" {
		return true // zero, however written
	}
	// The number is digits × 10^(exp − len(frac) + trailing zeros dropped).
	return exp-len(frac)+(len(intPart)+len(frac)-len(digits)) >= 0
}

// ToolFailed recognises the error answers of the router's and the
// sandbox's tools, whose shapes are fixed for models: load_skill's
// <skill_error>, search_skills' {"error":...}, the sandbox's {"ok":false,...}.
// The MCP server's isError and Messages' is_error follow it.
func ToolFailed(name, out string) bool {
	switch name {
	case ToolLoadSkill:
		return strings.HasPrefix(out, "<skill_error") || strings.HasPrefix(out, `{"error":`)
	case ToolSearchSkills:
		return strings.HasPrefix(out, `{"error":`)
	}
	return strings.HasPrefix(out, `{"ok":false`) || strings.HasPrefix(out, `{"error":`)
}

// toolError renders a structured error result for the model.
func toolError(tool, kind, message string) string {
	b := wire.Marshal(struct {
		Error struct {
			Tool    string `json:"tool"`
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}{Error: struct {
		Tool    string `json:"tool"`
		Type    string `json:"type"`
		Message string `json:"message"`
	}{tool, kind, message}})
	return string(b)
}

// load_skill answers other than the envelope follow the skills package's
// <skill_error> shape, so the model sees one format for that tool.
var (
	xmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	xmlAttr = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\n", "&#10;", "\t", "&#9;", "\r", "&#13;")
)

// loadSkillError is load_skill's structured error (bad arguments).
func loadSkillError(id, reason, message string) string {
	return `<skill_error id="` + xmlAttr.Replace(id) + `" reason="` + xmlAttr.Replace(reason) + "\">\n  <message>" +
		xmlText.Replace(message) + "</message>\n</skill_error>"
}

// alreadyActive is load_skill's short answer for a skill whose envelope is
// already in the conversation. It deliberately lacks the envelope's opening
// tag, so dedup never mistakes it for the envelope.
func alreadyActive(id string) string {
	return `<skill_status id="` + xmlAttr.Replace(id) + "\" status=\"already_active\">\n  <message>The skill \"" +
		xmlText.Replace(id) + "\" is already loaded in this conversation: follow its instructions above; there is no need to load it again.</message>\n</skill_status>"
}

// searchHit is one search_skills result.
type searchHit struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

func searchResult(query string, hits []searchHit) string {
	if hits == nil {
		hits = []searchHit{}
	}
	hint := "Call load_skill with the id of the skill that fits the task."
	if len(hits) == 0 {
		hint = "No skill matches; try other words or continue without a skill."
	}
	b := wire.Marshal(struct {
		Query   string      `json:"query"`
		Results []searchHit `json:"results"`
		Hint    string      `json:"hint"`
	}{query, hits, hint})
	return string(b)
}

// IsToolResult reports whether text is an answer load_skill or
// search_skills gives, told by its shape alone, as the writers above (and
// package skills) write it: an envelope, a <skill_error> or <skill_status>
// element, search results or a structured error that these writers give
// back byte for byte. A stored read-back hides such an output wherever its
// call is (wire.Marks.ToolResult); a client's own tool answering in these
// shapes is not expected.
func IsToolResult(text string) bool {
	switch {
	case skills.IsEnvelope(text), element(text, "skill_error"), element(text, "skill_status"):
		return true
	case !strings.HasPrefix(text, "{"):
		return false
	}
	var e struct {
		Error *struct{ Tool, Type, Message string } `json:"error"`
	}
	if json.Unmarshal([]byte(text), &e) == nil && e.Error != nil && toolError(e.Error.Tool, e.Error.Type, e.Error.Message) == text {
		return true
	}
	var r struct {
		Query   string      `json:"query"`
		Results []searchHit `json:"results"`
	}
	return json.Unmarshal([]byte(text), &r) == nil && searchResult(r.Query, r.Results) == text
}

// element reports whether text is one <tag id="…" …>…</tag> element, as
// the load_skill answers other than the envelope are written.
func element(text, tag string) bool {
	rest, ok := strings.CutPrefix(text, "<"+tag+` id="`)
	if !ok || !strings.HasSuffix(rest, "</"+tag+">") {
		return false
	}
	id, _, ok := strings.Cut(rest, `"`)
	return ok && !strings.ContainsAny(id, "<>\n")
}
