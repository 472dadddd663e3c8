package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Usage keeps the usage objects of the rounds of one tool loop.
//
// What the client is told is the last round's (Last): the agent CLIs read
// an answer's input tokens as the size of their context, and Claude Code
// and Codex compacted their conversations early, at about half their
// window, when a turn with a hidden round reported both rounds' input
// summed. Anthropic reports its own multi-pass answers (compaction) the
// same way: the top-level usage is the final pass, each pass listed in
// usage.iterations (Rounds; see the messages package).
//
// JSON adds the rounds up, field by field, nested details included (Chat
// prompt_tokens_details.cached_tokens, Responses input_tokens_details,
// Messages cache_read_input_tokens): the three APIs name their counts
// differently but all count in numbers, so one sum serves them all; it is
// what the request cost, for the access log. A round that lists its passes
// (usage.iterations) counts every pass (see passesCost). Non-numeric fields
// keep their first value. The zero Usage is empty.
type Usage struct {
	v map[string]any
	// first is the first object added, not yet decoded: a tool loop of
	// one round, the commonest, reads nothing of its usage.
	first []byte
	// rounds are the objects added, as they came.
	rounds []json.RawMessage
}

// Add adds one usage object; null, absent or malformed ones add nothing.
func (u *Usage) Add(raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return
	}
	u.rounds = append(u.rounds, bytes.Clone(raw))
	if u.v == nil && u.first == nil {
		u.first = u.rounds[len(u.rounds)-1]
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
	passesCost(m)
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

// Last is the last object added, as it came; nil when none was.
func (u *Usage) Last() json.RawMessage {
	if u == nil || len(u.rounds) == 0 {
		return nil
	}
	return u.rounds[len(u.rounds)-1]
}

// Rounds are the objects added, in order.
func (u *Usage) Rounds() []json.RawMessage {
	if u == nil {
		return nil
	}
	return u.rounds
}

// JSON renders the sum (keys sorted); null when empty.
func (u *Usage) JSON() json.RawMessage {
	if u.Empty() {
		return json.RawMessage("null")
	}
	b, _ := json.Marshal(u.v)
	return b
}

// passesCost makes a usage object that lists its passes (Anthropic's
// usage.iterations: server-side compaction, then the answer) count what
// they cost. Its top-level counts are the last pass's alone, while the
// compaction pass, which read the whole conversation, is billed too: each
// count the passes report is replaced by their sum, and the list, which a
// sum of several rounds would keep only the first round's of, is left out.
// Counts the passes do not report (server_tool_use) stay as they are.
func passesCost(m map[string]any) {
	passes, ok := m["iterations"].([]any)
	if !ok {
		return
	}
	delete(m, "iterations")
	var sum map[string]any
	for _, p := range passes {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		delete(pm, "type")
		if sum == nil {
			sum = pm
			continue
		}
		mergeUsage(sum, pm)
	}
	for k, v := range sum {
		m[k] = v
	}
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
