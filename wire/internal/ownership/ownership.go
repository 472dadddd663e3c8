// Package ownership decides, item by item, whose each item of a model's
// answer is when the proxy answers some tool calls itself: the proxy's, the
// client's, held back, or (Responses reasoning) the same as the item after
// it. Responses output items and Messages content blocks follow the same
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
)

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
//     call or a held call (the client, or the follow-up, would otherwise
//     send reasoning without its item, which the API rejects), shown
//     otherwise;
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
}

// Add classifies item i; resolved lists the pending reasoning items it
// decides, shown their fate: shown, or else the same owner as item i (the
// proxy's, or held with a held call).
func (r *Round) Add(i int, k Kind, name string) (o Owner, resolved []int, shown bool) {
	switch {
	case k == Reasoning:
		r.pending = append(r.pending, i)
		return Pending, nil, false
	case k == Call && r.Mine != nil && r.Mine(name):
		r.ProxyCalls++
		if r.clientCalls > 0 && !r.Final {
			r.late = true
		}
		resolved, r.pending = r.pending, nil
		return Proxy, resolved, false
	case k == Call && !r.Final && !r.late && !r.NoHold && (r.ProxyCalls > 0 || (r.Whole && r.ProxyAhead)):
		resolved, r.pending = r.pending, nil
		return Held, resolved, false
	}
	if k == Call {
		r.clientCalls++
		if r.ProxyCalls > 0 && !r.Final {
			r.late = true // NoHold: the round is the client's
		}
	}
	resolved, r.pending = r.pending, nil
	return Client, resolved, true
}

// Loops reports whether the proxy answers the round's calls and asks
// again. Reasoning still pending at the end goes with the round: hidden
// when it loops, shown otherwise.
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
