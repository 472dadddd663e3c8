package sandbox

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// command is how one file in a skill is run.
type command struct {
	argv    []string // argv[0] is an absolute program path
	runtime string   // uv, python3, bash, node, tsx, direct (for logs and results)
	python  bool
}

// lookPathFunc finds a program on the proxy's PATH (exec.LookPath; a test
// seam so runtime selection can be checked without uv installed).
type lookPathFunc func(string) (string, error)

// commandFor picks the runtime for the file at abs by its extension: .py runs
// with `uv run` when uv is installed (inline script dependencies work) and
// python3 otherwise, .sh/.bash with bash, .js/.mjs/.cjs with node, .ts/.mts
// with `npx tsx`; any other file runs directly if it is executable and starts
// with a #! line. Anything else is refused.
func commandFor(abs string, info fs.FileInfo, lookPath lookPathFunc) (command, *toolError) {
	need := func(prog string) (string, *toolError) {
		p, err := lookPath(prog)
		if err != nil {
			return "", newError(CodeRuntimeMissing, "%s needs %s, which is not installed on this proxy", filepath.Base(abs), prog)
		}
		return p, nil
	}
	switch strings.ToLower(filepath.Ext(abs)) {
	case ".py":
		if uv, err := lookPath("uv"); err == nil {
			// --no-project: a pyproject.toml in the skill must not make uv
			// build a .venv inside the (read-only) skill folder.
			// --no-config: nor may a uv.toml in a parent of the working
			// folder (another user's, in a shared one) choose its index.
			return command{argv: []string{uv, "run", "--no-project", "--no-config", "--quiet", abs}, runtime: "uv", python: true}, nil
		}
		py, e := need("python3")
		if e != nil {
			return command{}, e
		}
		return command{argv: []string{py, abs}, runtime: "python3", python: true}, nil
	case ".sh", ".bash":
		sh, e := need("bash")
		if e != nil {
			return command{}, e
		}
		return command{argv: []string{sh, abs}, runtime: "bash"}, nil
	case ".js", ".mjs", ".cjs":
		node, e := need("node")
		if e != nil {
			return command{}, e
		}
		return command{argv: []string{node, abs}, runtime: "node"}, nil
	case ".ts", ".mts":
		npx, e := need("npx")
		if e != nil {
			return command{}, e
		}
		// --yes: never wait for an install prompt nobody can answer.
		return command{argv: []string{npx, "--yes", "tsx", abs}, runtime: "tsx"}, nil
	}
	if info.Mode()&0o111 != 0 && hasShebang(abs) {
		return command{argv: []string{abs}, runtime: "direct"}, nil
	}
	return command{}, newError(CodeUnsupported,
		"no runtime for %s: supported are .py (uv or python3), .sh (bash), .js (node), .ts (npx tsx), or an executable file starting with #!",
		filepath.Base(abs))
}

func hasShebang(abs string) bool {
	f, err := os.Open(abs)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == "#!"
}
