package router

// A prebuilt index is a folder with everything building a router costs for
// one library and embedder: the vectors, the embedder's fitted state (the
// builtin's IDF and vocabulary), the BM25 index and near-duplicate
// signatures, and the score calibration. `router index build` writes it once
// (SavePrebuilt); replicas started with Options.Prebuilt load it read-only
// instead of embedding the library each, when it matches their library and
// embedder. When it does not match, the router says why and builds as usual,
// reusing the vectors of skills whose text is unchanged. A router with
// Options.WarmDir keeps one of its own there (warm.go), so a restart with an
// unchanged library loads instead of building.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/skillrouter/skillrouter/index"
	"github.com/skillrouter/skillrouter/internal/atomicfile"
	"github.com/skillrouter/skillrouter/skills"
)

// prebuiltVersion changes whenever what a prebuilt index stores, or how
// the library hash or the calibration is computed, changes. Version 2 added
// the lexical file and stores vectors in the binary form instead of a
// chromem-go export (which took seconds to read at 10,000 skills). Version 3
// stores each file's digest, and names the manifest and files by provider
// and model (indexKey); version 2's names are never read, so such a folder
// builds once and its files are removed (removeStale). Version 4 hashes
// the library skill by skill (libraryHash).
const prebuiltVersion = 4

// prebuiltManifest is the folder's table of contents, one per embedder
// provider and model (A/B arms with other embedders share a folder).
type prebuiltManifest struct {
	Version     int               `json:"version"`
	Library     string            `json:"library"` // libraryHash of the skills indexed
	Skills      int               `json:"skills"`
	Embedder    string            `json:"embedder,omitempty"`   // provider; "" = no embedder
	BaseModel   string            `json:"base_model,omitempty"` // the configured embedder's Model() (the builtin's before fitting)
	Model       string            `json:"model,omitempty"`      // vectorModel of the embedder the vectors were made with
	Vectors     string            `json:"vectors,omitempty"`    // file name in the folder
	State       string            `json:"state,omitempty"`      // the fitted embedder's state, file name
	Lexical     string            `json:"lexical"`              // the BM25 index and signatures, file name
	Digests     map[string]string `json:"digests"`              // file name -> fileDigest of its contents
	Calibration calibrationJSON   `json:"calibration"`
	// Settled: the fit and the calibration were made on this very library,
	// as a fresh build makes them (settle.go). An index kept before its
	// router settled it says false: a router that loads one settles it
	// after the start. The field came without a new format: older builds
	// ignore it.
	// Written before it (nil), a warm index may be an incremental build's
	// and reads as unsettled; a prebuilt one is `router index build`'s, a
	// fresh build, and reads as settled (see settledIndex).
	Settled *bool `json:"settled"`
	// Self is the digest of the other fields (manifestDigest): the data
	// files have theirs in Digests, and a manifest changed in place (its
	// calibration, say) is rebuilt rather than served. Absent in manifests
	// written before it, which are read as before.
	Self string `json:"self,omitempty"`
}

// manifestDigest is the digest of m's fields but Self.
func manifestDigest(m prebuiltManifest) string {
	m.Self = ""
	b, _ := json.Marshal(m)
	return fileDigest(b)
}

type calibrationJSON struct {
	BM25, BM25Hybrid, BM25HybridNorm, Cosine [2]float64 // noise, strong
}

func (c calibration) toJSON() calibrationJSON {
	f := func(s scale) [2]float64 { return [2]float64{s.noise, s.strong} }
	return calibrationJSON{f(c.bm25), f(c.bm25h), f(c.bm25nh), f(c.cosine)}
}

func (c calibrationJSON) calibration() calibration {
	f := func(x [2]float64) scale { return scale{noise: x[0], strong: x[1]} }
	return calibration{bm25: f(c.BM25), bm25h: f(c.BM25Hybrid), bm25nh: f(c.BM25HybridNorm), cosine: f(c.Cosine)}
}

// indexKey is the part of an index's file names that says whose it is:
// the provider, readable, and a digest of the provider and the configured
// model (the builtin's before fitting), so two arms of one provider with
// different models keep an index each. "" provider = no embedder.
func indexKey(provider, model string) string {
	h := sha256.Sum256([]byte(provider + "\x00" + model))
	return fileStem(provider) + "-" + hex.EncodeToString(h[:4])
}

