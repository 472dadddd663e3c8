package router

// Gating the client's own tools by the active skills' allowed-tools
// frontmatter (exec.allowed_tools): a gated client tool is withheld from the
// upstream request until a skill that enables it is active. Nothing here
// runs unless the ToolProvider is a ToolGate that gates one of the client's
// tools, so requests without gated tools are rewritten byte for byte as
// before.

import (
	"encoding/json"
	"strings"

	"github.com/skillrouter/skillrouter/skills"
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

// clientTool is one element of the client's tools array and its fate.
type clientTool struct {
	raw       []byte
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
func newToolGate(o *RewriteOptions, req *chatRequest, lib *skillLib, active []string) *toolGate {
	g, ok := o.Tools.(ToolGate)
	if !ok || g == nil || len(req.clientTools) == 0 {
		return nil
	}
	// The common case, nothing gated, costs one lookup per distinct name.
	anyGated := false
	for name := range req.clientNames {
		if g.GatedTool(name) {
			anyGated = true
			break
		}
	}
	if !anyGated {
		return nil
	}
	tg := &toolGate{gate: g, tools: make([]clientTool, len(req.clientTools))}
	for i, raw := range req.clientTools {
		name := toolName(raw)
		tg.tools[i] = clientTool{raw: raw, name: name, gated: name != "" && g.GatedTool(name)}
	}
	required, named := parseToolChoice(req.toolChoice)
	called := calledTools(req.msgs)
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
		if s, ok := lib.byID[id]; ok {
			tg.activate(s)
		}
	}
	if required && len(tg.kept()) == 0 {
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

// calledTools returns the function names the assistant messages of msgs
// called.
func calledTools(msgs []chatMessage) map[string]bool {
	var out map[string]bool
	for _, m := range msgs {
		if m.role != "assistant" {
			continue
		}
		var a struct {
			ToolCalls []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if json.Unmarshal(m.raw, &a) != nil {
			continue
		}
		for _, c := range a.ToolCalls {
			if c.Function.Name != "" {
				if out == nil {
					out = map[string]bool{}
				}
				out[c.Function.Name] = true
			}
		}
	}
	return out
}

// withholds reports whether any client tool is withheld.
func (tg *toolGate) withholds() bool {
	if tg == nil {
		return false
	}
	for i := range tg.tools {
		if tg.tools[i].withheld(tg.bypass) {
			return true
		}
	}
	return false
}

// kept returns the client tool definitions that go upstream, in the
// client's order.
func (tg *toolGate) kept() [][]byte {
	var out [][]byte
	for i := range tg.tools {
		if !tg.tools[i].withheld(tg.bypass) {
			out = append(out, tg.tools[i].raw)
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

// parseToolChoice reads a tool_choice value: whether it requires a tool call
// ("required", or allowed_tools in mode "required") and the tool names it
// names ({"type":"function","function":{"name":…}}, a custom tool, or the
// tools of an allowed_tools choice).
func parseToolChoice(raw []byte) (required bool, named map[string]bool) {
	if len(raw) == 0 {
		return false, nil
	}
	if mode := toolChoiceMode(raw); mode != "" {
		return mode == "required", nil
	}
	type ref struct {
		Type     string `json:"type"`
		Name     string `json:"name"` // Responses API shape, accepted by some servers
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Custom struct {
			Name string `json:"name"`
		} `json:"custom"`
	}
	var c struct {
		ref
		AllowedTools struct {
			Mode  string `json:"mode"`
			Tools []ref  `json:"tools"`
		} `json:"allowed_tools"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return false, nil
	}
	named = map[string]bool{}
	for _, r := range append([]ref{c.ref}, c.AllowedTools.Tools...) {
		for _, n := range []string{r.Function.Name, r.Custom.Name, r.Name} {
			if n != "" {
				named[n] = true
			}
		}
	}
	return c.Type == "allowed_tools" && c.AllowedTools.Mode == "required", named
}

// toolChoiceMode is a string tool_choice ("none", "auto", "required"), or
// "" when the value names tools (an object) or is not a string.
func toolChoiceMode(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
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

// withoutTools drops tools, tool_choice and parallel_tool_calls from a body
// whose tools array gating emptied: upstreams reject an empty tools array
// and tool settings without tools.
func withoutTools(body []byte) ([]byte, error) {
	var err error
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
		if body, err = removeMembers(body, k); err != nil {
			return nil, err
		}
	}
	return body, nil
}
