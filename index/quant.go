package index

// Scanning a large library's vectors. A sparse query (the builtin
// embedder's touches a few hundred of 1,024 components) against dense
// document vectors costs non-zero components × documents multiply-adds.
// The columns the scan reads are kept in as few bytes as a useful first
// pass allows: int8, each row scaled by its own largest component (a
// quarter of float32's bytes, half of int16's). The query is scaled to
// int16, so the scan multiplies and adds integers, exactly, two products
// to a 32-bit lane (VPDPWSSD with AVX-512 VNNI, VPMADDWD with AVX2): half
// the instructions of widening each byte to float32 for a fused
// multiply-add. Under load at 10,000 skills the scan waits on memory
// whichever kernel reads the columns (docs/performance.md). Each row's
// error is bounded (Prepared.RowBound); a caller that wants the top of a
// ranking rescores exactly, from the float32 rows, only the documents
// whose bound reaches it, so rankings, scores and ties are the exact ones.
// On the 10,000-skill scale library that leaves 70–120 rows (median) to
// rescore for a top 46, at most ~530 (docs/performance.md).

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// quantMax is the largest int8 magnitude used: a row's largest component
// maps to ±127.
const quantMax = 127

// scanBlock is how many documents Approximate scans at a time: a multiple
// of 32, so that only the library's last group of 32 can be partial (the
// kernels keep a full group's sums in groupDoc's order).
const scanBlock = 4096

// queryMax is the largest int16 magnitude a query component is scaled to.
const queryMax = 32767

// quant is the int8 column-major copy of a Vectors' rows, with what bounds
// each row's error.
type quant struct {
	// dim columns of stride n rounded up to a multiple of 32 (the kernels'
	// groups; the padding is zeros): cols[j*stride+i] = round(rows[i*dim+j]
	// / scale[i]).
	cols   []int8
	stride int
	zero   []int8    // stride zeros: the missing columns of a last group of eight
	scale  []float32 // per row: a component is about cols·scale
	// Per row, rounded up: the largest |cols·scale − rows| of a component,
	// the L2 norm of those errors, and the row's L2 norm.
	maxErr, resNorm, rowNorm []float32
	// The largest of each, for a bound over all rows.
	maxErrAll, resNormAll, rowNormAll float64
	exact                             bool // a row is not finite: no approximation
}

// quantize makes the int8 columns of n rows of dim components. Rows are
// independent: a large library's are quantized on every core, each core a
// run of rows that starts at a multiple of quantBlock, so that two cores'
// bytes of a column meet in one cache line at most.
func quantize(rows []float32, n, dim int) quant {
	stride := (n + 31) &^ 31
	q := quant{
		cols: make([]int8, stride*dim), stride: stride, zero: make([]int8, stride), scale: make([]float32, n),
		maxErr: make([]float32, n), resNorm: make([]float32, n), rowNorm: make([]float32, n),
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), n/quantizeMinRows))
	finite := make([]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := (w*n/workers)&^(quantBlock-1), ((w+1)*n/workers)&^(quantBlock-1)
		if w == workers-1 {
			hi = n
		}
		wg.Go(func() {
			for i := lo; i < hi; i += quantBlock {
				if !q.quantizeBlock(rows, dim, i, min(quantBlock, hi-i)) {
					return
				}
			}
			finite[w] = true
		})
	}
	wg.Wait()
	if slices.Contains(finite, false) {
		return quant{exact: true}
	}
	for i := range n {
		q.maxErrAll = max(q.maxErrAll, float64(q.maxErr[i]))
		q.resNormAll = max(q.resNormAll, float64(q.resNorm[i]))
		q.rowNormAll = max(q.rowNormAll, float64(q.rowNorm[i]))
	}
	return q
}

// quantizeMinRows is the least number of rows worth a core of their own.
const quantizeMinRows = 1024

// quantBlock is how many rows quantizeBlock takes at once: a row's entries
// are a column apart, dim pages of the columns for each row, so rows are
// written a block at a time, each column's entries of the block side by
// side (one row at a time took ~28 ns an entry at 10,000 skills on an AMD
// EPYC, a page-table walk for most writes; a block ~16 ns there).
const quantBlock = 64

