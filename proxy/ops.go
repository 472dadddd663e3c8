package proxy

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// healthz: the process is alive and serving.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz: every arm's library and indexes are loaded. 503 until then, so a
// load balancer keeps traffic away while a large library is being indexed.
// The body also carries the last upstream checks, which never change the status.
func (s *Server) readyz(c echo.Context) error {
	var notReady []string
	for _, a := range s.arms {
		if !a.rw.Ready() {
			notReady = append(notReady, armLabel(a.name))
		}
	}
	out := map[string]any{"status": "ready"}
	if up := s.upstreamStatus(); up != nil {
		out["upstreams"] = up
	}
	// Ranking without the embedder (BM25) is degraded, not unready: the
	// body says so, the status does not change.
	type degradation struct {
		Arms   []string `json:"arms"` // those sharing one router share its reason
		Reason string   `json:"reason"`
	}
	var degradedArms []*degradation
	for _, a := range s.arms {
		why := Degraded(a.rw)
		if why == "" {
			continue
		}
		if i := slices.IndexFunc(degradedArms, func(g *degradation) bool { return g.Reason == why }); i >= 0 {
			degradedArms[i].Arms = append(degradedArms[i].Arms, armLabel(a.name))
		} else {
			degradedArms = append(degradedArms, &degradation{[]string{armLabel(a.name)}, why})
		}
	}
	if degradedArms != nil {
		out["ranking_degraded"] = degradedArms
	}
	if len(notReady) > 0 {
		out["status"], out["arms"] = "not ready", notReady
		return c.JSON(http.StatusServiceUnavailable, out)
	}
	if s.cfg.Library != nil {
		out["skills"] = len(s.cfg.Library.Snapshot().Skills())
	}
	return c.JSON(http.StatusOK, out)
}

