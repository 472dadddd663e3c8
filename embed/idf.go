package embed

// idfTable maps a feature hash to its IDF. It replaces a Go map on the
// query path: a fitted library has hundreds of thousands of features, far
// beyond the CPU caches, so each of a query's ~1,000 lookups is a cache miss.
// Open addressing over one array of key/value pairs costs one miss for a
// feature the library has, where the map's control words and slots cost
// two, and it does less work per probe. (A feature the library lacks probes
// to the end of its run: about two cache lines at the table's 3/4 load.) Feature hashes are already mixed (SplitMix64), so the low
// bits index the table directly.
type idfTable struct {
	slots []idfSlot
	mask  uint64
	n     int
	// zero holds the IDF of hash 0, the key marking an empty slot.
	zero    float32
	hasZero bool
}

type idfSlot struct {
	key uint64
	idf float32
}

// newIDFTable sizes the table for n entries at a load factor of at most 3/4:
// probe runs stay a cache line or two, and the table is no larger than the
// Go map it replaces (407 skills: 371k features, 8 MB).
func newIDFTable(n int) *idfTable {
	size := 16
	for 3*size < 4*n {
		size <<= 1
	}
	return &idfTable{slots: make([]idfSlot, size), mask: uint64(size - 1)}
}

func (t *idfTable) set(h uint64, idf float32) {
	if h == 0 {
		t.zero, t.hasZero = idf, true
		return
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == h {
			s.idf = idf
			return
		}
		if s.key == 0 {
			s.key, s.idf = h, idf
			t.n++
			return
		}
	}
}

func (t *idfTable) get(h uint64) (float32, bool) {
	if h == 0 {
		return t.zero, t.hasZero
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == h {
			return s.idf, true
		}
		if s.key == 0 {
			return 0, false
		}
	}
}

// len is the number of features with an IDF.
func (t *idfTable) len() int {
	if t.hasZero {
		return t.n + 1
	}
	return t.n
}
