package reliability

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// rawRequest sends a request line as written (curl --path-as-is).
func rawRequest(addr, method, target, hdr string) (int, string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, method+" "+target+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n"+hdr+"\r\n"); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAll(resp.Body), nil
}

// scenarioConfinement (repro 2): raw request targets that would leave the
// upstream's base path are refused; none reaches the upstream.
func scenarioConfinement(t *testing.T) {
	up := fakeai.New()
	t.Cleanup(up.Close)
	cfg := fmt.Sprintf("upstream:\n  url: %s/openai/v1\n  api_key: sk-operator\nskills:\n  - %s\nwatch: false\n", up.URL, examples())
	p := startProxy(t, cfg, 0)
	targets := []string{"/v1/../../admin/keys", "/v1/..%2F..%2Fadmin/keys", "/v1/%2e%2e/%2e%2e/admin/keys",
		"/v1/models/..%2f..%2f..%2fadmin", "/v1/files/..\\..\\admin", "/v1/./../admin", "/v1/messages/../../admin",
		"/v1/chat/completions/../../../admin/keys"}
	refused, sent := 0, 0
	for _, target := range targets {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			sent++
			status, body, err := rawRequest(p.addr, method, target, "Content-Length: 0\r\n")
			if err != nil {
				t.Fatal(err)
			}
			if status == 400 {
				refused++
			} else {
				t.Errorf("%s %s: %d %s", method, target, status, body)
			}
		}
	}
	leaked := 0
	for _, r := range up.Requests() {
		if !strings.HasPrefix(r.Path, "/openai/v1/") || strings.Contains(r.Path, "admin") {
			leaked++
		}
	}
	if leaked > 0 {
		t.Errorf("%d requests reached the upstream outside its base path", leaked)
	}
	status, _, _ := rawRequest(p.addr, "GET", "/v1/models", "")
	report(t, "pass-through confinement", "2", "%d raw requests (%d targets with dot-segments, %%2F, %%2e, backslashes × GET, POST, DELETE; upstream base /openai/v1): %d refused 400, %d left the base path; GET /v1/models still forwarded (upstream's %d)",
		sent, len(targets), refused, leaked, status)
}

