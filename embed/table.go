package embed

// u64Table maps feature hashes to int32s: open addressing with linear
// probing over a power-of-two array. Fitting a library adds tens of
// millions of hashes; Go's map spent most of that time in its generic
// probing, and clearing a map per text cost as much as filling it. Keys are
// mix64 outputs, so their low bits index the array directly; reset is O(1)
// (a new generation) instead of a clear.
type u64Table struct {
	keys []uint64
	vals []int32
	gens []uint32 // slot i is occupied iff gens[i] == gen
	gen  uint32
	n    int
}

const u64TableMin = 1 << 10

// reset empties the table, keeping its memory.
func (t *u64Table) reset() {
	t.n = 0
	t.gen++
	if t.gen == 0 { // wrapped: stamps from 2^32 resets ago would look current
		clear(t.gens)
		t.gen = 1
	}
}

// slot returns the slot of k: where it is, or where it would go.
func (t *u64Table) slot(k uint64) (int, bool) {
	mask := len(t.keys) - 1
	for i := int(k) & mask; ; i = (i + 1) & mask {
		if t.gens[i] != t.gen {
			return i, false
		}
		if t.keys[i] == k {
			return i, true
		}
	}
}

// ref returns a pointer to k's value, adding k with value 0 if it is not
// there; added says which. The pointer is valid until the next ref.
func (t *u64Table) ref(k uint64) (v *int32, added bool) {
	if (t.n+1)*2 > len(t.keys) {
		t.grow()
	}
	i, ok := t.slot(k)
	if !ok {
		t.keys[i], t.vals[i], t.gens[i] = k, 0, t.gen
		t.n++
	}
	return &t.vals[i], !ok
}

// grow doubles the array (at most half full after it).
func (t *u64Table) grow() {
	keys, vals, gens, gen := t.keys, t.vals, t.gens, t.gen
	size := max(u64TableMin, 2*len(keys))
	t.keys, t.vals, t.gens, t.gen = make([]uint64, size), make([]int32, size), make([]uint32, size), 1
	mask := size - 1
	for i, g := range gens {
		if g != gen {
			continue
		}
		j := int(keys[i]) & mask
		for t.gens[j] == t.gen {
			j = (j + 1) & mask
		}
		t.keys[j], t.vals[j], t.gens[j] = keys[i], vals[i], t.gen
	}
}

// each calls fn for every key and value, in no particular order.
func (t *u64Table) each(fn func(k uint64, v int32)) {
	for i, g := range t.gens {
		if g == t.gen && t.n > 0 {
			fn(t.keys[i], t.vals[i])
		}
	}
}