// manifestName is the manifest's file name for an index key.
func manifestName(key string) string { return "prebuilt-" + key + ".json" }

// fileStem is a provider's readable part of its index files' names.
func fileStem(provider string) string { return safeFileName(cmp.Or(provider, "none")) }

// readManifest reads dir's manifest for key.
func readManifest(dir, key string) (prebuiltManifest, error) {
	var m prebuiltManifest
	b, err := os.ReadFile(filepath.Join(dir, manifestName(key)))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err == nil && m.Self != "" && manifestDigest(m) != m.Self {
		err = errors.New("the manifest does not match its digest: changed in place")
	}
	return m, err
}

// files are the index files m names ("" for those it has none of).
func (m prebuiltManifest) files() []string { return []string{m.Vectors, m.State, m.Lexical} }

// key is m's indexKey.
func (m prebuiltManifest) key() string { return indexKey(m.Embedder, m.BaseModel) }

// fileDigest identifies a file's contents, so one damaged in place (bit
// rot, a block lost in a crash) is rebuilt rather than served. sha256 costs
// ~70 ms of CPU over the ~85 MB of a 10,000-skill index (with SHA-NI; ~3x
// without), the lexical file's beside the vectors' (BenchmarkWarmStart).
func fileDigest(b []byte) string {
	h := sha256.Sum256(b)
	return digestString(h[:])
}

func digestString(sum []byte) string { return "sha256:" + hex.EncodeToString(sum) }

var errDamaged = errors.New("damaged: its digest differs from the manifest's")

// readIndexFile reads the file name of the index in dir whose manifest
// gives it digest, and checks it.
func readIndexFile(dir, name, digest string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	switch {
	case err != nil:
		return nil, err
	case digest == "":
		return nil, fmt.Errorf("%s: no digest in the manifest", name)
	case fileDigest(b) != digest:
		return nil, fmt.Errorf("%s: %w", name, errDamaged)
	}
	return b, nil
}

// read reads one of the files p's manifest names, checked.
func (p *prebuilt) read(name string) ([]byte, error) {
	return readIndexFile(p.dir, name, p.m.Digests[name])
}

func safeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// libraryHash identifies everything the indexes are built from: every
// skill's id, name, description and body, in index order, and how
// documents are cut for embedding. Each skill is hashed on its own, the
// library on every core (one pass over 10,000 skills' text took ~0.1 s of
// one core on every start, and more once the text is packed), and the
// library hash is the hash of those digests in order.
func libraryHash(list []*skills.Skill) string {
	sums := make([]byte, len(list)*sha256.Size)
	workers := max(1, min(runtime.GOMAXPROCS(0), len(list)/libraryHashMinSkills))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			h := sha256.New()
			var num []byte
			for i := w * len(list) / workers; i < (w+1)*len(list)/workers; i++ {
				s := list[i]
				h.Reset()
				for _, f := range []string{s.ID, s.Name, s.Description, s.Body()} {
					num = append(strconv.AppendInt(num[:0], int64(len(f)), 10), ':')
					h.Write(num)
					// The text itself is hashed in place: a copy of every
					// body was 140 MB of garbage at 10,000 skills, on
					// every start.
					h.Write(unsafe.Slice(unsafe.StringData(f), len(f)))
				}
				h.Sum(sums[i*sha256.Size : i*sha256.Size : (i+1)*sha256.Size])
			}
		})
	}
	wg.Wait()
	h := sha256.New()
	fmt.Fprintf(h, "v%d %d %g %s\n", prebuiltVersion, docBodyChars, docBodyWeight, codeFingerprint())
	h.Write(sums)
	return hex.EncodeToString(h.Sum(nil))
}

// libraryHashMinSkills is the least number of skills worth a core of their
// own in libraryHash.
const libraryHashMinSkills = 256

