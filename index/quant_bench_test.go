package index

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// scanBench is a library of n random unit rows of 1,024 components and a
// query touching ~260 of them (300 draws), as the builtin embedder's do.
func scanBench(b *testing.B, n int) (*Prepared, []int32) {
	r := rand.New(rand.NewPCG(1, 2))
	const dim = 1024
	v := &Vectors{n: n, dim: dim, rows: make([]float32, n*dim)}
	for i := range n {
		row := v.rows[i*dim : (i+1)*dim]
		for j := range row {
			row[j] = float32(r.NormFloat64())
		}
		unit(row)
	}
	v.quant = quantize(v.rows, n, dim)
	q := make([]float32, dim)
	for range 300 {
		q[r.IntN(dim)] = float32(r.NormFloat64())
	}
	p, err := v.Prepare(unit(q))
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]int32, 160)
	for k := range rows {
		rows[k] = int32(r.IntN(n))
	}
	return p, rows
}

// BenchmarkExactRows rescores 160 rows (between the median and the p90 of
// what a top 46 leaves to rescore at 10,000 skills): eight at a time in
// SIMD lanes against four in plain Go.
func BenchmarkExactRows(b *testing.B) {
	p, rows := scanBench(b, 10000)
	dst := make([]float64, len(rows))
	b.Run("lanes", func(b *testing.B) {
		for b.Loop() {
			p.ExactRows(rows, dst)
		}
	})
	b.Run("go4", func(b *testing.B) {
		for b.Loop() {
			p.exactRows4(rows, dst)
		}
	})
	// cold: a different 160 rows each time, out of 40 MB, as under load
	// the rows to rescore are not in the core's caches.
	r := rand.New(rand.NewPCG(7, 8))
	sets := make([][]int32, 256)
	for i := range sets {
		sets[i] = make([]int32, len(rows))
		for k := range sets[i] {
			sets[i][k] = int32(r.IntN(10000))
		}
	}
	b.Run("cold", func(b *testing.B) {
		i := 0
		for b.Loop() {
			p.ExactRows(sets[i%len(sets)], dst)
			i++
		}
	})
}

// BenchmarkApproximate is the first pass over every row, one query after
// another, so its columns stay in the caches: it counts the kernel's
// instructions. Under load at 10,000 rows the columns come from memory and
// take several times as long (docs/performance.md, thirteenth pass).
func BenchmarkApproximate(b *testing.B) {
	for _, n := range []int{407, 2000, 10000} {
		p, _ := scanBench(b, n)
		dst := make([]float64, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				p.Approximate(dst)
			}
		})
	}
}

// BenchmarkAddBody scores the body postings of 56 terms over 10,000
// documents (~88,000 postings; a 50-word query has ~70,000 at 10,000
// skills) with the kernel, where there is AVX-512, and in Go. On AMD's Zen
// 4 a gather and a scatter cost more than the division, so the kernel
// adds its terms to the scores with scalar stores.
func BenchmarkAddBody(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, terms = 10000, 56
	lists := make([][]bodyPosting, terms)
	for t := range lists {
		density := 0.02 + 0.25*r.Float64()
		for d := range n {
			if r.Float64() < density {
				lists[t] = append(lists[t], bodyPosting{doc: int32(d), tf: float32(r.ExpFloat64())})
			}
		}
	}
	scores := make([]float64, n)
	for _, k := range []struct {
		name string
		add  func([]float64, []bodyPosting, *bodyTerm)
	}{{"kernel", addBody}, {"go", addBodyGo}} {
		b.Run(k.name, func(b *testing.B) {
			if k.name == "kernel" && !useAVX512 {
				b.Skip("no AVX-512: addBody is the Go loop")
			}
			for b.Loop() {
				clear(scores)
				for _, l := range lists {
					k.add(scores, l, &bodyTerm{wb: 0.5, qw: 2.5, k1: 1.2})
				}
			}
		})
	}
}

// BenchmarkAddFull scores the full postings (name or description) of 56
// terms over 10,000 documents (~16,000 postings), with the kernel where
// there is AVX-512, and in Go.
func BenchmarkAddFull(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const n, terms = 10000, 56
	lists := make([][]posting, terms)
	for t := range lists {
		density := 0.005 + 0.05*r.Float64()
		for d := range n {
			if r.Float64() < density {
				lists[t] = append(lists[t], posting{doc: int32(d), tf: [NumFields]float32{float32(r.IntN(2)), float32(r.ExpFloat64()), float32(r.ExpFloat64())}})
			}
		}
	}
	scores := make([]float64, n)
	for _, k := range []struct {
		name string
		add  func([]float64, []posting, *fullTerm)
	}{{"kernel", addFull}, {"go", addFullGo}} {
		b.Run(k.name, func(b *testing.B) {
			if k.name == "kernel" && !useAVX512 {
				b.Skip("no AVX-512: addFull is the Go loop")
			}
			for b.Loop() {
				clear(scores)
				for _, l := range lists {
					k.add(scores, l, &fullTerm{w0: 3, w1: 2, w2: 0.5, qw: 2.5, k1: 1.2})
				}
			}
		})
	}
}

// BenchmarkQuantize quantizes 10,000 random unit rows of 1,024 components,
// what every start at 10,000 skills does once its vectors are there.
func BenchmarkQuantize(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, dim = 10000, 1024
	rows := make([]float32, n*dim)
	for i := range n {
		row := rows[i*dim : (i+1)*dim]
		for j := range row {
			row[j] = float32(r.NormFloat64())
		}
		unit(row)
	}
	b.SetBytes(int64(len(rows) * 4))
	for b.Loop() {
		quantize(rows, n, dim)
	}
}
