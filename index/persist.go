package index

// A compact binary form of the indexes, for a routing index saved next to
// its library (a prebuilt or warm-start folder): raw little-endian arrays a
// start-up reads back in one pass, where rebuilding them means analysing and
// embedding every skill again. Each encoding starts with a magic string and
// a format version; a reader refuses anything else, and every length is
// checked against what is left, so a truncated or foreign file is an error,
// never a panic.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"
)

const (
	bm25Magic    = "skillrouter-bm25\x00"
	vectorsMagic = "skillrouter-vectors\x00"
	binVersion   = 1
)

// errCorrupt is wrapped by every decoding error.
var errCorrupt = errors.New("corrupt index file")

// errBigEndian: the files hold native little-endian arrays; a big-endian
// machine builds its indexes instead.
var errBigEndian = errors.New("binary index files need a little-endian machine")

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// encoder appends little-endian values to a buffered writer; the first
// error sticks.
type encoder struct {
	w   *bufio.Writer
	err error
}

func (e *encoder) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) u64(x uint64) { e.bytes(binary.LittleEndian.AppendUint64(nil, x)) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *encoder) strs(ss []string) {
	e.u64(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

// raw writes a slice of fixed-size values as their little-endian bytes
// (every supported platform is little-endian; see rawBytes).
func raw[T any](e *encoder, s []T) {
	e.u64(uint64(len(s)))
	e.bytes(rawBytes(s))
}

func rawBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// decoder reads what encoder wrote from one byte slice, buf, of which it
// has read the first read bytes. The last array read in place (inPlace)
// ends held bytes in: nothing may move over buf[:held].
type decoder struct {
	buf        []byte
	read, held int
	err        error
}

func newDecoder(data []byte) *decoder { return &decoder{buf: data} }

// left is what is still to read.
func (d *decoder) left() []byte { return d.buf[d.read:] }

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errCorrupt, what)
	}
}

func (d *decoder) take(n uint64, what string) []byte {
	if d.err != nil || n > uint64(len(d.left())) {
		d.fail(what)
		return nil
	}
	out := d.left()[:n]
	d.read += int(n)
	return out
}

func (d *decoder) u64(what string) uint64 {
	b := d.take(8, what)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (d *decoder) str(what string) string { return string(d.take(d.u64(what), what)) }

func (d *decoder) strs(what string) []string {
	n := d.u64(what)
	if n > uint64(len(d.left()))/8 {
		d.fail(what)
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str(what)
	}
	return out
}

// unraw reads what raw wrote, into a new slice.
func unraw[T any](d *decoder, what string) []T {
	n := d.u64(what)
	var zero T
	size := uint64(unsafe.Sizeof(zero))
	if d.err != nil || n > uint64(len(d.left()))/size {
		d.fail(what)
		return nil
	}
	out := make([]T, n)
	copy(rawBytes(out), d.take(n*size, what))
	return out
}

// inPlace reads what raw wrote as a slice of the decoder's own buffer
// (see InPlace), where unraw copies: over the length it has just read if
// the values must move, so never over an array read in place before.
func inPlace[T any](d *decoder, what string) []T {
	n := d.u64(what)
	if d.err != nil {
		return nil
	}
	vals, moved, ok := InPlace[T](d.buf, d.read, d.held, n)
	if !ok {
		d.fail(what)
		return nil
	}
	// The unread rest moved back with the values: the buffer ends sooner.
	d.buf = d.buf[:len(d.buf)-moved]
	d.read += len(vals)*int(unsafe.Sizeof(*new(T))) - moved
	d.held = d.read
	return vals
}

// InPlace returns the n values of T (a type without pointers) stored at
// data[at:] as raw writes them, as a slice of data itself. A large
// library's rows and postings are tens of megabytes: copying them out of
// the buffer a file was read into doubled what a warm start allocated and
// wrote, and on some virtual machines the first write to each fresh page
// is the dearest part of a start (docs/performance.md, twenty-third look).
// A slice must start at a multiple of T's alignment, which the files do
// not promise, so when data[at:] does not, all of data[at:] moves back by
// the few bytes it takes (moved), over bytes before at that the caller has
// copied out and no longer needs; floor is the lowest it may move over.
// ok is false when n values do not fit in data[at:] or the move would
// cross floor. The caller owns data from then on.
func InPlace[T any](data []byte, at, floor int, n uint64) (vals []T, moved int, ok bool) {
	var zero T
	size, align := uint64(unsafe.Sizeof(zero)), uintptr(unsafe.Alignof(zero))
	if size == 0 || floor < 0 || at < floor || at > len(data) || n > uint64(len(data)-at)/size {
		return nil, 0, false
	}
	if n == 0 {
		return nil, 0, true
	}
	moved = int(uintptr(unsafe.Pointer(&data[at])) % align)
	if at-moved < floor {
		return nil, 0, false
	}
	if moved != 0 {
		copy(data[at-moved:], data[at:])
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&data[at-moved])), n), moved, true
}

func (d *decoder) magic(m string) {
	if string(d.take(uint64(len(m)), "header")) != m {
		d.fail("not this kind of index file")
		return
	}
	if v := d.u64("version"); d.err == nil && v != binVersion {
		d.err = fmt.Errorf("%w: format %d, this build reads %d", errCorrupt, v, binVersion)
	}
}

