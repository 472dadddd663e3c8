package router

import (
	"context"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

// unofferedTools is a tier-3 provider whose tools come with an active
// skill only, answering calls of them that were not offered (package
// sandbox's DisabledCall).
type unofferedTools struct{}

func (unofferedTools) Tools(context.Context, []*skills.Skill) []Tool { return nil }
func (unofferedTools) DisabledCall(name string) (string, bool) {
	if name != "skill_execute" {
		return "", false
	}
	return `{"ok":false,"error":{"code":"skill_not_active"}}`, true
}

// A model's call of a tier-3 tool no active skill brought is answered by
// the proxy (it would reach the client as a tool it never defined), unless
// the client has a tool of that name: that one is the client's.
func TestUnofferedTierThreeCall(t *testing.T) {
	snap := gateLibrary(t)
	for _, tc := range []struct {
		name, body string
		proxys     bool
	}{
		{"no client tool of that name", `{"model":"m","messages":[{"role":"user","content":"hello there"}]}`, true},
		{"the client's own skill_execute", `{"model":"m","tools":[{"type":"function","function":{"name":"skill_execute","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"hello there"}]}`, false},
	} {
		rw, err := rewriteWithChat(context.Background(), []byte(tc.body), snap, &Decision{}, RewriteOptions{Tools: unofferedTools{}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := rw.Session.Handles("skill_execute"); got != tc.proxys {
			t.Errorf("%s: the proxy answers skill_execute: %v", tc.name, got)
		}
		if tc.proxys {
			if res := rw.Session.Call(context.Background(), "c", "skill_execute", []byte(`{}`)); !strings.Contains(res.Content, "skill_not_active") {
				t.Errorf("%s: %s", tc.name, res.Content)
			}
		}
	}
}
