package bench

import (
	"math"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/router"
)

const eps = 1e-9

func near(a, b float64) bool { return math.Abs(a-b) < eps }

func TestRankingMetrics(t *testing.T) {
	l2 := math.Log2
	tests := []struct {
		name     string
		ranked   []string
		expected []string
		k        int
		hit      float64
		recall   float64
		rr       float64
		ndcg10   float64
	}{
		{"first place", []string{"a", "b", "c"}, []string{"a"}, 1, 1, 1, 1, 1},
		{"third place, k=1", []string{"a", "b", "c", "d", "e"}, []string{"c"}, 1, 0, 0, 1.0 / 3, 1 / l2(4)},
		{"third place, k=3", []string{"a", "b", "c", "d", "e"}, []string{"c"}, 3, 1, 1, 1.0 / 3, 1 / l2(4)},
		{"two of three expected, k=3", []string{"a", "b", "c", "d", "e"}, []string{"b", "e", "x"}, 3, 1, 1.0 / 3, 0.5,
			(1/l2(3) + 1/l2(6)) / (1 + 1/l2(3) + 1/l2(4))},
		{"two of three expected, k=5", []string{"a", "b", "c", "d", "e"}, []string{"b", "e", "x"}, 5, 1, 2.0 / 3, 0.5,
			(1/l2(3) + 1/l2(6)) / (1 + 1/l2(3) + 1/l2(4))},
		{"not ranked at all", []string{"a", "b"}, []string{"z"}, 10, 0, 0, 0, 0},
		{"empty ranking", nil, []string{"a"}, 3, 0, 0, 0, 0},
		{"empty expectation is never a hit", []string{"a"}, nil, 1, 0, 0, 0, 0},
		{"k beyond the list", []string{"a", "b"}, []string{"b"}, 10, 1, 1, 0.5, 1 / l2(3)},
		{"k zero", []string{"a"}, []string{"a"}, 0, 0, 0, 1, 1},
		// A repeated id counts once, at its first position: b is rank 2, not 3.
		{"duplicate ids in ranking", []string{"a", "a", "b"}, []string{"b"}, 2, 1, 1, 0.5, 1 / l2(3)},
		{"duplicate ids in expectation", []string{"b", "a"}, []string{"a", "a"}, 1, 0, 0, 0.5, 1 / l2(3)},
		// Perfect ranking of 2 relevant ids: nDCG exactly 1.
		{"ideal two", []string{"x", "y", "z"}, []string{"y", "x"}, 2, 1, 1, 1, 1},
		// nDCG@10 ignores a relevant id at rank 11.
		{"relevant beyond 10", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "r"}, []string{"r"}, 10, 0, 0, 1.0 / 11, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HitAt(tt.ranked, tt.expected, tt.k); !near(got, tt.hit) {
				t.Errorf("HitAt = %v, want %v", got, tt.hit)
			}
			if got := RecallAt(tt.ranked, tt.expected, tt.k); !near(got, tt.recall) {
				t.Errorf("RecallAt = %v, want %v", got, tt.recall)
			}
			if got := ReciprocalRank(tt.ranked, tt.expected); !near(got, tt.rr) {
				t.Errorf("ReciprocalRank = %v, want %v", got, tt.rr)
			}
			if got := NDCGAt(tt.ranked, tt.expected, 10); !near(got, tt.ndcg10) {
				t.Errorf("NDCGAt(10) = %v, want %v", got, tt.ndcg10)
			}
		})
	}
}

// Ties: the ranking is taken exactly as the router returns it, so two skills
// with the same score keep the router's order and the metric does not give
// the later one the benefit of the tie.
func TestTiesKeepRouterOrder(t *testing.T) {
	d := &router.Decision{Ranked: []router.Scored{{ID: "x", Score: 0.5}, {ID: "y", Score: 0.5}, {ID: "z", Score: 0.1}}}
	ranked := rankedIDs(d)
	if got := ReciprocalRank(ranked, []string{"y"}); !near(got, 0.5) {
		t.Fatalf("tie: RR = %v, want 0.5 (rank 2 as returned)", got)
	}
	if got := HitAt(ranked, []string{"y"}, 1); got != 0 {
		t.Fatalf("tie: Hit@1 = %v, want 0", got)
	}
	// The same tie in the other order gives the other answer.
	d.Ranked[0], d.Ranked[1] = d.Ranked[1], d.Ranked[0]
	if got := ReciprocalRank(rankedIDs(d), []string{"y"}); !near(got, 1) {
		t.Fatalf("tie reversed: RR = %v, want 1", got)
	}
	if got := rankedIDs(nil); got != nil {
		t.Fatalf("nil decision: %v", got)
	}
}

