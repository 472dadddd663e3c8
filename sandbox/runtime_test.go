package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCommandFor(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	py := write("a.py", "print(1)", 0o644)
	sh := write("a.sh", "echo", 0o644)
	js := write("a.mjs", "", 0o644)
	ts := write("a.ts", "", 0o644)
	shebang := write("tool", "#!/bin/sh\n", 0o755)
	noExec := write("tool2", "#!/bin/sh\n", 0o644)
	noShebang := write("bin", "\x7fELF", 0o755)

	all := func(name string) (string, error) { return "/opt/bin/" + name, nil }
	noUV := func(name string) (string, error) {
		if name == "uv" {
			return "", errors.New("not found")
		}
		return all(name)
	}
	none := func(string) (string, error) { return "", errors.New("not found") }

	tests := []struct {
		name     string
		path     string
		look     lookPathFunc
		argv     []string
		runtime  string
		wantCode string
	}{
		{"py with uv", py, all, []string{"/opt/bin/uv", "run", "--no-project", "--no-config", "--quiet", py}, "uv", ""},
		{"py without uv", py, noUV, []string{"/opt/bin/python3", py}, "python3", ""},
		{"sh", sh, all, []string{"/opt/bin/bash", sh}, "bash", ""},
		{"mjs", js, all, []string{"/opt/bin/node", js}, "node", ""},
		{"ts", ts, all, []string{"/opt/bin/npx", "--yes", "tsx", ts}, "tsx", ""},
		{"shebang", shebang, none, []string{shebang}, "direct", ""},
		{"shebang not executable", noExec, all, nil, "", CodeUnsupported},
		{"executable without shebang", noShebang, all, nil, "", CodeUnsupported},
		{"missing runtime", sh, none, nil, "", CodeRuntimeMissing},
		{"missing python", py, none, nil, "", CodeRuntimeMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := os.Stat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			c, e := commandFor(tt.path, info, tt.look)
			if tt.wantCode != "" {
				if e == nil || e.Code != tt.wantCode {
					t.Fatalf("got %+v %+v, want %s", c, e, tt.wantCode)
				}
				return
			}
			if e != nil || !slices.Equal(c.argv, tt.argv) || c.runtime != tt.runtime {
				t.Fatalf("got %+v %+v", c, e)
			}
			if c.python != (tt.runtime == "uv" || tt.runtime == "python3") {
				t.Errorf("python flag %v", c.python)
			}
		})
	}
}
