package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCIFuzzFindsEveryTarget checks .ci/fuzz's list of fuzz targets, read
// from the source with sed so CI need not compile every test binary, against
// Go's own reading of the same files: every top-level FuzzXxx(*testing.F) in
// each package's test files. A target the script missed would never run.
func TestCIFuzzFindsEveryTarget(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", filepath.Join(root, ".ci", "fuzz"), "--list").Output()
	if err != nil {
		t.Fatalf(".ci/fuzz --list: %v", err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(got)

	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Dir}} {{join .TestGoFiles \" \"}} {{join .XTestGoFiles \" \"}}", "./...")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var want []string
	fset := token.NewFileSet()
	for line := range strings.Lines(string(list)) {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		for _, name := range fields[2:] {
			f, err := parser.ParseFile(fset, filepath.Join(fields[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && isFuzzTarget(fn) {
					want = append(want, fields[0]+" "+fn.Name.Name)
				}
			}
		}
	}
	slices.Sort(want)
	if len(want) == 0 {
		t.Fatal("found no fuzz targets; the module has some")
	}
	if !slices.Equal(got, want) {
		t.Errorf(".ci/fuzz --list:\n%s\nthe test files' fuzz targets:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// isFuzzTarget is what go test runs as a fuzz target: FuzzXxx (not Fuzzxxx)
// taking one *testing.F.
func isFuzzTarget(fn *ast.FuncDecl) bool {
	name := fn.Name.Name
	if !strings.HasPrefix(name, "Fuzz") || (len(name) > 4 && name[4] >= 'a' && name[4] <= 'z') {
		return false
	}
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "F" && isIdent(sel.X, "testing")
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
