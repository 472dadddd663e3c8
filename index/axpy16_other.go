//go:build !amd64

package index

// axpyInt16 adds x·float32(col[i]) to acc[i].
func axpyInt16(acc []float32, x float32, col []int16) { axpyInt16Go(acc, x, col) }
