package router_test

import (
	"context"
	"testing"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// cjkFixture is a library written in Chinese, with one skill in Japanese and
// one in Korean.
const cjkFixture = "testdata/ranking-cjk"

func cjkLibrary(t testing.TB) *skills.Snapshot {
	t.Helper()
	snap := skills.Load(context.Background(), []string{cjkFixture}, skills.Options{})
	if n := len(snap.Skills()); n != 8 {
		t.Fatalf("fixture: %d skills, want 8: %v", n, snap.Problems())
	}
	return snap
}

// TestRouteCJK: queries written without spaces rank the skill written in
// the same language first, by a clear margin (before CJK text was split into
// bigrams, BM25 matched nothing and the builtin embedder's byte n-grams
// scored the right skill at ~0.03, far below selection). BM25 selects it;
// chit-chat selects nothing.
func TestRouteCJK(t *testing.T) {
	r := newRouter(t, cjkLibrary(t), builtinOptions())
	tests := []struct {
		msg  string
		want string // first ranked and, with bm25, selected; "" = nothing selected
	}{
		{"把这个PDF文件转换成Word文档", "pdf-convert"},
		{"帮我优化一下这个很慢的数据库查询", "db-query"},
		{"这张图片太大了，帮我压缩一下", "image-compress"},
		{"给客户发送一封邮件通知", "send-email"},
		{"请帮我审查这段代码有没有问题", "code-review"},
		{"把昨天的会议记录整理成纪要", "meeting-notes"},
		{"この文章の誤字脱字を校正してください", "ja-proofread"},
		{"이력서를작성해주세요", "ko-resume"},
		{"你好", ""},
		{"今天天气怎么样？", ""},
		{"澳大利亚的首都是哪里？", ""},
	}
	for _, s := range []router.Strategy{router.StrategyBM25, router.StrategyHybrid} {
		for _, tt := range tests {
			d := route(r, s, tt.msg)
			if tt.want == "" {
				if len(d.Selected) > 0 {
					t.Errorf("%s %q: selected %v, want none (top %v)", s, tt.msg, d.Selected, topScores(d, 3))
				}
				continue
			}
			if len(d.Ranked) == 0 || d.Ranked[0].ID != tt.want || d.Ranked[0].Score < 0.1 {
				t.Errorf("%s %q: ranked first %v, want %q with a score of 0.1 or more", s, tt.msg, topScores(d, 3), tt.want)
			}
			if s == router.StrategyBM25 && (len(d.Selected) == 0 || d.Selected[0] != tt.want) {
				t.Errorf("%s %q: selected %v, want %q first", s, tt.msg, d.Selected, tt.want)
			}
			if s == router.StrategyHybrid && len(d.Selected) > 0 && d.Selected[0] != tt.want {
				t.Errorf("%s %q: selected %v, want %q first", s, tt.msg, d.Selected, tt.want)
			}
		}
	}
}
