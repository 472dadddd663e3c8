package embed

import "math"

// u64Table maps feature hashes to int32s (a text's features to their
// positions): open addressing with linear probing over a power-of-two
// array. Embedding a library adds tens of millions of hashes; Go's map
// spent most of that time in its generic probing, and clearing a map per
// text cost as much as filling it. Keys are mix64 outputs, so their low
// bits index the array directly; reset is O(1) (a new generation) instead
// of a clear. A slot's key, value and generation sit together: one memory
// access per probe.
type u64Table struct {
	slots []u64Slot
	gen   uint32
	n     int
}

type u64Slot struct {
	key uint64
	val int32
	gen uint32 // occupied iff equal to the table's gen
}

const u64TableMin = 1 << 10

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

// dfTable counts documents per feature hash: Fit's document frequencies.
// A document's features come with duplicates (an n-gram of several of its
// words, a stem of several word forms); each slot keeps the stamp of the
// last document it counted, so a document is counted once without a table
// of its own to make its features distinct first. Open addressing as in
// u64Table, key, count and stamp in one 16-byte slot: the counts outgrow
// the cache, and a probe costs one memory access.
type dfTable struct {
	slots []dfSlot
	n     int
	sink  uint32 // keeps touch's reads
}

type dfSlot struct {
	key   uint64
	count int32
	stamp uint32 // the last document counted; 0: an empty slot
}

// reserve sizes an empty table for about n keys.
func (t *dfTable) reserve(n int) {
	size := u64TableMin
	for size < 2*n {
		size *= 2
	}
	if t.n == 0 && size > len(t.slots) {
		t.slots = make([]dfSlot, size)
	}
}

// ref returns k's slot, adding k with count 0 and stamp 1 if it is not
// there. The pointer is valid until the next ref.
func (t *dfTable) ref(k uint64) *dfSlot {
	if (t.n+1)*2 > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := int(k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.stamp == 0 {
			*s = dfSlot{key: k, stamp: 1}
			t.n++
			return s
		}
		if s.key == k {
			return s
		}
	}
}

// countOnce counts k for the document stamp (>= 2), once however often it
// comes.
func (t *dfTable) countOnce(k uint64, stamp uint32) {
	if s := t.ref(k); s.stamp != stamp {
		s.stamp = stamp
		s.count++
	}
}

// firstStamp is the first document stamp countOnce takes (ref's new slots
// have stamp 1).
const firstStamp = 2

// lastStamp is the largest stamp Fit gives before it restamps the table; a
// variable for the test that makes Fit restamp.
var lastStamp uint32 = math.MaxUint32

// restamp lets stamps start again at firstStamp once they would wrap.
func (t *dfTable) restamp() {
	for i := range t.slots {
		if t.slots[i].stamp != 0 {
			t.slots[i].stamp = 1
		}
	}
}

// grow doubles the array (at most half full after it).
func (t *dfTable) grow() {
	old := t.slots
	t.slots = make([]dfSlot, max(u64TableMin, 2*len(old)))
	mask := len(t.slots) - 1
	for _, s := range old {
		if s.stamp == 0 {
			continue
		}
		j := int(s.key) & mask
		for t.slots[j].stamp != 0 {
			j = (j + 1) & mask
		}
		t.slots[j] = s
	}
}

// dfBatch is how many counts Fit reads ahead (touch).
const dfBatch = 64

// touch reads the first slot of each of keys, so that the memory accesses
// the counts that follow make hit the cache; the reads are independent,
// and the core has them in flight together.
func (t *dfTable) touch(keys []uint64) {
	if len(t.slots) == 0 {
		return
	}
	mask := len(t.slots) - 1
	var x uint32
	for _, k := range keys {
		x += t.slots[int(k)&mask].stamp
	}
	t.sink += x
}

// each calls fn for every key and count, in no particular order.
func (t *dfTable) each(fn func(k uint64, count int32)) {
	for _, s := range t.slots {
		if s.stamp != 0 {
			fn(s.key, s.count)
		}
	}
}
