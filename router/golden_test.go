package router

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenCase is one representative request: testdata/requests/NAME.json in,
// testdata/golden/NAME.json (the exact upstream body) and NAME.txt (a
// readable transcript of it) out.
type goldenCase struct {
	name string
	dec  Decision
	opts RewriteOptions
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{"no-system", Decision{Ranked: scored("pdf-tools", "csv-analysis"), Selected: []string{"pdf-tools"}}, RewriteOptions{}},
		{"system-string", Decision{Ranked: scored("csv-analysis"), Selected: []string{"csv-analysis"}}, RewriteOptions{}},
		{"developer", Decision{Selected: []string{"git-commit-messages"}}, RewriteOptions{}},
		{"array-parts", Decision{Selected: []string{"sql-review"}}, RewriteOptions{}},
		{"client-tools", Decision{Selected: []string{"docker-deploy"}}, RewriteOptions{}},
		{"dedup-second-turn", Decision{Selected: []string{"pdf-tools", "sql-review"}}, RewriteOptions{}},
		{"mentions", Decision{Pinned: []string{"docker-deploy"}, Selected: []string{"api-design"}}, RewriteOptions{}},
		{"budget-auto", Decision{
			Ranked:   scored("team/release-notes", "api-design", "git-commit-messages", "docker-deploy", "sql-review"),
			Selected: []string{"team/release-notes"},
		}, RewriteOptions{CatalogBudgetTokens: 330}},
		{"enabled-mode", Decision{Selected: []string{"brand-voice"}}, RewriteOptions{CatalogMode: CatalogEnabled, Allowlist: []string{"sql-review"}}},
		{"no-tools", Decision{Selected: []string{"pdf-tools"}}, RewriteOptions{NoTools: true}},
		{"role-system", Decision{Selected: []string{"sql-review"}}, RewriteOptions{AutoLoadRole: "system"}},
		{"autoload-budget", Decision{Selected: []string{"pdf-tools", "git-commit-messages"}}, RewriteOptions{AutoLoadBudgetTokens: 300}},
		{"all-mode", Decision{Ranked: scored("sql-review")}, RewriteOptions{CatalogMode: CatalogAll}},
		{"tier3-tools", Decision{Selected: []string{"image-resize"}}, RewriteOptions{Tools: &fakeProvider{}}},
	}
}

func scored(ids ...string) []Scored {
	out := make([]Scored, len(ids))
	for i, id := range ids {
		out[i] = Scored{ID: id, Score: 1 / float64(i+1)}
	}
	return out
}

// TestGoldenRewrites renders each case from a fresh library and from one
// whose text is packed (skills.Snapshot.Pack, as the server keeps it).
func TestGoldenRewrites(t *testing.T) {
	plain := fixture(t)
	packed := skills.Load(context.Background(), []string{fixtureRoot}, skills.Options{})
	if packed.Pack(context.Background()) == 0 {
		t.Fatal("the fixture library packs nothing")
	}
	for _, tc := range goldenCases() {
		for _, snap := range []*skills.Snapshot{plain, packed} {
			testGolden(t, tc, snap, snap == packed)
		}
	}
}

