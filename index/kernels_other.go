//go:build !amd64

package index

// dot8Int16 adds q[0]·c[0][i] + … + q[7]·c[7][i] to document i's sum.
func dot8Int16(acc []int32, q *[8]int16, c *[8][]int8) { dot8Int16Go(acc, q, c) }

// exactRows8 has no portable form: ExactRows scores four rows at a time.
func exactRows8([]float32, *[8]int32, []int32, []float32, *[8]float32) bool { return false }

// addBody adds each body posting's term score to its document's.
func addBody(scores []float64, body []bodyPosting, c *bodyTerm) { addBodyGo(scores, body, c) }

// addFull adds each full posting's term score to its document's.
func addFull(scores []float64, full []posting, c *fullTerm) { addFullGo(scores, full, c) }

// useAVX512: addBody is the Go loop here.
const useAVX512 = false
