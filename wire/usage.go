package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Usage adds up the usage objects of the rounds of one tool loop, field by
// field, nested details included (Chat prompt_tokens_details.cached_tokens,
// Responses input_tokens_details, Messages cache_read_input_tokens): the
// three APIs name their counts differently but all count in numbers, so one
// sum serves them all. Non-numeric fields keep their first value. The zero
// Usage is empty.
type Usage struct {
	v map[string]any
	// first is the first object added, not yet decoded: a tool loop of
	// one round, the commonest, reads nothing of its usage.
	first []byte
}

// Add adds one usage object; null, absent or malformed ones add nothing.
func (u *Usage) Add(raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return
	}
	if u.v == nil && u.first == nil {
		u.first = bytes.Clone(raw)
		return
	}
	u.decodeFirst()
	u.add(raw)
}

// decodeFirst adds the object Add kept undecoded.
func (u *Usage) decodeFirst() {
	if first := u.first; first != nil {
		u.first = nil
		u.add(first)
	}
}

func (u *Usage) add(raw []byte) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return
	}
	if u.v == nil {
		u.v = m
		return
	}
	mergeUsage(u.v, m)
}

// Empty reports whether nothing was added.
func (u *Usage) Empty() bool {
	if u == nil {
		return true
	}
	u.decodeFirst()
	return u.v == nil
}

// JSON renders the sum (keys sorted); null when empty.
func (u *Usage) JSON() json.RawMessage {
	if u.Empty() {
		return json.RawMessage("null")
	}
	b, _ := json.Marshal(u.v)
	return b
}

func mergeUsage(dst, src map[string]any) {
	for k, sv := range src {
		dv, ok := dst[k]
		if !ok || dv == nil {
			dst[k] = sv
			continue
		}
		switch s := sv.(type) {
		case json.Number:
			if d, ok := dv.(json.Number); ok {
				dst[k] = addNumbers(d, s)
			}
		case map[string]any:
			if d, ok := dv.(map[string]any); ok {
				mergeUsage(d, s)
			}
		}
	}
}

func addNumbers(a, b json.Number) json.Number {
	if x, err := a.Int64(); err == nil {
		if y, err := b.Int64(); err == nil {
			return json.Number(strconv.FormatInt(x+y, 10))
		}
	}
	x, _ := a.Float64()
	y, _ := b.Float64()
	return json.Number(strconv.FormatFloat(x+y, 'g', -1, 64))
}
