package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/skills"
)

func TestDisabledByDefault(t *testing.T) {
	p, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	active := []*skills.Skill{fixtureSkill(t, "scripts-demo"), fixtureSkill(t, "calc")}
	if tools := p.Tools(context.Background(), active); tools != nil {
		t.Errorf("disabled provider offers %v", toolNames(tools))
	}
	if p.Enabled() || p.Confinement() != "" || p.Stats() != (Stats{}) {
		t.Error("disabled provider reports itself enabled")
	}
	for _, name := range []string{ToolReadResource, ToolExecute} {
		if !IsTool(name) || !p.Handles(name) {
			t.Errorf("%s not handled", name)
		}
		e := failureOf(t, DisabledResult(name))
		if e.Code != CodeDisabled || !strings.Contains(e.Message, name) || !strings.Contains(e.Message, "disabled") {
			t.Errorf("%+v", e)
		}
	}
	if res, ok := p.DisabledCall(ToolExecute); !ok || res != DisabledResult(ToolExecute) {
		t.Errorf("DisabledCall: %q %v", res, ok)
	}
	if _, ok := p.DisabledCall("load_skill"); ok {
		t.Error("DisabledCall answers load_skill")
	}
	// On, a call the session did not offer (no skill active) is answered
	// too, not passed to the client as a tool it never defined.
	on, _ := newTestProvider(t, nil)
	if res, ok := on.DisabledCall(ToolExecute); !ok || failureOf(t, res).Code != CodeSkillNotActive {
		t.Errorf("DisabledCall while enabled: %q %v", res, ok)
	}
	if IsTool("load_skill") || IsTool("calc_numbers") {
		t.Error("IsTool claims non tier-3 names")
	}
	var nilP *Provider
	if nilP.Tools(context.Background(), active) != nil || nilP.Enabled() || nilP.AllowedTools(active) != nil {
		t.Error("nil provider offers something")
	}
}

func TestToolDefinitionsAreValid(t *testing.T) {
	p, _ := newTestProvider(t, nil)
	for _, tool := range p.Tools(context.Background(), nil) {
		var def struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(tool.Spec().FunctionJSON(), &def); err != nil || def.Type != "function" ||
			def.Function.Name != tool.Name() || def.Function.Parameters["type"] != "object" {
			t.Errorf("%s: %s (%v)", tool.Name(), tool.Spec().FunctionJSON(), err)
		}
	}
}

