package index

// axpyInt16Go adds x·float32(col[i]) to acc[i]: the portable kernel, and the
// reference the assembly one is tested against.
func axpyInt16Go(acc []float32, x float32, col []int16) {
	col = col[:len(acc)]
	for i, c := range col {
		acc[i] += float32(x * float32(c))
	}
}