// quantizeBlock fills in the column entries, scales and error bounds of the
// k rows from row lo; false when a component is not finite. Each row's
// arithmetic is the same, in the same order, as one row at a time.
func (q *quant) quantizeBlock(rows []float32, dim, lo, k int) bool {
	var scale, maxErr, res, norm [quantBlock]float64
	for r := range k {
		top, ok := absMax(rows[(lo+r)*dim : (lo+r+1)*dim])
		if !ok {
			return false
		}
		s := float32(top / quantMax)
		if s == 0 {
			s = 1 // an all-zero row (or one too small to scale): zeros, tiny errors
		}
		q.scale[lo+r], scale[r] = s, float64(s)
	}
	block := rows[lo*dim : (lo+k)*dim]
	for j := range dim {
		col := q.cols[j*q.stride+lo : j*q.stride+lo+k]
		for r := range col {
			f := float64(block[r*dim+j])
			c := roundHalfAway(f / scale[r])
			// Clamped as min and max would, without their NaN cases: c is
			// finite, and beyond ±quantMax only by a float32 scale's rounding.
			if c > quantMax {
				c = quantMax
			} else if c < -quantMax {
				c = -quantMax
			}
			col[r] = int8(c)
			// c·s and its difference from f are exact in float64.
			e := math.Abs(c*scale[r] - f)
			if e > maxErr[r] { // e is finite: max without its NaN cases
				maxErr[r] = e
			}
			res[r] += e * e
			norm[r] += f * f
		}
	}
	for r := range k {
		q.maxErr[lo+r] = roundUp32(maxErr[r])
		q.resNorm[lo+r] = roundUp32(math.Sqrt(res[r]) * (1 + 1e-12))
		q.rowNorm[lo+r] = roundUp32(math.Sqrt(norm[r]) * (1 + 1e-12))
	}
	return true
}

// roundHalfAway is math.Round for |x| < 2⁵² (−0 aside, which it may give
// as +0), without math.Round's branches on the exponent, which the
// processor mispredicts for a row's components: x − t is exact, and so is
// doubling it; its truncation is ±1 exactly when the fraction is at least
// a half.
func roundHalfAway(x float64) float64 {
	t := math.Trunc(x)
	return t + math.Trunc(2*(x-t))
}

// absMax is the largest |x| of row, and false when a component is not
// finite. Four maxima, one per lane of every fourth component, taken
// together at the end, are the same number (taking a maximum does not
// round), without one long chain of comparisons; a plain comparison is max
// without its NaN cases, which the finiteness check has excluded.
func absMax(row []float32) (float64, bool) {
	var m [4]float64
	for i, x := range row {
		a := math.Abs(float64(x))
		if !(a <= math.MaxFloat32) { // NaN or ±Inf
			return 0, false
		}
		if a > m[i&3] {
			m[i&3] = a
		}
	}
	return max(m[0], m[1], m[2], m[3]), true
}

