package sandbox

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// BenchmarkExecute measures one skill_execute of a trivial bash script end
// to end (limiter, directories, snapshot, process tree, result JSON), per
// runner, to show what the supervisor and Landlock cost over a bare process.
func BenchmarkExecute(b *testing.B) {
	requireProgram(b, "bash")
	p, _ := newTestProvider(b, nil)
	runners := map[string]runner{"direct": directRunner{}, "configured": p.runner}
	for _, name := range []string{"direct", "configured"} {
		b.Run(name+"/"+runners[name].confinement(), func(b *testing.B) {
			p.runner = runners[name]
			s := fixtureSkill(b, "scripts-demo")
			tool := toolNamed(b, p.Tools(context.Background(), []*skills.Skill{s}), ToolExecute)
			call := router.ToolCall{Conversation: "bench", Arguments: json.RawMessage(`{"skill_id":"scripts-demo","command":"scripts/fail.sh"}`)}
			b.ResetTimer()
			for b.Loop() {
				if _, err := tool.Call(context.Background(), call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadResource measures read_skill_resource of a small reference.
func BenchmarkReadResource(b *testing.B) {
	p, _ := newTestProvider(b, nil)
	s := fixtureSkill(b, "scripts-demo")
	tool := toolNamed(b, p.Tools(context.Background(), []*skills.Skill{s}), ToolReadResource)
	call := router.ToolCall{Arguments: json.RawMessage(`{"skill_id":"scripts-demo","path":"references/guide.md"}`)}
	for b.Loop() {
		if _, err := tool.Call(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolsCachedSchema measures Tools for an active executable skill
// whose schema is cached: hashing execute.py, no process.
func BenchmarkToolsCachedSchema(b *testing.B) {
	requireProgram(b, "python3")
	p, _ := newTestProvider(b, nil)
	active := []*skills.Skill{fixtureSkill(b, "calc")}
	if len(p.Tools(context.Background(), active)) != 3 {
		b.Fatal("calc not registered")
	}
	for b.Loop() {
		p.Tools(context.Background(), active)
	}
}
