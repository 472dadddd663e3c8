//go:build !amd64

package index

// axpy4Int8 adds x[0]·c0[i] + … + x[3]·c3[i] to acc[i].
func axpy4Int8(acc []float32, x *[4]float32, c0, c1, c2, c3 []int8) {
	axpy4Int8Go(acc, x, c0, c1, c2, c3)
}

// exactRows8 has no portable form: ExactRows scores four rows at a time.
func exactRows8([]float32, *[8]int32, []int32, []float32, *[8]float32) bool { return false }

// addBody adds each body posting's term score to its document's.
func addBody(scores []float64, body []bodyPosting, c *bodyTerm) { addBodyGo(scores, body, c) }

// useAVX512: addBody is the Go loop here.
const useAVX512 = false
