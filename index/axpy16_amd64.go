package index

import "golang.org/x/sys/cpu"

// axpyInt16 adds x·float32(col[i]) to acc[i], eight at a time with AVX2
// (multiply, then add: the same bits as axpyInt16Go).
func axpyInt16(acc []float32, x float32, col []int16) {
	if !useAVX2 {
		axpyInt16Go(acc, x, col)
		return
	}
	axpyInt16AVX2(acc, x, col[:len(acc)])
}

// axpy4Int16 adds x[0]·c0[i] + … + x[3]·c3[i] to acc[i] with AVX2 fused
// multiply-adds, sixteen accumulators at a time, each loaded and stored
// once for the four columns.
func axpy4Int16(acc []float32, x *[4]float32, c0, c1, c2, c3 []int16) {
	n := len(acc)
	if !useFMA || n == 0 {
		axpy4Int16Go(acc, x, c0, c1, c2, c3)
		return
	}
	_, _, _, _ = c0[n-1], c1[n-1], c2[n-1], c3[n-1] // the kernel reads n of each
	axpy4Int16FMA(acc, x, &c0[0], &c1[0], &c2[0], &c3[0])
}

var (
	useAVX2 = cpu.X86.HasAVX2
	useFMA  = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

//go:noescape
func axpyInt16AVX2(acc []float32, x float32, col []int16)

//go:noescape
func axpy4Int16FMA(acc []float32, x *[4]float32, c0, c1, c2, c3 *int16)