func testGolden(t *testing.T, tc goldenCase, snap *skills.Snapshot, packed bool) {
	name := tc.name
	if packed {
		name += "/packed"
	}
	t.Run(name, func(t *testing.T) {
		in, err := os.ReadFile(filepath.Join("testdata", "requests", tc.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		dec := tc.dec
		rw, err := rewriteWithChat(context.Background(), in, snap, &dec, tc.opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Deterministic: a second run gives the same bytes.
		dec2 := tc.dec
		rw2, err := rewriteWithChat(context.Background(), in, snap, &dec2, tc.opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rw.Body, rw2.Body) {
			t.Fatal("two rewrites of the same request differ")
		}
		checkPreserved(t, in, rw.Body)
		transcript := renderTranscript(t, in, rw)
		compareGolden(t, filepath.Join("testdata", "golden", tc.name+".json"), rw.Body)
		compareGolden(t, filepath.Join("testdata", "golden", tc.name+".txt"), []byte(transcript))
	})
}

// checkPreserved asserts the rewrite kept the client's request: valid JSON,
// every top-level field but messages and tools byte-identical, every
// original message byte-identical and in order (except the one that took
// the catalog, which must still start with its original bytes up to its
// content), client tools first and unchanged.
func checkPreserved(t *testing.T, in, out []byte) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("rewritten body is not valid JSON:\n%s", out)
	}
	inReq, err := parseRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	outReq, err := parseRequest(out)
	if err != nil {
		t.Fatalf("rewritten body does not parse: %v", err)
	}
	others := func(b []byte, skip ...string) []string {
		var kv []string
		for _, m := range topMembers(t, b) {
			if m.key != "messages" && m.key != "tools" && !slices.Contains(skip, m.key) {
				kv = append(kv, m.key+"\x00"+string(m.value))
			}
		}
		return kv
	}
	if !slices.Equal(others(in, "stream_options"), others(out, "stream_options")) {
		t.Fatalf("fields other than messages and tools changed:\n%q\n%q", others(in), others(out))
	}
	checkUsageAsk(t, in, out)
	// Original messages appear in order; at most one differs (the catalog).
	j, changed := 0, 0
	for _, m := range inReq.Messages() {
		for j < len(outReq.Messages()) && !bytes.Equal(outReq.Messages()[j].Raw, m.Raw) {
			if outReq.Messages()[j].Role == m.Role && strings.HasPrefix(outReq.Messages()[j].Text, m.Text) && (m.Role == "system" || m.Role == "developer") {
				break
			}
			j++
		}
		if j == len(outReq.Messages()) {
			t.Fatalf("original message missing from the rewrite: %s", m.Raw)
		}
		if !bytes.Equal(outReq.Messages()[j].Raw, m.Raw) {
			changed++
		}
		j++
	}
	if changed > 1 {
		t.Fatalf("%d original messages changed; only the one taking the catalog may", changed)
	}
	for i, ct := range inReq.ClientTools() {
		if i >= len(outReq.ClientTools()) || !bytes.Equal(outReq.ClientTools()[i], ct) {
			t.Fatalf("client tool %d changed or moved", i)
		}
	}
}

// checkUsageAsk: stream_options is the client's, or (a capped stream
// offered the proxy's tools: chat.Request.Render's usage ask) the client's
// with include_usage set to true and its other members unchanged.
func checkUsageAsk(t *testing.T, in, out []byte) {
	t.Helper()
	before, after := lastMember(gjson.ParseBytes(in), "stream_options"), lastMember(gjson.ParseBytes(out), "stream_options")
	if before.Raw == after.Raw {
		return
	}
	if !lastMember(gjson.ParseBytes(in), "stream").Bool() || lastMember(before, "include_usage").Bool() || !lastMember(after, "include_usage").Bool() {
		t.Fatalf("stream_options changed other than by asking for usage: %s → %s", before.Raw, after.Raw)
	}
	rest := func(so gjson.Result) []string {
		var kv []string
		if so.IsObject() {
			for _, m := range topMembers(t, []byte(so.Raw)) {
				if m.key != "include_usage" {
					kv = append(kv, m.key+"\x00"+string(m.value))
				}
			}
		}
		return kv
	}
	if !slices.Equal(rest(before), rest(after)) {
		t.Fatalf("the usage ask changed other stream_options: %s → %s", before.Raw, after.Raw)
	}
}

// renderTranscript shows the upstream request the way a reviewer wants to
// read it: each message with its role and whether it is the client's,
// then tools and the decision.
func renderTranscript(t *testing.T, in []byte, rw *chatRewrite) string {
	t.Helper()
	inReq, _ := parseRequest(in)
	outReq, err := parseRequest(rw.Body)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, m := range outReq.Messages() {
		mark := "added"
		for _, o := range inReq.Messages() {
			if bytes.Equal(o.Raw, m.Raw) {
				mark = "client's, unchanged"
				break
			}
			if o.Role == m.Role && m.Text != o.Text && strings.HasPrefix(m.Text, o.Text) {
				mark = "client's, catalog appended"
			}
		}
		fmt.Fprintf(&b, "=== message %d: %s (%s)\n%s\n", i, m.Role, mark, m.Text)
	}
	fmt.Fprintf(&b, "=== tools: %s\n", strings.Join(toolNames(t, rw.Body), ", "))
	d := rw.Decision
	fmt.Fprintf(&b, "=== selected: %s\n", strings.Join(d.Selected, ", "))
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range d.Reasons {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "=== not loaded: %s: %s\n", id, d.Reasons[id])
	}
	p := rw.Prompt
	fmt.Fprintf(&b, "=== active: %s\n", strings.Join(p.Active, ", "))
	fmt.Fprintf(&b, "=== catalog: %d shown, %d hidden, %d tokens\n", len(p.CatalogShown), p.CatalogHidden, p.CatalogTokens)
	fmt.Fprintf(&b, "=== added tokens: %d (tools %d)\n", rw.AddedTokens, p.ToolTokens)
	return b.String()
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./router -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rewrite (run with -update after checking):\n--- got\n%s", path, got)
	}
}
