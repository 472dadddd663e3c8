package index

// Scanning a large library's vectors. A sparse query (the builtin
// embedder's touches a few hundred of 1,024 components) against dense
// document vectors costs non-zero components × documents multiply-adds,
// and at 10,000 skills the float32 columns it reads (12 MB a query) no
// longer come from the core's cache: the scan waits on memory. The columns
// are therefore kept as int16 (each component times 32767, half the bytes)
// for a first pass whose error is bounded (Prepared.Bound); a caller that
// wants the top of a ranking rescores exactly, from the float32 rows, only
// the documents whose bound reaches it. Rankings, scores and ties are the
// exact ones.

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// quantScale maps a component of a unit vector, in [-1, 1], to int16.
const quantScale = 32767

// scanBlock is how many documents Approximate scans at a time.
const scanBlock = 4096

// quant is the int16 column-major copy of a Vectors' rows.
type quant struct {
	cols   []int16 // dim×n: cols[j*n+i] = round(rows[i*dim+j]·quantScale)
	maxErr float64 // largest |cols/quantScale − rows| of any component
	maxRes float64 // largest L2 norm of a row's quantization errors
	maxLen float64 // largest L2 norm of a row
	exact  bool    // a row is not finite or not about within [-1, 1]: no approximation
}

// quantize makes the int16 columns of n rows of dim components.
func quantize(rows []float32, n, dim int) quant {
	q := quant{cols: make([]int16, n*dim)}
	for i := range n {
		var res, norm float64
		for j, x := range rows[i*dim : (i+1)*dim] {
			f := float64(x)
			if math.IsNaN(f) || math.Abs(f) > 1.001 {
				return quant{exact: true}
			}
			// A unit vector's component can round to just over 1.
			c := min(max(math.Round(f*quantScale), -quantScale), quantScale)
			q.cols[j*n+i] = int16(c)
			e := math.Abs(c/quantScale - f)
			q.maxErr = max(q.maxErr, e)
			res += e * e
			norm += f * f
		}
		q.maxRes = max(q.maxRes, math.Sqrt(res))
		q.maxLen = max(q.maxLen, math.Sqrt(norm))
	}
	return q
}

// Prepared is a query vector ready to score against one Vectors: its
// non-zero components in ascending order. It is not safe for concurrent use.
type Prepared struct {
	v     *Vectors
	idx   []int32   // non-zero components of the query, ascending
	val   []float32 // their values
	bound float64
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
	p := &Prepared{v: v, idx: make([]int32, 0, nz), val: make([]float32, 0, nz)}
	var l1, l2 float64
	for j, x := range q {
		if x == 0 {
			continue
		}
		p.idx = append(p.idx, int32(j))
		p.val = append(p.val, x)
		l1 += math.Abs(float64(x))
		l2 += float64(x) * float64(x)
	}
	p.bound = v.errorBound(len(p.idx), l1, math.Sqrt(l2))
	return p, nil
}

// errorBound bounds |approximation − exact| (both float32 sums; see
// Approximate) for a query of m non-zero components with L1 and L2 norms
// l1 and l2. With u the float32 unit roundoff:
//
//   - quantization: |Σ q·(c/s − x)| ≤ min(maxErr·l1, l2·maxRes);
//   - the scaled query components q/s are rounded: u·l1·(1+maxErr);
//   - each float32 sum of m products is off its real value by at most
//     γ(m+1)·Σ|q·x| (Higham), and Σ|q·x| ≤ l2·maxLen for the exact rows, ≤
//     l2·maxLen + l1·maxErr for the quantized ones.
//
// A tiny absolute slack covers the float64 arithmetic of the bound itself.
func (v *Vectors) errorBound(m int, l1, l2 float64) float64 {
	const u = 0x1p-24
	g := float64(m+1) * u / (1 - float64(m+1)*u)
	quantErr := min(v.maxErr*l1, l2*v.maxRes)
	return quantErr + u*l1*(1+v.maxErr) + g*(2*l2*v.maxLen+l1*v.maxErr) + 1e-12
}

// Bound is the largest difference between an approximate similarity
// (Approximate) and the exact one (Exact) for this query.
func (p *Prepared) Bound() float64 { return p.bound }

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

// ExactRows sets dst[k] to Exact(rows[k]) for every k. Each row's value is
// the same float32 additions in the same order as Exact's, so the bits are
// the same; four rows go at a time, so that their additions overlap instead
// of each waiting on the one before (a float add's latency, not memory,
// bounds a single row's sum).
func (p *Prepared) ExactRows(rows []int32, dst []float64) {
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
// Bound() of Exact, into dst (len Len()). It returns false, writing
// nothing, when the index cannot be approximated (a vector out of range) or
// the query is not finite; callers then score exactly.
func (p *Prepared) Approximate(dst []float64) bool {
	v := p.v
	if v.exact || len(dst) != v.n || math.IsNaN(p.bound) || math.IsInf(p.bound, 0) {
		return false
	}
	accp := accs.Get().(*[]float32)
	if cap(*accp) < v.n {
		*accp = make([]float32, v.n)
	}
	acc := (*accp)[:v.n]
	clear(acc)
	// A block of documents at a time, so its accumulators stay in the
	// core's first-level cache while every column passes, and four columns
	// a pass (fused multiply-adds; half the time of one column a pass).
	for lo := 0; lo < v.n; lo += scanBlock {
		hi := min(lo+scanBlock, v.n)
		col := func(k int) []int16 {
			at := int(p.idx[k]) * v.n
			return v.cols[at+lo : at+hi]
		}
		k := 0
		for ; k+4 <= len(p.idx); k += 4 {
			x := [4]float32{p.val[k] / quantScale, p.val[k+1] / quantScale, p.val[k+2] / quantScale, p.val[k+3] / quantScale}
			axpy4Int16(acc[lo:hi], &x, col(k), col(k+1), col(k+2), col(k+3))
		}
		for ; k < len(p.idx); k++ {
			axpyInt16(acc[lo:hi], p.val[k]/quantScale, col(k))
		}
	}
	for i, a := range acc {
		dst[i] = float64(a)
	}
	accs.Put(accp)
	return true
}

// accs recycles Approximate's float32 accumulators.
var accs = sync.Pool{New: func() any { return new([]float32) }}

// Candidates returns the rows whose exact similarity can be among the n
// best, given approximations within bound of it: every row whose
// approximation is not below the n-th best one by more than twice the
// bound. dst is reused.
func (p *Prepared) Candidates(approx []float64, n int, bound float64, dst []int) []int {
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
	floor := nthLargest(approx, n) - bound // all n best reach it exactly
	for i, a := range approx {
		if !(a+bound < floor) {
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
