package router

// A library is the rewrite's per-snapshot view of the skills: lookups, the
// skills a catalog may show, and memoised renderings. Snapshots are
// immutable, so everything derived from one can be cached for as long as the
// snapshot lives; the cache holds snapshots weakly so a reload frees the old
// one.

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
	"weak"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// skillLib is the rewrite's view of one snapshot (see the file comment).
type skillLib struct {
	skills     []*skills.Skill  // loaded skills, sorted by id
	eligible   []*skills.Skill  // not disabled in frontmatter, sorted by id
	eligibleAt []int32          // eligible's positions in skills
	at         map[string]int32 // id -> position in skills (see skill)

	// tables holds the catalog entries of each format and description
	// limit by position, read without a lock: a request's plan looks up a
	// hundred or more entries, and one mutex shared by every request cost
	// more than the lookups under load (see entryTable).
	tables atomic.Pointer[[]*entryTable]

	// shortlists keeps the catalogs cut down to a ranking, for the
	// requests that repeat one (an agent's tool loop sends its turn's
	// ranking with every round), read without a lock.
	shortlists shortlistMemo

	// anchors are the rankings conversations' shortlists follow (anchor.go).
	anchors anchorMemo

	mu        sync.Mutex
	envelopes map[string]renderedText     // id -> envelope
	envTokens map[string]int              // id -> the envelope's token count, kept when envelopes is cleared
	quoted    map[string][]byte           // id -> envelope as a JSON string
	catalogQ  map[string][]byte           // catalog text -> as a JSON string
	catalogs  map[catalogKey]renderedText // whole-library catalogs
	empties   map[emptyKey]int            // token counts of catalogs without entries
	loadTool  map[bool]wire.ToolSpec      // load_skill by "enum stripped"
	envBytes  int                         // held by envelopes and quoted
}

// envelopeCacheBytes bounds the rendered envelopes a library keeps (as text
// and as JSON): the ones of a large library's every skill would be twice
// its text. Past it the cache starts over.
const envelopeCacheBytes = 32 << 20

// noteEnvelopeBytes accounts n more bytes of cached envelopes, clearing the
// caches first when they would pass envelopeCacheBytes. l.mu is held.
func (l *skillLib) noteEnvelopeBytes(n int) {
	if l.envBytes+n > envelopeCacheBytes {
		clear(l.envelopes)
		clear(l.quoted)
		l.envBytes = 0
	}
	l.envBytes += n
}

type renderedText struct {
	text   string
	tokens int
}

// entryTable is one format and description limit's catalog entries, by
// position in the library; a slot is filled the first time its skill is
// shown (rendering and counting every entry up front would cost seconds
// at 10,000 skills) and read without a lock after that.
type entryTable struct {
	format  skills.Format
	maxDesc int
	slots   []atomic.Pointer[catalogEntry]
}

// maxEntryTables bounds the tables a library keeps; past it (a
// configuration with many description limits) entries are rendered each
// time. Requests of one server use one or two.
const maxEntryTables = 8

type catalogKey struct {
	format   skills.Format
	noTool   bool
	maxDesc  int
	subset   string // mode plus allowlist, identifying the skill subset
	footer   string
	priority string
}

// emptyKey identifies a catalog without entries: its preamble, priority
// line and footer.
type emptyKey struct {
	format   skills.Format
	noTool   bool
	footer   string
	priority string
}

// emptyCost is the token count of the catalog opts describes with no
// entries, memoised: planning one catalog asks for it several times.
func (l *skillLib) emptyCost(opts skills.CatalogOptions) int {
	k := emptyKey{opts.Format, opts.NoLoadTool, opts.Footer, strings.Join(opts.Priority, "\x00")}
	l.mu.Lock()
	c, ok := l.empties[k]
	l.mu.Unlock()
	if ok {
		return c
	}
	c = countTokens(skills.RenderCatalog(nil, opts))
	l.mu.Lock()
	if len(l.empties) >= 4096 { // #mentions make the priority lines unbounded
		l.empties = map[emptyKey]int{}
	}
	l.empties[k] = c
	l.mu.Unlock()
	return c
}

func newLibrary(list []*skills.Skill) *skillLib {
	l := &skillLib{
		skills:    list,
		envelopes: map[string]renderedText{},
		envTokens: map[string]int{},
		quoted:    map[string][]byte{},
		catalogQ:  map[string][]byte{},
		catalogs:  map[catalogKey]renderedText{},
		empties:   map[emptyKey]int{},
		loadTool:  map[bool]wire.ToolSpec{},
	}
	l.at = make(map[string]int32, len(list))
	for i, s := range list {
		l.at[s.ID] = int32(i)
		if !s.Disabled() {
			l.eligible = append(l.eligible, s)
			l.eligibleAt = append(l.eligibleAt, int32(i))
		}
	}
	return l
}

