package index

import "golang.org/x/sys/cpu"

// axpy4Int8 adds x[0]·c0[i] + … + x[3]·c3[i] to acc[i] with fused
// multiply-adds, each accumulator loaded and stored once for the four
// columns: sixty-four at a time in 512-bit registers where the CPU has
// AVX-512, thirty-two at a time with AVX2 otherwise and for the rest.
func axpy4Int8(acc []float32, x *[4]float32, c0, c1, c2, c3 []int8) {
	n := len(acc)
	if !useFMA || n == 0 {
		axpy4Int8Go(acc, x, c0, c1, c2, c3)
		return
	}
	_, _, _, _ = c0[n-1], c1[n-1], c2[n-1], c3[n-1] // the kernel reads n of each
	if wide := n &^ 63; useAVX512 && wide > 0 {
		axpy4Int8AVX512(acc[:wide], x, &c0[0], &c1[0], &c2[0], &c3[0])
		if wide == n {
			return
		}
		acc, c0, c1, c2, c3 = acc[wide:], c0[wide:], c1[wide:], c2[wide:], c3[wide:]
	}
	axpy4Int8FMA(acc, x, &c0[0], &c1[0], &c2[0], &c3[0])
}

// exactRows8 sets out[r] to the exact similarity (Prepared.Exact) of the
// row starting at rows[off[r]], for eight rows at once, and reports whether
// it could (AVX2).
func exactRows8(rows []float32, off *[8]int32, idx []int32, val []float32, out *[8]float32) bool {
	if !useAVX2 || len(idx) == 0 {
		return false
	}
	exactRows8AVX2(&rows[0], off, &idx[0], &val[0], len(idx), out)
	return true
}

// addBody is addBodyGo with the same bits: eight postings at a time where
// the CPU has AVX-512 (the same multiplications, addition and division in
// each lane; the scores gathered, added to and scattered back), the rest
// in Go. ScoreWeighted checks that scores covers every document; a term's
// postings name each document once, so no two lanes write one score.
// docs/performance.md ("Seventh pass") has what it saves and where.
func addBody(scores []float64, body []bodyPosting, c *bodyTerm) {
	if n := len(body) &^ 7; useAVX512 && n > 0 {
		addBodyAVX512(&scores[0], &body[0], n, c)
		body = body[n:]
	}
	addBodyGo(scores, body, c)
}

var (
	useAVX2 = cpu.X86.HasAVX2
	useFMA  = useAVX2 && cpu.X86.HasFMA
	// useAVX512 is a variable so that tests can compare both kernels.
	useAVX512 = useFMA && cpu.X86.HasAVX512F
)

//go:noescape
func axpy4Int8AVX512(acc []float32, x *[4]float32, c0, c1, c2, c3 *int8)

//go:noescape
func exactRows8AVX2(rows *float32, off *[8]int32, idx *int32, val *float32, m int, out *[8]float32)

//go:noescape
func axpy4Int8FMA(acc []float32, x *[4]float32, c0, c1, c2, c3 *int8)

//go:noescape
func addBodyAVX512(scores *float64, body *bodyPosting, n int, c *bodyTerm)
