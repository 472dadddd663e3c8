package proxy

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/skillrouter/skillrouter/wire"
)

// Pass-through confinement. The proxy forwards /v1/<rest> to the
// upstream's base path + <rest> with the operator's key attached, so a
// request target must never name anything outside that base once an
// upstream (or a frontend before it) normalizes it: "/v1/../../admin/keys"
// would reach /admin/keys there. Request targets with dot-segments (also
// percent-encoded: %2e), encoded slashes or backslashes (%2f, %5c, \) are
// rejected with 400 before routing; no client of these APIs sends them.

// confine is the middleware that rejects such targets.
func (s *Server) confine(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if werr := checkTarget(r); werr != nil {
			info := requestInfo(c)
			info.status, info.err = werr.Status, werr.Message
			writeError(c.Response(), apiFor(r), werr)
			return nil
		}
		return next(c)
	}
}

// checkTarget inspects the path of the request target as the client sent
// it (RequestURI), before any decoding.
func checkTarget(r *http.Request) *wire.Error {
	raw := rawPath(r)
	if strings.ContainsRune(raw, '\\') || containsFold(raw, "%2f") || containsFold(raw, "%5c") {
		return wire.BadRequest("invalid_path", "", "request path %q holds an encoded slash or a backslash", wire.Clip(raw))
	}
	for _, seg := range strings.Split(raw, "/") {
		if why := segmentProblem(seg); why != "" {
			return wire.BadRequest("invalid_path", "", "request path %q %s", wire.Clip(raw), why)
		}
	}
	return nil
}

// segmentProblem says why one segment of a raw request path could name
// something else once a server normalizes it, or "". Servers differ in
// what they undo before resolving dot-segments, so the segment is read as
// each might: percent-decoded up to three times (an upstream or frontend
// that decodes twice turns %252e%252e into ..), without the path
// parameters after ';' (Tomcat and Spring read "..;" as ..), and with
// control characters refused (%00 ends the path for some, %09 is trimmed
// by others).
func segmentProblem(seg string) string {
	if !strings.ContainsAny(seg, "%;") && seg != "." && seg != ".." {
		return "" // most segments: nothing to decode
	}
	for round := 0; ; round++ {
		base, _, _ := strings.Cut(seg, ";")
		if base == "." || base == ".." {
			return "holds a dot-segment"
		}
		if strings.ContainsFunc(seg, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "holds a control character"
		}
		if round > 0 && strings.ContainsAny(seg, "/\\") {
			return "holds an encoded slash or a backslash"
		}
		if round == 3 || !strings.Contains(seg, "%") {
			return ""
		}
		dec, err := url.PathUnescape(seg)
		if err != nil {
			if round == 0 {
				return "is not a valid URL path"
			}
			return "" // a literal % once decoded: nothing more to undo
		}
		seg = dec
	}
}

// mergeSlashes reads a doubled slash in the request path as one, as nginx
// does by default, and drops a trailing one, before routing:
// "/v1//chat/completions" and "/v1/chat/completions/" are routed as
// /v1/chat/completions, and a pass-through path goes upstream as the rules
// checked it (they match cleaned paths).
func mergeSlashes(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		if strings.Contains(u.Path, "//") || len(u.Path) > 1 && strings.HasSuffix(u.Path, "/") {
			u.Path = collapseSlashes(u.Path)
			u.RawPath = collapseSlashes(u.RawPath)
		}
		return next(c)
	}
}

// collapseSlashes replaces each run of slashes in p with one and drops a
// trailing one ("/" stays).
func collapseSlashes(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// rawPath is the path of the request target as sent, without the query.
func rawPath(r *http.Request) string {
	raw := r.RequestURI
	if raw == "" || raw == "*" {
		return r.URL.EscapedPath()
	}
	if !strings.HasPrefix(raw, "/") { // absolute-form: http://host/path
		if u, err := url.ParseRequestURI(raw); err == nil {
			if u.RawPath != "" {
				return u.RawPath
			}
			return u.EscapedPath()
		}
	}
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	return raw
}

func containsFold(s, sub string) bool { return strings.Contains(strings.ToLower(s), sub) }

// errOutsideBase is what url returns for a path that would leave the
// upstream's base path; checkTarget makes it unreachable for requests that
// went through the middleware, this is the second line.
var errOutsideBase = errors.New("request path leaves the upstream's base path")

// within reports whether upstream path p, normalized as a server would,
// stays under base (base "" is the root).
func within(p, base string) bool {
	c := path.Clean(p)
	return base == "" || c == base || strings.HasPrefix(c, base+"/")
}
