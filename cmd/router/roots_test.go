package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// isolate gives the test an empty home, config and cache, run from an empty
// folder outside any repository.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "cfg"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	t.Chdir(home)
	return home
}

func TestResolveRoots(t *testing.T) {
	home := isolate(t)
	if got, err := resolveRoots([]string{"b", "a"}); err != nil || !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Errorf("explicit dirs must be kept in order: %q %v", got, err)
	}
	if got, _ := resolveRoots(nil); len(got) != 0 {
		t.Errorf("no defaults exist, got %q", got)
	}
	if err := os.MkdirAll(filepath.Join(home, ".codex", "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, _ := resolveRoots(nil); !reflect.DeepEqual(got, []string{filepath.Join(home, ".codex", "skills")}) {
		t.Errorf("defaults: %q", got)
	}

	// builtin:examples is unpacked into the cache folder.
	got, err := resolveRoots([]string{"x", builtinExamples})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "x" || !strings.HasPrefix(got[1], filepath.Join(home, "cache", "skillrouter", "examples-")) {
		t.Errorf("builtin: %q", got)
	}
	if _, err := os.Stat(filepath.Join(got[1], "sql-query-tuning", "SKILL.md")); err != nil {
		t.Error(err)
	}
	if _, err := resolveRoots([]string{"builtin:nope"}); err == nil || !strings.Contains(err.Error(), "the only one is builtin:examples") {
		t.Errorf("unknown builtin: %v", err)
	}
}

// TestRequireRootsMessages: when nothing can be scanned, the error says
// where it looked and what to run; a missing folder from a config file is
// shown as written, with its file:line and what it resolved to.
func TestRequireRootsMessages(t *testing.T) {
	home := isolate(t)
	cfg := defaultConfig()
	_, err := requireRoots(&cfg, "router serve --skills builtin:examples")
	if err == nil {
		t.Fatal("no library: want an error")
	}
	for _, want := range []string{"none of the default folders exists", "~/.agents/skills", "Claude Code plugins",
		"\n  router serve --skills builtin:examples\n", "--skills DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}

	dir := filepath.Join(home, "conf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "router.yaml")
	if err := os.WriteFile(file, []byte("listen: 127.0.0.1:1\nskills:\n  - ../cfg/skills\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = loadFor(t, []string{"--config", file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = requireRoots(&cfg, "")
	want := `no skill library found: skills "../cfg/skills" (config ` + file + `:3; relative to the config file's folder: ` +
		filepath.Join(home, "cfg", "skills") + `): no such folder`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}

	cfg, _ = loadFor(t, []string{"--skills", "nope"}, nil)
	_, err = requireRoots(&cfg, "")
	want = `no skill library found: skills "nope" (flag --skills; resolved: ` + filepath.Join(home, "nope") + `): no such folder`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestTryCommand(t *testing.T) {
	cmd := &cobra.Command{Use: "route"}
	root := &cobra.Command{Use: "router"}
	root.AddCommand(cmd)
	var cf configFlags
	cf.register(cmd.Flags(), rankingKeys...)
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "")
	if err := cmd.Flags().Parse([]string{"--skills", "x", "--strategy", "bm25", "--json", "--embed-url", "http://a b"}); err != nil {
		t.Fatal(err)
	}
	got := tryCommand(cmd, []string{"it's slow"})
	want := `router route --embed-url 'http://a b' --json --strategy bm25 --skills builtin:examples 'it'\''s slow'`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestAddSkillsFlag(t *testing.T) {
	var dirs []string
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	addSkillsFlag(fs, &dirs)
	if err := fs.Parse([]string{"--skills", "a,b", "--skills=c"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dirs, []string{"a,b", "c"}) {
		t.Errorf("--skills must repeat and keep commas: %q", dirs)
	}
	usage := fs.FlagUsages()
	for _, want := range []string{"./.claude/skills", "~/.codex/skills", "~/.agents/skills", "$XDG_CONFIG_HOME/skillrouter/skills", "builtin:examples"} {
		if !strings.Contains(usage, want) {
			t.Errorf("help text lacks %q: %s", want, usage)
		}
	}
}
