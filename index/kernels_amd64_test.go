package index

import "testing"

// TestDot8Int16AVX2: the AVX2 kernel alone, as on a machine without
// AVX-512 VNNI (TestDot8Int16 takes the VNNI one where there is one).
func TestDot8Int16AVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	defer func(was bool) { useVNNI = was }(useVNNI)
	useVNNI = false
	checkDot8Int16(t, dot8Int16)
}
