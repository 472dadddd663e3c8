package index

// axpy4Int8Go adds x[0]·c0[i] + … + x[3]·c3[i] to acc[i]: the portable
// kernel, and the reference the assembly one is tested against. Four
// columns a pass read and write the accumulators a quarter as often; the
// additions may round in any order, which Prepared.RowBound covers.
func axpy4Int8Go(acc []float32, x *[4]float32, c0, c1, c2, c3 []int8) {
	n := len(acc)
	c0, c1, c2, c3 = c0[:n], c1[:n], c2[:n], c3[:n]
	for i := range acc {
		acc[i] += x[0]*float32(c0[i]) + x[1]*float32(c1[i]) + x[2]*float32(c2[i]) + x[3]*float32(c3[i])
	}
}