// scenarioAccess (repro 3): browser requests from other origins, foreign
// Host names, missing keys and admin calls without the token are refused;
// the client key never reaches the upstream.
func scenarioAccess(t *testing.T) {
	up := fakeai.New()
	t.Cleanup(up.Close)
	cfg := baseConfig(up, examples(), "api_key: sk-operator") + "auth:\n  api_keys: [sk-client]\n  admin_token: admin-secret\n"
	p := startProxy(t, cfg, 0)
	chat := apis[0].body("write a commit message", false)
	type check struct {
		name, method, path, body string
		hdr                      map[string]string
		host                     string
		want                     int
	}
	key := map[string]string{"Authorization": "Bearer sk-client"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{"Authorization": "Bearer sk-client"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	checks := []check{
		{"drive-by text/plain POST from a web page", "POST", "/v1/chat/completions", chat, with(map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}), "", 403},
		{"DNS rebinding Host", "POST", "/v1/chat/completions", chat, key, "evil.example:8080", 403},
		{"no client key", "POST", "/v1/chat/completions", chat, nil, "", 401},
		{"wrong client key", "POST", "/v1/chat/completions", chat, map[string]string{"Authorization": "Bearer sk-nope"}, "", 401},
		{"reload without the admin token", "POST", "/v1/skills/reload", "", key, "", 401},
		{"route explain without a key", "POST", "/v1/skills/route", chat, nil, "", 401},
		{"metrics without a key", "GET", "/metrics", "", nil, "", 401},
		{"MCP without a key", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, "", 401},
		{"chat with the key", "POST", "/v1/chat/completions", chat, key, "", 200},
		{"reload with the admin token", "POST", "/v1/skills/reload", "", map[string]string{"Authorization": "Bearer admin-secret"}, "", 200},
		{"probe", "GET", "/healthz", "", nil, "", 200},
	}
	good := 0
	for _, c := range checks {
		req, _ := http.NewRequest(c.method, p.url(c.path), strings.NewReader(c.body))
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == c.want {
			good++
		} else {
			t.Errorf("%s: %d, want %d: %s", c.name, resp.StatusCode, c.want, b)
		}
	}
	forwarded, upstreamKey := 0, 0
	routed := routedRequests(up)
	for _, r := range routed {
		auth := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		if strings.Contains(auth, "sk-client") {
			forwarded++
		}
		if auth == "Bearer sk-operator" {
			upstreamKey++
		}
	}
	if forwarded > 0 || upstreamKey != 1 || len(routed) != 1 {
		t.Errorf("upstream got %d requests, %d with the client key, %d with the operator key", len(routed), forwarded, upstreamKey)
	}
	report(t, "access control", "3", "%d/%d checks as intended (Origin, Host, client keys, admin token, /metrics, /mcp); upstream saw 1 request, with the operator's key; client key forwarded %d times",
		good, len(checks), forwarded)
}

// scenarioValidation (repro 8): malformed requests of each API are 400s in
// the API's envelope naming the field; none is forwarded.
func scenarioValidation(t *testing.T) {
	up := fakeai.New()
	t.Cleanup(up.Close)
	p := startProxy(t, baseConfig(up, examples()), 0)
	cases := map[string][]struct{ body, param string }{
		"chat": {
			{`{"model":"m","messages":[{"role":7,"content":"x"}]}`, "messages[0].role"},
			{`{"model":"m","messages":[{"role":"robot","content":"x"}]}`, "messages[0].role"},
			{`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":"bash"}`, "tools"},
			{`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[1]}`, "tools[0]"},
			{"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}", "messages[0].content"},
		},
		"responses": {
			{`{"model":"m","input":[{"role":["user"],"content":"x"}]}`, "input[0].role"},
			{`{"model":"m","input":[{"role":"tool","content":"x"}]}`, "input[0].role"},
			{`{"model":"m","input":"x","tools":{}}`, "tools"},
			{"{\"model\":\"m\",\"input\":\"\xff\xfe\"}", "input"},
		},
		"messages": {
			{`{"model":"m","max_tokens":5,"messages":[{"role":null,"content":"x"}]}`, "messages[0].role"},
			{`{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"x"}]}`, "messages[0].role"},
			{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":5}`, "tools"},
			{"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"a\xc3\"}]}", "messages[0].content"},
		},
	}
	n, ok := 0, 0
	for _, a := range apis {
		for _, c := range cases[a.api] {
			n++
			resp, err := http.DefaultClient.Do(a.request("http://"+p.addr, c.body, nil))
			if err != nil {
				t.Fatal(err)
			}
			b := readAll(resp.Body)
			resp.Body.Close()
			envelope := `"param":"` + c.param + `"`
			if a.api == "messages" {
				envelope = `"type":"invalid_request_error"`
			}
			if resp.StatusCode == 400 && strings.Contains(b, envelope) && strings.Contains(b, c.param) {
				ok++
			} else {
				t.Errorf("%s %s: %d %s", a.api, c.body, resp.StatusCode, b)
			}
		}
	}
	if n := len(routedRequests(up)); n != 0 {
		t.Errorf("%d malformed requests forwarded", n)
	}
	report(t, "validation", "8", "%d malformed requests (role type and set, tools, invalid UTF-8) over 3 APIs: %d answered 400 naming the field, %d forwarded",
		n, ok, len(routedRequests(up)))
}

// scenarioBrokenStreams (repro 6): streams that break end with the API's
// error event, are logged at WARN and counted as stream_error; stray lines
// are dropped and counted.
func scenarioBrokenStreams(t *testing.T) {
	up := upstream(t)
	p := startProxy(t, baseConfig(up, examples(), "idle_timeout: 2s"), 0)
	faults := []string{"cut-stream:3", "malformed:3", "stall:3"}
	ended := 0
	for _, a := range apis {
		for _, f := range faults {
			client := &http.Client{Timeout: 30 * time.Second}
			resp, err := client.Do(a.request("http://"+p.addr, a.body("make me a pdf", true), map[string]string{fakeai.FaultHeader: f}))
			if err != nil {
				t.Fatal(err)
			}
			b := readAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(b, a.errorEvent()) {
				ended++
			} else {
				t.Errorf("%s %s: %d %s", a.api, f, resp.StatusCode, b)
			}
		}
		resp, err := http.DefaultClient.Do(a.request("http://"+p.addr, a.body("make me a pdf", true), map[string]string{fakeai.FaultHeader: "stray:1"}))
		if err != nil {
			t.Fatal(err)
		}
		if b := readAll(resp.Body); strings.Contains(b, "<html>") || strings.Contains(b, a.errorEvent()) {
			t.Errorf("%s stray lines: %s", a.api, b)
		}
		resp.Body.Close()
	}
	m := p.metrics(nil)
	counted := sum(m, "skillrouter_requests_total", `outcome="stream_error"`)
	dropped := sum(m, "skillrouter_upstream_sse_lines_dropped_total")
	warned := 0
	for _, l := range p.logLines("request") {
		if l["level"] == "WARN" && l["outcome"] == "stream_error" {
			warned++
		}
	}
	want := len(apis) * len(faults)
	if counted != float64(want) || warned != want || dropped != float64(2*len(apis)) {
		t.Errorf("stream_error counted %v, WARN lines %d, want %d; stray lines dropped %v", counted, warned, want, dropped)
	}
	report(t, "broken streams", "6", "%d streams cut, malformed or stalled (idle timeout 2 s; 3 APIs): %d ended with the API's error event, %v counted outcome=\"stream_error\", %d logged at WARN with the cause; %v stray lines dropped",
		want, ended, counted, warned, dropped)
}

// scenarioUpstreamTimeouts (repro 7): a hung upstream fails at the header
// timeout, a stalled stream at the idle timeout; a slow but healthy stream
// longer than both finishes.
func scenarioUpstreamTimeouts(t *testing.T) {
	up := upstream(t)
	p := startProxy(t, baseConfig(up, examples(), "header_timeout: 2s", "idle_timeout: 2s"), 0)
	chat := apis[0]
	timed := func(fault string) (int, string, time.Duration) {
		start := time.Now()
		resp, err := http.DefaultClient.Do(chat.request("http://"+p.addr, chat.body("hello", true), map[string]string{fakeai.FaultHeader: fault}))
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, b, time.Since(start)
	}
	hs, hb, hung := timed("hang")
	if hs != 504 || !strings.Contains(hb, "upstream_timeout") {
		t.Errorf("hung upstream: %d %s", hs, hb)
	}
	ss, sb, stalled := timed("stall:2")
	if ss != 200 || !strings.Contains(sb, "sent nothing more within 2s") {
		t.Errorf("stalled stream: %d %s", ss, sb)
	}
	words := pick(7, 30)
	gap := 400 * time.Millisecond
	up.Handle("/v1/chat/completions", fakeai.FaultFromHeader(fakeai.Turn{Content: strings.TrimSpace(strings.Repeat("token ", words))}))
	ls, lb, slow := timed("slow:" + gap.String())
	if ls != 200 || strings.Contains(lb, `"error"`) || !strings.Contains(lb, "[DONE]") {
		t.Errorf("slow healthy stream: %d %s", ls, lb)
	}
	report(t, "upstream timeouts", "7", "header/idle timeouts 2 s: hung upstream → 504 after %s; stream stalled → error event after %s; healthy stream of %d tokens %s apart ran %s to [DONE]",
		secs(hung), secs(stalled), words, ms(gap), secs(slow))
}

// scenarioShutdown (repro 5): streams open at the end of the shutdown grace
// get their API's error event and are logged as shutdown, also when the
// signal comes twice at once; a second signal later exits at once.
func scenarioShutdown(t *testing.T) {
	up := upstream(t)
	p := startProxy(t, baseConfig(up, examples())+"server:\n  shutdown_grace: 2s\n", 0)
	type got struct {
		api  apiCall
		body string
	}
	results := make(chan got, len(apis))
	var wg sync.WaitGroup
	for _, a := range apis {
		resp, err := http.DefaultClient.Do(a.request("http://"+p.addr, a.body("make me a pdf", true), map[string]string{fakeai.FaultHeader: "stall:3"}))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := readAll(resp.Body)
			resp.Body.Close()
			results <- got{a, b}
		}()
	}
	start := time.Now()
	// Twice, as timeout(1) delivers it (to the process and to its group):
	// still one graceful shutdown. (The pause keeps the kernel from
	// merging the two while the first is pending.)
	p.signal(syscall.SIGTERM)
	time.Sleep(20 * time.Millisecond)
	p.signal(syscall.SIGTERM)
	wg.Wait()
	ended := time.Since(start)
	close(results)
	n := 0
	for r := range results {
		if strings.Contains(r.body, r.api.errorEvent()) && strings.Contains(r.body, "shutting down") {
			n++
		} else {
			t.Errorf("%s: no shutdown error event: %s", r.api.api, r.body)
		}
	}
	if !p.wait(10 * time.Second) {
		t.Fatal("router serve did not exit")
	}
	exited := time.Since(start)
	logged, closed := 0, 0
	for _, l := range p.logLines("request") {
		if l["outcome"] == "shutdown" {
			logged++
		}
		if l["status"] == float64(499) {
			closed++
		}
	}
	if logged != len(apis) || closed != 0 || !p.state.Success() {
		t.Errorf("%d logged as shutdown, %d as 499, exit %v", logged, closed, p.state)
	}

	// A second signal during the grace exits at once.
	q := startProxy(t, baseConfig(up, examples())+"server:\n  shutdown_grace: 60s\n", 0)
	resp, err := http.DefaultClient.Do(apis[0].request("http://"+q.addr, apis[0].body("hi", true), map[string]string{fakeai.FaultHeader: "stall:3"}))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	q.signal(syscall.SIGTERM)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(q.logs.String(), "shutting down") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // the first signal is being handled
	}
	// Later than serve takes a repeat of the first (timeout(1) sends it
	// twice at once) as the same signal.
	time.Sleep(300 * time.Millisecond)
	second := time.Now()
	q.signal(syscall.SIGTERM)
	if !q.wait(10 * time.Second) {
		t.Fatal("a second SIGTERM did not end the process")
	}
	forced := time.Since(second)
	report(t, "shutdown", "5", "grace 2 s, 3 streams open (one per API): %d got their API's error event after %s, %d logged outcome=shutdown, 0 as 499, exit 0 after %s; second SIGTERM (grace 60 s) exits in %s",
		n, secs(ended), logged, secs(exited), ms(forced))
}

// routedRequests are the requests the upstream got from clients through the
// proxy: all but serve's own upstream checks (GET /v1/models).
func routedRequests(up *fakeai.Server) []fakeai.Request {
	var out []fakeai.Request
	for _, r := range up.Requests() {
		if !(r.Method == "GET" && r.Path == "/v1/models") {
			out = append(out, r)
		}
	}
	return out
}
