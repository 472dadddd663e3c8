package mcpserver

// A view is what the server publishes for one library snapshot: the skills
// the Skills Extension serves, their files as skill:// resources, their
// folders (for resources/directory/read) and one prompt per skill. Views
// are immutable except for the lazily computed manifests (digests), which
// are per skill and computed once.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillrouter/skillrouter/sandbox"
	"github.com/skillrouter/skillrouter/skills"
)

type view struct {
	snap    *skills.Snapshot
	served  []*servedSkill          // skills the extension serves, by SKILL.md URI
	byURI   map[string]*servedSkill // SKILL.md URI -> skill
	byID    map[string]*servedSkill
	files   map[string]*fileRef        // resource URI -> file
	dirs    map[string][]*mcp.Resource // directory URI -> direct children, by URI
	prompts map[string]*promptEntry    // prompt name (skill id) -> prompt
}

// servedSkill is a skill the extension serves.
type servedSkill struct {
	sk   *skills.Skill
	base string // skill://<skill-path>, the skill's directory resource (<skill-path> is the id, plus /<name> when the folder is named otherwise)
	uri  string // base + "/SKILL.md"

	once  sync.Once
	entry *SkillEntry
	err   error
}

// fileRef is one resource: a file of a served skill.
type fileRef struct {
	skill *servedSkill
	rel   string // slash path inside the skill folder
	res   *mcp.Resource
	sig   string // changes when the file's published content may have changed (SKILL.md: see sameAs)
}

type promptEntry struct {
	prompt *mcp.Prompt
	skill  *skills.Skill
}

func emptyView() *view {
	return &view{byURI: map[string]*servedSkill{}, byID: map[string]*servedSkill{},
		files: map[string]*fileRef{}, dirs: map[string][]*mcp.Resource{}, prompts: map[string]*promptEntry{}}
}

// buildView indexes snap. It reads nothing but SKILL.md sizes; digests are
// computed when a manifest is first asked for.
func buildView(snap *skills.Snapshot, descLimit int, log *slog.Logger) *view {
	v := emptyView()
	v.snap = snap
	if descLimit <= 0 {
		descLimit = 250
	}
	var unserved []string
	for _, sk := range snap.Skills() {
		if sk.Disabled() {
			continue // enabled: false turns a skill off for catalogs and prompts alike
		}
		v.prompts[sk.ID] = &promptEntry{skill: sk, prompt: skillPrompt(sk, descLimit)}
		size, why := servable(sk)
		if why != "" {
			unserved = append(unserved, sk.ID+": "+why)
			continue
		}
		// The last segment of a skill's path must be its name: a folder
		// named otherwise gets the name appended (skill://<id>/<name>).
		spath := sk.ID
		if path.Base(sk.ID) != sk.Name {
			spath += "/" + sk.Name
			if _, clash := snap.Get(spath); clash {
				unserved = append(unserved, sk.ID+": its path "+spath+" is another skill's id")
				continue
			}
		}
		ss := &servedSkill{sk: sk, base: skillBase(spath)}
		ss.uri = ss.base + "/" + skills.SkillFile
		// The SDK refuses (panics on) a resource URI net/url cannot parse:
		// in the first segment, the authority, Go accepts percent-escapes
		// of non-ASCII bytes only (a folder "My Team" or "a:b" cannot be
		// written there).
		if _, err := url.Parse(ss.uri); err != nil {
			unserved = append(unserved, sk.ID+": its URI "+ss.uri+" is not one the SDK accepts (the first folder's name needs escaping in the URI authority)")
			continue
		}
		v.served = append(v.served, ss)
		v.byURI[ss.uri] = ss
		v.byID[sk.ID] = ss
		v.addFile(ss, skills.SkillFile, size, "") // compared by skills.SameContent
		for _, r := range sk.Resources {
			v.addFile(ss, r.Path, r.Size, fmt.Sprint(r.Size))
		}
	}
	sort.Slice(v.served, func(i, j int) bool { return v.served[i].uri < v.served[j].uri })
	for _, kids := range v.dirs {
		sort.Slice(kids, func(i, j int) bool { return kids[i].URI < kids[j].URI })
	}
	if len(unserved) > 0 {
		log.Info("mcp: skills left out of the skills extension and skill:// resources (their tools and prompts work)",
			"count", len(unserved))
		for _, u := range unserved {
			log.Debug("mcp: not served as an extension skill", "skill", u)
		}
	}
	return v
}

// servable checks the extension's rules a skill must meet to be published:
// its manifest is complete and within the limits. It returns SKILL.md's size.
func servable(sk *skills.Skill) (int64, string) {
	if sk.Dir == "" || sk.Path == "" {
		return 0, "no folder"
	}
	if sk.ResourcesOmitted > 0 || len(sk.Resources)+1 > maxSkillResources {
		return 0, fmt.Sprintf("more than %d files", maxSkillResources)
	}
	info, err := os.Stat(sk.Path)
	if err != nil {
		return 0, "SKILL.md: " + err.Error()
	}
	total := info.Size()
	for _, r := range sk.Resources {
		total += r.Size
	}
	if total > maxSkillBytes {
		return 0, fmt.Sprintf("files total %d bytes, over %d", total, maxSkillBytes)
	}
	return info.Size(), ""
}

