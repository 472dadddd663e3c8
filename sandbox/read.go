package sandbox

// Reading skill files for hosts that hold no conversation (the MCP server):
// the same confinement and answers as read_skill_resource, without the
// "load it first" rule, and raw bytes for resources/read.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/skillrouter/skillrouter/skills"
)

// ReadSkillResource answers read_skill_resource for the skill id (s is the
// library's skill of that id, nil when there is none), whether or not
// execution is enabled and whether or not the skill was loaded: the JSON
// result the proxy's tool gives (a file's text, a folder's entries, or a
// structured refusal).
func (p *Provider) ReadSkillResource(id string, s *skills.Skill, path string) string {
	switch {
	case id == "":
		return p.refuse(ToolReadResource, newError(CodeInvalidArguments, "skill_id is required"))
	case s == nil:
		e := newError(CodeUnknownSkill, "there is no skill %q", id)
		e.SkillID, e.Path = id, path
		return p.refuse(ToolReadResource, e)
	case s.Dir == "":
		return p.refuse(ToolReadResource, newError(CodeUnknownSkill, "skill %q has no folder", id))
	}
	if path == "" {
		path = "."
	}
	r, e := resolveSkillPath(s, path)
	if e != nil {
		e.SkillID = s.ID
		return p.refuse(ToolReadResource, e)
	}
	out, e := readResolved(r, p.readLimit())
	if e != nil {
		e.SkillID, e.Path = s.ID, r.rel
		return p.refuse(ToolReadResource, e)
	}
	switch v := out.(type) {
	case *readResult:
		v.SkillID = s.ID
	case *listResult:
		v.SkillID = s.ID
	}
	p.log.Debug("sandbox: read resource", "skill", s.ID, "path", r.rel)
	return mustJSON(out)
}

func (p *Provider) readLimit() int {
	if p == nil || p.cfg.ReadLimit <= 0 {
		return DefaultReadLimit
	}
	return p.cfg.ReadLimit
}

// ErrTooLarge is returned by ReadFile for a file over its limit.
var ErrTooLarge = errors.New("file is larger than the limit")

// ReadFile returns the raw bytes of the regular file rel (slash path) inside
// skill s's folder, confined as read_skill_resource is: no "..", no
// absolute paths, no symlink leading out, opened through an os.Root. A file
// over limit bytes is ErrTooLarge.
func ReadFile(s *skills.Skill, rel string, limit int64) ([]byte, error) {
	r, e := resolveSkillPath(s, rel)
	if e != nil {
		return nil, e
	}
	root, err := openRoot(r)
	if err != nil {
		return nil, fmt.Errorf("opening the skill folder: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(r.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, newError(CodeNotAFile, "%s is not a regular file", r.rel)
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes)", r.rel, ErrTooLarge, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes)", r.rel, ErrTooLarge, limit)
	}
	return b, nil
}
