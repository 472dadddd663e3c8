package ownership

// Tracker applies a Round's rules to a stream, item by item: the events of
// the client's items go out as they come, with the item's index in the
// client's numbering; those of the proxy's and held items are dropped;
// those of reasoning and thinking wait (copied) until an item decides
// their fate.
type Tracker struct {
	Round
	// Next is the client's next item index, shared by the rounds of one
	// response.
	Next *int
	// Carried is the thinking of earlier rounds still waiting (the last
	// round's Waiting), shown before this round's first item shown or
	// dropped by KeepsCarried.
	Carried []*Item
	// Emit writes one event of a client item (data as received; it.Index
	// is the item's client index).
	Emit func(it *Item, data []byte)

	items map[int]*Item
	order []int
	said  bool
}

// Item is one item of a streamed round.
type Item struct {
	Owner Owner
	Index int // the client's index, once shown
	shown bool
	held  [][]byte
}

// Start classifies the item the upstream numbers i and passes on its first
// event. exhausted is true for the first proxy call of a round the limit
// forbids answering: the caller says so in the stream.
func (t *Tracker) Start(i int, k Kind, name string, data []byte) (it *Item, exhausted bool) {
	if t.items == nil {
		t.items = map[int]*Item{}
	}
	it = &Item{}
	if k == Thinking && len(t.Carried) > 0 {
		// The round thinks before anything was shown (see KeepsCarried).
		for _, c := range t.Carried {
			c.Owner, c.held = Proxy, nil // hidden: the follow-up had it
		}
		t.Carried = nil
	}
	t.items[i] = it
	t.order = append(t.order, i)
	o, resolved, shown := t.Add(i, k, name)
	it.Owner = o
	if shown {
		t.showCarried()
	}
	for _, j := range resolved {
		t.settle(t.items[j], shown, o)
	}
	if o == Proxy && t.Final && !t.said {
		t.said, exhausted = true, true
	}
	t.Event(it, data)
	return it, exhausted
}

// Shown reports whether the client was shown an item of the round.
func (t *Tracker) Shown() bool {
	for _, it := range t.items {
		if it.shown {
			return true
		}
	}
	return false
}

// Item returns the item the upstream numbers i, nil if none started.
func (t *Tracker) Item(i int) *Item { return t.items[i] }

// Order lists the upstream's item numbers in the order the items started.
func (t *Tracker) Order() []int { return t.order }

// Event passes on, holds or drops one event of item it.
func (t *Tracker) Event(it *Item, data []byte) {
	switch it.Owner {
	case Pending:
		it.held = append(it.held, append([]byte(nil), data...))
	case Client:
		if !it.shown {
			it.shown = true
			it.Index = *t.Next
			*t.Next++
		}
		t.Emit(it, data)
	}
}

// ShowPending shows the reasoning and thinking still pending: the round
// ended without an item after it, and does not loop. What HeldBack lists
// is held instead.
func (t *Tracker) ShowPending() {
	t.HoldBack()
	t.showCarried()
	for _, i := range t.order {
		t.settle(t.items[i], true, Client)
	}
}

// HoldBack holds the reasoning Round.HeldBack lists with the held calls
// after it, at the end of a round.
func (t *Tracker) HoldBack() {
	for _, i := range t.HeldBack() {
		t.settle(t.items[i], false, Held)
	}
}

// Waiting returns the thinking still waiting at the end of a round that
// loops, for the next round's Carried.
func (t *Tracker) Waiting() []*Item {
	out := t.Carried
	for _, i := range t.Round.Waiting() {
		out = append(out, t.items[i])
	}
	return out
}

func (t *Tracker) showCarried() {
	for _, it := range t.Carried {
		t.settle(it, true, Client)
	}
	t.Carried = nil
}

// settle decides a pending item: its held events go out, or it takes the
// owner of the item that decided it.
func (t *Tracker) settle(it *Item, shown bool, o Owner) {
	if it == nil || it.Owner != Pending {
		return
	}
	held := it.held
	it.held = nil
	if !shown {
		it.Owner = o
		return
	}
	it.Owner = Client
	for _, ev := range held {
		t.Event(it, ev)
	}
}
