package router_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

func TestZZDump(t *testing.T) {
	if os.Getenv("ZZDUMP") == "" {
		t.Skip()
	}
	dir := benchDir(t)
	ctx := context.Background()
	up := skills.Load(ctx, []string{filepath.Join(dir, "skills")}, skills.Options{})
	qs := readJSONL[labelled](t, filepath.Join(dir, "upstream-queries", "queries.jsonl"))
	for _, p := range []string{"hi, how are you?", "what's the capital of Australia?", "tell me about the history of jazz", "can you help me?", "what should I cook for dinner tonight?", "explain quantum entanglement simply", "what's 15% of 80?", "write a poem about the sea", "how do I center a div in CSS?", "what is a closure in JavaScript?", "translate hello into French", "fix this typo: teh"} {
		qs = append(qs, labelled{Query: p, Expected: []string{}, Split: "probe"})
	}
	r, _ := router.New(ctx, up, builtinOptions())
	f, _ := os.Create("/tmp/dump_up.jsonl")
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, q := range qs {
		d := r.Route(ctx, router.Query{Messages: []router.Message{{Role: "user", Text: q.Query}}, Strategy: router.StrategyHybrid})
		enc.Encode(map[string]any{"q": q.Query, "exp": q.Expected, "split": q.Split, "ranked": d.Ranked[:20]})
	}
	mt := metatoolLibrary(t, dir)
	rm, _ := router.New(ctx, mt, builtinOptions())
	var single []labelled
	for _, q := range readJSONL[labelled](t, filepath.Join(dir, "metatool", "queries.jsonl")) {
		if q.Split == "single" {
			single = append(single, q)
		}
	}
	f2, _ := os.Create("/tmp/dump_mt.jsonl")
	defer f2.Close()
	enc = json.NewEncoder(f2)
	for i := 0; i < len(single); i += 40 {
		q := single[i]
		d := rm.Route(ctx, router.Query{Messages: []router.Message{{Role: "user", Text: q.Query}}, Strategy: router.StrategyHybrid})
		enc.Encode(map[string]any{"q": q.Query, "exp": q.Expected, "ranked": d.Ranked[:20]})
	}
}
