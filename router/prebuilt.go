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
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/skillrouter/skillrouter/index"
	"github.com/skillrouter/skillrouter/skills"
)

// prebuiltVersion changes whenever what a prebuilt index stores, or how
// the library hash or the calibration is computed, changes. Version 2 added
// the lexical file and stores vectors in the binary form instead of a
// chromem-go export (which took seconds to read at 10,000 skills).
const prebuiltVersion = 2

// prebuiltManifest is the folder's table of contents, one per embedder
// provider (A/B arms with other providers share a folder).
type prebuiltManifest struct {
	Version     int             `json:"version"`
	Library     string          `json:"library"` // libraryHash of the skills indexed
	Skills      int             `json:"skills"`
	Embedder    string          `json:"embedder,omitempty"`   // provider; "" = no embedder
	BaseModel   string          `json:"base_model,omitempty"` // the configured embedder's Model() (the builtin's before fitting)
	Model       string          `json:"model,omitempty"`      // vectorModel of the embedder the vectors were made with
	Vectors     string          `json:"vectors,omitempty"`    // file name in the folder
	State       string          `json:"state,omitempty"`      // the fitted embedder's state, file name
	Lexical     string          `json:"lexical"`              // the BM25 index and signatures, file name
	Calibration calibrationJSON `json:"calibration"`
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

// manifestName is the manifest's file name for a provider ("" = none).
func manifestName(provider string) string {
	return "prebuilt-" + fileStem(provider) + ".json"
}

// fileStem is a provider's part of its index files' names ("" = none).
func fileStem(provider string) string { return safeFileName(cmp.Or(provider, "none")) }

// readManifest reads dir's manifest for provider.
func readManifest(dir, provider string) (prebuiltManifest, error) {
	var m prebuiltManifest
	b, err := os.ReadFile(filepath.Join(dir, manifestName(provider)))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	return m, err
}

// files are the index files m names ("" for those it has none of).
func (m prebuiltManifest) files() []string { return []string{m.Vectors, m.State, m.Lexical} }

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
// documents are cut for embedding.
func libraryHash(list []*skills.Skill) string {
	h := sha256.New()
	fmt.Fprintf(h, "v%d %d %g %s\n", prebuiltVersion, docBodyChars, docBodyWeight, codeFingerprint())
	var num []byte
	for _, s := range list {
		for _, f := range []string{s.ID, s.Name, s.Description, s.Body()} {
			num = append(strconv.AppendInt(num[:0], int64(len(f)), 10), ':')
			h.Write(num)
			// The text itself is hashed in place: a copy of every body
			// was 140 MB of garbage at 10,000 skills, on every start.
			h.Write(unsafe.Slice(unsafe.StringData(f), len(f)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// prebuilt is a manifest read from Options.Prebuilt, with what this build
// made of it.
type prebuilt struct {
	dir     string
	warm    bool      // the router's own (Options.WarmDir), not Options.Prebuilt
	skipped *prebuilt // Options.Prebuilt, when it did not match and this warm index did
	m       prebuiltManifest
	matches bool   // the library and the configured embedder are the ones indexed
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
	var err error
	p.m, err = readManifest(dir, provider)
	switch {
	case errors.Is(err, os.ErrNotExist):
		p.why = fmt.Sprintf("no index for embedder %q in the folder (%s missing)", provider, manifestName(provider))
	case err != nil:
		p.why = "unreadable manifest: " + err.Error()
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

// restoreFitted returns the fitted embedder stored in a matching prebuilt
// index, or nil to fit one.
func (r *Router) restoreFitted(p *prebuilt) Embedder {
	if p == nil || !p.matches || p.m.State == "" || r.opts.Restore == nil {
		return nil
	}
	state, err := os.ReadFile(filepath.Join(p.dir, p.m.State))
	if err == nil {
		var e Embedder
		if e, err = r.opts.Restore(state); err == nil {
			return e
		}
	}
	p.matches, p.why = false, "embedder state: "+err.Error()
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
	b, err := os.ReadFile(filepath.Join(p.dir, p.m.Vectors))
	var v *index.Vectors
	if err == nil {
		v, err = index.ReadVectors(b)
	}
	if err != nil {
		if p.matches {
			p.matches, p.why = false, err.Error()
		}
		return nil
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
	path := filepath.Join(p.dir, p.m.Lexical)
	return func() (*index.BM25, []termSignature, error) {
		b, err := os.ReadFile(path)
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
		r.logPrebuilt(p.skipped, prev, st)
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
// index must be complete.
func (r *Router) SavePrebuilt(dir string) error {
	ix := r.cur.Load()
	if ix == nil {
		return errors.New("router: no index to save")
	}
	return r.savePrebuilt(ix, dir)
}

func (r *Router) savePrebuilt(ix *rankIndex, dir string) error {
	m := prebuiltManifest{
		Version:     prebuiltVersion,
		Library:     libraryHash(ix.list),
		Skills:      len(ix.list),
		Calibration: ix.cal.toJSON(),
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
	provider := fileStem(m.Embedder)
	if ix.emb != nil {
		m.Vectors = "vectors-" + provider + "-" + gen + ".bin"
		// Replicas often run as another user than the one that built
		// the index (an image layer, a volume): files are readable by all.
		if err := index.WriteFileAtomic(filepath.Join(dir, m.Vectors), ix.vec.WriteBinary); err != nil {
			return fmt.Errorf("router: saving vectors: %w", err)
		}
		if state != nil {
			m.State = "state-" + provider + "-" + gen + ".bin"
			if err := writeFileAtomic(filepath.Join(dir, m.State), state); err != nil {
				return err
			}
		}
	}
	m.Lexical = "lexical-" + provider + "-" + gen + ".bin"
	if err := index.WriteFileAtomic(filepath.Join(dir, m.Lexical), func(w io.Writer) error {
		return writeLexical(w, ix.bm25, ix.sigs)
	}); err != nil {
		return fmt.Errorf("router: saving the lexical index: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	retire(dir, m)
	if err := writeFileAtomic(filepath.Join(dir, manifestName(m.Embedder)), append(b, '\n')); err != nil {
		return err
	}
	removeStale(dir, m.Embedder, time.Now().Add(-staleAfter))
	return nil
}

// retire marks the files of the manifest m replaces as written now, so
// their grace period (staleAfter) starts when they stop being named, not
// when they were written.
func retire(dir string, m prebuiltManifest) {
	old, err := readManifest(dir, m.Embedder)
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

// removeStale deletes provider's index files in dir that its manifest no
// longer names and that were written (or retired) before cutoff, those of
// earlier versions (fixed names) included, and temporary files of saves
// that were cut short before cutoff. It reads the manifest again, so a save
// by another router that finished meanwhile keeps its files; errors are
// ignored (a file left behind costs only space).
func removeStale(dir, provider string, cutoff time.Time) {
	m, err := readManifest(dir, provider)
	if err != nil {
		return
	}
	// Temporary files of writes that never finished (the process was
	// killed mid-save): a live writer's file was written to a moment ago.
	tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	for _, path := range tmps {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
			os.Remove(path)
		}
	}
	p := fileStem(provider)
	for _, kind := range []string{"vectors-", "state-", "lexical-"} {
		names, _ := filepath.Glob(filepath.Join(dir, kind+p+"-*.bin"))
		names = append(names, filepath.Join(dir, kind+p+".bin"))
		for _, path := range names {
			name := filepath.Base(path)
			gen := strings.TrimSuffix(strings.TrimPrefix(name, kind+p+"-"), ".bin")
			if slices.Contains(m.files(), name) || name != kind+p+".bin" && !isGeneration(gen) {
				continue // in use, or another provider's whose name starts with p
			}
			if fi, err := os.Stat(path); err == nil && fi.ModTime().Before(cutoff) {
				os.Remove(path)
			}
		}
	}
}

// writeFileAtomic writes through a temporary file and a rename: readers
// (replicas sharing the folder) see the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	return index.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
