package router_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

func TestZZProbe(t *testing.T) {
	dir := benchDir(t)
	tmp := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(dir, "skills-extra"), filepath.Join(tmp, "extra")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	ctx := context.Background()
	roots := []string{filepath.Join(dir, "skills"), filepath.Join(tmp, "extra")}
	t0 := time.Now()
	snap := skills.Load(ctx, roots, skills.Options{})
	t.Logf("load %d skills: %v", len(snap.Skills()), time.Since(t0))
	t0 = time.Now()
	r, err := router.New(ctx, snap, builtinOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first build: %v", time.Since(t0))
	var path string
	filepath.Walk(filepath.Join(tmp, "extra"), func(p string, info os.FileInfo, err error) error {
		if path == "" && info.Name() == "SKILL.md" {
			path = p
		}
		return nil
	})
	b, _ := os.ReadFile(path)
	os.WriteFile(path, append(b, []byte("\nedited line about kubernetes\n")...), 0o644)
	t0 = time.Now()
	snap2 := skills.Load(ctx, roots, skills.Options{})
	t.Logf("reload scan: %v", time.Since(t0))
	t0 = time.Now()
	if err := r.Update(ctx, snap2); err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuild: %v", time.Since(t0))
}
