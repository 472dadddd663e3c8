package router

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillrouter/skillrouter/index"
	"github.com/skillrouter/skillrouter/internal/textcut"
	"github.com/skillrouter/skillrouter/skills"
)

// rankIndex is everything ranking needs for one snapshot. It is immutable
// once built; Update builds a new one and swaps the pointer.
type rankIndex struct {
	snap *skills.Snapshot
	list []*skills.Skill // index order: snap.Skills() (sorted by id)
	pos  map[string]int

	bm25 *index.BM25
	kw   *keywordIndex
	men  mentionTable
	sigs []termSignature // per skill, for near-duplicate auto-load checks

	emb    Embedder       // the (fitted) embedder the vectors were made with; nil = none
	vec    *index.Vectors // nil when emb is nil or its build failed
	vecRow []int          // list position of each vector row (vec.IDs order); -1 = not in list
	rowOf  []int32        // vector row of each list position (-1 = none); nil when row i is skill i
	vecErr error          // why vec is nil although emb is set
	gen    uint64         // this router's build count when it was made: 1 and up
	cache  *rankCache     // recent rankings; nil = off
	cal    calibration
	from   string // the prebuilt or warm index folder all of this was loaded from; "" = built here

	// Incremental builds: what a rebuild reuses for skills whose text is
	// unchanged (their BM25 counts, signatures and vectors), and how far
	// the library has drifted since the embedder was fitted and the scores
	// calibrated (base skills then, drift skills added, changed or removed
	// since): past refreshDrift of base both are done afresh.
	stats []*index.DocStats // per skill, list order
	base  int
	drift int

	// settled: the embedder was fitted and the scores calibrated on
	// exactly this library, so the index ranks as a fresh start's would
	// (settle.go). Incremental builds that changed a skill leave it false
	// until the router settles the index.
	settled bool
}

// vectorsUnavailable says why ix has no vector index although it has an
// embedder (the fallback reason, and Router.Degraded's).
func (ix *rankIndex) vectorsUnavailable() string {
	return fmt.Sprintf("vector index unavailable: %v", ix.vecErr)
}

// refreshDrift is the share of the library that may change before a
// rebuild fits the builtin embedder and calibrates again: below it, a
// change re-embeds only the skills whose text changed (a new fit changes
// every vector), and the old IDF and score scales, measured on a library
// nine tenths the same, stand.
const refreshDrift = 0.1

// sameText reports whether two versions of a skill rank alike: the text
// every index reads is unchanged.
func sameText(a, b *skills.Skill) bool {
	return a == b || (a.ID == b.ID && a.Name == b.Name && a.Description == b.Description && skills.SameBody(a, b))
}

// documentDoc splits a skill into the weighted texts its vector is made
// from: what it is for (name and description) at full weight, then the start
// of the body at a lower weight. Measured on upstream-queries and MetaTool
// against one concatenated text: the body adds recall (skills whose
// triggers live in the body, e.g. "job loss"), but as one text it drowns the
// description.
func documentDoc(s *skills.Skill) index.VectorDoc {
	head := displayName(s) + "\n" + s.Description
	parts := []index.Part{{Text: head, Weight: 1}}
	if body := textcut.Prefix(s.Body(), docBodyChars); strings.TrimSpace(body) != "" {
		parts = append(parts, index.Part{Text: body, Weight: docBodyWeight})
	}
	return index.VectorDoc{ID: s.ID, Name: s.Name, Parts: parts}
}

const (
	docBodyChars  = 6000
	docBodyWeight = 0.6
)

// displayName is the skill's name as words ("mcp-builder" -> "mcp builder").
func displayName(s *skills.Skill) string {
	n := s.Name
	if n == "" {
		n = s.ID[strings.LastIndexByte(s.ID, '/')+1:]
	}
	return nameSeparators.Replace(n)
}

// nameSeparators turns a skill name's separators into spaces (a Replacer
// is built on first use; one per call was 70 MB of garbage per 10,000-skill
// build).
var nameSeparators = strings.NewReplacer("-", " ", "_", " ")

