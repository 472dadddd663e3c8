package index

import "testing"

// TestAxpy4Int8AVX2: the AVX2 kernel alone, as on a machine without
// AVX-512 (TestAxpy4Int8 takes the 512-bit one where there is one).
func TestAxpy4Int8AVX2(t *testing.T) {
	if !useFMA {
		t.Skip("no AVX2 and FMA")
	}
	defer func(was bool) { useAVX512 = was }(useAVX512)
	useAVX512 = false
	checkAxpy4Int8(t, axpy4Int8)
}