// WriteBinary writes the index in its binary form.
func (ix *BM25) WriteBinary(w io.Writer) error {
	if !littleEndian {
		return errBigEndian
	}
	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.bytes([]byte(bm25Magic))
	e.u64(binVersion)
	e.u64(math.Float64bits(ix.k1))
	for _, x := range ix.weights {
		e.u64(math.Float64bits(x))
	}
	e.strs(ix.ids)
	// Terms in index order, then each term's idf and posting counts, then
	// all postings back to back.
	terms := make([]string, len(ix.post))
	for t, id := range ix.terms {
		terms[id] = t
	}
	e.strs(terms)
	idf := make([]float64, len(ix.post))
	counts := make([]uint32, 2*len(ix.post))
	for id, tp := range ix.post {
		idf[id], counts[2*id], counts[2*id+1] = tp.idf, uint32(len(tp.full)), uint32(len(tp.body))
	}
	raw(e, idf)
	raw(e, counts)
	raw(e, ix.full)
	raw(e, ix.body)
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.err
}

// ReadBM25 reads an index written by WriteBinary. Its postings are read in
// place (see inPlace): data is the index's from then on.
func ReadBM25(data []byte) (*BM25, error) {
	if !littleEndian {
		return nil, errBigEndian
	}
	d := newDecoder(data)
	d.magic(bm25Magic)
	ix := &BM25{k1: math.Float64frombits(d.u64("k1"))}
	for f := range ix.weights {
		ix.weights[f] = math.Float64frombits(d.u64("weights"))
	}
	ix.ids = d.strs("ids")
	terms := d.strs("terms")
	idf := unraw[float64](d, "idf")
	counts := unraw[uint32](d, "counts")
	full := inPlace[posting](d, "postings")
	body := inPlace[bodyPosting](d, "postings")
	if d.err != nil {
		return nil, d.err
	}
	if len(idf) != len(terms) || len(counts) != 2*len(terms) || len(d.left()) != 0 {
		return nil, fmt.Errorf("%w: term tables disagree", errCorrupt)
	}
	ix.terms = make(map[string]int32, len(terms))
	ix.post = make([]termPostings, len(terms))
	ix.full, ix.body = full, body
	for id, t := range terms {
		if _, dup := ix.terms[t]; dup {
			return nil, fmt.Errorf("%w: term %q repeated", errCorrupt, t)
		}
		nf, nb := uint64(counts[2*id]), uint64(counts[2*id+1])
		if nf > uint64(len(full)) || nb > uint64(len(body)) {
			return nil, fmt.Errorf("%w: postings", errCorrupt)
		}
		tp := &ix.post[id]
		tp.idf, tp.full, tp.body = idf[id], full[:nf:nf], body[:nb:nb]
		full, body = full[nf:], body[nb:]
		if err := checkDocs(tp.full, func(p posting) int32 { return p.doc }, len(ix.ids)); err != nil {
			return nil, err
		}
		if err := checkDocs(tp.body, func(p bodyPosting) int32 { return p.doc }, len(ix.ids)); err != nil {
			return nil, err
		}
		ix.terms[t] = int32(id)
	}
	if len(full) != 0 || len(body) != 0 {
		return nil, fmt.Errorf("%w: postings left over", errCorrupt)
	}
	ix.internTerms()
	return ix, nil
}

// checkDocs reports a term's postings that do not name documents below n
// in strictly increasing order (as built): scoring relies on both.
func checkDocs[P any](list []P, doc func(P) int32, n int) error {
	last := int32(-1)
	for _, p := range list {
		d := doc(p)
		if int(d) >= n {
			return fmt.Errorf("%w: posting of document %d of %d", errCorrupt, d, n)
		}
		if d <= last {
			return fmt.Errorf("%w: posting of document %d after %d", errCorrupt, d, last)
		}
		last = d
	}
	return nil
}

// WriteBinary writes the vectors in their binary form: the float32 rows
// exactly; the int8 columns are derived again on reading.
func (v *Vectors) WriteBinary(w io.Writer) error {
	if !littleEndian {
		return errBigEndian
	}
	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.bytes([]byte(vectorsMagic))
	e.u64(binVersion)
	e.str(v.model)
	e.u64(uint64(v.dim))
	e.strs(v.ids)
	e.strs(v.names)
	e.strs(v.hashes)
	raw(e, v.rows)
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.err
}

// ReadVectors reads vectors written by WriteBinary. The rows are read in
// place (see inPlace): data is the vectors' from then on.
func ReadVectors(data []byte) (*Vectors, error) {
	if !littleEndian {
		return nil, errBigEndian
	}
	d := newDecoder(data)
	d.magic(vectorsMagic)
	v := &Vectors{model: d.str("model")}
	dim := d.u64("dim")
	v.ids, v.names, v.hashes = d.strs("ids"), d.strs("names"), d.strs("hashes")
	v.rows = inPlace[float32](d, "rows")
	if d.err != nil {
		return nil, d.err
	}
	v.n = len(v.ids)
	if len(v.names) != v.n || len(v.hashes) != v.n || dim > 1<<20 || uint64(len(v.rows)) != uint64(v.n)*dim || len(d.left()) != 0 {
		return nil, fmt.Errorf("%w: vector tables disagree", errCorrupt)
	}
	for i := 1; i < v.n; i++ {
		if v.ids[i-1] >= v.ids[i] {
			return nil, fmt.Errorf("%w: ids not sorted", errCorrupt)
		}
	}
	v.dim = int(dim)
	v.quant = quantize(v.rows, v.n, v.dim)
	return v, nil
}
