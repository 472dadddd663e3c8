package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

func toolNames(tools []router.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name())
	}
	return names
}

func TestExecutableSkillsRegisteredFromHelpJSON(t *testing.T) {
	requireProgram(t, "python3")
	requireProgram(t, "node")
	p, logs := newTestProvider(t, nil)
	active := []*skills.Skill{
		fixtureSkill(t, "scripts-demo"), fixtureSkill(t, "calc"), fixtureSkill(t, "broken-exec"), fixtureSkill(t, "word-count"),
	}
	tools := p.Tools(context.Background(), active)
	if got, want := toolNames(tools), []string{ToolReadResource, ToolExecute, "calc_numbers", "count_words"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if warn := logs.records("sandbox: executable skill not registered"); len(warn) != 1 || warn[0]["skill"] != "broken-exec" {
		t.Errorf("broken skill warnings: %v", warn)
	}

	var def struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	calc := toolNamed(t, tools, "calc_numbers")
	if err := json.Unmarshal(calc.Spec().FunctionJSON(), &def); err != nil {
		t.Fatal(err)
	}
	if def.Type != "function" || def.Function.Description != "Add or multiply a list of numbers." ||
		!strings.HasPrefix(string(def.Function.Parameters), `{"type":"object","properties":{"operation":`) {
		t.Errorf("definition %s", calc.Spec().FunctionJSON())
	}

	t.Run("called with --run-json", func(t *testing.T) {
		if got := callTool(t, calc, "conv-x", `{"operation":"add","numbers":[1,2,3.5]}`); got != `{"result": 6.5}` {
			t.Errorf("result %s", got)
		}
		if got := callTool(t, toolNamed(t, tools, "count_words"), "conv-x", `{"text":"one two  three"}`); got != `{"words":3}` {
			t.Errorf("result %s", got)
		}
	})
	t.Run("failure carries exit code and stderr tail", func(t *testing.T) {
		e := failureOf(t, callTool(t, calc, "c", `{"operation":"crash"}`))
		if e.Code != CodeExecutionFailed || e.ExitCode == nil || *e.ExitCode != 2 || !strings.Contains(e.Stderr, "simulated failure") {
			t.Errorf("%+v", e)
		}
	})
	t.Run("invalid JSON output", func(t *testing.T) {
		e := failureOf(t, callTool(t, calc, "c", `{"operation":"garbage"}`))
		if e.Code != CodeInvalidOutput || !strings.Contains(e.Stdout, "not json at all") {
			t.Errorf("%+v", e)
		}
	})
	t.Run("arguments must be an object", func(t *testing.T) {
		for _, args := range []string{`[1]`, `"x"`, `null`, `{`} {
			if e := failureOf(t, callTool(t, calc, "c", args)); e.Code != CodeInvalidArguments {
				t.Errorf("%s: %+v", args, e)
			}
		}
	})
	t.Run("schemas are cached by file hash", func(t *testing.T) {
		before := len(logs.records("sandbox: executable skill registered"))
		for range 3 {
			p.Tools(context.Background(), active)
		}
		if after := len(logs.records("sandbox: executable skill registered")); after != before {
			t.Errorf("--help-json ran again for unchanged files (%d → %d registrations)", before, after)
		}
	})
	t.Run("definitions are byte-stable", func(t *testing.T) {
		again := p.Tools(context.Background(), active)
		for i := range tools {
			if string(tools[i].Spec().FunctionJSON()) != string(again[i].Spec().FunctionJSON()) {
				t.Errorf("%s definition changed", tools[i].Name())
			}
		}
	})
}

func TestExecutableSchemaFollowsFileContent(t *testing.T) {
	requireProgram(t, "python3")
	p, logs := newTestProvider(t, nil)
	s := copySkill(t, "calc")
	if got := toolNames(p.Tools(context.Background(), []*skills.Skill{s})); !slices.Contains(got, "calc_numbers") {
		t.Fatalf("tools %v", got)
	}
	entry := filepath.Join(s.Dir, "execute.py")
	b, _ := os.ReadFile(entry)
	if err := os.WriteFile(entry, []byte(strings.Replace(string(b), `"calc_numbers"`, `"calc_v2"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(p.Tools(context.Background(), []*skills.Skill{s})); !slices.Contains(got, "calc_v2") {
		t.Fatalf("after editing execute.py: tools %v", got)
	}
	if n := len(logs.records("sandbox: executable skill registered")); n != 2 {
		t.Errorf("%d registrations, want 2", n)
	}
}

func TestExecutableToolNameConflicts(t *testing.T) {
	requireProgram(t, "python3")
	p, logs := newTestProvider(t, nil)
	a := fixtureSkill(t, "calc")
	b := copySkill(t, "calc")
	b.ID = "other/calc"
	hijack := copySkill(t, "calc")
	hijack.ID = "hijack"
	entry := filepath.Join(hijack.Dir, "execute.py")
	src, _ := os.ReadFile(entry)
	_ = os.WriteFile(entry, []byte(strings.Replace(string(src), `"calc_numbers"`, `"load_skill"`, 1)), 0o644)

	got := toolNames(p.Tools(context.Background(), []*skills.Skill{a, b, hijack}))
	if want := []string{ToolReadResource, ToolExecute, "calc_numbers"}; !slices.Equal(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	if n := len(logs.records("sandbox: executable skill tool name already taken; not registered")); n != 2 {
		t.Errorf("%d conflict warnings, want 2", n)
	}
}

func TestWarmPrecomputesSchemas(t *testing.T) {
	requireProgram(t, "python3")
	p, logs := newTestProvider(t, nil)
	calc := fixtureSkill(t, "calc")
	p.Warm(context.Background(), []*skills.Skill{fixtureSkill(t, "scripts-demo"), calc, nil})
	if n := len(logs.records("sandbox: executable skill registered")); n != 1 {
		t.Fatalf("%d registrations after Warm", n)
	}
	if !slices.Contains(toolNames(p.Tools(context.Background(), []*skills.Skill{calc})), "calc_numbers") {
		t.Fatal("calc_numbers not offered")
	}
	if n := len(logs.records("sandbox: executed")); n != 1 {
		t.Errorf("%d executions; Tools after Warm must not run --help-json again", n)
	}
}

func TestExecutableHelpJSONRunsOnceUnderConcurrency(t *testing.T) {
	requireProgram(t, "python3")
	p, logs := newTestProvider(t, nil)
	s := copySkill(t, "calc")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Tools(context.Background(), []*skills.Skill{s})
		}()
	}
	wg.Wait()
	if n := len(logs.records("sandbox: executable skill registered")); n != 1 {
		t.Errorf("--help-json ran %d times", n)
	}
}

func TestParseHelpJSON(t *testing.T) {
	tests := []struct {
		name, in, wantName, wantParams, err string
	}{
		{"plain", `{"name":"a_b","description":"d","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}`, "a_b", `{"type":"object","properties":{"x":{"type":"string"}}}`, ""},
		{"openai wrapper", `{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}`, "f", `{"type":"object"}`, ""},
		{"input_schema", `{"name":"f","input_schema":{"type":"object","properties":{}}}`, "f", `{"type":"object","properties":{}}`, ""},
		{"inputSchema", `{"name":"f","inputSchema":{"type":"object"}}`, "f", `{"type":"object"}`, ""},
		{"no parameters", "  {\"name\":\"f\"}\n", "f", `{"type":"object","properties":{}}`, ""},
		{"bad name", `{"name":"has space"}`, "", "", "tool name"},
		{"long name", `{"name":"` + strings.Repeat("a", 65) + `"}`, "", "", "tool name"},
		{"array parameters", `{"name":"f","parameters":[1]}`, "", "", "JSON Schema object"},
		{"non-object type", `{"name":"f","parameters":{"type":"string"}}`, "", "", "type object"},
		{"not json", `usage: foo`, "", "", "not a JSON object"},
		{"empty", ``, "", "", "printed nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseHelpJSON([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || s.Name != tt.wantName || string(s.Parameters) != tt.wantParams {
				t.Fatalf("got %+v %v", s, err)
			}
		})
	}
}

func FuzzParseHelpJSON(f *testing.F) {
	f.Add([]byte(`{"name":"a","parameters":{"type":"object"}}`))
	f.Add([]byte(`{"type":"function","function":{"name":"f"}}`))
	f.Add([]byte(`{"name":"a","input_schema":null,"parameters":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseHelpJSON(b)
		if err != nil {
			return
		}
		if !toolNameRE.MatchString(s.Name) || !json.Valid(s.Parameters) {
			t.Fatalf("accepted %q → %+v", b, s)
		}
		def := newExecTool(nil, &skills.Skill{ID: "x"}, s).Spec().FunctionJSON()
		if !json.Valid(def) {
			t.Fatalf("invalid definition %s", def)
		}
	})
}

// A --help-json that runs out of time is not run again for a while: every
// request activating the skill waited the whole exec.timeout for it.
func TestExecutableHungHelpJSONNotRetriedAtOnce(t *testing.T) {
	requireProgram(t, "python3")
	p, logs := newTestProvider(t, func(c *Config) { c.Timeout = 300 * time.Millisecond })
	s := copySkill(t, "calc")
	entry := filepath.Join(s.Dir, "execute.py")
	if err := os.WriteFile(entry, []byte("import time\ntime.sleep(30)\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		start := time.Now()
		if got := toolNames(p.Tools(context.Background(), []*skills.Skill{s})); slices.Contains(got, "calc_numbers") {
			t.Fatalf("tools %v", got)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("Tools took %v", took)
		}
	}
	if n := len(logs.records("sandbox: executed")); n != 1 {
		t.Errorf("--help-json ran %d times, want once while its timeout is remembered", n)
	}
	if !strings.Contains(logs.String(), "ran out of time") {
		t.Errorf("no warning saying it ran out of time:\n%s", logs.String())
	}
}

// Builtins offers the built-in tools only and runs no --help-json (the MCP
// server offers no executable skill's tool).
func TestBuiltinsRunNoHelpJSON(t *testing.T) {
	requireProgram(t, "python3")
	p, logs := newTestProvider(t, nil)
	calc := fixtureSkill(t, "calc")
	if got := toolNames(p.Builtins().Tools(context.Background(), []*skills.Skill{calc})); !slices.Equal(got, []string{ToolReadResource, ToolExecute}) {
		t.Errorf("tools %v", got)
	}
	if n := len(logs.records("sandbox: executed")); n != 0 {
		t.Errorf("%d executions for the built-in tools", n)
	}
	if _, ok := p.Builtins().(interface{ DisabledCall(string) (string, bool) }); !ok {
		t.Error("Builtins lost the provider's other methods")
	}
}