// addFile publishes one file and its folders.
func (v *view) addFile(ss *servedSkill, rel string, size int64, sig string) {
	uri := ss.base + "/" + escapePath(rel)
	res := &mcp.Resource{URI: uri, Name: path.Base(rel), Title: ss.sk.ID + "/" + rel, MIMEType: mimeType(rel), Size: size}
	if rel == skills.SkillFile {
		res.Name, res.Description = ss.sk.Name, ss.sk.Description
	}
	v.files[uri] = &fileRef{skill: ss, rel: rel, res: res, sig: sig}
	// Every folder from the file up to the skill root lists its child once.
	child, childURI := res, uri
	for dir := path.Dir(rel); ; dir = path.Dir(dir) {
		dirURI := ss.base
		if dir != "." {
			dirURI += "/" + escapePath(dir)
		}
		_, known := v.dirs[dirURI]
		if !slices.ContainsFunc(v.dirs[dirURI], func(r *mcp.Resource) bool { return r.URI == childURI }) {
			v.dirs[dirURI] = append(v.dirs[dirURI], child)
		}
		if dir == "." || known {
			return
		}
		child = &mcp.Resource{URI: dirURI, Name: path.Base(dir), MIMEType: mimeDirectory}
		childURI = dirURI
	}
}

// manifest returns the skill's entry, reading and hashing its files once.
func (ss *servedSkill) manifest() (*SkillEntry, error) {
	ss.once.Do(func() {
		fm, err := ss.sk.Frontmatter()
		if err != nil {
			ss.err = fmt.Errorf("%s: %w", ss.sk.Path, err)
			return
		}
		e := &SkillEntry{URI: ss.uri, Frontmatter: fm}
		rels := append([]string{skills.SkillFile}, resourcePaths(ss.sk)...)
		var total int64
		for _, rel := range rels {
			b, err := sandbox.ReadFile(ss.sk, rel, maxSkillBytes-total)
			if err != nil {
				ss.err = fmt.Errorf("%s: %w", rel, err)
				return
			}
			total += int64(len(b))
			sum := sha256.Sum256(b)
			e.Resources = append(e.Resources, SkillResource{
				URI: ss.base + "/" + escapePath(rel), Digest: digestPrefix + hex.EncodeToString(sum[:]), Size: int64(len(b)),
			})
		}
		ss.entry = e
	})
	return ss.entry, ss.err
}

func resourcePaths(sk *skills.Skill) []string {
	out := make([]string, len(sk.Resources))
	for i, r := range sk.Resources {
		out[i] = r.Path
	}
	return out
}

// skillBase is the URI of a skill's directory resource: skill://<id>, each
// path segment percent-escaped, and ':' and '@' escaped in the first
// (the URI's authority).
func skillBase(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		segs[i] = escapeSegment(s)
	}
	segs[0] = strings.NewReplacer(":", "%3A", "@", "%40").Replace(segs[0])
	return "skill://" + strings.Join(segs, "/")
}

func escapePath(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = escapeSegment(s)
	}
	return strings.Join(segs, "/")
}

// escapeSegment percent-encodes everything but RFC 3986 unreserved
// characters and the sub-delimiters that are safe in a path segment.
func escapeSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// mimeTypes are the types of files common in skills.
var mimeTypes = map[string]string{
	".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain",
	".py": "text/x-python", ".sh": "text/x-shellscript", ".bash": "text/x-shellscript",
	".js": "text/javascript", ".mjs": "text/javascript", ".ts": "text/x-typescript",
	".json": "application/json", ".yaml": "application/yaml", ".yml": "application/yaml",
	".toml": "application/toml", ".csv": "text/csv", ".html": "text/html", ".xml": "application/xml",
	".xsd": "application/xml", ".svg": "image/svg+xml", ".css": "text/css", ".sql": "text/x-sql",
	".go": "text/x-go", ".rb": "text/x-ruby", ".java": "text/x-java", ".r": "text/x-r", ".tex": "text/x-tex",
	".ipynb": "application/x-ipynb+json", ".pdf": "application/pdf", ".zip": "application/zip",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".ttf":  "font/ttf", ".otf": "font/otf", ".woff": "font/woff", ".woff2": "font/woff2",
}

// mimeType guesses a file's type from its name, from a fixed table (the
// system's tables differ between machines); files without an extension
// (LICENSE, Makefile) are text.
func mimeType(rel string) string {
	ext := strings.ToLower(path.Ext(rel))
	if t, ok := mimeTypes[ext]; ok {
		return t
	}
	if ext == "" {
		return "text/plain"
	}
	return "application/octet-stream"
}
