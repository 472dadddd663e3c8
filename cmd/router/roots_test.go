package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestResolveRoots(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "cfg"))
	t.Chdir(home)
	if got := resolveRoots([]string{"b", "a"}); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Errorf("explicit dirs must be kept in order: %q", got)
	}
	if got := resolveRoots(nil); len(got) != 0 {
		t.Errorf("no defaults exist, got %q", got)
	}
	if err := os.MkdirAll(filepath.Join(home, ".codex", "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := resolveRoots(nil); !reflect.DeepEqual(got, []string{filepath.Join(home, ".codex", "skills")}) {
		t.Errorf("defaults: %q", got)
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
	for _, want := range []string{"./.claude/skills", "~/.codex/skills", "$XDG_CONFIG_HOME/skillrouter/skills"} {
		if !strings.Contains(usage, want) {
			t.Errorf("help text lacks %q: %s", want, usage)
		}
	}
}
