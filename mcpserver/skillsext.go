package mcpserver

// The Skills Extension's methods: skills/list, skills/get and
// resources/directory/read (declared with directoryRead: true).

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillrouter/skillrouter/wire"
)

// skillsPageSize bounds a skills/list page: each entry costs reading and
// hashing the skill's files the first time.
const skillsPageSize = 50

func (s *Server) addExtension() error {
	if err := mcp.AddReceivingCustomMethod(s.srv, methodListSkills, s.listSkills); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(s.srv, methodGetSkill, s.getSkill); err != nil {
		return err
	}
	return mcp.AddReceivingCustomMethod(s.srv, methodReadDirectory, s.readDirectory)
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func internalError(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...)}
}

// Cursors are opaque to clients: the last URI of the previous page.
func encodeCursor(uri string) string { return base64.RawURLEncoding.EncodeToString([]byte(uri)) }

// decodeCursor accepts only what encodeCursor made: a skill:// URI.
func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), "skill://") {
		return "", badCursor(c)
	}
	return string(b), nil
}

// badCursor refuses a cursor of any list this server pages.
func badCursor(c string) error {
	return invalidParams("invalid cursor %q: pass back the nextCursor of the previous page", wire.Clip(c))
}

// listSkills pages through the served skills by SKILL.md URI. A skill whose
// files cannot be read right now (changed under the scan) is left out of
// the page and logged; the reload that follows publishes it again.
func (s *Server) listSkills(ctx context.Context, _ *mcp.ServerSession, p *ListSkillsParams) (*ListSkillsResult, error) {
	v := s.current()
	list := v.served // sorted by URI
	start := 0
	if p != nil && p.Cursor != "" {
		after, err := decodeCursor(p.Cursor)
		if err != nil {
			return nil, err
		}
		start = sort.Search(len(list), func(i int) bool { return list[i].uri > after })
	}
	res := &ListSkillsResult{ResultType: resultTypeComplete, Skills: []SkillEntry{}, CacheScope: cacheScopePublic}
	end := min(start+skillsPageSize, len(list))
	for _, ss := range list[start:end] {
		e, err := ss.manifest()
		if err != nil {
			s.log.Warn("mcp: skill left out of skills/list", "skill", ss.sk.ID, "err", err)
			continue
		}
		res.Skills = append(res.Skills, *e)
	}
	if end < len(list) {
		res.NextCursor = encodeCursor(list[end-1].uri)
	}
	return res, nil
}

func (s *Server) getSkill(ctx context.Context, _ *mcp.ServerSession, p *GetSkillParams) (*GetSkillResult, error) {
	if p == nil || p.URI == "" {
		return nil, invalidParams("uri is required: the URI of a skill's SKILL.md, e.g. skill://<skill-path>/SKILL.md")
	}
	ss, ok := s.current().byURI[p.URI]
	if !ok {
		return nil, invalidParams("No skill is served at %s", wire.Clip(p.URI))
	}
	e, err := ss.manifest()
	if err != nil {
		return nil, internalError("reading the skill at %s: %v", p.URI, err)
	}
	return &GetSkillResult{ResultType: resultTypeComplete, Skill: *e, CacheScope: cacheScopePublic}, nil
}

// readDirectory lists a skill folder's direct children. The listing is
// never paged: a skill holds at most 512 files.
func (s *Server) readDirectory(ctx context.Context, _ *mcp.ServerSession, p *ReadDirectoryParams) (*ReadDirectoryResult, error) {
	if p == nil || p.URI == "" {
		return nil, invalidParams("uri is required: a directory such as skill://<skill-path> or skill://<skill-path>/references")
	}
	v := s.current()
	// A folder written with its trailing slash (skill://pdf/references/)
	// is the same folder.
	uri := p.URI
	if t := strings.TrimRight(uri, "/"); len(t) > len("skill://") {
		uri = t
	}
	kids, ok := v.dirs[uri]
	if !ok {
		if _, file := v.files[uri]; file {
			return nil, invalidParams("%s is not a directory resource", wire.Clip(p.URI))
		}
		return nil, invalidParams("No directory is served at %s", wire.Clip(p.URI))
	}
	return &ReadDirectoryResult{ResultType: resultTypeComplete, Resources: kids}, nil
}
