package analysis

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchLibraryText is the SKILL.md files of the benchmark library
// (../shared/bench/skills), up to 2 MB: real skill text, mostly English.
func benchLibraryText(b *testing.B) string {
	b.Helper()
	root := filepath.Join("..", "..", "shared", "bench", "skills")
	var sb strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "SKILL.md" || sb.Len() > 2<<20 {
			return err
		}
		data, err := os.ReadFile(path)
		sb.Write(data)
		return err
	})
	if err != nil || sb.Len() == 0 {
		b.Skip("bench library not found at " + root)
	}
	return sb.String()
}

// cjkBenchText is Chinese and Japanese skill text with some ASCII in it.
var cjkBenchText = strings.Repeat("把这个PDF文件转换成Word文档，并保留表格和图片的格式。"+
	"データベースのクエリが遅いので、インデックスを追加してSQLを最適化してください。"+
	"请帮我审查这段代码，找出潜在的错误和性能问题。", 200)

// BenchmarkWords measures AppendWords on a real library (the plain-ASCII
// fast path's case) and on CJK text.
func BenchmarkWords(b *testing.B) {
	for _, bc := range []struct {
		name string
		text func(*testing.B) string
	}{
		{"library", benchLibraryText},
		{"cjk", func(*testing.B) string { return cjkBenchText }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			text := bc.text(b)
			b.SetBytes(int64(len(text)))
			var buf []string
			for b.Loop() {
				buf = AppendWords(buf[:0], text)
			}
		})
	}
}