// build makes the indexes for snap, reusing from prev what belongs to
// skills whose text is unchanged: BM25 counts, signatures, and vectors
// while the embedder and its model are the same (see refreshDrift). fresh
// fits the embedder and calibrates on the whole library whatever the
// drift, as a build without prev would (settling, settle.go); what does
// not depend on the fit is still reused.
func (r *Router) build(ctx context.Context, snap *skills.Snapshot, prev *rankIndex, fresh bool) (*rankIndex, error) {
	start := time.Now()
	list := snap.Skills()
	ix := &rankIndex{snap: snap, list: list, pos: make(map[string]int, len(list)), cache: newRankCache(r.opts.RankCache), gen: r.indexGen.Add(1)}
	for i, s := range list {
		ix.pos[s.ID] = i
	}
	// kept[i] is skill i's position in prev when its text is unchanged, else -1.
	kept := make([]int, len(list))
	changed, stayed := 0, 0 // skills added or edited; skills prev has too
	for i, s := range list {
		kept[i] = -1
		if prev != nil {
			j, ok := prev.pos[s.ID]
			if ok {
				stayed++
			}
			if ok && sameText(prev.list[j], s) {
				kept[i] = j
				continue
			}
		}
		changed++
	}
	if prev != nil {
		changed += len(prev.list) - stayed // removed
	}
	refresh := prev == nil || fresh || float64(prev.drift+changed) > refreshDrift*float64(max(prev.base, 1))
	if refresh {
		ix.base, ix.drift, ix.settled = len(list), 0, true
	} else {
		ix.base, ix.drift, ix.settled = prev.base, prev.drift+changed, prev.settled && changed == 0
	}

	var pre *prebuilt
	loggedPre := false
	if prev == nil {
		pre = r.loadPrebuilt(list) // a reload has better: the previous index
		if pre != nil && !pre.matches {
			// Said before the build, which can take minutes: that the
			// index is built, and why. A match is said once it loaded.
			r.logPrebuilt(pre, nil, index.BuildStats{})
			loggedPre = true
		}
	}
	// BM25 and the keyword baseline build while the vectors are embedded.
	lexDone := make(chan struct{})
	loadLexical, lexErr := pre.lexical(list), error(nil)
	go func() {
		defer close(lexDone)
		ix.kw = newKeywordIndex(list)
		ix.men = newMentionTable(list)
		if loadLexical != nil {
			if ix.bm25, ix.sigs, lexErr = loadLexical(); lexErr == nil {
				return
			}
		}
		// Skills whose text is unchanged keep their analysis and signature;
		// the others are analysed on every core.
		ids := make([]string, len(list))
		stats := make([]*index.DocStats, len(list))
		sigs := make([]termSignature, len(list))
		for i, s := range list {
			ids[i] = s.ID
			if j := kept[i]; j >= 0 {
				if prev.sigs != nil {
					sigs[i] = prev.sigs[j]
				}
				if prev.stats != nil {
					stats[i] = prev.stats[j]
				}
			}
		}
		analyseLexical(list, stats, sigs)
		ix.stats, ix.sigs = stats, sigs
		ix.bm25 = index.NewBM25Stats(ids, ix.stats, index.BM25Params{})
	}()

	vdocs := make([]index.VectorDoc, len(list))
	for i, s := range list {
		vdocs[i] = documentDoc(s)
		if j := kept[i]; j >= 0 && prev.vec != nil {
			vdocs[i].Known = prev.vec.HashOf(s.ID) // unchanged text: no need to hash it again
		}
	}
	ix.emb = r.opts.Embedder
	restored := r.restoreFitted(pre)
	if restored != nil {
		ix.emb = restored
	} else if r.opts.Fit != nil && !refresh && prev.emb != nil {
		ix.emb = prev.emb // the fit stands (see refreshDrift): unchanged skills keep their vectors
	} else if r.opts.Fit != nil {
		corpus := make([]string, len(vdocs))
		for i, d := range vdocs {
			var b strings.Builder
			for _, p := range d.Parts {
				b.WriteString(p.Text)
				b.WriteByte('\n')
			}
			corpus[i] = b.String()
		}
		ix.emb = r.opts.Fit(corpus)
	}
	var stats index.BuildStats
	if ix.emb != nil {
		ix.vec, stats, ix.vecErr = r.buildVectors(ctx, vdocs, ix.emb, prev, pre)
		if d := retryAfter(ix.vecErr); d > 0 {
			// A build that failed so, installed or not (a background
			// retry's is not), sets when the next may start.
			r.vectorsWait.Store(time.Now().Add(d).UnixNano())
		}
	}
	if ix.vec != nil {
		ix.vecRow = make([]int, ix.vec.Len())
		ix.rowOf = slices.Repeat([]int32{-1}, len(list))
		same := ix.vec.Len() == len(list)
		for k, id := range ix.vec.IDs() {
			ix.vecRow[k] = -1
			if i, ok := ix.pos[id]; ok {
				ix.vecRow[k] = i
				ix.rowOf[i] = int32(k)
			}
			same = same && ix.vecRow[k] == k
		}
		if same {
			ix.rowOf = nil
		}
	}
	<-lexDone
	if lexErr != nil && pre.matches {
		pre.matches, pre.why, pre.damaged = false, "lexical index: "+lexErr.Error(), true
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("router: building indexes: %w", ctx.Err())
	}
	if ix.vecErr != nil {
		r.opts.Logger.Warn("vector index unavailable; ranking falls back to bm25 until it builds",
			"embedder", ix.emb.Name(), "model", ix.emb.Model(), "err", ix.vecErr)
		r.lastRetry.Store(time.Now().UnixNano())
	}
	cal, calStored := storedCalibration(pre, ix)
	switch {
	case calStored:
		ix.cal = cal
	case !refresh && (prev.vec == nil) == (ix.vec == nil) && prev.emb == ix.emb:
		ix.cal = prev.cal
	default:
		ix.cal = r.calibrate(ctx, ix)
	}
	if pre != nil && pre.matches {
		ix.from = pre.dir
		if pre.warm && prev == nil {
			// The generations earlier runs retired there go once their
			// grace has passed, as after a save: a start that loads the
			// kept index saves nothing, and a library that does not
			// change again would keep them all (tens of MB each).
			r.sweep.after(r, pre.dir, pre.m)
		}
	}
	if restored != nil || calStored {
		// The fit or the calibration is the stored index's: as settled
		// as it was (an index kept before its router settled it is not).
		ix.settled = pre.settledIndex()
	}
	if !loggedPre {
		r.logPrebuilt(pre, prev, stats)
	}
	msg, attrs := "routing index built", []any{"skills", len(list)}
	switch {
	case fresh && prev != nil:
		msg = "routing index settled" // prompts now equal a fresh start's
	case prev != nil:
		// A change's build: what the change touched, and settled when it
		// refitted (past a tenth of the library), which no settle line
		// follows; else one will. The first build has nothing to compare
		// with: every skill would read as changed, kept index or not.
		attrs = append(attrs, "changed", changed, "settled", ix.settled)
	}
	attrs = append(attrs, "took", time.Since(start).Round(time.Millisecond))
	if ix.emb != nil {
		attrs = append(attrs, "embedder", ix.emb.Name(), "model", ix.emb.Model(),
			"embedded", stats.Embedded, "reused", stats.Reused)
		if ix.vecErr != nil {
			// Built, but ranking without vectors until the retry: a line
			// that read as a success hid it.
			attrs = append(attrs, "vectors", "unavailable (bm25 until the background retry)", "err", ix.vecErr)
		}
	}
	r.opts.Logger.Info(msg, attrs...)
	ev := IndexBuilt
	if fresh && prev != nil {
		ev = IndexSettled
	}
	r.indexEvent(ev, time.Since(start))
	return ix, nil
}

