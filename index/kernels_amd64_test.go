package index

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

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

// TestApproximateKernels: Approximate gives the same bits with the VNNI,
// the AVX2 and the portable kernel, for libraries that end in a full group
// of 32 and ones that do not.
func TestApproximateKernels(t *testing.T) {
	defer func(vnni, avx2 bool) { useVNNI, useAVX2 = vnni, avx2 }(useVNNI, useAVX2)
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{1, 31, 32, 100, 4096 + 40} {
		rows := make([][]float32, n)
		for i := range rows {
			rows[i] = make([]float32, 64)
			for j := range rows[i] {
				rows[i][j] = float32(r.NormFloat64())
			}
		}
		v := packedRows(t, rows)
		q := make([]float32, 64)
		for j := range q {
			if r.IntN(3) > 0 {
				q[j] = float32(r.NormFloat64())
			}
		}
		p, err := v.Prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		var want []float64
		for _, k := range []struct{ vnni, avx2 bool }{{false, false}, {true, true}, {false, true}} {
			if (k.vnni && !cpu.X86.HasAVX512VNNI) || (k.avx2 && !cpu.X86.HasAVX2) {
				continue
			}
			useVNNI, useAVX2 = k.vnni, k.avx2
			got := make([]float64, n)
			if !p.Approximate(got) {
				t.Fatal("not approximated")
			}
			if want == nil {
				want = got
				continue
			}
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("n=%d, kernels %+v, row %d: %v, Go %v", n, k, i, got[i], want[i])
				}
			}
		}
	}
}
