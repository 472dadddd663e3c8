package router

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/tokens"
)

// cacheConversation is a three-turn conversation whose topic moves, so a
// relevance-ranked catalog changes from turn to turn.
var cacheConversation = []string{
	"I want to build an MCP server that exposes our GitHub issues to Claude. Where do I start?",
	"Good. Now write the unit tests for the tool handlers.",
	"Finally, draft the release notes and a changelog entry for version 1.0.",
}

// placement renders the prompt an upstream sees for one turn (tools first,
// then each message), the text a prefix cache is keyed on.
type placement struct {
	name string
	opts RewriteOptions
	tail bool // catalog as a message after the last client message instead of the system prompt
}

func upstreamPrompt(p *PromptParts, msgs []Message, tail bool) string {
	var b strings.Builder
	for _, d := range p.Tools {
		b.Write(d.FunctionJSON())
		b.WriteByte('\n')
	}
	sysDone := false
	for _, m := range msgs {
		text := m.Text
		if !tail && !sysDone && (m.Role == "system" || m.Role == "developer") && p.Catalog != "" {
			text += "\n\n" + p.Catalog
			sysDone = true
		}
		fmt.Fprintf(&b, "<|%s|>%s<|end|>", m.Role, text)
	}
	if tail && p.Catalog != "" {
		fmt.Fprintf(&b, "<|system|>%s<|end|>", p.Catalog)
	}
	for _, e := range p.Envelopes {
		fmt.Fprintf(&b, "<|user|>%s<|end|>", e.Text)
	}
	return b.String()
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// TestPromptCacheReuse measures, for each catalog placement, how much of
// turn N's upstream prompt is a prefix of turn N+1's (what a prefix cache can
// reuse) on the 407-skill bench library. Numbers go to docs/prompt-caching.md
// (go test ./router -run PromptCacheReuse -v).
func TestPromptCacheReuse(t *testing.T) {
	snap := skills.Load(context.Background(), []string{filepath.Join(benchRoot(t), "skills")}, skills.Options{})
	r := newTestRouter(t, snap)
	ctx := context.Background()
	places := []placement{
		{name: "system prompt, ranked on the first user message (default)", opts: RewriteOptions{}},
		{name: "system prompt, re-ranked every turn", opts: RewriteOptions{CatalogPerTurn: true}},
		{name: "message after the last client message", opts: RewriteOptions{CatalogPerTurn: true}, tail: true},
		{name: "system prompt, whole library (all mode)", opts: RewriteOptions{CatalogMode: CatalogAll}},
	}
	enc := tokens.Default()
	reuse := map[string][]int{}
	for _, pl := range places {
		msgs := []Message{{Role: "system", Text: "You are a senior engineer on our platform team. Answer precisely."}}
		var prev string
		var prevHistory int
		for turn, q := range cacheConversation {
			msgs = append(msgs, Message{Role: "user", Text: q})
			p, err := r.Prompt(ctx, Query{Messages: msgs}, pl.opts)
			if err != nil {
				t.Fatal(err)
			}
			cur := upstreamPrompt(p, msgs, pl.tail)
			if turn > 0 {
				shared := commonPrefix(prev, cur)
				sharedTok := enc.Count(cur[:shared])
				total := enc.Count(cur)
				reuse[pl.name] = append(reuse[pl.name], sharedTok)
				t.Logf("%-58s turn %d→%d: %6d of %6d prompt tokens reusable (%3.0f%%), previous turn's client history %d bytes, shared %d bytes",
					pl.name, turn, turn+1, sharedTok, total, 100*float64(sharedTok)/float64(total), prevHistory, shared)
				if pl.name == places[0].name && shared < prevHistory {
					t.Errorf("default placement: only %d bytes shared, the previous turn's client messages alone are %d", shared, prevHistory)
				}
			}
			prev = cur
			// The client messages of this turn, as the next turn will send them.
			msgs = append(msgs, Message{Role: "assistant", Text: fmt.Sprintf("(answer %d)", turn+1)})
			prevHistory = len(upstreamPrompt(&PromptParts{Tools: p.Tools, Catalog: p.Catalog}, msgs[:len(msgs)-1], pl.tail))
			if pl.tail {
				prevHistory -= len(fmt.Sprintf("<|system|>%s<|end|>", p.Catalog))
			}
		}
	}
	def, perTurn := reuse[places[0].name], reuse[places[1].name]
	for i := range def {
		if def[i] < perTurn[i] {
			t.Errorf("turn %d: default placement reuses %d tokens, per-turn ranking %d", i+2, def[i], perTurn[i])
		}
	}
}
