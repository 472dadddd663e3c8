package embed

// u64Table maps feature hashes to int32s: open addressing with linear
// probing over a power-of-two array. Fitting a library adds tens of
// millions of hashes; Go's map spent most of that time in its generic
// probing, and clearing a map per text cost as much as filling it. Keys are
// mix64 outputs, so their low bits index the array directly; reset is O(1)
// (a new generation) instead of a clear. A slot's key, value and generation
// sit together: a fit's counts outgrow the cache, and a probe then costs
// one memory access, not three.
type u64Table struct {
	slots []u64Slot
	gen   uint32
	n     int
	sink  uint32 // keeps touch's reads
}

type u64Slot struct {
	key uint64
	val int32
	gen uint32 // occupied iff equal to the table's gen
}

const u64TableMin = 1 << 10

// reserve sizes an empty table for about n keys.
func (t *u64Table) reserve(n int) {
	size := u64TableMin
	for size < 2*n {
		size *= 2
	}
	if t.n == 0 && size > len(t.slots) {
		t.slots, t.gen = make([]u64Slot, size), 1
	}
}

// reset empties the table, keeping its memory.
func (t *u64Table) reset() {
	t.n = 0
	t.gen++
	if t.gen == 0 { // wrapped: stamps from 2^32 resets ago would look current
		clear(t.slots)
		t.gen = 1
	}
}

// slot returns the slot of k: where it is, or where it would go.
func (t *u64Table) slot(k uint64) (int, bool) {
	mask := len(t.slots) - 1
	for i := int(k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			return i, false
		}
		if s.key == k {
			return i, true
		}
	}
}

// ref returns a pointer to k's value, adding k with value 0 if it is not
// there; added says which. The pointer is valid until the next ref.
func (t *u64Table) ref(k uint64) (v *int32, added bool) {
	if (t.n+1)*2 > len(t.slots) {
		t.grow()
	}
	i, ok := t.slot(k)
	s := &t.slots[i]
	if !ok {
		*s = u64Slot{key: k, gen: t.gen}
		t.n++
	}
	return &s.val, !ok
}

// grow doubles the array (at most half full after it).
func (t *u64Table) grow() {
	old, gen := t.slots, t.gen
	size := max(u64TableMin, 2*len(old))
	t.slots, t.gen = make([]u64Slot, size), 1
	mask := size - 1
	for _, s := range old {
		if s.gen != gen {
			continue
		}
		j := int(s.key) & mask
		for t.slots[j].gen == t.gen {
			j = (j + 1) & mask
		}
		t.slots[j] = u64Slot{key: s.key, val: s.val, gen: t.gen}
	}
}

// dfBatch is how many counts Fit reads ahead (touch).
const dfBatch = 64

// touch reads the first slot of each of keys, so that the memory accesses
// the refs that follow make hit the cache; the reads are independent, and
// the core has them in flight together.
func (t *u64Table) touch(keys []uint64) {
	if len(t.slots) == 0 {
		return
	}
	mask := len(t.slots) - 1
	var x uint32
	for _, k := range keys {
		x += t.slots[int(k)&mask].gen
	}
	t.sink += x
}

// each calls fn for every key and value, in no particular order.
func (t *u64Table) each(fn func(k uint64, v int32)) {
	if t.n == 0 {
		return
	}
	for _, s := range t.slots {
		if s.gen == t.gen {
			fn(s.key, s.val)
		}
	}
}
