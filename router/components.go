package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Component names, in the order they are listed and marshalled.
var componentNames = [...]string{"bm25", "bm25_norm", "confidence", "cosine", "keyword"}

const (
	compBM25 = iota
	compBM25Norm
	compConfidence
	compCosine
	compKeyword
	numComponents
)

// Components are one skill's per-component scores. It is a fixed array
// rather than a map because every request ranks the whole library: one map
// per skill was a third of the cost of routing a request. It marshals as a
// JSON object of the components present, keys sorted.
type Components struct {
	val [numComponents]float64
	set uint8
}

func (c *Components) put(k int, v float64) {
	c.val[k] = v
	c.set |= 1 << k
}

// Get returns the named component ("bm25", "bm25_norm", "confidence",
// "cosine", "keyword") and whether the strategy computed it.
func (c Components) Get(name string) (float64, bool) {
	for k, n := range componentNames {
		if n == name {
			return c.val[k], c.set&(1<<k) != 0
		}
	}
	return 0, false
}

// Names lists the components present, sorted.
func (c Components) Names() []string {
	var out []string
	for k, n := range componentNames {
		if c.set&(1<<k) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// IsZero reports whether no component is present (for omitzero).
func (c Components) IsZero() bool { return c.set == 0 }

// MarshalJSON writes {"name":score,...} for the components present.
func (c Components) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for k, n := range componentNames {
		if c.set&(1<<k) == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, n)
		b = append(b, ':')
		v := c.val[k]
		if a := math.Abs(v); a == 0 || a >= 1e-6 && a < 1e21 {
			b = strconv.AppendFloat(b, v, 'f', -1, 64)
			continue
		}
		// Rare forms (exponents, NaN) as encoding/json writes or rejects them.
		f, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("score component %s: %w", n, err)
		}
		b = append(b, f...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes; unknown names are an error.
func (c *Components) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*c = Components{}
		return nil
	}
	var m map[string]float64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*c = Components{}
next:
	for name, v := range m {
		for k, n := range componentNames {
			if n == name {
				c.put(k, v)
				continue next
			}
		}
		return fmt.Errorf("unknown score component %q", name)
	}
	return nil
}