// skillEntry is one row of GET /v1/skills.
type skillEntry struct {
	ID          string           `json:"id"`
	Object      string           `json:"object"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Type        skills.Type      `json:"type"`
	Skipped     bool             `json:"skipped,omitempty"`
	Problems    []skills.Problem `json:"problems"`
}

func (s *Server) library(c echo.Context) (Library, bool) {
	if s.cfg.Library == nil {
		writeError(c.Response(), chatAPI{}, &wire.Error{Status: http.StatusNotFound, Code: "not_found", Message: "no skill library is configured"})
		return nil, false
	}
	return s.cfg.Library, true
}

// listSkills serves GET /v1/skills: every skill found, skipped ones included
// (with the problems that kept them out), in id order, and the problems
// that belong to no skill (a root that does not exist or cannot be read, a
// symlink loop, the folder bound), which no entry of data could carry. So
// the entries' problems and the top-level ones are, between them, every
// problem POST /v1/skills/reload and `router skills validate` report, in
// the same {path, line, severity, message} shape.
func (s *Server) listSkills(c echo.Context) error {
	lib, ok := s.library(c)
	if !ok {
		return nil
	}
	snap := lib.Snapshot()
	all := snap.All()
	roots := rootPrefixes(snap.Roots())
	data := make([]skillEntry, 0, len(all))
	for _, sk := range all {
		data = append(data, skillEntry{ID: sk.ID, Object: "skill", Name: sk.Name, Description: sk.Description,
			Type: sk.Type, Skipped: sk.Skipped, Problems: problemsForClients(sk.Problems, roots)})
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "data": data,
		"problems": problemsForClients(snap.LibraryProblems(), roots)})
}

// problemsForClients is forClients on each problem; never nil, so the JSON
// shows [] rather than null.
func problemsForClients(ps []skills.Problem, roots []rootPrefix) []skills.Problem {
	out := make([]skills.Problem, len(ps))
	for i, p := range ps {
		out[i] = forClients(p, roots)
	}
	return out
}

// rootPrefix is a library root as paths begin with it, and what a
// message shows in its place; name is what stands for the root itself
// (rootLabel), in a path or message that names it, as a problem of the
// root does.
type rootPrefix struct{ path, label, name string }

// rootPrefixes are the library roots as paths begin with them, as given
// and absolute, the longest first: a root inside another names the
// shorter path. With several roots a message names a path's root (see
// rootLabel): a copy shadowed in another root would otherwise read as the
// skill's own path.
func rootPrefixes(roots []string) []rootPrefix {
	var prefixes []rootPrefix
	for _, r := range roots {
		label := ""
		if len(roots) > 1 {
			label = rootLabel(r) + "/"
		}
		name := rootLabel(r)
		prefixes = append(prefixes, rootPrefix{strings.TrimSuffix(r, string(filepath.Separator)) + string(filepath.Separator), label, name})
		if abs, err := filepath.Abs(r); err == nil && abs != r {
			prefixes = append(prefixes, rootPrefix{abs + string(filepath.Separator), label, name})
		}
	}
	slices.SortFunc(prefixes, func(a, b rootPrefix) int { return len(b.path) - len(a.path) })
	return prefixes
}

// rootLabel names a root to clients without where the machine keeps it:
// below the home folder as ~/... (the default roots are all named
// "skills": ~/.claude/skills, ~/.codex/skills, ...), a relative one as
// given, any other by its last two folders.
func rootLabel(root string) string {
	clean := filepath.Clean(root)
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		if rel, err := filepath.Rel(home, clean); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(filepath.Join("~", rel))
		}
	}
	if !filepath.IsAbs(clean) {
		return filepath.ToSlash(clean)
	}
	return filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(clean)), filepath.Base(clean)))
}

// What may come right before a path a message names, and what ends one
// (white space as regexp's \s). A "?" ends it: "such as /?" in the folder
// bound's warning is text, not a path.
const (
	beforePath = " \t\n\f\r(\"'"
	afterPath  = " \t\n\f\r,;:\"')?"
)

// absolutePath is a path a message names outside every root (a symlink's
// target), once the roots are taken off.
var absolutePath = regexp.MustCompile(`(^|[` + regexp.QuoteMeta(beforePath) + `])/[^` + regexp.QuoteMeta(afterPath) + `]+`)

// pathEnd reports whether a path a message names ends at byte i of msg.
func pathEnd(msg string, i int) bool {
	return i == len(msg) || strings.IndexByte(afterPath, msg[i]) >= 0
}

// pathStart reports whether a path a message names may start at byte i of msg.
func pathStart(msg string, i int) bool {
	return i == 0 || strings.IndexByte(beforePath, msg[i-1]) >= 0
}

// replaceRoot replaces in msg each whole occurrence of root (not one inside
// another path, as "/srv/skills" is in "/srv/skills2" or "/x/srv/skills")
// with name.
func replaceRoot(msg, root, name string) string {
	if root == "" {
		return msg
	}
	var b strings.Builder
	done := 0 // msg[:done] is in b
	for off := 0; ; {
		i := strings.Index(msg[off:], root)
		if i < 0 {
			break
		}
		i += off
		off = i + len(root)
		if pathStart(msg, i) && pathEnd(msg, off) {
			b.WriteString(msg[done:i])
			b.WriteString(name)
			done = off
		}
	}
	b.WriteString(msg[done:])
	return b.String()
}

// rootPath is a problem's path that is a root itself (a root that does not
// exist, the folder bound), or the roots joined by the list separator (a
// scan stopped early), by the roots' names; ok is false for any other.
func rootPath(p string, prefixes []rootPrefix) (string, bool) {
	name := func(part string) (string, bool) {
		k := slices.IndexFunc(prefixes, func(pre rootPrefix) bool {
			return strings.TrimSuffix(part, string(filepath.Separator))+string(filepath.Separator) == pre.path
		})
		if k < 0 {
			return "", false
		}
		return prefixes[k].name, true
	}
	if p == "" {
		return "", false
	}
	if n, ok := name(p); ok {
		return n, true
	}
	parts := filepath.SplitList(p)
	for i, part := range parts {
		n, ok := name(part)
		if !ok {
			return "", false
		}
		parts[i] = n
	}
	return strings.Join(parts, string(filepath.ListSeparator)), len(parts) > 1
}

// forClients gives a problem's paths, in its path and its message (a
// shadowed copy, a shared name), below their library root (prefixes, from
// rootPrefixes), and leaves out paths outside the library (a symlink's
// target): any client with a key may list the library, and where the
// operator keeps it (/home/alice/...), or what its links lead to, is not
// theirs to see. The admin's reload answer and the log keep the full paths.
//
// A root itself, in a problem of the root (one that does not exist, or
// another root that is the same directory), is named as rootLabel names
// it: ~/.claude/skills, a relative root as given, any other by its last
// two folders.
func forClients(p skills.Problem, prefixes []rootPrefix) skills.Problem {
	root, isRoot := rootPath(p.Path, prefixes)
	for _, pre := range prefixes {
		p.Path = strings.ReplaceAll(p.Path, pre.path, "")
		p.Message = strings.ReplaceAll(p.Message, pre.path, pre.label)
		p.Message = replaceRoot(p.Message, strings.TrimSuffix(pre.path, string(filepath.Separator)), pre.name)
	}
	p.Message = absolutePath.ReplaceAllString(p.Message, "${1}a path outside the library")
	switch {
	case isRoot:
		p.Path = root
	case filepath.IsAbs(p.Path):
		p.Path = filepath.Base(p.Path)
	}
	p.Path = filepath.ToSlash(p.Path)
	return p
}

// reload serves POST /v1/skills/reload: rescan the roots, swap the snapshot
// (the routers follow through the registry's OnReload subscribers) and report.
func (s *Server) reload(c echo.Context) error {
	lib, ok := s.library(c)
	if !ok {
		return nil
	}
	snap := lib.Reload(c.Request().Context())
	skipped := 0
	for _, sk := range snap.All() {
		if sk.Skipped {
			skipped++
		}
	}
	probs := snap.Problems()
	if probs == nil {
		probs = []skills.Problem{}
	}
	return c.JSON(http.StatusOK, map[string]any{
		"skills":      len(snap.Skills()),
		"skipped":     skipped,
		"problems":    probs,
		"fingerprint": snap.Fingerprint(),
		"roots":       snap.Roots(),
	})
}

// explanation is the answer of POST /v1/skills/route.
type explanation struct {
	Arm         string              `json:"arm,omitempty"`
	Decision    *router.Decision    `json:"decision"`
	LatencyMS   float64             `json:"latency_ms"`
	AddedTokens int                 `json:"added_tokens"`
	Prompt      *router.PromptParts `json:"prompt,omitempty"`
	Injected    *injection          `json:"injected,omitempty"`
	Request     json.RawMessage     `json:"request,omitempty"` // the body that would go upstream
	Error       string              `json:"error,omitempty"`   // rewrite failed: the body would go unmodified
}

// injection is what the rewrite changed, message by message.
type injection struct {
	Messages []messageChange  `json:"messages"`
	Tools    []string         `json:"tools"` // names of tools added
	ToolDefs []map[string]any `json:"tool_definitions,omitempty"`
}

type messageChange struct {
	Index   int    `json:"index"`  // position in the rewritten messages
	Change  string `json:"change"` // inserted | modified | appended
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// explainRoute serves POST /v1/skills/route: the decision and the injected
// context for a chat request, without forwarding it. Headers steer it as they
// steer a chat request (strategy, top-k, arm, ...).
func (s *Server) explainRoute(c echo.Context) error {
	r := c.Request()
	info := requestInfo(c)
	body, hold, werr := s.readHeldBody(r)
	defer hold.release()
	var rt *routed
	if werr == nil {
		rt, werr = s.route(r.Context(), chatAPI{}, r.Header, body, info)
	}
	if werr != nil {
		info.status, info.err = werr.Status, werr.Message
		writeError(c.Response(), chatAPI{}, werr)
		return nil
	}
	out := explanation{Arm: rt.arm, LatencyMS: ms(info.routing)}
	if rt.rwErr != nil {
		out.Error = rt.rwErr.Error()
	} else {
		out.Decision = rt.rw.Decision
		out.AddedTokens = rt.rw.AddedTokens
		out.Prompt = rt.rw.Prompt
		out.Request = rt.body
		out.Injected = diffRequests(body, rt.body)
	}
	c.Response().Header().Set("Content-Type", "application/json")
	c.Response().WriteHeader(http.StatusOK)
	_, err := c.Response().Write(wire.Marshal(out))
	return err
}

// diffRequests lists the messages and tools the rewrite added or changed.
// Messages are compared as decoded JSON, so re-encoding alone is no change.
func diffRequests(before, after []byte) *injection {
	type req struct {
		Messages []map[string]any `json:"messages"`
		Tools    []map[string]any `json:"tools"`
	}
	var a, b req
	_ = json.Unmarshal(before, &a)
	_ = json.Unmarshal(after, &b)
	inj := &injection{Messages: []messageChange{}, Tools: []string{}}
	change := func(j int, kind string) {
		m := b.Messages[j]
		role, _ := m["role"].(string)
		inj.Messages = append(inj.Messages, messageChange{Index: j, Change: kind, Role: role, Content: m["content"]})
	}
	i, j := 0, 0
	for i < len(a.Messages) && j < len(b.Messages) {
		switch {
		case reflect.DeepEqual(a.Messages[i], b.Messages[j]):
			i, j = i+1, j+1
		case j+1 < len(b.Messages) && reflect.DeepEqual(a.Messages[i], b.Messages[j+1]):
			change(j, "inserted")
			j++
		default:
			change(j, "modified")
			i, j = i+1, j+1
		}
	}
	for ; j < len(b.Messages); j++ {
		change(j, "appended")
	}
	had := map[string]bool{}
	for _, t := range a.Tools {
		had[toolName(t)] = true
	}
	for _, t := range b.Tools {
		if n := toolName(t); !had[n] {
			inj.Tools = append(inj.Tools, n)
			inj.ToolDefs = append(inj.ToolDefs, t)
		}
	}
	return inj
}

func toolName(t map[string]any) string {
	if f, ok := t["function"].(map[string]any); ok {
		if n, ok := f["name"].(string); ok {
			return n
		}
	}
	return ""
}
