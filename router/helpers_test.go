package router

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
	"github.com/tidwall/gjson"
)

// fixtureRoot is the test library, loaded with a relative root so rendered
// paths (the envelope's <folder>) are the same on every machine.
const fixtureRoot = "testdata/skills"

var (
	fixtureOnce sync.Once
	fixtureSnap *skills.Snapshot
)

func fixture(t testing.TB) *skills.Snapshot {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureSnap = skills.Load(context.Background(), []string{fixtureRoot}, skills.Options{})
	})
	if n := len(fixtureSnap.Skills()); n != 11 {
		t.Fatalf("fixture library: %d skills loaded, want 11 (problems: %v)", n, fixtureSnap.Problems())
	}
	return fixtureSnap
}

// benchRoot is ../shared/bench relative to the repository root.
func benchRoot(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "bench")
	if _, err := os.Stat(filepath.Join(dir, "skills")); err != nil {
		t.Skip("bench data not found at " + dir)
	}
	return dir
}

var (
	benchOnce sync.Once
	benchSnap *skills.Snapshot
)

func benchLibrary(t testing.TB) *skills.Snapshot {
	t.Helper()
	root := benchRoot(t)
	benchOnce.Do(func() {
		benchSnap = skills.Load(context.Background(), []string{filepath.Join(root, "skills")}, skills.Options{})
	})
	return benchSnap
}

// synthLibrary writes n skills with generated descriptions into a temp dir.
// desc(i) gives skill i's description.
func synthLibrary(t testing.TB, n int, desc func(i int) string) *skills.Snapshot {
	t.Helper()
	root := t.TempDir()
	for i := range n {
		id := fmt.Sprintf("skill-%05d", i)
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		d, _ := json.Marshal(desc(i)) // a JSON string is a valid YAML scalar
		body := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n# %s\n\nDo the thing number %d carefully.\n", id, d, id, i)
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := skills.Load(context.Background(), []string{root}, skills.Options{})
	if got := len(snap.Skills()); got != n {
		t.Fatalf("synthetic library: %d of %d skills loaded: %v", got, n, snap.Problems()[:min(3, len(snap.Problems()))])
	}
	return snap
}

var words = strings.Fields("alpha data chart export invoice parse query deploy model render schema report stream cache vector table image audio " +
	"compile lint test review migrate index search summarize translate extract classify monitor alert backup restore encrypt sign")

// wordsDesc makes a description of about n words, varied by seed.
func wordsDesc(seed, n int) string {
	var b strings.Builder
	for k := range n {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(seed*7+k*13+k*k)%len(words)])
	}
	return b.String()
}

// fakeSearch is a skillSearcher answering from a fixed list.
type fakeSearch struct {
	hits    []Scored
	queries []string
	mu      sync.Mutex
}

func (f *fakeSearch) Search(ctx context.Context, query string, limit int) []Scored {
	f.mu.Lock()
	f.queries = append(f.queries, query)
	f.mu.Unlock()
	if limit < len(f.hits) {
		return f.hits[:limit]
	}
	return f.hits
}

// fakeTool is a tier-3 tool.
type fakeTool struct {
	name string
	out  string
	err  error
	got  []ToolCall
	mu   sync.Mutex
}

func (f *fakeTool) Name() string { return f.name }
func (f *fakeTool) Spec() wire.ToolSpec {
	return wire.ToolSpec{Name: f.name, Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
}
func (f *fakeTool) Call(ctx context.Context, c ToolCall) (string, error) {
	f.mu.Lock()
	f.got = append(f.got, c)
	f.mu.Unlock()
	return f.out, f.err
}

// fakeProvider offers run_<id> for every active executable skill, and
// read_skill_resource whenever any skill is active.
type fakeProvider struct {
	mu    sync.Mutex
	calls [][]string
	tools map[string]*fakeTool
}

func (p *fakeProvider) Tools(ctx context.Context, active []*skills.Skill) []Tool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tools == nil {
		p.tools = map[string]*fakeTool{}
	}
	var ids []string
	get := func(name string) *fakeTool {
		if p.tools[name] == nil {
			p.tools[name] = &fakeTool{name: name, out: "ran " + name}
		}
		return p.tools[name]
	}
	out := []Tool{get("read_skill_resource")}
	for _, s := range active {
		ids = append(ids, s.ID)
		if s.Type == skills.TypeExecutable {
			out = append(out, get("run_"+strings.ReplaceAll(s.ID, "/", "_")))
		}
	}
	p.calls = append(p.calls, ids)
	return out
}

// chat builds a request body from role/content pairs (content as a string).
func chat(t testing.TB, pairs ...string) []byte {
	t.Helper()
	var msgs []map[string]string
	for i := 0; i+1 < len(pairs); i += 2 {
		msgs = append(msgs, map[string]string{"role": pairs[i], "content": pairs[i+1]})
	}
	b, err := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// upstreamMessages decodes the messages of a body as role + text.
func upstreamMessages(t testing.TB, body []byte) []Message {
	t.Helper()
	msgs, err := MessagesFromChat(body)
	if err != nil {
		t.Fatalf("rewritten body does not parse: %v\n%s", err, body)
	}
	return msgs
}

// toolNames lists function names in the body's tools.
func toolNames(t testing.TB, body []byte) []string {
	t.Helper()
	// Keys are matched exactly and the last repeat wins, as the gate and
	// the upstream read them: encoding/json would read a client's unknown
	// "tOols" or "Function" as the field, gjson's Get the first repeat.
	if !gjson.ValidBytes(body) {
		t.Fatalf("body is not JSON: %s", body)
	}
	var out []string
	lastMember(gjson.ParseBytes(body), "tools").ForEach(func(_, tl gjson.Result) bool {
		out = append(out, lastMember(lastMember(tl, "function"), "name").String())
		return true
	})
	return out
}

// lastMember is the value of o's last member named key.
func lastMember(o gjson.Result, key string) (v gjson.Result) {
	if o.IsObject() {
		o.ForEach(func(k, e gjson.Result) bool {
			if k.Str == key {
				v = e
			}
			return true
		})
	}
	return v
}
