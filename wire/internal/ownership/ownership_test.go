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
		{"reasoning before a held call is held with it", []item{R, L, R, C}, false, false, false, []Owner{Proxy, Proxy, Held, Held}, true, 0},
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
		if !slices.Equal(got, tt.want) || r.Loops() != tt.loops || r.Dropped() != tt.dropped {
			t.Errorf("%s: owners %v loops %v dropped %d, want %v %v %d", tt.name, got, r.Loops(), r.Dropped(), tt.want, tt.loops, tt.dropped)
		}
	}
}
