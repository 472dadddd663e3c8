package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/wire"
)

// gatingRewriter reports gated client tools in the decision, as
// router.Rewrite does with exec.allowed_tools.
type gatingRewriter struct {
	*fakeRewriter
	withheld []string
	enabled  map[string]string
}

func (g *gatingRewriter) Rewrite(ctx context.Context, req *wire.Request, ov router.Overrides) (*Rewrite, error) {
	rw, err := g.fakeRewriter.Rewrite(ctx, req, ov)
	if err == nil {
		rw.Decision.ToolsWithheld, rw.Decision.ToolsEnabled = g.withheld, g.enabled
	}
	return rw, err
}

func TestToolsWithheldHeader(t *testing.T) {
	tests := []struct {
		name     string
		withheld []string
		enabled  map[string]string
		want     string
		logged   []string // substrings of the gate log line; nil: no line
	}{
		{"none", nil, nil, "", nil},
		{"one", []string{"bash"}, nil, "bash", []string{`"tools_withheld":"bash"`, `"tools_enabled":""`}},
		{"several, in order", []string{"bash", "WebFetch"}, map[string]string{"read": "a/skill", "edit": "b"}, "bash,WebFetch",
			[]string{`"tools_withheld":"bash,WebFetch"`, `"tools_enabled":"edit=b,read=a/skill"`}},
		{"only enabled", nil, map[string]string{"bash": "git-helper"}, "", []string{`"tools_enabled":"bash=git-helper"`}},
		{"unsafe names", []string{"a\nb", "c,d", "é"}, nil, "a b,c d", []string{`"tools_withheld"`}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			h := newHarness(t, func(c *Config) {
				c.Rewriter = &gatingRewriter{fakeRewriter: c.Rewriter.(*fakeRewriter), withheld: tt.withheld, enabled: tt.enabled}
			})
			body := simpleChat
			if stream {
				body = streamChat("")
			}
			resp, out := h.chat(body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: status %d: %s", tt.name, resp.StatusCode, out)
			}
			vals := resp.Header.Values(HeaderToolsWithheld)
			if tt.want == "" && len(vals) != 0 || tt.want != "" && (len(vals) != 1 || vals[0] != tt.want) {
				t.Errorf("%s stream=%v: header %q, want %q", tt.name, stream, vals, tt.want)
			}
			logs := h.logText()
			if tt.logged == nil && strings.Contains(logs, "client tools gated by skills") {
				t.Errorf("%s: gate logged without gated tools:\n%s", tt.name, logs)
			}
			for _, s := range tt.logged {
				if !strings.Contains(logs, `"msg":"client tools gated by skills"`) || !strings.Contains(logs, s) {
					t.Errorf("%s stream=%v: log lacks %s:\n%s", tt.name, stream, s, logs)
				}
			}
		}
	}
}

// The gate's log line lists client tool names, which the client chooses,
// as many and as long as it likes: each list is clipped as wire.Clip clips
// what the proxy quotes from a request.
func TestToolGateLogClipped(t *testing.T) {
	names := make([]string, 300)
	for i := range names {
		names[i] = "tool_" + strings.Repeat("x", 40) + strconv.Itoa(i)
	}
	enabled := map[string]string{}
	for _, n := range names {
		enabled["on_"+n] = "a/skill"
	}
	h := newHarness(t, func(c *Config) {
		c.Rewriter = &gatingRewriter{fakeRewriter: c.Rewriter.(*fakeRewriter), withheld: names, enabled: enabled}
	})
	if resp, out := h.chat(simpleChat, nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	var line string
	for _, l := range strings.Split(h.logText(), "\n") {
		if strings.Contains(l, `"msg":"client tools gated by skills"`) {
			line = l
		}
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("no gate line: %v\n%s", err, h.logText())
	}
	for _, k := range []string{"tools_withheld", "tools_enabled"} {
		v, _ := rec[k].(string)
		if v == "" || len(v) > len(wire.Clip(strings.Repeat("x", 1000))) {
			t.Errorf("%s: %d bytes", k, len(v))
		}
	}
	if v, _ := rec["tools_withheld"].(string); !strings.HasPrefix(v, names[0]+","+names[1]) {
		t.Errorf("tools_withheld %.80q, want the list's start", v)
	}
}

func TestHeaderListBounded(t *testing.T) {
	names := make([]string, 500)
	for i := range names {
		names[i] = "tool_number_" + strings.Repeat("x", 10)
	}
	got := headerList(names)
	if len(got) > maxHeaderList || strings.HasSuffix(got, ",") || !strings.HasPrefix(got, names[0]+",") {
		t.Fatalf("len %d: %q", len(got), got[:min(len(got), 80)])
	}
	for _, n := range strings.Split(got, ",") {
		if n != names[0] {
			t.Fatalf("a name was cut: %q", n)
		}
	}
}

func TestSessionOverride(t *testing.T) {
	long := strings.Repeat("s", 3000)
	tests := []struct {
		name string
		hdr  map[string]string
		body string
		want string
	}{
		{"none", nil, simpleChat, ""},
		{"header", map[string]string{HeaderSession: " conv-42 "}, simpleChat, "conv-42"},
		{"user field", nil, `{"model":"m","user":"user-7","messages":[{"role":"user","content":"x"}]}`, "user-7"},
		{"header wins over user", map[string]string{HeaderSession: "conv-42"}, `{"model":"m","user":"user-7","messages":[{"role":"user","content":"x"}]}`, "conv-42"},
		{"bounded", map[string]string{HeaderSession: long}, simpleChat, long[:maxSessionKey]},
	}
	for _, tt := range tests {
		h := newHarness(t, nil)
		resp, out := h.chat(tt.body, tt.hdr)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", tt.name, resp.StatusCode, out)
		}
		ovs := h.rw.overrides()
		if len(ovs) != 1 || ovs[0].Session != tt.want {
			t.Errorf("%s: overrides %+v, want session %q", tt.name, ovs, tt.want)
		}
		for _, r := range h.up.Requests() {
			if r.Header.Get(HeaderSession) != "" {
				t.Errorf("%s: %s forwarded upstream", tt.name, HeaderSession)
			}
		}
	}
}

// Skill ids may hold non-ASCII letters (café): a header carries them
// percent-encoded as UTF-8, since HTTP clients read header bytes as
// Latin-1 (the OpenAI SDK showed "cafÃ©"); ASCII ids stay as they are.
func TestSelectedHeaderEncodesIDs(t *testing.T) {
	tests := []struct {
		selected []string
		want     string
	}{
		{nil, ""},
		{[]string{"demo/pdf", "regex-builder"}, "demo/pdf,regex-builder"},
		{[]string{"café"}, "caf%C3%A9"},
		{[]string{"team/日本語", "sql"}, "team/%E6%97%A5%E6%9C%AC%E8%AA%9E,sql"},
		// A folder name is not held to the name rules: the list's comma,
		// the escape's percent and spaces are escaped too.
		{[]string{"a,b", "100%", "my team/x"}, "a%2Cb,100%25,my%20team/x"},
	}
	for _, tt := range tests {
		h := http.Header{}
		decisionHeaders(h, &routed{rw: &Rewrite{Decision: &router.Decision{Selected: tt.selected}}})
		if got := h.Get(HeaderSelected); got != tt.want {
			t.Errorf("%q: header %q, want %q", tt.selected, got, tt.want)
		}
	}
}