// IndexEvent names index work the router reports through Options.OnIndex.
type IndexEvent string

const (
	IndexBuilt      IndexEvent = "built"       // a first build or a library change's
	IndexSettled    IndexEvent = "settled"     // a settle build (settle.go)
	IndexKeepFailed IndexEvent = "keep_failed" // the index could not be kept in Options.WarmDir
)

func (r *Router) indexEvent(ev IndexEvent, took time.Duration) {
	if r.opts.OnIndex != nil {
		r.opts.OnIndex(ev, took)
	}
}

// vectorModel keys stored vectors: vectors of different providers, models
// or sizes must never be compared.
func vectorModel(e Embedder) string {
	return e.Name() + "/" + e.Model() + "/" + strconv.Itoa(e.Dimensions())
}

// sameVectorModel reports whether vectors stored under the key stored can
// serve emb: the same key, or, while emb does not know its dimensions yet
// (a remote embedder before its first answer), the same provider and
// model at any size; should the size turn out different, BuildVectors
// embeds everything again.
func sameVectorModel(emb Embedder, stored string) bool {
	key := vectorModel(emb)
	if key == stored {
		return true
	}
	if emb.Dimensions() != 0 {
		return false
	}
	prefix := strings.TrimSuffix(key, "0")
	rest, ok := strings.CutPrefix(stored, prefix)
	return ok && rest != "" && !strings.Contains(rest, "/")
}

