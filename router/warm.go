package router

// Warm starts. A router with Options.WarmDir keeps the index it built there
// as a prebuilt index (prebuilt.go), written in the background after every
// build that did not itself come from one, and loads it at the next start
// when the library and embedder still match: the builtin embedder's fitted
// state, the vectors, the BM25 index, the signatures and the calibration,
// so nothing is analysed or embedded again. The library hash includes a
// fingerprint of the code the indexes depend on (codeFingerprint), so an
// upgrade that changes them rebuilds rather than loads stale ones.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/skillrouter/skillrouter/analysis"
	"github.com/skillrouter/skillrouter/index"
)

// codeFingerprint identifies how this build turns a library into indexes
// beyond what prebuiltVersion and the embedder's model name say: the text
// analysis (measured on a probe text, so a new stemmer or stop-word list
// shows), the BM25 parameters and field weights (the stored calibration is
// measured with them), the signature cut and the calibration probes.
var codeFingerprint = sync.OnceValue(func() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q\n%+v %v %v\n%d %d\n%q\n", analysis.Terms(fingerprintProbe), index.DefaultBM25Params, bm25FieldWeights, hybridFieldWeights,
		dupBodyChars, calibrationSelfQueries, calibrationProbes)
	return hex.EncodeToString(h.Sum(nil)[:8])
})

// fingerprintProbe exercises every rule of the analysis: case, camelCase,
// apostrophes, accents, stemming, stop words, CJK bigrams and width folding.
const fingerprintProbe = "Running the Deployments' CONFIGURATION: naïve façade, e-mail/URLs, camelCaseWords and snake_case_words; " +
	"the quick brown fox jumps over 13 lazy dogs — reviewing pull-requests, analysing PDFs, querying databases. " +
	"把ＰＤＦ文件转换成Word文档，ﾃﾞｰﾀベースを検索する，데이터베이스 쿼리."

const lexicalMagic = "skillrouter-lexical\x00\x02"

// writeLexical writes the signatures, then the BM25 index to the end.
func writeLexical(w io.Writer, bm *index.BM25, sigs []termSignature) error {
	lens := make([]uint32, len(sigs))
	total := 0
	for i, s := range sigs {
		lens[i] = uint32(len(s))
		total += len(s)
	}
	parts := []any{[]byte(lexicalMagic), uint64(len(sigs)), lens, uint64(total)}
	for _, s := range sigs {
		parts = append(parts, []uint32(s))
	}
	for _, part := range parts {
		if err := binary.Write(w, binary.LittleEndian, part); err != nil {
			return err
		}
	}
	return bm.WriteBinary(w)
}

var errLexical = errors.New("corrupt lexical index")

// readLexical reads what writeLexical wrote, for a library of n skills. It
// takes b over: the signatures and postings are slices of it.
func readLexical(b []byte, n int) (*index.BM25, []termSignature, error) {
	r := bytes.NewReader(b)
	magic := make([]byte, len(lexicalMagic))
	var count, total uint64
	if err := binary.Read(r, binary.LittleEndian, magic); err != nil || string(magic) != lexicalMagic {
		return nil, nil, errLexical
	}
	if err := binary.Read(r, binary.LittleEndian, &count); err != nil || count != uint64(n) || count > uint64(r.Len())/4 {
		return nil, nil, errLexical
	}
	lens := make([]uint32, count)
	if err := binary.Read(r, binary.LittleEndian, lens); err != nil {
		return nil, nil, errLexical
	}
	if err := binary.Read(r, binary.LittleEndian, &total); err != nil {
		return nil, nil, errLexical
	}
	// The signatures and the BM25 postings stay in b (index.InPlace): it is
	// kept whole as long as the postings are, so a copy of the signatures
	// would hold their bytes twice. They may move back over total's bytes.
	at := len(b) - r.Len()
	all, moved, ok := index.InPlace[uint32](b, at, at-binary.Size(total), total)
	if !ok {
		return nil, nil, errLexical
	}
	rest := b[at-moved+4*len(all) : len(b)-moved]
	sigs := make([]termSignature, count)
	for i, l := range lens {
		if uint64(l) > uint64(len(all)) {
			return nil, nil, errLexical
		}
		sigs[i], all = termSignature(all[:l:l]), all[l:]
	}
	if len(all) != 0 {
		return nil, nil, errLexical
	}
	bm, err := index.ReadBM25(rest)
	if err != nil {
		return nil, nil, err
	}
	if bm.Len() != n {
		return nil, nil, fmt.Errorf("%w: %d documents, the library has %d", errLexical, bm.Len(), n)
	}
	return bm, sigs, nil
}

// persistWarm writes ix to Options.WarmDir in the background unless it was
// loaded from a matching index. Builds that follow each other quickly
// (reloads) write only the newest (see latestWriter). Close waits for a
// write under way, so a short-lived process (router route) leaves a
// complete index behind.
func (r *Router) persistWarm(ix *rankIndex) {
	if r.opts.WarmDir == "" || ix.from != "" || (ix.emb != nil && ix.vec == nil) {
		return
	}
	r.warm.write(&r.bg, func() {
		if r.cur.Load() != ix {
			return // replaced by a newer build
		}
		if err := r.savePrebuilt(ix, r.opts.WarmDir); err != nil {
			r.opts.Logger.Warn("could not keep the routing index for the next start", "dir", r.opts.WarmDir, "err", err)
			r.indexEvent(IndexKeepFailed, 0)
		}
	})
}

// latestWriter runs writes in the background, one at a time, and only the
// newest of those queued while one runs: a write of an index that a newer
// build has already replaced is wasted work (at 10,000 skills, seconds of
// CPU and ~100 MB), and could land after the newer one.
type latestWriter struct {
	sync.Mutex
	next func()
	busy bool
}

// write queues job, replacing any queued one, and starts a writer unless
// one runs; bg tracks it.
func (w *latestWriter) write(bg *sync.WaitGroup, job func()) {
	w.Lock()
	w.next = job
	if w.busy {
		w.Unlock()
		return
	}
	w.busy = true
	w.Unlock()
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			w.Lock()
			job := w.next
			w.next = nil
			if job == nil {
				w.busy = false
				w.Unlock()
				return
			}
			w.Unlock()
			job()
		}
	}()
}