// prebuilt is a manifest read from Options.Prebuilt, with what this build
// made of it.
type prebuilt struct {
	dir     string
	warm    bool      // the router's own (Options.WarmDir), not Options.Prebuilt
	skipped *prebuilt // Options.Prebuilt, when it did not match and this warm index did
	m       prebuiltManifest
	matches bool   // the library and the configured embedder are the ones indexed
	absent  bool   // no manifest for the configured embedder
	damaged bool   // a file of it could not be read or failed its digest
	why     string // why it does not match
}

// loadPrebuilt returns the index to start from: Options.Prebuilt when it
// matches list, else the warm index when that does; else Options.Prebuilt
// (its vectors may still serve unchanged skills), else the warm one. nil
// when neither folder is configured.
func (r *Router) loadPrebuilt(list []*skills.Skill) *prebuilt {
	var p, w *prebuilt
	if r.opts.Prebuilt != "" {
		if p = r.readPrebuilt(r.opts.Prebuilt, list); p.matches {
			return p
		}
		if _, err := os.Stat(p.dir); p.absent && err != nil {
			// Named as such: a wrong path or a volume not mounted. (A warm
			// folder not there yet is a first start's.)
			p.why = "the folder cannot be read: " + err.Error()
		}
	}
	if r.opts.WarmDir != "" && r.opts.WarmDir != r.opts.Prebuilt {
		if w = r.readPrebuilt(r.opts.WarmDir, list); w.matches || p == nil {
			w.warm, w.skipped = true, p
			return w
		}
	}
	return p
}

// readPrebuilt reads dir's manifest for the configured embedder and
// compares it with list.
func (r *Router) readPrebuilt(dir string, list []*skills.Skill) *prebuilt {
	provider, base := "", ""
	if r.opts.Embedder != nil {
		provider, base = r.opts.Embedder.Name(), r.opts.Embedder.Model()
	}
	p := &prebuilt{dir: dir}
	key := indexKey(provider, base)
	var err error
	p.m, err = readManifest(dir, key)
	switch {
	case errors.Is(err, os.ErrNotExist):
		p.absent = true
		p.why = fmt.Sprintf("no index for embedder %s/%s in the folder (%s missing%s)", provider, base, manifestName(key), othersIn(dir))
	case err != nil:
		p.why, p.damaged = "unreadable manifest: "+err.Error(), true
	case p.m.Version != prebuiltVersion:
		p.why = fmt.Sprintf("written by another version (format %d, this build reads %d)", p.m.Version, prebuiltVersion)
	case p.m.Embedder != provider || p.m.BaseModel != base:
		p.why = fmt.Sprintf("built with embedder %s/%s, configured %s/%s", p.m.Embedder, p.m.BaseModel, provider, base)
	case p.m.Library != libraryHash(list): // hashed only when the cheap checks pass (~0.2 s at 10,000 skills)
		p.why = fmt.Sprintf("built for another library or by another build (%d skills then, %d now, or their text changed)", p.m.Skills, len(list))
	case p.m.Lexical == "":
		p.why = "no lexical index in the manifest"
	default:
		p.matches = true
	}
	return p
}

// othersIn says which embedders the indexes in dir were built with, for a
// reason: most often the folder was built with another configuration.
func othersIn(dir string) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "prebuilt-*.json"))
	var others []string
	for _, path := range paths {
		var m prebuiltManifest
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &m) == nil && m.Version == prebuiltVersion {
			others = append(others, m.Embedder+"/"+m.BaseModel)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return "; it holds indexes built with " + strings.Join(others, ", ")
}

// restoreFitted returns the fitted embedder stored in a matching prebuilt
// index, or nil to fit one.
func (r *Router) restoreFitted(p *prebuilt) Embedder {
	if p == nil || !p.matches || p.m.State == "" || r.opts.Restore == nil {
		return nil
	}
	state, err := p.read(p.m.State)
	if err == nil {
		var e Embedder
		if e, err = r.opts.Restore(state); err == nil {
			return e
		}
	}
	p.matches, p.why, p.damaged = false, "embedder state: "+err.Error(), true
	return nil
}

