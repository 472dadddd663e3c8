// Package ownership decides, item by item, whose each item of a model's
// answer is when the proxy answers some tool calls itself: the proxy's, the
// client's, held back, (Responses reasoning) the same as the item after
// it, or (Messages thinking) shown with the next item the client is shown.
// Responses output items and Messages content blocks follow the same
// rules, JSON and streamed.
package ownership

// Owner says who an item of one answer belongs to.
type Owner int

const (
	Client  Owner = iota // shown to the client
	Proxy                // a call of the proxy's tools: answered server-side, hidden
	Held                 // a client call the round's loop drops
	Pending              // reasoning: its fate is its next item's
)

// Kind is what the rules need to know of an item.
type Kind int

const (
	Other     Kind = iota // text, messages, built-in tool calls, ...
	Call                  // a function call (tool_use): Name says whose
	Reasoning             // reasoning (Responses), which must be followed by its item
	Thinking              // thinking and redacted_thinking (Messages): see Round
)

// KeepsCarried reports whether thinking still waiting from earlier rounds
// is kept by a round whose items have kinds ks, shown(i) saying whether the
// client is shown item i (thinking aside). The carried thinking goes out
// just before the first item shown; so does the round's own thinking when
// it comes before that item, and the two would form one run of thinking
// blocks from two responses, which the API refuses in the latest assistant
// message ("cannot be modified"). So thinking of the round's own before
// its first shown item drops the carried thinking; otherwise it is kept,
// so that the client's message still opens with thinking.
func KeepsCarried(ks []Kind, shown func(i int) bool) bool {
	for i, k := range ks {
		switch {
		case k == Thinking:
			return false
		case shown(i):
			return true
		}
	}
	return true
}

// Round classifies the items of one answer, in order:
//
//   - a call of a proxy tool is the proxy's;
//   - a client call in a round with a proxy call is held back and dropped
//     when the round loops (the model calls it again in its next answer,
//     after the proxy's results); in a stream, a client call already
//     relayed before the first proxy call makes the round the client's
//     ("late": the proxy's calls in it are dropped instead);
//   - with NoHold, client calls are never held: a round with one is the
//     client's, whatever the order, and the proxy's calls in it are dropped;
//   - reasoning goes with the item that follows it: hidden before a proxy
//     call (the client would otherwise send reasoning without its item,
//     which the API rejects), shown otherwise. A held call is passed over:
//     the reasoning goes with the next item that is not held, since the
//     API refuses the proxy's call sent after it without its reasoning;
//     with only held calls after it, it is held with them (see HeldBack);
//   - thinking (Messages) is never hidden with a call: an assistant turn
//     that ends in the client's tool_use must open with thinking, and the
//     client's call may come a round after the proxy's, when the model (not
//     thinking between tool calls) has no other thinking for that turn. It
//     waits for the next item the client is shown, in its round or a later
//     one (see KeepsCarried), and goes out just before it; a round that
//     ends without looping shows what still waits;
//   - everything else is the client's.
type Round struct {
	Mine func(name string) bool
	// Final: the round limit forbids another round.
	Final bool
	// Whole: the whole answer is known before anything is shown (JSON
	// answers), and ProxyAhead says whether it holds a proxy call, so a
	// client call before it is held rather than shown.
	Whole, ProxyAhead bool
	// NoHold: a client call cannot wait for another round. A Responses
	// conversation stores every item of every round, so a held call would
	// stay there unanswered.
	NoHold bool

	ProxyCalls  int
	clientCalls int  // client calls shown
	late        bool // proxy and client calls in a round that cannot hold the client's: the proxy's are dropped
	pending     []int
	passed      bool  // a held call came after the pending reasoning
	thinking    []int // thinking waiting for the next item shown
}

// Add classifies item i; resolved lists the pending items it decides,
// shown their fate: shown, or else the same owner as item i (the proxy's,
// or held with a held call). Thinking is only ever resolved shown.
func (r *Round) Add(i int, k Kind, name string) (o Owner, resolved []int, shown bool) {
	switch {
	case k == Thinking:
		r.thinking = append(r.thinking, i)
		return Pending, nil, false
	case k == Reasoning:
		r.pending = append(r.pending, i)
		return Pending, nil, false
	case k == Call && r.Mine != nil && r.Mine(name):
		r.ProxyCalls++
		if r.clientCalls > 0 && !r.Final {
			r.late = true
		}
		resolved, r.pending, r.passed = r.pending, nil, false
		return Proxy, resolved, false
	case k == Call && !r.Final && !r.late && !r.NoHold && (r.ProxyCalls > 0 || (r.Whole && r.ProxyAhead)):
		r.passed = len(r.pending) > 0
		return Held, nil, false
	}
	if k == Call {
		r.clientCalls++
		if r.ProxyCalls > 0 && !r.Final {
			r.late = true // NoHold: the round is the client's
		}
	}
	resolved = append(r.pending, r.thinking...)
	r.pending, r.thinking, r.passed = nil, nil, false
	return Client, resolved, true
}

// HeldBack lists the reasoning still pending with only held calls after
// it: held with them (never sent, never shown) whether or not the round
// loops, where other reasoning still pending goes with the round.
func (r *Round) HeldBack() []int {
	if r.passed {
		return r.pending
	}
	return nil
}

// Waiting lists the round's thinking items still waiting for an item the
// client is shown: shown when the round does not loop, else carried to
// the next round.
func (r *Round) Waiting() []int { return r.thinking }

// Loops reports whether the proxy answers the round's calls and asks
// again. Reasoning still pending at the end (but HeldBack) goes with the
// round: hidden when it loops, shown otherwise.
func (r *Round) Loops() bool {
	return r.ProxyCalls > 0 && !r.late && !r.Final
}

// Dropped counts the proxy's calls left unanswered when the round does not loop.
func (r *Round) Dropped() int {
	if r.Loops() {
		return 0
	}
	return r.ProxyCalls
}

// ClientCalls counts the client calls shown.
func (r *Round) ClientCalls() int { return r.clientCalls }