// skill returns the skill of l with the id id.
func (l *skillLib) skill(id string) (*skills.Skill, bool) {
	i, ok := l.at[id]
	if !ok {
		return nil, false
	}
	return l.skills[i], true
}

var skillLibs = struct {
	sync.Mutex
	m map[weak.Pointer[skills.Snapshot]]*skillLib
}{m: map[weak.Pointer[skills.Snapshot]]*skillLib{}}

// libraryOf returns the (cached) library view of snap.
func libraryOf(snap *skills.Snapshot) *skillLib {
	if snap == nil {
		return newLibrary(nil)
	}
	// Weak pointers and cleanups need a real heap object; a zero-size
	// Snapshot type would alias every snapshot to one key.
	if unsafe.Sizeof(*snap) == 0 {
		return newLibrary(snap.Skills())
	}
	key := weak.Make(snap)
	skillLibs.Lock()
	defer skillLibs.Unlock()
	if l, ok := skillLibs.m[key]; ok {
		return l
	}
	l := newLibrary(snap.Skills())
	skillLibs.m[key] = l
	runtime.AddCleanup(snap, func(k weak.Pointer[skills.Snapshot]) {
		skillLibs.Lock()
		delete(skillLibs.m, k)
		skillLibs.Unlock()
	}, key)
	return l
}

// envelope returns the load_skill envelope of s and its token count.
func (l *skillLib) envelope(s *skills.Skill) renderedText {
	l.mu.Lock()
	e, ok := l.envelopes[s.ID]
	n, counted := l.envTokens[s.ID]
	l.mu.Unlock()
	if ok {
		return e
	}
	// A count outlives its text: rendering an envelope again is cheap,
	// counting it afresh (when the counter's memo has moved on) is ~0.5 ms.
	text := skills.Envelope(s)
	if !counted {
		n = countTokens(text)
	}
	e = renderedText{text: text, tokens: n}
	l.mu.Lock()
	l.envTokens[s.ID] = n
	if _, ok := l.envelopes[s.ID]; !ok {
		l.noteEnvelopeBytes(len(text))
		l.envelopes[s.ID] = e
	}
	l.mu.Unlock()
	return e
}

// envelopeJSON returns the envelope text of id (as envelope rendered it)
// encoded as a JSON string; escaping 10 KB of Markdown per request is the
// largest cost of a rewrite otherwise.
func (l *skillLib) envelopeJSON(id, text string) []byte {
	l.mu.Lock()
	q, ok := l.quoted[id]
	l.mu.Unlock()
	if ok {
		return q
	}
	q = wire.Quote(text)
	l.mu.Lock()
	if _, ok := l.quoted[id]; !ok {
		l.noteEnvelopeBytes(len(q))
		l.quoted[id] = q
	}
	l.mu.Unlock()
	return q
}

// catalogEntry is one skill's part of a catalog and its token cost.
type catalogEntry struct {
	text string // "" when the catalog could not be split (see splitCatalog)
	json []byte // text JSON-quoted, without the quotes (see quoteInner)
	cost int
}

// splitCatalog splits an empty catalog into the part before the entries and
// the part after them.
func splitCatalog(empty string) (head, tail string, ok bool) {
	const open = "<available_skills>\n"
	i := strings.Index(empty, open)
	if i < 0 {
		return "", "", false
	}
	return empty[:i+len(open)], empty[i+len(open):], true
}