func TestEvaluate(t *testing.T) {
	js := []Judged{
		{Expected: []string{"a"}, Ranked: []string{"a", "b"}, Selected: []string{"a"}, Shown: []string{"a", "b"}, ShownKnown: true},
		{Expected: []string{"b", "c"}, Ranked: []string{"a", "b", "c"}, Selected: []string{"a", "b"}, Shown: []string{"a"}, ShownKnown: true},
		{Expected: []string{"d"}, Ranked: []string{"a", "b", "c"}, Selected: nil, Shown: []string{"a"}, ShownKnown: true},
		{Expected: []string{}, Ranked: []string{"a"}, Selected: []string{"a"}, ShownKnown: true},
		{Expected: []string{}, Ranked: nil, Selected: nil, ShownKnown: true},
	}
	q := Evaluate(js, []int{1, 3})
	if q.Ranked != 3 || q.Empty != 2 || q.Injected != 1 {
		t.Fatalf("populations: ranked %d empty %d injected %d, want 3 2 1", q.Ranked, q.Empty, q.Injected)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"hit@1", q.HitAt[1], 1.0 / 3},
		{"hit@3", q.HitAt[3], 2.0 / 3},
		{"recall@1", q.RecallAt[1], 1.0 / 3},
		{"recall@3", q.RecallAt[3], (1 + 1) / 3.0},
		{"mrr", q.MRR, (1 + 0.5 + 0) / 3},
		{"ndcg@10", q.NDCG10, (1 + (1/math.Log2(3)+1/math.Log2(4))/(1+1/math.Log2(3)) + 0) / 3},
		// micro: TP = 1 (a) + 1 (b) = 2; selected = 1 + 2 + 0; expected = 1 + 2 + 1.
		{"selected precision", q.SelectedPrecision, 2.0 / 3},
		{"selected recall", q.SelectedRecall, 2.0 / 4},
		{"false injection", *q.FalseInjectionRate, 0.5},
		// shown ∪ selected: q1 a∈shown; q2 b selected; q3 d nowhere.
		{"shown hit", *q.ShownHit, 2.0 / 3},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestEvaluateEdgeCases(t *testing.T) {
	t.Run("no empty-expectation queries: false injection undefined", func(t *testing.T) {
		q := Evaluate([]Judged{{Expected: []string{"a"}, Ranked: []string{"a"}, ShownKnown: true}}, []int{1})
		if q.FalseInjectionRate != nil {
			t.Fatalf("false injection = %v, want nil", *q.FalseInjectionRate)
		}
		if q.SelectedPrecision != 0 || q.SelectedRecall != 0 {
			t.Fatalf("nothing selected: precision %v recall %v, want 0 0", q.SelectedPrecision, q.SelectedRecall)
		}
	})
	t.Run("only empty-expectation queries: ranking metrics zero, not NaN", func(t *testing.T) {
		q := Evaluate([]Judged{{Expected: nil, Selected: nil}, {Expected: []string{}, Selected: []string{"x", "y"}}}, []int{1})
		if q.Ranked != 0 || q.HitAt[1] != 0 || q.MRR != 0 || math.IsNaN(q.NDCG10) {
			t.Fatalf("got %+v", q)
		}
		if q.ShownHit != nil {
			t.Fatal("shown hit defined without ranked queries")
		}
		if !near(*q.FalseInjectionRate, 0.5) {
			t.Fatalf("false injection = %v, want 0.5", *q.FalseInjectionRate)
		}
		// Selections on empty-expectation queries do not enter precision.
		if q.SelectedPrecision != 0 {
			t.Fatalf("precision = %v, want 0", q.SelectedPrecision)
		}
	})
	t.Run("shown unknown for one query: shown hit undefined", func(t *testing.T) {
		q := Evaluate([]Judged{
			{Expected: []string{"a"}, Shown: []string{"a"}, ShownKnown: true},
			{Expected: []string{"a"}},
		}, []int{1})
		if q.ShownHit != nil {
			t.Fatal("shown hit defined though one query's catalog is unknown")
		}
	})
	t.Run("no queries", func(t *testing.T) {
		q := Evaluate(nil, []int{1, 3})
		if q.Ranked != 0 || q.Empty != 0 || q.FalseInjectionRate != nil {
			t.Fatalf("got %+v", q)
		}
	})
}

func TestPercentileNearestRank(t *testing.T) {
	// The classic nearest-rank example: {15, 20, 35, 40, 50}.
	xs := []float64{35, 20, 50, 15, 40}
	for _, c := range []struct {
		p    float64
		want float64
	}{{5, 15}, {20, 15}, {30, 20}, {40, 20}, {50, 35}, {95, 50}, {100, 50}, {0, 15}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("P%v = %v, want %v", c.p, got, c.want)
		}
	}
	// 20 values 1..20: p95 is rank 19 exactly (no float drift to rank 20), p99 rank 20.
	var ds []time.Duration
	for i := 20; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := Percentile(ds, 95); got != 19*time.Millisecond {
		t.Errorf("P95 of 1..20 = %v, want 19ms", got)
	}
	if got := Percentile(ds, 99); got != 20*time.Millisecond {
		t.Errorf("P99 of 1..20 = %v, want 20ms", got)
	}
	if got := Percentile(ds, 50); got != 10*time.Millisecond {
		t.Errorf("P50 of 1..20 = %v, want 10ms", got)
	}
	if got := Percentile([]int(nil), 50); got != 0 {
		t.Errorf("empty = %v, want 0", got)
	}
	if got := Percentile([]int{7}, 99); got != 7 {
		t.Errorf("single = %v, want 7", got)
	}
	// The input is not reordered.
	if xs[0] != 35 {
		t.Error("Percentile sorted its input")
	}
	if got := Mean([]int{1, 2, 6}); got != 3 {
		t.Errorf("Mean = %v, want 3", got)
	}
}
