package proxy

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/skillrouter/skillrouter/wire"
)

// The pass-through allowlist (Config.PassThrough). With the operator's
// key, whatever the proxy relays as the client addressed it reaches the
// whole upstream account; an operator who shares the proxy chooses what
// passes, as LLM gateways let them.
//
// A pattern is "[METHOD ]PATH": PATH is relative to /v1/ (and so never
// starts with v1/, which would match /v1/v1/…), its segments
// are path.Match patterns of one segment each (*, ?, [a-z]), and a last
// segment "**" matches the rest of the path, nothing included (files/**
// matches files, files/f and files/f/content; ** alone every path).
// METHOD, in upper case, limits the pattern to that method (GET admits
// HEAD too); without it every method passes.

// PassAll is the pattern that lets every path through: the default.
const PassAll = "**"

// PatternError is a bad pattern of Config.PassThrough.
type PatternError struct {
	Index   int // in the list
	Pattern string
	Reason  string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("pass-through pattern %q: %s", e.Pattern, e.Reason)
}

// CheckPassThrough reports the first bad pattern of a Config.PassThrough
// list as a *PatternError, as New would.
func CheckPassThrough(patterns []string) error {
	_, err := parsePassThrough(patterns)
	return err
}

// passRule is one parsed pattern.
type passRule struct {
	method string   // "" = any
	segs   []string // path.Match patterns of the first segments under /v1/
	rest   bool     // a last "**": any further segments, none included
}

// passRules is a parsed list; empty allows nothing.
type passRules []passRule

func parsePassThrough(patterns []string) (passRules, error) {
	rules := make(passRules, 0, len(patterns))
	for i, p := range patterns {
		r, reason := parsePassRule(p)
		if reason != "" {
			return nil, &PatternError{Index: i, Pattern: p, Reason: reason}
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parsePassRule(p string) (passRule, string) {
	var r passRule
	f := strings.Fields(p)
	switch len(f) {
	case 0:
		return r, "empty: want a path relative to /v1/, such as models/*"
	case 1:
	case 2:
		if !slices.Contains(routedMethods, f[0]) {
			return r, "want an HTTP method in upper case (GET, POST, DELETE…) before the path, or the path alone"
		}
		r.method = f[0]
	default:
		return r, "want [METHOD ]PATH: an HTTP method, a space and a path, or the path alone"
	}
	rel := f[len(f)-1]
	if strings.HasPrefix(rel, "/") {
		return r, "want a path relative to /v1/ (models/*, not /v1/models/*)"
	}
	segs := strings.Split(rel, "/")
	if segs[0] == "v1" { // would match /v1/v1/…, never what was meant
		return r, "want a path relative to /v1/ (models/*, not v1/models/*)"
	}
	for i, seg := range segs {
		switch {
		case seg == "":
			return r, "empty segment (a leading, trailing or double slash)"
		case seg == "." || seg == "..":
			return r, "dot-segment: paths are matched cleaned, as the upstream sees them"
		case strings.Contains(seg, "**") && (seg != "**" || i != len(segs)-1):
			return r, `"**" matches the rest of the path: only as the whole last segment (files/**)`
		}
		if _, err := path.Match(seg, ""); err != nil {
			return r, fmt.Sprintf("segment %q: bad pattern syntax (%v)", seg, err)
		}
	}
	if segs[len(segs)-1] == "**" {
		r.rest, segs = true, segs[:len(segs)-1]
	}
	r.segs = segs
	return r, ""
}

// allow reports whether a request may pass: its path is matched cleaned,
// as an upstream resolves it, never as sent.
func (rs passRules) allow(method, urlPath string) bool {
	c := path.Clean(urlPath)
	var segs []string
	if rest, ok := strings.CutPrefix(c, "/v1/"); ok {
		segs = strings.Split(rest, "/")
	} else if c != "/v1" {
		return false
	}
	for _, r := range rs {
		if r.matches(method, segs) {
			return true
		}
	}
	return false
}

func (r passRule) matches(method string, segs []string) bool {
	if r.method != "" && r.method != method && (r.method != http.MethodGet || method != http.MethodHead) {
		return false
	}
	if len(segs) < len(r.segs) || (!r.rest && len(segs) > len(r.segs)) {
		return false
	}
	for i, pat := range r.segs {
		if ok, _ := path.Match(pat, segs[i]); !ok {
			return false
		}
	}
	return true
}

// passable guards a handler that relays the client's request to the
// upstream as the client addressed it (pass-through, and the read-backs
// of stored objects, which read them with the operator's key just as
// well): a request the list does not allow gets 404, which SDKs and
// agents take for an endpoint this server does not offer (403 would read
// as a problem with their key), and never goes upstream.
func (s *Server) passable(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.pass.allow(r.Method, r.URL.Path) {
			return next(c)
		}
		werr := &wire.Error{Status: http.StatusNotFound, Kind: wire.KindInvalidRequest, Code: "passthrough_not_allowed",
			Message: fmt.Sprintf("%s %s is not passed through to the upstream: no pattern of upstream.passthrough allows it",
				r.Method, wire.Clip(path.Clean(r.URL.Path)))}
		info := requestInfo(c)
		info.status, info.err, info.outcome = werr.Status, werr.Message, outcomePassthroughRefused
		writeError(c.Response(), apiFor(r), werr)
		return nil
	}
}
