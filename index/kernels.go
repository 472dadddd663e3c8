package index

// groupDoc is, for each of the 32 sums a full group of 32 documents keeps,
// the document (within the group) it belongs to: the order the SIMD
// kernels' interleaves leave them in (kernels_amd64.s), which the portable
// loop keeps too, so Approximate reads every kernel's sums the same way.
var groupDoc = [32]uint8{
	0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27,
	4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31,
}

// dot8Int16Go adds q[0]·c[0][i] + … + q[7]·c[7][i] to document i's sum in
// acc, whose length is a multiple of 32 (Approximate pads the columns), at
// groupDoc's positions. It is the portable kernel and the reference the
// SIMD ones are tested against. The sums are exact: Prepare sizes q so
// that no int32 sum of the scan can overflow.
func dot8Int16Go(acc []int32, q *[8]int16, c *[8][]int8) {
	n := len(acc)
	var w [8]int32
	var cs [8][]int8
	for t := range w {
		w[t], cs[t] = int32(q[t]), c[t][:n]
	}
	sum := func(i int) int32 {
		return w[0]*int32(cs[0][i]) + w[1]*int32(cs[1][i]) + w[2]*int32(cs[2][i]) + w[3]*int32(cs[3][i]) +
			w[4]*int32(cs[4][i]) + w[5]*int32(cs[5][i]) + w[6]*int32(cs[6][i]) + w[7]*int32(cs[7][i])
	}
	for g := 0; g < n; g += 32 {
		for m, d := range groupDoc {
			acc[g+m] += sum(g + int(d))
		}
	}
}