// prebuiltVectors loads the stored vectors when they were made with emb's
// model (nil otherwise). They are worth loading even when the library
// changed: unchanged skills keep their rows.
func prebuiltVectors(p *prebuilt, emb Embedder) *index.Vectors {
	if p == nil || p.m.Vectors == "" || p.m.Embedder != emb.Name() {
		return nil
	}
	if !sameVectorModel(emb, p.m.Model) {
		return nil // e.g. a builtin fitted to another library: nothing to reuse
	}
	b, err := p.read(p.m.Vectors)
	var v *index.Vectors
	if err == nil {
		v, err = index.ReadVectors(b)
	}
	if err != nil {
		if p.matches {
			p.matches, p.why, p.damaged = false, "vectors: "+err.Error(), true
		}
		return nil // damaged rows must not serve even the unchanged skills
	}
	return v
}

// lexical returns a reader of the stored BM25 index and signatures of a
// matching prebuilt index, nil when there is none. The reader runs beside
// the vector loading, so it only reads p's fields as they are now.
func (p *prebuilt) lexical(list []*skills.Skill) func() (*index.BM25, []termSignature, error) {
	if p == nil || !p.matches {
		return nil
	}
	dir, name, digest := p.dir, p.m.Lexical, p.m.Digests[p.m.Lexical]
	return func() (*index.BM25, []termSignature, error) {
		b, err := readIndexFile(dir, name, digest)
		if err != nil {
			return nil, nil, err
		}
		return readLexical(b, len(list))
	}
}

// storedCalibration is the calibration of a matching prebuilt index built
// with the embedder ix uses, so starting from it embeds nothing.
func storedCalibration(p *prebuilt, ix *rankIndex) (calibration, bool) {
	if p == nil || !p.matches {
		return calibration{}, false
	}
	if ix.emb != nil && (ix.vec == nil || p.m.Model != ix.vec.Model()) {
		return calibration{}, false
	}
	return p.m.Calibration.calibration(), true
}

// logPrebuilt says whether the first build used the prebuilt index, and
// why not; later builds (reloads) are logged by build itself.
func (r *Router) logPrebuilt(p *prebuilt, prev *rankIndex, st index.BuildStats) {
	if p == nil || prev != nil {
		return
	}
	if p.skipped != nil {
		// The warm index matched where the prebuilt one did not (see
		// loadPrebuilt): nothing is built, whatever the prebuilt's own
		// line would say.
		r.opts.Logger.Warn("the prebuilt routing index does not match; the one kept from the last start does and is loaded instead",
			"dir", p.skipped.dir, "reason", p.skipped.why, "kept", p.dir)
	}
	switch {
	case p.matches && p.warm:
		r.opts.Logger.Info("loaded the routing index kept from the last start", "dir", p.dir, "skills", p.m.Skills,
			"embedder", p.m.Embedder, "model", p.m.Model)
		return
	case p.matches:
		r.opts.Logger.Info("loaded the prebuilt routing index", "dir", p.dir, "skills", p.m.Skills,
			"embedder", p.m.Embedder, "model", p.m.Model, "embedded", st.Embedded)
		return
	case p.warm && p.absent:
		// The folder is this library's: a first start on it (or with this
		// embedder), not a stale index.
		r.opts.Logger.Info("building the routing index: none kept from an earlier start", "dir", p.dir, "reason", p.why)
		return
	case p.warm && p.damaged:
		// Not a library change: the disk or whatever wrote the folder.
		r.opts.Logger.Warn("building the routing index: the one kept from the last start is damaged", "dir", p.dir, "reason", p.why)
		return
	case p.warm:
		r.opts.Logger.Info("building the routing index: the one kept from the last start is out of date", "dir", p.dir, "reason", p.why)
		return
	}
	msg := "the prebuilt routing index does not match; building the index here (skills whose text is unchanged keep their stored vectors)"
	if r.opts.Fit != nil {
		// An embedder fitted to the library (the builtin) is fitted to the
		// changed one: every vector changes.
		msg = "the prebuilt routing index does not match; building the index here (the builtin embedder is refitted to this library, so every skill is embedded again)"
	}
	r.opts.Logger.Warn(msg, "dir", p.dir, "reason", p.why)
}

// HasPrebuilt reports whether dir holds a prebuilt index (of any embedder).
func HasPrebuilt(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "prebuilt-*.json"))
	return len(m) > 0
}

