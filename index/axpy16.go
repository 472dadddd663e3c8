package index

// axpyInt16Go adds x·float32(col[i]) to acc[i]: the portable kernel, and the
// reference the assembly one is tested against.
func axpyInt16Go(acc []float32, x float32, col []int16) {
	col = col[:len(acc)]
	for i, c := range col {
		acc[i] += float32(x * float32(c))
	}
}

// axpy4Int16Go adds x[0]·c0[i] + … + x[3]·c3[i] to acc[i]. Four columns a
// pass read and write the accumulators a quarter as often; the result may
// round differently from four axpyInt16 calls, which approximations allow
// (Prepared.Bound covers any order of the additions).
func axpy4Int16Go(acc []float32, x *[4]float32, c0, c1, c2, c3 []int16) {
	n := len(acc)
	c0, c1, c2, c3 = c0[:n], c1[:n], c2[:n], c3[:n]
	for i := range acc {
		acc[i] += x[0]*float32(c0[i]) + x[1]*float32(c1[i]) + x[2]*float32(c2[i]) + x[3]*float32(c3[i])
	}
}
