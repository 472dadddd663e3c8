package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"syscall"
	"unicode/utf8"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

const maxListedEntries = 200

var readResourceSpec = wire.ToolSpec{
	Name:        ToolReadResource,
	Description: "Read a text file from a loaded skill's folder, such as a reference document, template or script listed by the skill. path is relative to the skill folder (e.g. references/api.md); a folder path lists its entries. Large files are cut and marked.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"skill_id":{"type":"string","description":"id of a loaded skill"},"path":{"type":"string","description":"file path relative to the skill folder"}},"required":["skill_id","path"],"additionalProperties":false}`),
}

// resourceTool is read_skill_resource, bound to one request's active skills.
type resourceTool struct {
	p      *Provider
	active map[string]*skills.Skill
}

func (t *resourceTool) Name() string        { return ToolReadResource }
func (t *resourceTool) Spec() wire.ToolSpec { return readResourceSpec }

type readResult struct {
	OK        bool   `json:"ok"`
	SkillID   string `json:"skill_id"`
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated"`
	Content   string `json:"content"`
}

type listResult struct {
	OK        bool     `json:"ok"`
	SkillID   string   `json:"skill_id"`
	Path      string   `json:"path"`
	Type      string   `json:"type"` // directory
	Entries   []string `json:"entries"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Call never returns an error: every failure is a structured result.
func (t *resourceTool) Call(ctx context.Context, call router.ToolCall) (string, error) {
	p := t.p
	var a struct {
		SkillID string `json:"skill_id"`
		Path    string `json:"path"`
	}
	if err := router.DecodeToolArgs(call.Arguments, &a); err != nil {
		return p.refuse(ToolReadResource, newError(CodeInvalidArguments, "%v; call read_skill_resource with {skill_id, path}", err)), nil
	}
	s, e := p.activeSkill(t.active, a.SkillID)
	if e != nil {
		return p.refuse(ToolReadResource, e), nil
	}
	return p.ReadSkillResource(s.ID, s, a.Path), nil
}

// readResolved reads at most limit bytes of a resolved path, through an
// os.Root so a symlink swapped in after resolution still cannot escape.
func readResolved(r resolved, limit int) (any, *toolError) {
	root, err := openRoot(r)
	if errors.Is(err, errFolderChanged) {
		return nil, newError(CodeReadFailed, "%v", err)
	}
	if err != nil {
		return nil, newError(CodeReadFailed, "the skill folder is not readable")
	}
	defer root.Close()
	// O_NONBLOCK: opening a FIFO someone left in the folder must not hang.
	f, err := root.OpenFile(r.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, newError(CodeReadFailed, "%s could not be opened", r.rel)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, newError(CodeReadFailed, "%s could not be read", r.rel)
	}
	if info.IsDir() {
		return listDir(f, r)
	}
	if !info.Mode().IsRegular() {
		return nil, newError(CodeNotAFile, "%s is not a regular file", r.rel)
	}
	buf, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, newError(CodeReadFailed, "%s could not be read", r.rel)
	}
	truncated := len(buf) > limit || info.Size() > int64(limit)
	if len(buf) > limit {
		buf = buf[:limit]
	}
	if truncated {
		buf = cutRunes(buf)
	}
	if isBinary(buf) {
		return nil, newError(CodeBinaryFile, "%s is a binary file (%d bytes); only text files can be read", r.rel, info.Size())
	}
	content := string(buf)
	if truncated {
		content += fmt.Sprintf("\n[truncated: showing the first %d of %d bytes]", len(buf), info.Size())
	}
	return &readResult{OK: true, Path: r.rel, Size: info.Size(), Truncated: truncated, Content: content}, nil
}

func isBinary(b []byte) bool {
	head := b[:min(len(b), 8000)]
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(b)
}

// listDir lists the folder f, r: what a read of each entry would give, so a
// symbolic link is listed as what it leads to (a folder gets its "/") and
// one that leads outside the skill, or nowhere, is not listed at all, as
// resources/list leaves it out.
func listDir(f *os.File, r resolved) (any, *toolError) {
	rel := r.rel
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, newError(CodeReadFailed, "%s could not be listed", rel)
	}
	prefix := rel + "/"
	if rel == "." {
		prefix = ""
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if skills.Ignored(e.Name()) {
			continue // not a resource (resolveInSkill refuses it too)
		}
		n := prefix + e.Name()
		dir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			t, terr := resolveInSkill(r.root, n)
			if terr != nil {
				continue
			}
			info, err := os.Stat(t.abs)
			if err != nil {
				continue
			}
			dir = info.IsDir()
		}
		if dir {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	res := &listResult{OK: true, Path: rel, Type: "directory", Entries: names}
	if len(names) > maxListedEntries {
		res.Entries, res.Truncated = names[:maxListedEntries], true
	}
	return res, nil
}