func (r *Router) buildVectors(ctx context.Context, docs []index.VectorDoc, emb Embedder, prev *rankIndex, pre *prebuilt) (*index.Vectors, index.BuildStats, error) {
	var old *index.Vectors
	if prev != nil {
		old = prev.vec
	}
	if old == nil {
		old = prebuiltVectors(pre, emb)
	}
	path := ""
	if r.opts.IndexDir != "" {
		path = filepath.Join(r.opts.IndexDir, index.FileName(emb.Name()))
		if old == nil {
			if v, err := index.LoadVectors(path); err == nil {
				old = v
			}
		}
	}
	embedDocs := emb.Embed
	if de, ok := emb.(documentEmbedder); ok {
		embedDocs = de.EmbedDocuments
	}
	model := vectorModel(emb)
	if old != nil && sameVectorModel(emb, old.Model()) {
		model = old.Model()
	}
	v, st, err := index.BuildVectors(ctx, docs, model, embedDocs, old)
	if err != nil {
		return nil, st, err
	}
	if emb.Dimensions() > 0 && vectorModel(emb) != model {
		// A remote embedder learns its dimensions from its first answer:
		// key the index by them, as the next build will, or it would find
		// nothing to reuse and embed the whole library again.
		v = v.WithModel(vectorModel(emb))
	}
	if path != "" && (st.Embedded > 0 || st.Removed > 0 || old == nil || old.Model() != v.Model()) {
		// In the background: encoding 10,000 vectors took ~3 s of the
		// start-up, and routing does not need the file.
		r.vecSave.write(&r.bg, func() {
			if err := v.Save(path); err != nil {
				r.opts.Logger.Warn("could not persist vector index", "path", path, "err", err)
			}
		})
	}
	return v, st, nil
}

// documentEmbedder is implemented by embedders that embed documents
// differently from queries (task prefixes, the disk cache of package embed).
type documentEmbedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
}

// otherSize says how the vectors' size differs from the one the embedder
// now answers with ("" when it does not): every query's vector is refused
// until the background rebuild.
func (ix *rankIndex) otherSize() string {
	if ix.vec == nil || ix.vec.Dim() == 0 || ix.emb.Dimensions() == 0 || ix.vec.Dim() == ix.emb.Dimensions() {
		return ""
	}
	return fmt.Sprintf("vector index holds %d-dimension vectors, embedder %s answers with %d (rebuilding in the background)", ix.vec.Dim(), ix.emb.Name(), ix.emb.Dimensions())
}

// maybeRetryVectors starts one background rebuild of a vector index that
// failed to build, or that holds vectors of another size than the embedder
// now answers with, at most every vectorRetryEvery. The second happens when
// a remote embedder's stored vectors were reused at any size before it knew
// its own (see sameVectorModel) and no skill changed, so nothing was
// embedded to find out; once its size is known the rebuild does not reuse
// them. An embedder that asked for a longer wait (a 429's Retry-After) is
// left alone until it passes.
func (r *Router) maybeRetryVectors(ix *rankIndex) {
	if ix.emb == nil {
		return
	}
	if ix.vecErr == nil && ix.otherSize() == "" {
		return
	}
	if time.Since(time.Unix(0, r.lastRetry.Load())) < r.retryEvery || time.Now().UnixNano() < r.vectorsWait.Load() || !r.retrying.CompareAndSwap(false, true) {
		return
	}
	r.lastRetry.Store(time.Now().UnixNano())
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		defer r.retrying.Store(false)
		ctx, cancel := context.WithTimeout(r.bgCtx, 5*time.Minute)
		defer cancel()
		r.mu.Lock()
		defer r.mu.Unlock()
		cur := r.cur.Load()
		if cur != ix || ctx.Err() != nil {
			return // an Update got there first
		}
		next, err := r.build(ctx, ix.snap, ix, false)
		if err == nil && next.vec != nil && r.cur.CompareAndSwap(ix, next) {
			r.persistWarm(next) // or the next start would begin from ix's again
		}
	}()
}