// SavePrebuilt writes the current indexes to dir as a prebuilt index for
// Options.Prebuilt: the vectors, the fitted embedder's state (when it
// implements encoding.BinaryMarshaler, as the builtin does), the BM25 index
// and signatures, and the calibration. The manifest is written last, so a
// reader never finds one naming files that are not there yet. It fails
// when the vectors could not be built (the embedder was down): a prebuilt
// index must be complete. An index not yet settled is settled first: a
// prebuilt index is always a fresh build's, whatever this router's history.
func (r *Router) SavePrebuilt(dir string) error {
	ix := r.cur.Load()
	if ix == nil {
		return errors.New("router: no index to save")
	}
	if !ix.settled {
		r.upd.mu.Lock()
		r.startSettle()
		r.upd.mu.Unlock()
		if err := r.Settled(context.Background()); err != nil {
			return err
		}
		ix = r.cur.Load()
	}
	return r.savePrebuilt(ix, dir)
}

func (r *Router) savePrebuilt(ix *rankIndex, dir string) error {
	m := prebuiltManifest{
		Version:     prebuiltVersion,
		Library:     libraryHash(ix.list),
		Skills:      len(ix.list),
		Calibration: ix.cal.toJSON(),
		Settled:     &ix.settled,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var state []byte
	if ix.emb != nil {
		if ix.vec == nil {
			return fmt.Errorf("router: the vector index could not be built: %w", ix.vecErr)
		}
		m.Embedder, m.BaseModel, m.Model = r.opts.Embedder.Name(), r.opts.Embedder.Model(), ix.vec.Model()
		if bm, ok := ix.emb.(encoding.BinaryMarshaler); ok && r.opts.Fit != nil {
			var err error
			if state, err = bm.MarshalBinary(); err != nil {
				return fmt.Errorf("router: saving the embedder's state: %w", err)
			}
		}
	}
	// The files are named for what they hold (see generation), and the
	// manifest, written last, names them: two routers saving different
	// indexes to one folder (a restart beside a `router route`, replicas
	// sharing a warm folder), or a save cut short, never leave a manifest
	// naming files of another index.
	gen := generation(m, state)
	key := m.key()
	m.Digests = map[string]string{}
	// save writes one file and records its digest, taken of the bytes
	// as they are written (a second pass over ~80 MB at 10,000 skills
	// would cost as much again).
	save := func(name string, write func(io.Writer) error) error {
		h := sha256.New()
		if err := atomicfile.Write(filepath.Join(dir, name), func(w io.Writer) error {
			return write(io.MultiWriter(w, h))
		}); err != nil {
			return err
		}
		m.Digests[name] = digestString(h.Sum(nil))
		return nil
	}
	if ix.emb != nil {
		m.Vectors = "vectors-" + key + "-" + gen + ".bin"
		if err := save(m.Vectors, ix.vec.WriteBinary); err != nil {
			return fmt.Errorf("router: saving vectors: %w", err)
		}
		if state != nil {
			m.State = "state-" + key + "-" + gen + ".bin"
			if err := save(m.State, writeBytes(state)); err != nil {
				return fmt.Errorf("router: saving the embedder's state: %w", err)
			}
		}
	}
	m.Lexical = "lexical-" + key + "-" + gen + ".bin"
	if err := save(m.Lexical, func(w io.Writer) error {
		return writeLexical(w, ix.bm25, ix.sigs)
	}); err != nil {
		return fmt.Errorf("router: saving the lexical index: %w", err)
	}
	m.Self = manifestDigest(m)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	retire(dir, m)
	if err := atomicfile.Write(filepath.Join(dir, manifestName(key)), writeBytes(append(b, '\n'))); err != nil {
		return fmt.Errorf("router: saving the manifest: %w", err)
	}
	removeStale(dir, m, time.Now().Add(-staleAfter))
	r.sweep.after(r, dir, m)
	return nil
}

// laterSweep removes the files a save retired once staleAfter has passed
// since the last save: removeStale at a save only takes those retired a
// minute before, so a library that stops changing kept every earlier
// generation (~11 MB each at 1,267 skills) until its next edit.
type laterSweep struct {
	mu      sync.Mutex
	pending bool
	last    time.Time // the last save
}

func (l *laterSweep) after(r *Router, dir string, saved prebuiltManifest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = time.Now()
	if l.pending || r.bgCtx == nil {
		return
	}
	l.pending = true
	grace := staleAfter
	// Only what names the files: the manifest points into the index, which
	// must not outlive a newer one for the grace period.
	m := prebuiltManifest{Embedder: saved.Embedder, BaseModel: saved.BaseModel}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		for {
			l.mu.Lock()
			wait := time.Until(l.last.Add(grace + time.Second))
			if wait <= 0 {
				l.pending = false
				l.mu.Unlock()
				removeStale(dir, m, time.Now().Add(-grace))
				return
			}
			l.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.bgCtx.Done():
				t.Stop()
				l.mu.Lock()
				l.pending = false
				l.mu.Unlock()
				return
			}
		}
	}()
}

