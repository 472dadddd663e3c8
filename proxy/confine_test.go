package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// rawRequest sends one request line as written (no client normalizes it,
// as curl --path-as-is) and returns the response.
func rawRequest(t *testing.T, addr, method, target, hdr string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, method+" "+target+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n"+hdr+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestPassThroughConfinement (issue 14, repro 2): request targets that
// would leave the upstream's base path once normalized are refused with
// 400 in the API's envelope and never forwarded; ordinary ids, encoded
// characters and queries still pass.
func TestPassThroughConfinement(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.openai.base.Path = "/openai/v1"
	h.srv.anthropic.base.Path = "/openai/v1"
	addr := strings.TrimPrefix(h.ts.URL, "http://")
	for _, target := range []string{
		"/v1/../../admin/keys",
		"/v1/..%2F..%2Fadmin/keys",
		"/v1/models/..%2f..%2f..%2fadmin",
		"/v1/%2e%2e/%2E%2E/admin/keys",
		"/v1/.%2e/admin",
		"/v1/models/..",
		"/v1/./models",
		"/v1/files/a%2Fb",
		"/v1/files/a%5cb",
		"/v1/files/a\\..\\b",
		"/v1/messages/../../admin",
		"/v1/chat/completions/../../../admin",
		"http://127.0.0.1/v1/../../admin/keys",
		"/v1/models/..?x=1",
		// As servers that undo more than one encoding or read path
		// parameters resolve them (security acceptance pass).
		"/v1/..;/admin",
		"/v1/%252e%252e/%252e%252e/admin",
		"/v1/..%252f..%252fadmin",
		"/v1/%2e%2e%00/admin",
		"/v1/models/..%09/",
		"/v1/%25252e%25252e/admin",
	} {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			resp, body := rawRequest(t, addr, method, target, "Content-Length: 0\r\n")
			if resp.StatusCode != 400 || !strings.Contains(body, "invalid_path") && !strings.Contains(body, "invalid_request_error") {
				t.Errorf("%s %s: %d %s", method, target, resp.StatusCode, body)
			}
			if strings.HasPrefix(target, "/v1/messages") && !strings.Contains(body, `"type":"error"`) {
				t.Errorf("%s %s: not Anthropic's envelope: %s", method, target, body)
			}
		}
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Fatalf("upstream got %d requests: %+v", n, h.up.Requests())
	}
	for target, want := range map[string]string{
		"/v1/models/gpt-4o":            "/openai/v1/models/gpt-4o",
		"/v1/files/file%20x?purpose=a": "/openai/v1/files/file x",
		"/v1/models/ft:gpt-4o:org..1":  "/openai/v1/models/ft:gpt-4o:org..1",
		"/v1/files/.hidden":            "/openai/v1/files/.hidden",
		"/v1/files/100%25":             "/openai/v1/files/100%",
		// A doubled slash is read as one: relayed as the rules checked it.
		"/v1//models//gpt-4o": "/openai/v1/models/gpt-4o",
		"/v1/models/":         "/openai/v1/models",
	} {
		h.up.Reset()
		resp, body := rawRequest(t, addr, "GET", target, "")
		reqs := h.up.Requests()
		if resp.StatusCode == 400 || len(reqs) != 1 || reqs[0].Path != want {
			t.Errorf("%s: %d %s, upstream %+v", target, resp.StatusCode, body, reqs)
		}
	}
}

func TestUpstreamURLStaysUnderBase(t *testing.T) {
	h := newHarness(t, nil)
	tgt := &upstreamTarget{base: h.srv.openai.base}
	tgt.base.Path = "/openai/v1"
	for _, p := range []string{"/v1/../admin", "/v1/x/../../admin", "/admin", "/v10/x"} {
		if u, err := tgt.url(p, ""); err == nil {
			t.Errorf("%s: %s, want an error", p, u)
		}
	}
	if u, err := tgt.url("/v1/models", "a=1"); err != nil || !strings.HasSuffix(u, "/openai/v1/models?a=1") {
		t.Errorf("models: %s %v", u, err)
	}
}

// The base URL's query parameters go with every request, the client's own
// values winning: a gateway that wants ?api-version=... gets it on chat
// requests as the upstream check sends it, not only on the check.
func TestUpstreamURLBaseQuery(t *testing.T) {
	base, _ := url.Parse("https://gw.example/openai/v1?api-version=2024-10-21&deployment=a%20b")
	tgt := &upstreamTarget{base: baseURL(base)}
	for _, tt := range []struct{ client, want string }{
		{"", "api-version=2024-10-21&deployment=a%20b"},
		{"a=1", "a=1&api-version=2024-10-21&deployment=a%20b"},
		{"api-version=2025-01-01", "api-version=2025-01-01&deployment=a%20b"},
		{"deployment=x&z", "deployment=x&z&api-version=2024-10-21"},
	} {
		u, err := tgt.url("/v1/chat/completions", tt.client)
		if err != nil || u != "https://gw.example/openai/v1/chat/completions?"+tt.want {
			t.Errorf("client %q: %s %v, want ?%s", tt.client, u, err, tt.want)
		}
	}
	if got := withBaseQuery("a=1", ""); got != "a=1" {
		t.Errorf("no base query: %q", got)
	}
	if got := withBaseQuery("", "%zz=1&b=2"); got != "%zz=1&b=2" {
		t.Errorf("a base key with a bad escape is dropped: %q", got)
	}
}

// A doubled slash is read as one before routing: a chat request with one
// is routed (the proxy's decision headers), not passed through unrouted.
func TestDoubledSlashRouted(t *testing.T) {
	for _, p := range []string{"/v1//chat/completions", "/v1/chat/completions/", "//v1/chat//completions//"} {
		h := newHarness(t, nil)
		h.up.Script(fakeai.Reply(fakeai.Turn{Content: "hi"}))
		resp, b := h.do("POST", p, simpleChat, nil)
		if resp.StatusCode != 200 || resp.Header.Get(HeaderStrategy) == "" {
			t.Fatalf("%s: status %d, strategy %q: %s", p, resp.StatusCode, resp.Header.Get(HeaderStrategy), b)
		}
		if reqs := h.up.Requests(); len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
			t.Fatalf("%s: upstream %+v", p, reqs)
		}
	}
}
