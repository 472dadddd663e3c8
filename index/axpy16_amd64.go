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

var useAVX2 = cpu.X86.HasAVX2

//go:noescape
func axpyInt16AVX2(acc []float32, x float32, col []int16)
