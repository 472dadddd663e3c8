//go:build !amd64

package index

// axpyInt16 adds x·float32(col[i]) to acc[i].
func axpyInt16(acc []float32, x float32, col []int16) { axpyInt16Go(acc, x, col) }

// axpy4Int16 adds x[0]·c0[i] + … + x[3]·c3[i] to acc[i].
func axpy4Int16(acc []float32, x *[4]float32, c0, c1, c2, c3 []int16) {
	axpy4Int16Go(acc, x, c0, c1, c2, c3)
}