// retire marks the files of the manifest m replaces as written now, so
// their grace period (staleAfter) starts when they stop being named, not
// when they were written.
func retire(dir string, m prebuiltManifest) {
	old, err := readManifest(dir, m.key())
	if err != nil {
		return
	}
	now := time.Now()
	for _, f := range old.files() {
		if f != "" && !slices.Contains(m.files(), f) && filepath.Base(f) == f {
			os.Chtimes(filepath.Join(dir, f), now, now)
		}
	}
}

// generation names the files of one index: a digest of what determines
// their contents (the library and code, the vectors' model, the fitted
// state), so the same index saved twice keeps its names (an image built
// twice is the same) and a different one never takes them.
func generation(m prebuiltManifest, state []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n%s\n%s\n%s\n", m.Version, m.Library, m.Embedder, m.Model)
	h.Write(state)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func isGeneration(s string) bool {
	_, err := hex.DecodeString(s)
	return len(s) == 16 && err == nil
}

// staleAfter is how long files are kept once no manifest names them: a
// router that read the previous manifest a moment ago may still be opening
// its files.
var staleAfter = time.Minute

// removeStale deletes the index files in dir of m's embedder and model
// that its manifest no longer names and that were written (or retired)
// before cutoff, and temporary files of saves that were cut short
// (atomicfile.RemoveStale, with a cutoff of its own: they may be another
// router's save in progress). It reads the manifest again, so a save by
// another router that finished meanwhile keeps its files. Files of earlier
// versions, which named files by provider alone (a manifest
// prebuilt-<provider>.json, files <kind><provider>[-<generation>].bin), are
// no longer read by anyone of this version and go too, once as old. Errors
// are ignored (a file left behind costs only space).
func removeStale(dir string, saved prebuiltManifest, cutoff time.Time) {
	atomicfile.RemoveStale(dir)
	key := saved.key()
	m, err := readManifest(dir, key)
	if err != nil {
		return
	}
	stale := func(path string) {
		if fi, err := os.Stat(path); err == nil && fi.ModTime().Before(cutoff) {
			os.Remove(path)
		}
	}
	legacy := fileStem(saved.Embedder)
	stale(filepath.Join(dir, "prebuilt-"+legacy+".json"))
	for _, kind := range []string{"vectors-", "state-", "lexical-"} {
		stale(filepath.Join(dir, kind+legacy+".bin"))
		for _, stem := range []string{key, legacy} {
			names, _ := filepath.Glob(filepath.Join(dir, kind+stem+"-*.bin"))
			for _, path := range names {
				name := filepath.Base(path)
				gen := strings.TrimSuffix(strings.TrimPrefix(name, kind+stem+"-"), ".bin")
				if slices.Contains(m.files(), name) || !isGeneration(gen) {
					continue // in use, or another index's whose name starts with stem
				}
				stale(path)
			}
		}
	}
}

// writeBytes is a write function for atomicfile.Write that writes b.
func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}

// settledIndex reports whether the index p holds was fitted and
// calibrated on exactly its library (prebuiltManifest.Settled).
func (p *prebuilt) settledIndex() bool {
	if p.m.Settled == nil {
		return !p.warm
	}
	return *p.m.Settled
}
