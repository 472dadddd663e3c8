package index

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

// dot8Int16 is dot8Int16Go with a SIMD kernel: AVX-512 VNNI where the CPU
// has it, AVX2 otherwise. The sums are exact integers, so every kernel
// gives the same ones.
func dot8Int16(acc []int32, q *[8]int16, c *[8][]int8) {
	n := len(acc)
	if n%32 != 0 {
		panic(fmt.Sprintf("index: %d sums, not whole groups of 32", n)) // the kernels would write past them
	}
	if n == 0 || !(useVNNI || useAVX2) {
		dot8Int16Go(acc, q, c)
		return
	}
	var pairs [4]int32
	var cols [8]*int8
	for t := range 4 {
		pairs[t] = int32(uint32(uint16(q[2*t])) | uint32(uint16(q[2*t+1]))<<16)
	}
	for t := range cols {
		_ = c[t][n-1] // the kernel reads n of each
		cols[t] = &c[t][0]
	}
	if useVNNI {
		dot8Int16VNNI(&acc[0], n, &pairs, &cols)
	} else {
		dot8Int16AVX2(&acc[0], n, &pairs, &cols)
	}
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
// each lane; each term then added to its score, −0 where Go adds nothing,
// which leaves any score as it is), the rest in Go. ScoreWeighted checks
// that scores covers every document. docs/performance.md ("Seventh pass",
// "Thirteenth pass") has what it saves and where.
func addBody(scores []float64, body []bodyPosting, c *bodyTerm) {
	if n := len(body) &^ 7; useAVX512 && n > 0 {
		addBodyAVX512(&scores[0], &body[0], n, c)
		body = body[n:]
	}
	addBodyGo(scores, body, c)
}

// addFull is addFullGo with the same bits: eight postings at a time where
// the CPU has AVX-512, as addBody does, the rest in Go.
func addFull(scores []float64, full []posting, c *fullTerm) {
	if n := len(full) &^ 7; useAVX512 && n > 0 {
		addFullAVX512(&scores[0], &full[0], n, c)
		full = full[n:]
	}
	addFullGo(scores, full, c)
}

// fullLanes picks, from the 32 words of eight full postings ({doc, tf0,
// tf1, tf2} each), the eight tf0s, tf1s and tf2s, for VPERMT2D.
var fullLanes = [3][16]int32{
	{1, 5, 9, 13, 17, 21, 25, 29},
	{2, 6, 10, 14, 18, 22, 26, 30},
	{3, 7, 11, 15, 19, 23, 27, 31},
}

// These are variables so that tests can compare the kernels.
var (
	useAVX2   = cpu.X86.HasAVX2
	useAVX512 = useAVX2 && cpu.X86.HasAVX512F
	useVNNI   = useAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI
)

//go:noescape
func dot8Int16VNNI(acc *int32, n int, q *[4]int32, c *[8]*int8)

//go:noescape
func dot8Int16AVX2(acc *int32, n int, q *[4]int32, c *[8]*int8)

//go:noescape
func exactRows8AVX2(rows *float32, off *[8]int32, idx *int32, val *float32, m int, out *[8]float32)

//go:noescape
func addFullAVX512(scores *float64, p *posting, n int, c *fullTerm)

//go:noescape
func addBodyAVX512(scores *float64, p *bodyPosting, n int, c *bodyTerm)