func TestAllowedTools(t *testing.T) {
	demo := fixtureSkill(t, "scripts-demo")
	demo.AllowedTools = []string{"Bash", "Read", "Bash(git:*)", "mcp__github__create_issue", "skill_execute", " Read "}
	other := &skills.Skill{ID: "o", AllowedTools: []string{"WebFetch", "mcp__github__list"}}
	tests := []struct {
		name    string
		enabled bool
		allowed []string
		want    []string
	}{
		{"nothing configured", true, nil, nil},
		{"exact names", true, []string{"Read", "WebFetch"}, []string{"Read", "WebFetch"}},
		{"bare name allows scoped entries", true, []string{"Bash"}, []string{"Bash", "Bash(git:*)"}},
		{"prefix", true, []string{"mcp__github__*"}, []string{"mcp__github__create_issue", "mcp__github__list"}},
		{"tier-3 names need execution enabled", false, []string{"skill_execute", "Read"}, []string{"Read"}},
		{"tier-3 names when enabled", true, []string{"skill_execute"}, []string{"skill_execute"}},
		{"star", true, []string{"*"}, []string{"Bash", "Bash(git:*)", "Read", "WebFetch", "mcp__github__create_issue", "mcp__github__list", "skill_execute"}},
		{"case-insensitive against the configuration", true, []string{"bash", "webfetch"}, []string{"Bash", "Bash(git:*)", "WebFetch"}},
		{"case-insensitive prefix", true, []string{"MCP__GITHUB__*"}, []string{"mcp__github__create_issue", "mcp__github__list"}},
		{"scoped configuration entry permits its bare name", true, []string{"Bash(npm:*)"}, []string{"Bash", "Bash(git:*)"}},
		{"no match", true, []string{"Write", "mcp__slack__*"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Config{Enabled: tt.enabled, AllowedTools: tt.allowed, OutputRoot: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.AllowedTools([]*skills.Skill{demo, other, nil}); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGatedTool(t *testing.T) {
	tests := []struct {
		allowed []string
		name    string
		want    bool
	}{
		{nil, "bash", false},
		{[]string{"bash"}, "bash", true},
		{[]string{"bash"}, "Bash", false}, // function names are case-sensitive
		{[]string{"Bash"}, "bash", false},
		{[]string{" bash "}, "bash", true},
		{[]string{"Bash(git:*)"}, "Bash", true}, // a scoped entry gates its bare name
		{[]string{"Bash(git:*)"}, "Bash(git:*)", false},
		{[]string{"mcp_*"}, "mcp_github", true},
		{[]string{"mcp_*"}, "MCP_github", false},
		{[]string{"mcp_*"}, "mcp", false},
		{[]string{"*"}, "anything", true},
		{[]string{"*"}, "", false},
		{[]string{"", "read"}, "write", false},
	}
	for _, tt := range tests {
		for _, enabled := range []bool{false, true} { // gating does not depend on exec.enabled
			p, err := New(Config{Enabled: enabled, AllowedTools: tt.allowed, OutputRoot: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.GatedTool(tt.name); got != tt.want {
				t.Errorf("allowed %q, enabled %v: GatedTool(%q) = %v, want %v", tt.allowed, enabled, tt.name, got, tt.want)
			}
		}
	}
	var nilP *Provider
	if nilP.GatedTool("bash") {
		t.Error("nil provider gates")
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		err  string
	}{
		{"reserved prefix", Config{Env: []string{"SKILLROUTER_UPSTREAM_API_KEY"}}, "never passed"},
		{"reserved prefix any case", Config{Env: []string{"skillrouter_x=1"}}, "never passed"},
		{"sandbox variable", Config{Env: []string{"HOME=/root"}}, "set by the sandbox"},
		{"bad name", Config{Env: []string{"A-B"}}, "valid variable name"},
		{"confinement", Config{Confinement: "chroot"}, "confinement"},
		{"root output", Config{OutputRoot: "/"}, "file-system root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, nil); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err %v, want %q", err, tt.err)
			}
		})
	}
	c, err := Config{Env: []string{"GITHUB_TOKEN", "MODE=fast"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != DefaultTimeout || c.OutputLimit != DefaultOutputLimit || c.ReadLimit != DefaultReadLimit ||
		c.Concurrency < 2 || c.Queue != 2*c.Concurrency || c.OutputTTL != DefaultOutputTTL || c.Confinement != ConfineAuto ||
		c.OutputRoot != DefaultOutputRoot() || !strings.HasSuffix(c.OutputRoot, filepath.Join("skillrouter", "out")) {
		t.Errorf("defaults %+v", c)
	}
	if c, _ := (Config{Queue: -1, Timeout: time.Second}).withDefaults(); c.Queue != 0 || c.Timeout != time.Second {
		t.Errorf("explicit values %+v", c)
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(1, 1)
	rel, err := l.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := l.acquire(ctx); errc <- err }()
	waitFor(t, "a waiter", func() bool { return l.stats().Queued == 1 })
	if _, err := l.acquire(context.Background()); err != errBusy {
		t.Errorf("third acquire: %v", err)
	}
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Errorf("cancelled waiter: %v", err)
	}
	rel()
	if st := l.stats(); st != (Stats{}) {
		t.Errorf("stats %+v", st)
	}
}

func TestCaptureSharesOneBudget(t *testing.T) {
	c := newCapture(10)
	out, errw := c.streams()
	_, _ = out.Write([]byte("123456"))
	_, _ = errw.Write([]byte("abc"))
	select {
	case <-c.over:
		t.Fatal("over before the limit")
	default:
	}
	n, err := errw.Write([]byte("defgh"))
	if n != 5 || err != nil {
		t.Errorf("write past the cap must not block or fail: %d %v", n, err)
	}
	_, _ = out.Write([]byte("more"))
	<-c.over
	so, se, trunc, cut := c.result()
	if string(so) != "123456" || string(se) != "abcd" || !trunc || cut != "stderr" {
		t.Errorf("%q %q %v %q", so, se, trunc, cut)
	}
}

func TestCutRunesAndTail(t *testing.T) {
	s := []byte("aé€😀")
	for i := 0; i <= len(s); i++ {
		got := cutRunes(s[:i])
		if !utf8Valid(got) || !strings.HasPrefix(string(s), string(got)) || i-len(got) > 3 {
			t.Errorf("cutRunes(%q) = %q", s[:i], got)
		}
		if tl := tail(s, i); !utf8Valid([]byte(tl)) {
			t.Errorf("tail(%d) = %q", i, tl)
		}
	}
}

// The default output root is in the user's cache folder, not under /tmp:
// npm (npx tsx) and uv read project files from the parent folders of a
// script's working folder, and every user can write /tmp (a planted
// /tmp/node_modules/.bin/tsx ran as the proxy's user).
func TestDefaultOutputRootNotShared(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("XDG_CACHE_HOME", cache)
	if got, want := DefaultOutputRoot(), filepath.Join(cache, "skillrouter", "out"); got != want {
		t.Errorf("with XDG_CACHE_HOME: DefaultOutputRoot() = %s, want %s", got, want)
	}
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", home)
	if got, want := DefaultOutputRoot(), filepath.Join(home, ".cache", "skillrouter", "out"); got != want {
		t.Errorf("with HOME: DefaultOutputRoot() = %s, want %s", got, want)
	}
}

// The default output root falls back to the temporary directory when the
// cache folder cannot be written (a read-only home or mount), as the
// default was before it moved; a configured one that cannot be made fails.
func TestDefaultOutputRootFallback(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.WriteFile(ro, nil, 0o644); err != nil { // a file: no folder can be made below it
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", ro)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p, err := New(Config{Enabled: true}, nil)
	if err != nil {
		t.Fatalf("default output root with an unwritable cache: %v", err)
	}
	if want := filepath.Join(tmp, "skillrouter-out-"+strconv.Itoa(os.Getuid())); p.cfg.OutputRoot != want {
		t.Errorf("output root %s, want %s", p.cfg.OutputRoot, want)
	}
	if _, err := New(Config{Enabled: true, OutputRoot: filepath.Join(ro, "out")}, nil); err == nil {
		t.Error("a configured output root that cannot be made was accepted")
	}
}

// An output root inside a library root, equal to one, or holding one is
// refused before anything is made there: a script's SKILL.md would be
// loaded as a skill. Symbolic links are resolved; a folder beside the
// library is fine.
func TestOutputRootOutsideLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	if err := os.MkdirAll(filepath.Join(lib, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(lib, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, out string
		refused   bool
	}{
		{"the library root", lib, true},
		{"inside a skill", filepath.Join(lib, "a", "out"), true},
		{"through a link", filepath.Join(link, "out"), true},
		{"holding the library", dir, true},
		{"beside it", filepath.Join(dir, "out"), false},
	} {
		_, err := New(Config{Enabled: true, Confinement: ConfineNone, OutputRoot: tc.out, LibraryRoots: []string{lib}}, nil)
		if got := err != nil && strings.Contains(err.Error(), "overlaps the skill library"); got != tc.refused {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.refused {
			if _, err := os.Stat(filepath.Join(lib, "a", "out")); err == nil {
				t.Errorf("%s: made a folder in the library", tc.name)
			}
		}
	}
}
