package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skillrouter/skillrouter/skills"
)

// SkillFile is a skill that exists only in memory (a MetaTool tool, a
// synthetic variant): written as <root>/<ID>/SKILL.md so the real loader
// parses it exactly as it parses a library on disk.
type SkillFile struct {
	ID      string // slash path; becomes the folder, and so the skill id
	Content string // the whole SKILL.md
}

// SkillMarkdown renders a minimal SKILL.md: frontmatter name and description
// (description as a JSON string, which is a valid YAML double-quoted scalar,
// so any text survives), then the body.
func SkillMarkdown(name, description, body string) string {
	d, _ := json.Marshal(description) // a string always marshals
	var b strings.Builder
	b.WriteString("---\nname: ")
	b.WriteString(name)
	b.WriteString("\ndescription: ")
	b.Write(d)
	b.WriteString("\n---\n\n")
	b.WriteString(body)
	if !strings.HasSuffix(body, "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}

// SkillName turns any label into a name valid under the Agent Skills rules
// (1–64 chars of a-z0-9 and single inner hyphens, without the reserved words
// "anthropic" and "claude"), so a generated skill is never skipped for its
// name; a name differing from its folder is only a warning.
func SkillName(label string) string {
	var b strings.Builder
	hyphen := true // suppress leading and double hyphens
	for _, r := range strings.ToLower(label) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			hyphen = false
		case !hyphen:
			b.WriteByte('-')
			hyphen = true
		}
	}
	s := b.String()
	for _, w := range []string{"anthropic", "claude"} {
		s = strings.ReplaceAll(s, w, "")
	}
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '-' }), "-")
	if len(s) > 64 {
		s = strings.TrimRight(s[:64], "-")
	}
	if s == "" {
		s = "skill"
	}
	return s
}

// validID rejects ids that would escape the library root or not round-trip
// through the loader as the same id.
func validID(id string) error {
	if id == "" || strings.HasPrefix(id, "/") || strings.Contains(id, "\\") || strings.ContainsRune(id, 0) {
		return fmt.Errorf("skill id %q cannot be a folder", id)
	}
	if path.Clean(id) != id {
		return fmt.Errorf("skill id %q is not a clean slash path", id)
	}
	for _, seg := range strings.Split(id, "/") {
		if seg == "." || seg == ".." || strings.HasPrefix(seg, ".") {
			return fmt.Errorf("skill id %q has a hidden or relative segment", id)
		}
	}
	return nil
}

// WriteLibrary writes files as SKILL.md folders under root (which must exist).
// Writes go through a few workers: creating thousands of small files is
// bound by file-system latency, not CPU.
func WriteLibrary(root string, files []SkillFile) error {
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if err := validID(f.ID); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		if seen[f.ID] {
			return fmt.Errorf("bench: duplicate skill id %q", f.ID)
		}
		seen[f.ID] = true
	}
	const workers = 4
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(files); i += workers {
				dir := filepath.Join(root, filepath.FromSlash(files[i].ID))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					errs[w] = fmt.Errorf("bench: %w", err)
					return
				}
				if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(files[i].Content), 0o644); err != nil {
					errs[w] = fmt.Errorf("bench: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// MissingSkill is a generated skill the loader did not load, with why.
type MissingSkill struct {
	ID       string
	Problems []skills.Problem
}

// Materialize writes files into a new temporary directory and loads it with
// the real loader, followed by the roots in more (on a duplicate id the
// generated skill wins, as the earlier root), with opts (see LoadWritten). The caller removes the returned
// directory. Every file that did not end up loaded is returned in missing
// with its problems; that is never silent, because a missing skill turns
// into wrong metrics.
func Materialize(ctx context.Context, files []SkillFile, opts skills.Options, more ...string) (snap *skills.Snapshot, dir string, missing []MissingSkill, err error) {
	dir, err = WriteTemp(files)
	if err != nil {
		return nil, "", nil, err
	}
	snap, missing, err = LoadWritten(ctx, dir, files, opts, more...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return snap, dir, missing, nil
}

// WriteTemp writes files into a new temporary directory; the caller removes it.
func WriteTemp(files []SkillFile) (string, error) {
	dir, err := mkdirFixedWidth(os.TempDir(), "skillrouter-bench-")
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if err := WriteLibrary(dir, files); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// LoadWritten loads a directory written by WriteTemp (then the roots in
// more) with opts (the scan options of the roots in more: a default root's
// folders are checked as serve checks them) and lists the files that did
// not load.
func LoadWritten(ctx context.Context, dir string, files []SkillFile, opts skills.Options, more ...string) (*skills.Snapshot, []MissingSkill, error) {
	snap := skills.Load(ctx, append([]string{dir}, more...), opts)
	if err := snap.Err(); err != nil {
		return nil, nil, fmt.Errorf("bench: loading the generated library: %w", err)
	}
	return snap, MissingFrom(snap, files), nil
}

// MissingFrom lists the files whose id is not a loaded skill of snap.
func MissingFrom(snap *skills.Snapshot, files []SkillFile) []MissingSkill {
	var byID map[string]*skills.Skill
	var missing []MissingSkill
	for _, f := range files {
		if _, ok := snap.Get(f.ID); ok {
			continue
		}
		if byID == nil {
			byID = map[string]*skills.Skill{}
			for _, s := range snap.All() {
				byID[s.ID] = s
			}
		}
		m := MissingSkill{ID: f.ID}
		if s, ok := byID[f.ID]; ok {
			m.Problems = s.Problems
		}
		missing = append(missing, m)
	}
	return missing
}

// String renders a missing skill for a warning line.
func (m MissingSkill) String() string {
	if len(m.Problems) == 0 {
		return m.ID + ": not found by the loader"
	}
	msgs := make([]string, len(m.Problems))
	for i, p := range m.Problems {
		msgs[i] = string(p.Severity) + ": " + p.Message
	}
	return m.ID + ": " + strings.Join(msgs, "; ")
}

// mkdirFixedWidth creates a new directory named prefix plus ten random
// digits. The folder's path is part of every auto-loaded skill envelope, and
// os.MkdirTemp's suffix varies in length, which made token counts differ by
// a token between runs; a fixed-width number always tokenizes to the same
// count.
func mkdirFixedWidth(parent, prefix string) (string, error) {
	for range 100 {
		dir := filepath.Join(parent, fmt.Sprintf("%s%010d", prefix, rand.Uint32()))
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("could not create a directory %s* in %s", prefix, parent)
}
