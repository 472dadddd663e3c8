package router

// Gating the client's own tools by the active skills' allowed-tools
// frontmatter (exec.allowed_tools): a gated client tool is withheld from the
// upstream request until a skill that enables it is active. Nothing here
// runs unless the ToolProvider is a ToolGate that gates one of the client's
// tools, so requests without gated tools are rewritten byte for byte as
// before.

import (
	"strings"

	"github.com/skillrouter/skillrouter/skills"
	"github.com/skillrouter/skillrouter/wire"
)

// ToolGate is implemented by a ToolProvider (package sandbox, configured by
// exec.allowed_tools) that gates the client's tools. It is found by type
// assertion on RewriteOptions.Tools.
type ToolGate interface {
	// GatedTool reports whether the client tool with this function name is
	// gated: withheld unless an active skill enables it. Case-sensitive.
	GatedTool(name string) bool
	// AllowedTools returns the allowed-tools frontmatter entries of the
	// active skills that the configuration permits ("Bash", "Bash(git:*)").
	AllowedTools(active []*skills.Skill) []string
}

// clientTool is one element of the client's tools and its fate.
type clientTool struct {
	name      string
	gated     bool
	forced    bool   // tool_choice names it: the client's explicit intent wins
	enabledBy string // the first active skill whose allowed-tools enables it
	used      bool   // an earlier assistant message of the conversation called it
}

// toolGate is the gating state of one request's client tools. A nil
// *toolGate gates nothing.
type toolGate struct {
	gate  ToolGate
	tools []clientTool
	// bypass: tool_choice requires a call and every client tool would be
	// withheld; the client's tools then go upstream unchanged rather than
	// as a request the upstream rejects or the model cannot satisfy.
	bypass bool
}

// newToolGate plans the gating of req's client tools for the active skills.
// It returns nil when nothing is gated: no ToolGate, no client tools, or
// none of them gated.
func newToolGate(o *RewriteOptions, req *wire.Request, lib *skillLib, active []string) *toolGate {
	g, ok := o.Tools.(ToolGate)
	if !ok || g == nil || len(req.Tools) == 0 {
		return nil
	}
	tg := &toolGate{gate: g, tools: make([]clientTool, len(req.Tools))}
	anyGated := false
	for i, ct := range req.Tools {
		gated := ct.Name != "" && !ct.Custom && g.GatedTool(ct.Name)
		anyGated = anyGated || gated
		tg.tools[i] = clientTool{name: ct.Name, gated: gated}
	}
	if !anyGated {
		return nil
	}
	named := map[string]bool{}
	for _, n := range req.ToolChoice.Named {
		named[n] = true
	}
	called := map[string]bool{}
	for _, n := range req.Called {
		called[n] = true
	}
	for i := range tg.tools {
		t := &tg.tools[i]
		if t.gated && named[t.name] {
			t.forced = true
		}
		// A skill loaded through load_skill in an earlier turn is not in the
		// client's transcript (the proxy answered that call), but the
		// model's calls of the tool it enabled are: keep such a tool, or the
		// upstream would see calls of a tool that no longer exists.
		t.used = t.gated && called[t.name]
	}
	for _, id := range active {
		if s, ok := lib.skill(id); ok {
			tg.activate(s)
		}
	}
	if req.ToolChoice.Required && tg.keptCount() == 0 {
		tg.bypass = true
	}
	return tg
}

// activate records which withheld tools skill s enables; it reports whether
// any was newly enabled.
func (tg *toolGate) activate(s *skills.Skill) bool {
	if tg == nil || s == nil || len(s.AllowedTools) == 0 {
		return false
	}
	var entries []string
	changed := false
	for i := range tg.tools {
		t := &tg.tools[i]
		if !t.gated || t.enabledBy != "" {
			continue
		}
		if entries == nil {
			entries = tg.gate.AllowedTools([]*skills.Skill{s})
			if len(entries) == 0 {
				return false
			}
		}
		if enables(entries, t.name) {
			t.enabledBy = s.ID
			changed = true
		}
	}
	return changed
}

// enables reports whether one of the permitted frontmatter entries names
// tool: its bare name ("Bash" of "Bash(git:*)") equals tool ignoring case,
// so a skill written for Claude Code's "Bash" enables a client's "bash".
func enables(entries []string, tool string) bool {
	for _, e := range entries {
		bare, _, _ := strings.Cut(e, "(")
		if strings.EqualFold(strings.TrimSpace(bare), tool) {
			return true
		}
	}
	return false
}

func (t *clientTool) withheld(bypass bool) bool {
	return t.gated && !t.forced && !t.used && t.enabledBy == "" && !bypass
}

// keptCount counts the client tools that go upstream.
func (tg *toolGate) keptCount() int {
	n := 0
	for i := range tg.tools {
		if !tg.tools[i].withheld(tg.bypass) {
			n++
		}
	}
	return n
}

// withheldIndexes lists the indexes of the withheld client tools,
// ascending; nil when none (or tg is nil).
func (tg *toolGate) withheldIndexes() []int {
	if tg == nil {
		return nil
	}
	var out []int
	for i := range tg.tools {
		if tg.tools[i].withheld(tg.bypass) {
			out = append(out, i)
		}
	}
	return out
}

// withheld lists the names of the withheld client tools, in the client's
// order, without repeats; nil when none.
func (tg *toolGate) withheld() []string {
	return tg.names(func(t *clientTool) bool { return t.withheld(tg.bypass) })
}

// names lists the distinct names of the client tools keep selects, in the
// client's order; nil when none.
func (tg *toolGate) names(keep func(*clientTool) bool) []string {
	if tg == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i := range tg.tools {
		t := &tg.tools[i]
		if keep(t) && !seen[t.name] {
			seen[t.name] = true
			out = append(out, t.name)
		}
	}
	return out
}

// enabled maps each gated client tool an active skill enables to that
// skill; nil when none.
func (tg *toolGate) enabled() map[string]string {
	if tg == nil {
		return nil
	}
	var out map[string]string
	for i := range tg.tools {
		t := &tg.tools[i]
		if t.gated && t.enabledBy != "" {
			if out == nil {
				out = map[string]string{}
			}
			if _, dup := out[t.name]; !dup {
				out[t.name] = t.enabledBy
			}
		}
	}
	return out
}

// forced lists the gated client tools kept because tool_choice names them,
// or all gated ones when the "required" guard kept the tools unchanged.
func (tg *toolGate) forced() []string {
	return tg.names(func(t *clientTool) bool {
		return t.gated && t.enabledBy == "" && (t.forced || tg.bypass)
	})
}

// record puts the gating at rewrite time into the decision (fresh slices
// and map: later activations in the tool loop do not change it).
func (tg *toolGate) record(d *Decision) {
	if tg == nil || d == nil {
		return
	}
	d.ToolsWithheld = tg.withheld()
	d.ToolsEnabled = tg.enabled()
	d.ToolsForced = tg.forced()
}