// entryTable returns the entry table of format and maxDesc, creating it on
// first use; past maxEntryTables, a table that keeps nothing.
func (l *skillLib) entryTable(format skills.Format, maxDesc int) *entryTable {
	find := func(ts *[]*entryTable) *entryTable {
		if ts != nil {
			for _, t := range *ts {
				if t.format == format && t.maxDesc == maxDesc {
					return t
				}
			}
		}
		return nil
	}
	if t := find(l.tables.Load()); t != nil {
		return t
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.tables.Load()
	if t := find(old); t != nil {
		return t
	}
	var ts []*entryTable
	if old != nil {
		ts = *old
	}
	if len(ts) >= maxEntryTables {
		return &entryTable{format: format, maxDesc: maxDesc}
	}
	t := &entryTable{format: format, maxDesc: maxDesc, slots: make([]atomic.Pointer[catalogEntry], len(l.skills))}
	next := append(slices.Clip(ts), t)
	l.tables.Store(&next)
	return t
}

// entryAt returns the catalog entry of the skill at position i, in t's
// format and description limit.
func (l *skillLib) entryAt(t *entryTable, i int32) catalogEntry {
	if t.slots == nil { // a table that keeps nothing (see entryTable)
		return renderEntry(l.skills[i], t.format, t.maxDesc)
	}
	if e := t.slots[i].Load(); e != nil {
		return *e
	}
	e := renderEntry(l.skills[i], t.format, t.maxDesc)
	t.slots[i].Store(&e) // the same value whoever renders it
	return e
}

// renderEntry renders s as a catalog entry: the catalog with the entry
// minus the empty catalog. The cost is exact (entries sit on their own
// lines; see countTokens). Catalogs are then assembled from cached entries
// instead of re-rendering every description on every request.
func renderEntry(s *skills.Skill, format skills.Format, maxDesc int) catalogEntry {
	var e catalogEntry
	opts := skills.CatalogOptions{Format: format, MaxDescription: maxDesc}
	empty := skills.RenderCatalog(nil, opts)
	one := skills.RenderCatalog([]*skills.Skill{s}, opts)
	e.cost = countTokens(one) - countTokens(empty)
	if head, tail, ok := splitCatalog(empty); ok && strings.HasPrefix(one, head) && strings.HasSuffix(one, tail) && len(one) >= len(head)+len(tail) {
		e.text = one[len(head) : len(one)-len(tail)]
		e.json = quoteInner(e.text)
	}
	return e
}

// quote returns a catalog text encoded as a JSON string, memoised: whole
// catalogs repeat on every request (all mode, small libraries) and can be
// hundreds of kilobytes.
func (l *skillLib) quote(catalog string) []byte {
	l.mu.Lock()
	q, ok := l.catalogQ[catalog]
	l.mu.Unlock()
	if ok {
		return q
	}
	q = wire.Quote(catalog)
	l.mu.Lock()
	if len(l.catalogQ) >= 64 {
		l.catalogQ = map[string][]byte{}
	}
	l.catalogQ[catalog] = q
	l.mu.Unlock()
	return q
}

// renderCatalogAt is skills.RenderCatalog, for the skills at the positions
// at, assembled from cached entries; it falls back to rendering when the
// layout does not split into head, entries and tail. It also returns the
// catalog as a JSON string, assembled from the entries' quoted forms (nil
// when a part cannot be quoted apart): quoting the whole catalog again on
// every request cost more than assembling it.
func (l *skillLib) renderCatalogAt(at []int32, opts skills.CatalogOptions) (string, []byte) {
	list := func() []*skills.Skill {
		out := make([]*skills.Skill, len(at))
		for i, k := range at {
			out[i] = l.skills[k]
		}
		return out
	}
	head, tail, ok := splitCatalog(skills.RenderCatalog(nil, opts))
	if !ok {
		return skills.RenderCatalog(list(), opts), nil
	}
	qhead, qtail := l.quote(head), l.quote(tail)
	quoted := quotesPiecewise(head) && quotesPiecewise(tail)
	n, nq := len(head)+len(tail), len(qhead)+len(qtail)
	t := l.entryTable(opts.Format, opts.MaxDescription)
	parts := make([]catalogEntry, len(at))
	for i, k := range at {
		e := l.entryAt(t, k)
		if e.text == "" {
			return skills.RenderCatalog(list(), opts), nil
		}
		parts[i] = e
		n += len(e.text)
		nq += len(e.json)
		quoted = quoted && e.json != nil
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(head)
	for _, p := range parts {
		b.WriteString(p.text)
	}
	b.WriteString(tail)
	if !quoted {
		return b.String(), nil
	}
	q := make([]byte, 0, nq)
	q = append(q, qhead[:len(qhead)-1]...)
	for _, p := range parts {
		q = append(q, p.json...)
	}
	q = append(q, qtail[1:]...)
	return b.String(), q
}

// quoteInner returns text as a JSON string without its quotes, or nil when
// it cannot be quoted apart from its neighbours (see quotesPiecewise).
func quoteInner(text string) []byte {
	if !quotesPiecewise(text) {
		return nil
	}
	q := wire.Quote(text)
	return q[1 : len(q)-1 : len(q)-1]
}

// quotesPiecewise reports whether text, JSON-quoted on its own, quotes the
// same as within a longer text: for valid UTF-8 it does, but an invalid
// sequence split across two parts would not.
func quotesPiecewise(text string) bool { return utf8.ValidString(text) }

// renderCached renders a catalog of a whole subset of the library, which is
// the same text on every request.
func (l *skillLib) renderCached(k catalogKey, list []*skills.Skill, opts skills.CatalogOptions) renderedText {
	l.mu.Lock()
	r, ok := l.catalogs[k]
	l.mu.Unlock()
	if ok {
		return r
	}
	text := skills.RenderCatalog(list, opts)
	r = renderedText{text: text, tokens: countTokens(text)}
	l.mu.Lock()
	if len(l.catalogs) > 64 { // bounded: keys vary with priority lines
		l.catalogs = map[catalogKey]renderedText{}
	}
	l.catalogs[k] = r
	l.mu.Unlock()
	return r
}

// resolve finds the skill a model asked for, by the rule load_skill and
// `router skills show` share (skills.Resolve).
func (l *skillLib) resolve(want string) (*skills.Skill, bool) {
	if s, ok := l.skill(want); ok {
		return s, true
	}
	return skills.Resolve(l.skills, want)
}
