package ownership

import (
	"slices"
	"testing"
)

// item is one item of an answer in a test: kind and name.
type item struct {
	k    Kind
	name string
}

func TestRound(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	R, C, T, L := item{Reasoning, ""}, item{Call, "bash"}, item{Other, ""}, item{Call, "load_skill"}
	tests := []struct {
		name                 string
		items                []item
		final, whole, noHold bool
		want                 []Owner // after resolving pending reasoning
		loops                bool
		dropped              int
	}{
		{"no calls", []item{R, T}, false, false, false, []Owner{Client, Client}, false, 0},
		{"proxy call loops, reasoning goes with it", []item{R, L}, false, false, false, []Owner{Proxy, Proxy}, true, 0},
		{"client call after proxy call is held", []item{T, L, C}, false, false, false, []Owner{Client, Proxy, Held}, true, 0},
		{"client call first in a stream: late, proxy's dropped", []item{C, L}, false, false, false, []Owner{Client, Proxy}, false, 1},
		{"client call first in a whole answer: held", []item{C, L}, false, true, false, []Owner{Held, Proxy}, true, 0},
		{"round limit: proxy's dropped, client's shown", []item{L, C}, true, false, false, []Owner{Proxy, Client}, false, 1},
		{"reasoning before a client call is shown", []item{R, C, R, L}, false, false, false, []Owner{Client, Client, Proxy, Proxy}, false, 1},
		{"reasoning with only held calls after it is held with them", []item{R, L, R, C}, false, false, false, []Owner{Proxy, Proxy, Held, Held}, true, 0},
		{"whole: reasoning passes a held call to the proxy's", []item{R, C, L}, false, true, false, []Owner{Proxy, Held, Proxy}, true, 0},
		{"stream: reasoning passes a held call to the proxy's", []item{L, R, C, C, L}, false, false, false, []Owner{Proxy, Proxy, Held, Held, Proxy}, true, 0},
		{"reasoning passes a held call to the next item shown", []item{L, R, C, T}, false, false, false, []Owner{Proxy, Client, Held, Client}, true, 0},
		{"no hold: client call after proxy call makes the round the client's", []item{T, L, R, C}, false, false, true, []Owner{Client, Proxy, Client, Client}, false, 1},
		{"no hold, whole: client call first", []item{C, L}, false, true, true, []Owner{Client, Proxy}, false, 1},
		{"no hold, whole: proxy call first", []item{R, L, C}, false, true, true, []Owner{Proxy, Proxy, Client}, false, 1},
		{"no hold: proxy calls alone still loop", []item{R, L, T}, false, true, true, []Owner{Proxy, Proxy, Client}, true, 0},
	}
	for _, tt := range tests {
		r := Round{Mine: mine, Final: tt.final, Whole: tt.whole, NoHold: tt.noHold}
		for _, it := range tt.items {
			r.ProxyAhead = r.ProxyAhead || (it.k == Call && mine(it.name))
		}
		got := make([]Owner, len(tt.items))
		for i, it := range tt.items {
			o, resolved, shown := r.Add(i, it.k, it.name)
			got[i] = o
			for _, j := range resolved {
				got[j] = Client
				if !shown {
					got[j] = o
				}
			}
		}
		for _, j := range r.HeldBack() {
			got[j] = Held
		}
		if !slices.Equal(got, tt.want) || r.Loops() != tt.loops || r.Dropped() != tt.dropped {
			t.Errorf("%s: owners %v loops %v dropped %d, want %v %v %d", tt.name, got, r.Loops(), r.Dropped(), tt.want, tt.loops, tt.dropped)
		}
	}
}

func TestRoundThinking(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	H, C, T, L := item{Thinking, ""}, item{Call, "bash"}, item{Other, ""}, item{Call, "load_skill"}
	tests := []struct {
		name    string
		items   []item
		final   bool
		want    []Owner // Pending: still waiting at the end
		waiting []int
	}{
		{"shown with the next item shown", []item{H, T, L}, false, []Owner{Client, Client, Proxy}, nil},
		{"waits past a proxy call", []item{H, L}, false, []Owner{Pending, Proxy}, []int{0}},
		{"waits past a held call", []item{H, L, C}, false, []Owner{Pending, Proxy, Held}, []int{0}},
		{"shown after a proxy call, with the next item shown", []item{H, L, T}, false, []Owner{Client, Proxy, Client}, nil},
		{"round limit: shown with the client's call", []item{H, L, C}, true, []Owner{Client, Proxy, Client}, nil},
		{"a run waits whole", []item{H, H, L}, false, []Owner{Pending, Pending, Proxy}, []int{0, 1}},
	}
	for _, tt := range tests {
		r := Round{Mine: mine, Final: tt.final}
		got := make([]Owner, len(tt.items))
		for i, it := range tt.items {
			o, resolved, shown := r.Add(i, it.k, it.name)
			got[i] = o
			for _, j := range resolved {
				if !shown {
					t.Fatalf("%s: thinking %d resolved hidden", tt.name, j)
				}
				got[j] = Client
			}
		}
		if !slices.Equal(got, tt.want) || !slices.Equal(r.Waiting(), tt.waiting) {
			t.Errorf("%s: owners %v waiting %v, want %v %v", tt.name, got, r.Waiting(), tt.want, tt.waiting)
		}
	}
}

// TestTrackerCarriesThinking: thinking before a proxy call waits for the
// next round, which shows it before its first item shown, or drops it when
// it opens with thinking of its own (never one run from two responses).
func TestTrackerCarriesThinking(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	type ev struct {
		k    Kind
		name string
		data string
	}
	H := func(d string) ev { return ev{Thinking, "", d} }
	L, C, T := ev{Call, "load_skill", "L"}, ev{Call, "bash", "C"}, ev{Other, "", "T"}
	tests := []struct {
		name   string
		second []ev
		final  bool
		want   []string // events shown, "data@index"
	}{
		{"second round opens with a call: carried thinking first", []ev{C}, false, []string{"A@0", "C@1"}},
		{"second round opens with text", []ev{T, L}, false, []string{"A@0", "T@1"}},
		{"second round opens with thinking: carried dropped", []ev{H("B"), C}, false, []string{"B@0", "C@1"}},
		{"second round only loads again, at the limit: shown at the end", []ev{L}, true, []string{"A@0"}},
		{"second round thinks, loads again at the limit", []ev{H("B"), L}, true, []string{"B@0"}},
	}
	for _, tt := range tests {
		next := 0
		var shown []string
		emit := func(it *Item, data []byte) { shown = append(shown, string(data)+"@"+string(rune('0'+it.Index))) }
		first := &Tracker{Round: Round{Mine: mine}, Next: &next, Emit: emit}
		first.Start(0, Thinking, "", []byte("A"))
		first.Start(1, L.k, L.name, []byte(L.data))
		if !first.Loops() || len(shown) > 0 {
			t.Fatalf("%s: first round loops %v, shown %v", tt.name, first.Loops(), shown)
		}
		second := &Tracker{Round: Round{Mine: mine, Final: tt.final}, Next: &next, Emit: emit, Carried: first.Waiting()}
		for i, e := range tt.second {
			second.Start(i, e.k, e.name, []byte(e.data))
		}
		if !second.Loops() {
			second.ShowPending()
		}
		if !slices.Equal(shown, tt.want) {
			t.Errorf("%s: shown %v, want %v", tt.name, shown, tt.want)
		}
	}
}
