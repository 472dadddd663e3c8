package ownership

import (
	"slices"
	"testing"
)

// Carried thinking is dropped only when the next round's *first* block is
// thinking. A round that opens with the proxy's call and then thinks
// ([load_skill, thinking B, text]) shows the carried A right before B: a
// run of two thinking blocks from two responses, which the docs
// (rewrite.md, "The tool loop") say the API refuses in the latest
// assistant message ("cannot be modified").
func TestReviewFinal15CarriedThinkingJoinsALaterRun(t *testing.T) {
	mine := func(n string) bool { return n == "load_skill" }
	next := 0
	var shown []string
	emit := func(it *Item, data []byte) { shown = append(shown, string(data)) }
	first := &Tracker{Round: Round{Mine: mine}, Next: &next, Emit: emit}
	first.Start(0, Thinking, "", []byte("A"))
	first.Start(1, Call, "load_skill", []byte("L"))
	second := &Tracker{Round: Round{Mine: mine, Final: true}, Next: &next, Emit: emit, Carried: first.Waiting()}
	second.Start(0, Call, "load_skill", []byte("L2"))
	second.Start(1, Thinking, "", []byte("B"))
	second.Start(2, Other, "", []byte("T"))
	second.ShowPending()
	if slices.Equal(shown, []string{"A", "B", "T"}) {
		t.Errorf("shown %v: thinking A (round 1) and B (round 2) form one run", shown)
	}
}
