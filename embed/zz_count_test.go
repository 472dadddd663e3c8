package embed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestZZCount(t *testing.T) {
	var corpus []string
	filepath.Walk("../../shared/bench/skills", func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "SKILL.md" {
			b, _ := os.ReadFile(p)
			s := string(b)
			if len(s) > 7000 {
				s = s[:7000]
			}
			corpus = append(corpus, s)
		}
		return nil
	})
	st := time.Now()
	b := NewBuiltin(Config{}).Fit(corpus)
	t.Log(len(corpus), len(b.idf), time.Since(st))
	q := strings.Repeat("I have a Node.js Express API that's getting slow under load. Response times jumped ", 3)
	st = time.Now()
	for i := 0; i < 1000; i++ {
		b.Embed(context.Background(), []string{q})
	}
	t.Log(time.Since(st) / 1000)
}