// roundUp32 is the smallest float32 not below x (x >= 0).
func roundUp32(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// Prepared is a query vector ready to score against one Vectors: its
// non-zero components in ascending order. It is not safe for concurrent use.
type Prepared struct {
	v      *Vectors
	idx    []int32   // non-zero components of the query, ascending
	val    []float32 // their values
	qv     []int16   // their int16 multiples of qs, for the scan
	qs     float64   // the scan's query scale
	qerr   float64   // the L2 norm of val − qs·qv, rounded up
	l1, l2 float64   // the query's norms
	gamma  float64   // the relative rounding of Exact's float32 sum (errorBound)
	bound  float64   // the bound over all rows
}

// Prepare readies q for scoring.
func (v *Vectors) Prepare(q []float32) (*Prepared, error) {
	if len(q) != v.dim && v.n > 0 {
		return nil, fmt.Errorf("query has %d dimensions, index %d", len(q), v.dim)
	}
	nz := 0
	for _, x := range q {
		if x != 0 {
			nz++
		}
	}
	p := &Prepared{v: v, idx: make([]int32, 0, nz), val: make([]float32, 0, nz), qv: make([]int16, nz)}
	var l2, top float64
	for j, x := range q {
		if x == 0 {
			continue
		}
		p.idx = append(p.idx, int32(j))
		p.val = append(p.val, x)
		f := math.Abs(float64(x))
		p.l1 += f
		l2 += f * f
		top = max(top, f)
	}
	p.l2 = math.Sqrt(l2)
	const u = 0x1p-24
	m := float64(len(p.idx) + 1)
	// γ(m+1) for Exact's float32 sum, and one more rounding (as the
	// float scan had).
	p.gamma = m*u/(1-m*u) + u*(1+m*u/(1-m*u))
	p.quantizeQuery(top)
	p.bound = p.errorBound(v.maxErrAll, v.resNormAll, v.rowNormAll)
	return p, nil
}

// quantizeQuery scales the query's components to int16 for the scan: the
// largest to ±queryMax, unless that would let an int32 sum overflow, which
// a sum of |qv|·127 below 2³¹ rules out (Σ|round(x/qs)| ≤ l1/qs + m/2). It
// records the L2 norm of what the scaling loses, for errorBound; a query
// it cannot scale (not finite) gets qs NaN and is not approximated.
func (p *Prepared) quantizeQuery(top float64) {
	m := float64(len(p.val))
	if top == 0 || math.IsInf(p.l1, 0) || math.IsNaN(p.l1) || 127*(1.5*m+1) >= math.MaxInt32 {
		p.qs = math.NaN()
		if top == 0 {
			p.qs = 1 // nothing to scan: every sum is 0, exactly
		}
		return
	}
	p.qs = max(top/queryMax, p.l1*(1+1e-9)*127/(math.MaxInt32-127*(1.5*m+1)))
	var e2 float64
	for k, x := range p.val {
		f := float64(x)
		c := min(max(math.Round(f/p.qs), -queryMax), queryMax)
		p.qv[k] = int16(c)
		e := c*p.qs - f
		e2 += e * e
	}
	// The float64 arithmetic above rounds: a relative and an absolute
	// slack cover it.
	p.qerr = math.Sqrt(e2)*(1+1e-9) + (m+1)*0x1p-50*top
}

// errorBound bounds |approximation − exact| (see Approximate and Exact) for
// a row whose components are off by at most maxErr, whose errors have L2
// norm res and whose own norm is at most norm. The approximation is, but
// for two float64 roundings, the real Σ (qs·qv)·(s·c) of the scaled query
// and the quantized row y = s·c, whose norm is at most norm + res. With a
// query of m non-zero components q, norms l1 and l2, and scaling error
// qerr:
//
//   - the row's quantization: |Σ q·(y − x)| ≤ min(maxErr·l1, l2·res);
//   - the query's: |Σ (qs·qv − q)·y| ≤ qerr·(norm + res);
//   - Exact's float32 sum of m products is off its real value by at most
//     γ(m+1)·Σ|q·x| ≤ γ·l2·norm (Higham);
//   - the approximation's two float64 roundings, at most 2⁻⁵⁰ of
//     (l2 + qerr)·(norm + res).
//
// A tiny slack covers the float64 arithmetic of the bound itself.
func (p *Prepared) errorBound(maxErr, res, norm float64) float64 {
	y := norm + res
	b := min(maxErr*p.l1, p.l2*res) + p.qerr*y + p.gamma*p.l2*norm + 0x1p-50*(p.l2+p.qerr)*y
	return b*(1+1e-9) + 1e-12
}

// Bound is the largest difference between an approximate similarity
// (Approximate) and the exact one (Exact) of any row, for this query.
func (p *Prepared) Bound() float64 { return p.bound }

// MaxAbs bounds the magnitude of every similarity of this query, exact or
// approximate.
func (p *Prepared) MaxAbs() float64 {
	return p.l2*p.v.rowNormAll*(1+p.gamma) + p.bound
}

// finite reports whether the query could be scaled for the scan and no
// float32 sum of Exact can overflow for it, which the bound assumes.
func (p *Prepared) finite() bool {
	const most = math.MaxFloat32 / 2
	return !math.IsNaN(p.qs) && p.l2*p.v.rowNormAll*(1+p.gamma) < most
}

// RowBound is the largest difference between row i's approximate and exact
// similarities, at most Bound and usually well under it: rows differ in
// how their largest component scales the others.
func (p *Prepared) RowBound(i int) float64 {
	q := &p.v.quant
	if q.exact {
		return math.Inf(1)
	}
	return p.errorBound(float64(q.maxErr[i]), float64(q.resNorm[i]), float64(q.rowNorm[i]))
}

// Exact returns the similarity of document row i: the float32 sum, in
// ascending component order, of the query's non-zero components times the
// document's, each product rounded to float32 before it is added (never
// fused), so every platform gets the same bits.
func (p *Prepared) Exact(i int) float64 {
	row := p.v.rows[i*p.v.dim : (i+1)*p.v.dim]
	var acc float32
	for k, j := range p.idx {
		acc += float32(p.val[k] * row[j])
	}
	return float64(acc)
}

// ExactRows sets dst[k] to Exact(rows[k]) for every k, with the same bits:
// each row's float32 additions in Exact's order. Rows go eight at a time, a
// SIMD lane each (AVX2 gathers), or four at a time in plain Go, so that
// their additions overlap instead of each waiting on the one before (a
// float add's latency, not memory, bounds a single row's sum).
func (p *Prepared) ExactRows(rows []int32, dst []float64) {
	dim := p.v.dim
	k := 0
	for ; k+8 <= len(rows) && len(p.idx) > 0 && int64(p.v.n)*int64(dim) <= math.MaxInt32; k += 8 {
		var off [8]int32
		var out [8]float32
		for r := range off {
			_ = p.v.rows[int(rows[k+r])*dim] // the kernel does not check its reads
			off[r] = rows[k+r] * int32(dim)
		}
		if !exactRows8(p.v.rows, &off, p.idx, p.val, &out) {
			break
		}
		for r, x := range out {
			dst[k+r] = float64(x)
		}
	}
	p.exactRows4(rows[k:], dst[k:])
}

// exactRows4 is ExactRows four rows at a time.
func (p *Prepared) exactRows4(rows []int32, dst []float64) {
	dim, all := p.v.dim, p.v.rows
	k := 0
	for ; k+4 <= len(rows); k += 4 {
		r0 := all[int(rows[k])*dim : int(rows[k]+1)*dim]
		r1 := all[int(rows[k+1])*dim : int(rows[k+1]+1)*dim]
		r2 := all[int(rows[k+2])*dim : int(rows[k+2]+1)*dim]
		r3 := all[int(rows[k+3])*dim : int(rows[k+3]+1)*dim]
		var a0, a1, a2, a3 float32
		for c, j := range p.idx {
			x := p.val[c]
			a0 += float32(x * r0[j])
			a1 += float32(x * r1[j])
			a2 += float32(x * r2[j])
			a3 += float32(x * r3[j])
		}
		dst[k], dst[k+1], dst[k+2], dst[k+3] = float64(a0), float64(a1), float64(a2), float64(a3)
	}
	for ; k < len(rows); k++ {
		dst[k] = p.Exact(int(rows[k]))
	}
}

// Approximate writes every document's approximate similarity, within
// RowBound of Exact, into dst (len Len()). It returns false, writing
// nothing, when the index cannot be approximated (a vector not finite) or
// the query is not finite or large enough to overflow Exact's float32
// sums; callers then score exactly.
func (p *Prepared) Approximate(dst []float64) bool {
	v := p.v
	if v.exact || len(dst) != v.n || math.IsNaN(p.bound) || math.IsInf(p.bound, 0) || !p.finite() {
		return false
	}
	accp := accs.Get().(*[]int32)
	if cap(*accp) < v.stride {
		*accp = make([]int32, v.stride)
	}
	acc := (*accp)[:v.stride]
	clear(acc)
	// A block of documents at a time, so its sums stay in the core's
	// first-level cache while every column passes, and eight columns a
	// pass, a last group padded with zero columns. The blocks cover the
	// columns' padding, so that every group of 32 is full.
	n := v.stride
	for lo := 0; lo < n; lo += scanBlock {
		hi := min(lo+scanBlock, n)
		for k := 0; k < len(p.idx); k += 8 {
			var q [8]int16
			var cols [8][]int8
			for t := range cols {
				cols[t] = v.zero[lo:hi]
				if k+t < len(p.idx) {
					at := int(p.idx[k+t]) * n
					q[t], cols[t] = p.qv[k+t], v.cols[at+lo:at+hi]
				}
			}
			dot8Int16(acc[lo:hi], &q, &cols)
		}
	}
	qs := p.qs
	var last [32]float64 // the last group's, padding included
	for g := 0; g < n; g += 32 {
		sums := (*[32]int32)(acc[g : g+32])
		out := &last
		if g+32 <= v.n {
			out = (*[32]float64)(dst[g : g+32])
		}
		for m, d := range groupDoc {
			d &= 31 // no bounds checks
			out[d] = float64(sums[m]) * qs
		}
		if out == &last {
			copy(dst[g:], last[:v.n-g])
		}
	}
	for i, s := range v.scale {
		dst[i] *= float64(s)
	}
	accs.Put(accp)
	return true
}

// accs recycles Approximate's int32 sums.
var accs = sync.Pool{New: func() any { return new([]int32) }}

// Candidates returns the rows whose exact similarity can be among the n
// best, given approximations within RowBound of it: every row whose
// approximation plus its bound reaches the n-th highest lower bound
// (approximation less bound) of all rows. dst is reused.
func (p *Prepared) Candidates(approx []float64, n int, dst []int) []int {
	dst = dst[:0]
	if n <= 0 {
		return dst
	}
	if n >= len(approx) {
		for i := range approx {
			dst = append(dst, i)
		}
		return dst
	}
	bound, lower := make([]float64, len(approx)), make([]float64, len(approx))
	for i, a := range approx {
		bound[i] = p.RowBound(i)
		lower[i] = a - bound[i]
	}
	floor := nthLargest(lower, n) // n rows reach it exactly
	for i, a := range approx {
		if !(a+bound[i] < floor) {
			dst = append(dst, i)
		}
	}
	return dst
}

// nthLargest returns the n-th largest of x (1 <= n <= len(x)), with a
// min-heap of the n largest seen.
func nthLargest(x []float64, n int) float64 {
	h := slices.Clone(x[:n])
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && h[c+1] < h[c] {
				c++
			}
			if !(h[c] < h[i]) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := n/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, a := range x[n:] {
		if a > h[0] {
			h[0] = a
			down(0)
		}
	}
	return h[0]
}
